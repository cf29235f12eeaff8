"""LlamaIndex-native retrieval and answering: `PapersRetriever` (a `BaseRetriever`) and `PapersQueryEngine`
(a `CustomQueryEngine`).

Adapters over the one assistant (rag.service): `PapersRetriever` retrieves with the assistant's retriever (so
its nodes are the papers `papers ask` answers from, and LlamaIndex instrumentation sees its retrievals), and
`PapersQueryEngine` answers through a `Conversation` of the assistant, as `papers ask` does. An answer from the
query engine is the `papers ask` answer by construction; the engine only converts it: `Response.response` is
the checked answer text, `source_nodes` are the cited papers in citation order ([1] first),
`metadata["citations"]` the citation list, and `str(response)` the text with a reference list (what a
`QueryEngineTool` hands an agent).

    from rag.frontends.llamaindex import PapersQueryEngine, PapersRetriever
    engine = PapersQueryEngine.from_settings(load_settings())
    response = engine.query("Which paper proposes ReLoop?")
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import AsyncStreamingResponse, Response, StreamingResponse
from llama_index.core.bridge.pydantic import Field
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag import prompts
from rag.answer.retrieve import PaperHit, Retrieval, Retriever
from rag.frontends.common import with_references
from rag.index.store import CatalogEntry
from rag.schema import Answer, StreamEvent, record
from rag.service import StreamView, open_assistant
from rag.settings import Settings

# Shown to an LLM that reads a node (id, label, title, authors, year, venue); where it is stored is not.
_NOT_FOR_LLM = ["source", "position", "url", "reference", "quote"]


def paper_node(paper: PaperHit | CatalogEntry, score: float | None = None, **extra: Any) -> NodeWithScore:
    """A paper as a LlamaIndex node: the abstract as text, its catalog fields and label as metadata."""
    metadata = {"paper_id": paper.paper_id, "label": paper.label, "title": paper.title, "authors": paper.authors,
                "year": paper.year, "venue": paper.venue, "doi": paper.doi, "key": paper.key, "url": paper.url,
                "source": paper.source, "position": paper.position}
    metadata.update(extra)
    node = TextNode(id_=paper.paper_id, text=paper.text, metadata=metadata,
                    excluded_embed_metadata_keys=list(metadata), excluded_llm_metadata_keys=_NOT_FOR_LLM)
    return NodeWithScore(node=node, score=score)


class PapersRetriever(BaseRetriever):
    """Hybrid retrieval (dense + BM25, fused, grouped per paper) as a LlamaIndex retriever: one node per paper.

    Scores are the fused reciprocal-rank scores the assistant ranks by. `last_retrieval` keeps the full result of
    the latest call (chunks and their similarities, which the answerer needs); use one instance per question
    when reading it from several threads.
    """

    def __init__(self, retriever: Retriever, k: int | None = None, paper_ids: list[str] | None = None,
                 callback_manager: CallbackManager | None = None) -> None:
        super().__init__(callback_manager=callback_manager)
        self.papers_retriever = retriever
        self.k = k
        self.paper_ids = paper_ids or None
        self.last_retrieval: Retrieval | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> PapersRetriever:
        return cls(Retriever(settings), **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        retrieval = self.papers_retriever.retrieve(query_bundle.query_str, k=self.k, paper_ids=self.paper_ids)
        self.last_retrieval = retrieval
        return [paper_node(p, p.score) for p in retrieval.papers]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)  # Chroma and the embedder block

    def retrieve_papers(self, question: str) -> Retrieval:
        """`retrieve` (with LlamaIndex's callbacks and events), returning the assistant's full result."""
        self.retrieve(question)
        assert self.last_retrieval is not None
        return self.last_retrieval


@dataclass
class CitedResponse(Response):
    """A `Response` whose string form ends with the reference list, so tools that read only text keep sources."""

    def __str__(self) -> str:
        answer = (self.metadata or {}).get("answer")
        return with_references(answer) if answer is not None else super().__str__()


class PapersQueryEngine(CustomQueryEngine):
    """Answers with checked citations, as `papers ask` does; sync, async, and streaming (`streaming=True`)."""

    assistant: Any = Field(description="The rag.service.Assistant that answers (holds store, models and BM25).")
    k: int | None = Field(None, description="Papers to retrieve (default PAPERS_TOP_K).")
    paper_ids: list[str] | None = Field(None, description="Restrict answers to these paper ids.")
    mode: str | None = Field(None, description="extractive, llm or auto (default PAPERS_ANSWER_MODE).")
    streaming: bool = Field(False, description="Return a StreamingResponse (tokens as they are generated).")

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> PapersQueryEngine:
        return cls(assistant=open_assistant(settings), **kwargs)

    @property
    def retriever(self) -> PapersRetriever:
        """The retriever this engine answers from, with the same options."""
        return PapersRetriever(self.assistant.retriever, k=self.k, paper_ids=self.paper_ids,
                               callback_manager=self.callback_manager)

    def _options(self) -> dict[str, Any]:
        return {"k": self.k, "paper_ids": self.paper_ids, "mode": self.mode}

    def custom_query(self, query_str: str) -> Response | StreamingResponse:
        if self.streaming:
            return self._streaming(self.assistant.conversation().stream(query_str, **self._options()))
        return self.to_response(self.assistant.conversation().ask(query_str, **self._options()))

    async def acustom_query(self, query_str: str) -> Response | AsyncStreamingResponse:
        if self.streaming:
            return await self._astreaming(self.assistant.conversation().stream(query_str, **self._options()))
        answer = await asyncio.to_thread(self.assistant.conversation().ask, query_str, **self._options())
        return self.to_response(answer)

    # --- conversion ---------------------------------------------------------------------------------

    def source_nodes(self, answer: Answer) -> list[NodeWithScore]:
        """The cited papers in citation order, each with its citation number and quote."""
        scores = {r.paper_id: r.score for r in answer.retrieved}
        nodes = []
        for c in answer.citations:
            entry = self.assistant.paper(c.paper_id)
            if entry is not None:
                nodes.append(paper_node(entry, scores.get(c.paper_id), citation=c.n, quote=c.quote,
                                        reference=c.reference))
        return nodes

    def metadata(self, answer: Answer) -> dict[str, Any]:
        return {"answer": answer, "citations": [record(c) for c in answer.citations], "abstained": answer.abstained,
                "mode": answer.mode, "lead": answer.lead, "notice": answer.notice, "unsupported": answer.unsupported,
                "retrieved": [record(r) for r in answer.retrieved]}

    def to_response(self, answer: Answer) -> CitedResponse:
        return CitedResponse(response=answer.answer, source_nodes=self.source_nodes(answer),
                             metadata=self.metadata(answer))

    def _fill(self, response: StreamingResponse | AsyncStreamingResponse, answer: Answer) -> None:
        """When the stream ends: the checked answer's sources and citations (the text streamed was the draft)."""
        response.source_nodes[:] = self.source_nodes(answer)
        response.metadata = self.metadata(answer)

    def _streaming(self, events: Iterator[StreamEvent]) -> StreamingResponse:
        first = next(events)  # validates the question now, so a bad one raises here rather than mid-iteration
        response: StreamingResponse

        def tokens() -> Generator[str, None, None]:
            view = StreamView()
            for event in itertools.chain([first], events):
                if text := view.feed(event):
                    yield text
                if view.answer is not None:
                    self._fill(response, view.answer)

        response = StreamingResponse(response_gen=tokens(), source_nodes=[], metadata={})
        return response

    async def _astreaming(self, events: Iterator[StreamEvent]) -> AsyncStreamingResponse:
        """The same stream, each step pulled in a worker thread so the event loop is never blocked."""
        first = await asyncio.to_thread(next, events)
        response: AsyncStreamingResponse

        async def tokens() -> AsyncGenerator[str, None]:
            view = StreamView()
            event: StreamEvent | None = first
            while event is not None:
                if text := view.feed(event):
                    yield text
                if event.kind == "final" and view.answer is not None:
                    self._fill(response, view.answer)
                event = await asyncio.to_thread(next, events, None)

        response = AsyncStreamingResponse(response_gen=tokens(), source_nodes=[], metadata={})
        return response


def query_engine_tool(engine: PapersQueryEngine, name: str = "papers",
                      description: str | None = None) -> Any:
    """The engine as a `QueryEngineTool` for a LlamaIndex agent."""
    from llama_index.core.tools import QueryEngineTool

    return QueryEngineTool.from_defaults(engine, name=name, description=description or prompts.TOOL_DESCRIPTION)
