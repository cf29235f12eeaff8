"""The MCP `grid` tool, through the SDK's in-process client: structured grid records and a Markdown table."""

from __future__ import annotations

import asyncio

from mcp import Client

from rag.frontends.mcp_server import build_server


def test_grid_tool(corpus_settings, assistant) -> None:
    ids = [e.paper_id for e in assistant.papers()][:2]

    async def run():
        async with Client(build_server(corpus_settings, assistant)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            ok = await client.call_tool("grid", {"paper_ids": ids, "columns": ["problem", "result"]})
            bad = await client.call_tool("grid", {"paper_ids": ["no-such-paper"]})
            return tools["grid"], ok, bad

    tool, ok, bad = asyncio.run(run())
    assert {"columns", "paper_ids", "lookup"} == set(tool.input_schema["properties"]) and tool.output_schema
    assert not ok.is_error
    d = ok.structured_content
    expected = assistant.grid(["problem", "result"], ids)
    assert d["columns"] == ["problem", "result"] and [r["paper_id"] for r in d["rows"]] == ids
    assert [c["text"] for c in d["rows"][0]["cells"]] == [c.text for c in expected.rows[0].cells]
    assert ok.content[0].text.startswith("| paper | problem | result |")
    assert bad.is_error and "no-such-paper" in bad.content[0].text
