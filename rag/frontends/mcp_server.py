"""`papers mcp`: the assistant as an MCP server (official `mcp` SDK), for Claude Desktop, Cursor and other clients.

Tools: `ask` (answer + citations), `cite` (citation lookup), `grid` (papers x questions), `list_papers`,
`get_paper` (abstract + metadata), each with a JSON schema for its input and a structured output; every paper
is a resource `papers://{paper_id}`.
Failures (empty question, no index yet, unknown paper id) are MCP tool errors carrying the CLI's message.
stdio by default; streamable HTTP (`--http`) binds 127.0.0.1 unless PAPERS_MCP_HOST says otherwise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import quote, unquote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, Resource, TextContent
from pydantic import BaseModel, Field

from rag import prompts
from rag.errors import PapersError
from rag.frontends.common import markdown_safe, outgoing, with_references
from rag.index.store import CatalogEntry
from rag.schema import Citation, Grid, LookupHit, PaperRecord, record
from rag.service import Assistant, AssistantHolder, paper_record
from rag.settings import Settings
from rag.text import inert_text

URI_PREFIX = "papers://"


class AskOut(BaseModel):
    answer: str = Field(description="The checked answer with [n] citation markers.")
    lead: str | None = Field(None, description="The direct answer in one line, when the question asks for one thing.")
    abstained: bool = Field(description="True when the abstracts do not contain the answer.")
    mode: str = Field(description="'extractive' (quotes) or 'llm' (generated, then citation-checked).")
    citations: list[Citation] = Field(description="What each [n] points to: the `papers ask --json` records.")
    unsupported: list[str] = Field(description="Answer sentences the citation check could not trace to a source.")
    notice: str | None = Field(None, description="Why the LLM was not used, or that a named paper is outside "
                                                 "the chosen papers.")
    outside_scope: list[str] = Field(default_factory=list, description="Named papers outside `paper_ids`.")
    timings_ms: dict[str, float] = Field(default_factory=dict, description="Where the time went (as `papers ask "
                                                                         "--json` reports it).")


class CiteOut(BaseModel):
    query: str
    results: list[LookupHit] = Field(description="Best first; `strength` says how far a reviewer can rely on it.")


class PaperList(BaseModel):
    total: int = Field(description="Papers in the index.")
    papers: list[dict[str, Any]] = Field(description="Paper records (`papers list --json`, without the abstract), "
                                                     "each with its `uri`.")


@dataclass
class PaperOut(PaperRecord):
    """A paper record (`papers list --json`) and its MCP resource."""

    uri: str = ""


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MARKUP_IN_JSON = {ord("<"): "\\u003c", ord("]"): "\\u005d"}


def json_text(data: Any) -> str:
    """Data as JSON text that no Markdown renderer acts on: inside strings `<` and `]` are written `\\u003c` and
    `\\u005d` (the same data for a JSON reader). Hosts may render a tool's text as Markdown, and JSON keeps
    paper text's `![x](...)`, `<img>` and links as they are (a backslash, written `\\\\`, renders as one backslash
    before them); no tag, image or link can form without `<` or `]`, and JSON's own `]` is never followed by `(`
    or `:`."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return _JSON_STRING.sub(lambda m: m.group(0).translate(_MARKUP_IN_JSON), text)


def _structured(out: Any) -> CallToolResult:
    """Structured content, and the same as JSON text for clients that read only text (both made inert by
    `outgoing`, the serialiser every front end shares)."""
    data = outgoing(out)
    return CallToolResult(content=[TextContent(type="text", text=json_text(data))], structured_content=data)


def paper_uri(paper_id: str) -> str:
    return URI_PREFIX + quote(paper_id, safe="")


def _summary(e: CatalogEntry) -> dict[str, Any]:
    d = record(paper_record(e))
    d.pop("abstract", None)
    return d | {"uri": paper_uri(e.paper_id)}


def paper_markdown(e: CatalogEntry) -> str:
    """A paper resource's text: title, metadata lines, abstract, made inert (`markdown_safe`): a client renders
    the resource as Markdown, and an image or tag from an abstract must not be fetched or run."""
    lines = [f"# {e.title or e.label}", "", f"- id: {e.paper_id}", f"- label: {e.label}"]
    lines += [f"- {name}: {value}" for name, value in (("authors", e.authors), ("venue", e.venue), ("year", e.year),
                                                       ("doi", e.doi), ("key", e.key), ("url", e.url)) if value]
    lines += [f"- source: {e.source}#{e.position}", "", e.text]
    return markdown_safe("\n".join(lines))


def _failed(message: str) -> CallToolResult:
    """A tool error with exactly the CLI's message (raising would prefix it with the SDK's own words)."""
    return CallToolResult(content=[TextContent(type="text", text=inert_text(message))], is_error=True)


class PapersMCP(MCPServer):
    """The MCP server; `list_resources` lists the papers indexed now (a new ingest shows without a restart)."""

    def __init__(self, holder: AssistantHolder) -> None:
        super().__init__("papers", instructions=prompts.MCP_INSTRUCTIONS, log_level="WARNING")
        self.holder = holder

    async def list_resources(self) -> list[Resource]:
        import anyio.to_thread

        try:
            papers = await anyio.to_thread.run_sync(lambda: self.holder.get().papers())
        except PapersError:
            papers = []  # no index yet: nothing to list (the tools say why)
        listed = [Resource(uri=paper_uri(e.paper_id), name=inert_text(e.label), title=inert_text(e.title or e.label),
                           description=inert_text(f"Abstract and metadata of {e.label} ({e.source}#{e.position})"),
                           mime_type="text/markdown") for e in papers]
        return listed + await super().list_resources()


