"""`papers mcp`: the official MCP SDK client over stdio and over streamable HTTP (initialize, list tools, call each,
read a resource), and error results carrying the CLI's messages."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from rag.frontends.mcp_server import build_server, paper_uri
from tests.conftest import free_port, make_settings

from .helpers import ROOT, papers_command, papers_env, start, stop

RECMEM_Q = "Over how many test steps does RecMem stay stable?"
TOOLS = {"ask", "cite", "grid", "list_papers", "get_paper"}


def cli_error(settings, *args: str) -> str:
    """What `papers` prints on stderr for a failing command, without the `error: ` prefix."""
    out = subprocess.run(papers_command(*args), capture_output=True, text=True, env=papers_env(settings), cwd=ROOT,
                         timeout=300)
    assert out.returncode != 0
    return out.stderr.strip().removeprefix("error: ")


async def exercise(client: Client, assistant) -> None:
    """Every tool and a resource, through one connected client."""
    assert client.server_info is not None and client.server_info.name == "papers"
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.description and t.input_schema["type"] == "object" and t.output_schema
    assert tools["ask"].input_schema["required"] == ["question"]
    assert set(tools["ask"].input_schema["properties"]) == {"question", "k", "paper_ids", "mode"}
    assert {"answer", "citations", "abstained"} <= set(tools["ask"].output_schema["properties"])

    r = await client.call_tool("ask", {"question": RECMEM_Q})
    expected = assistant.ask(RECMEM_Q)
    assert not r.is_error and r.structured_content["answer"] == expected.answer
    cites = r.structured_content["citations"]
    assert [(c["n"], c["paper_id"], c["quote"]) for c in cites] == [(c.n, c.paper_id, c.quote)
                                                                   for c in expected.citations]
    assert cites[0]["label"] == "RecMem" and {"title", "reference", "source"} <= set(cites[0])
    text = r.content[0].text
    assert text.startswith(expected.answer) and "References:" in text and cites[0]["paper_id"] in text

    r = await client.call_tool("cite", {"query": "Dynamic Motion Slider", "k": 3})
    hits = r.structured_content["results"]
    assert not r.is_error and len(hits) == 3 and hits[0]["label"] == "DyMoS" and hits[0]["sentence"]

    r = await client.call_tool("list_papers", {"limit": 5, "offset": 2})
    listing = r.structured_content
    assert listing["total"] == 38 and len(listing["papers"]) == 5
    every = [e.paper_id for e in assistant.papers()]
    assert [p["paper_id"] for p in listing["papers"]] == every[2:7]

    first = listing["papers"][0]
    r = await client.call_tool("get_paper", {"paper_id": first["paper_id"]})
    paper = r.structured_content
    assert not r.is_error and paper["label"] == first["label"] and len(paper["abstract"]) > 200

    resources = (await client.list_resources()).resources
    assert len(resources) == 38 and {str(x.uri) for x in resources} == {paper_uri(p) for p in every}
    read = await client.read_resource(first["uri"])
    assert paper["abstract"] in read.contents[0].text and read.contents[0].mime_type == "text/markdown"

    # Errors: MCP tool errors with the CLI's messages; an unknown resource is a protocol error.
    r = await client.call_tool("ask", {"question": "   "})
    assert r.is_error and r.content[0].text == "empty question: type a question about the papers"
    r = await client.call_tool("get_paper", {"paper_id": "no-such-paper"})
    assert r.is_error and "no-such-paper" in r.content[0].text
    r = await client.call_tool("ask", {"question": RECMEM_Q, "k": 0})  # the input schema is enforced
    assert r.is_error
    with pytest.raises(Exception, match="no-such-paper"):
        await client.read_resource(paper_uri("no-such-paper"))


def test_errors_carry_the_cli_messages(corpus_settings, tmp_path: Path) -> None:
    """Same text as the CLI for a bad question and for a missing index (in-process client: fast)."""
    bad_question = cli_error(corpus_settings, "ask", "  ")
    empty = make_settings(tmp_path / "empty")
    no_index = cli_error(empty, "ask", RECMEM_Q)
    assert "papers ingest" in no_index

    async def run() -> tuple[str, str, int]:
        async with Client(build_server(corpus_settings)) as client:
            a = (await client.call_tool("ask", {"question": "  "})).content[0].text
        async with Client(build_server(empty)) as client:
            b = (await client.call_tool("ask", {"question": RECMEM_Q})).content[0].text
            listed = len((await client.list_resources()).resources)
        return a, b, listed

    a, b, listed = asyncio.run(run())
    assert a == bad_question and b == no_index and listed == 0


@pytest.mark.slow
def test_stdio(corpus_settings, assistant) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag.frontends.cli", "mcp"], cwd=str(ROOT),
                                   env=papers_env(corpus_settings))

    async def run() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=300) as client:  # the initialize handshake
            await exercise(client, assistant)

    asyncio.run(run())


@pytest.mark.slow
def test_streamable_http(corpus_settings, assistant, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = start(papers_command("mcp", "--http", "--port", str(port)), papers_env(corpus_settings), url,
                 tmp_path / "mcp.log")
    try:
        async def run() -> None:
            async with Client(url, mode="legacy", read_timeout_seconds=300) as client:
                await exercise(client, assistant)
            async with Client(url, read_timeout_seconds=300) as client:  # the SDK's default negotiation
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS

        asyncio.run(run())
    finally:
        stop(proc)
    assert "Traceback" not in (tmp_path / "mcp.log").read_text()