def build_server(settings: Settings, assistant: Assistant | None = None) -> PapersMCP:
    """The MCP server with its tools and resources, answering with `assistant` (made on first use if None)."""
    holder = AssistantHolder(settings, assistant)
    server = PapersMCP(holder)
    _add_answer_tools(server, holder)
    _add_paper_tools(server, holder)
    return server


def _add_answer_tools(server: PapersMCP, holder: AssistantHolder) -> None:
    """The tools that answer: `ask`, `cite` and `grid`."""

    @server.tool(description=prompts.TOOL_DESCRIPTION)
    def ask(question: Annotated[str, Field(description="The question about the papers.")],
            k: Annotated[int | None, Field(ge=1, le=50, description="Papers to retrieve (default 5).")] = None,
            paper_ids: Annotated[list[str] | None, Field(description="Answer only from these papers.")] = None,
            mode: Annotated[Literal["auto", "extractive", "llm"] | None,
                            Field(description="Answer mode (default: the server's setting).")] = None,
            ) -> Annotated[CallToolResult, AskOut]:
        try:
            answer = holder.get().conversation().ask(question, k=k, paper_ids=paper_ids, mode=mode)
        except PapersError as e:
            return _failed(str(e))
        out = AskOut(answer=answer.answer, lead=answer.lead, abstained=answer.abstained, mode=answer.mode,
                     citations=answer.citations, unsupported=[u["sentence"] for u in answer.unsupported],
                     notice=answer.notice, outside_scope=answer.outside_scope,
                     timings_ms={k: round(v, 1) for k, v in answer.timings_ms.items()})
        # The text is what hosts show and models repeat: active Markdown from paper text is neutralised there.
        return CallToolResult(content=[TextContent(type="text", text=markdown_safe(with_references(answer)))],
                              structured_content=outgoing(out))

    @server.tool(description="Citation lookup: the papers that match a method name, claim or topic, best first, "
                             "each with its best-matching sentence, how strongly it matches and a reference line.")
    def cite(query: Annotated[str, Field(description="A method name, claim or topic.")],
             k: Annotated[int | None, Field(ge=1, le=50, description="How many papers (default 5).")] = None,
             ) -> Annotated[CallToolResult, CiteOut]:
        try:
            hits = holder.get().cite(query, k=k)
        except PapersError as e:
            return _failed(str(e))
        return _structured(CiteOut(query=query, results=hits))

    @server.tool(description="The papers grid: papers as rows, questions as columns (default: problem, method, "
                             "data, result, limitation); each cell is the paper's sentence for the column, with a "
                             "direct-answer span where one exists, or 'not stated'.")
    def grid(columns: Annotated[list[str] | None, Field(description="Columns: problem, method, data, result, "
                                                                    "limitation, or any question.")] = None,
             paper_ids: Annotated[list[str] | None, Field(description="Rows: these papers (default all).")] = None,
             lookup: Annotated[str | None, Field(description="Rows: the papers matching this lookup query.")] = None,
             ) -> Annotated[CallToolResult, Grid]:
        from rag.answer.grid import grid_markdown

        try:
            table = holder.get().grid(columns, paper_ids, lookup)
        except PapersError as e:
            return _failed(str(e))
        return CallToolResult(content=[TextContent(type="text", text=inert_text(grid_markdown(table)))],
                              structured_content=outgoing(table))


def _add_paper_tools(server: PapersMCP, holder: AssistantHolder) -> None:
    """The tools and the resource that show papers: `list_papers`, `get_paper` and `papers://{paper_id}`."""

    @server.tool(description="The indexed papers (id, label, title, authors, year, venue, DOI, key, source), in "
                             "source order.")
    def list_papers(limit: Annotated[int, Field(ge=1, le=10_000, description="At most this many.")] = 200,
                    offset: Annotated[int, Field(ge=0, description="Skip this many first.")] = 0,
                    ) -> Annotated[CallToolResult, PaperList]:
        try:
            papers = holder.get().papers()
        except PapersError as e:
            return _failed(str(e))
        return _structured(PaperList(total=len(papers), papers=[_summary(e) for e in papers[offset:offset + limit]]))

    @server.tool(description="One paper's abstract and metadata, by its paper id (from list_papers, cite or ask).")
    def get_paper(paper_id: Annotated[str, Field(description="The paper id.")]) -> Annotated[CallToolResult, PaperOut]:
        try:
            entry = holder.get().paper(paper_id)
        except PapersError as e:
            return _failed(str(e))
        if entry is None:
            return _failed(prompts.UNKNOWN_PAPER.format(paper_id=paper_id))
        return _structured(PaperOut(**record(paper_record(entry)), uri=paper_uri(entry.paper_id)))

    @server.resource(URI_PREFIX + "{paper_id}", name="paper", mime_type="text/markdown",
                     description="A paper's abstract and metadata.")
    def paper_resource(paper_id: str) -> str:
        try:
            entry = holder.get().paper(unquote(paper_id))
        except PapersError as e:
            raise ResourceNotFoundError(str(e)) from None
        if entry is None:
            raise ResourceNotFoundError(prompts.UNKNOWN_PAPER.format(paper_id=unquote(paper_id)))
        return paper_markdown(entry)


def run(settings: Settings, http: bool = False, port: int | None = None) -> None:
    """Serve over stdio, or over streamable HTTP at http://HOST:PORT/mcp."""
    server = build_server(settings)
    server.holder.warm_up_in_background()
    if http:
        server.run("streamable-http", host=settings.mcp_host, port=port or settings.mcp_port)
    else:
        server.run()
