"""One record everywhere: for the same questions, `papers ask --json`, `/v1/chat/completions`, the MCP `ask` tool and
the LlamaIndex query engine carry the same citation records, field by field (metadata, page, section, key, DOI);
lookup hits and paper records likewise. And `/v1` behaves as OpenAI clients expect (usage, model route, error
shapes, n > 1 refused)."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from rag.frontends.llamaindex import PapersQueryEngine
from rag.frontends.mcp_server import build_server
from rag.frontends.openai_api import create_app
from rag.schema import record

from .helpers import ROOT, papers_command, papers_env

QUESTIONS = ["Over how many test steps does RecMem stay stable?", "Compare RSPO and RICE-PO",
             "Which paper proposes ReLoop?", "Which papers study test-time scaling?"]


@pytest.fixture(scope="module")
def cli_records(corpus_settings) -> list[dict]:
    out = subprocess.run(papers_command("ask", "--json", "-"), input="\n".join(QUESTIONS), capture_output=True,
                         text=True, env=papers_env(corpus_settings), cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_every_front_end_carries_the_same_citation_record(assistant, corpus_settings, cli_records) -> None:
    api = TestClient(create_app(corpus_settings, assistant))

    async def mcp_citations() -> list[list[dict]]:
        async with Client(build_server(corpus_settings, assistant)) as client:
            return [(await client.call_tool("ask", {"question": q})).structured_content["citations"]
                    for q in QUESTIONS]

    from_mcp = asyncio.run(mcp_citations())
    engine = PapersQueryEngine(assistant=assistant)
    for i, q in enumerate(QUESTIONS):
        cli = cli_records[i]["citations"]
        assert cli and set(cli[0]) >= {"n", "paper_id", "label", "quote", "reference", "title", "authors", "year",
                                       "venue", "doi", "url", "key", "page", "section"}, q
        reply = api.post("/v1/chat/completions", json={"model": "papers", "messages": [{"role": "user",
                                                                                       "content": q}]}).json()
        assert reply["citations"] == cli and reply["choices"][0]["citations"] == cli, q
        assert from_mcp[i] == cli, q
        assert engine.query(q).metadata["citations"] == cli, q
        assert [record(c) for c in assistant.ask(q).citations] == cli, q


def test_lookup_hits_and_paper_records_are_the_same_everywhere(assistant, corpus_settings) -> None:
    query = "Dynamic Motion Slider"
    out = subprocess.run(papers_command("cite", "--json", query), capture_output=True, text=True,
                         env=papers_env(corpus_settings), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    cli_hits = json.loads(out.stdout)["results"]
    assert cli_hits[0]["label"] == "DyMoS" and {"strength", "evidence", "doi", "key", "title"} <= set(cli_hits[0])

    async def mcp_calls() -> tuple[dict, dict]:
        async with Client(build_server(corpus_settings, assistant)) as client:
            hits = (await client.call_tool("cite", {"query": query})).structured_content
            paper = (await client.call_tool("get_paper", {"paper_id": cli_hits[0]["paper_id"]})).structured_content
            return hits, paper

    hits, paper = asyncio.run(mcp_calls())
    assert hits["results"] == cli_hits
    listed = subprocess.run(papers_command("list", "--json"), capture_output=True, text=True,
                            env=papers_env(corpus_settings), cwd=ROOT, timeout=300)
    cli_paper = next(json.loads(x) for x in listed.stdout.splitlines() if json.loads(x)["paper_id"] ==
                     cli_hits[0]["paper_id"])
    assert {k: v for k, v in paper.items() if k != "uri"} == cli_paper and paper["uri"].startswith("papers://")


def test_v1_conformance(assistant, corpus_settings) -> None:
    api = TestClient(create_app(corpus_settings, assistant))
    body = {"model": "papers", "messages": [{"role": "user", "content": QUESTIONS[0]}]}
    reply = api.post("/v1/chat/completions", json=body).json()
    usage = reply["usage"]
    assert usage["prompt_tokens"] > 5 and usage["completion_tokens"] > 10
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    with api.stream("POST", "/v1/chat/completions",
                    json=body | {"stream": True, "stream_options": {"include_usage": True}}) as r:
        chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 10
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop" and chunks[-2]["citations"] == reply["citations"]
    assert api.get("/v1/models/papers").json()["id"] == "papers"
    missing = api.get("/v1/models/gpt-4o")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
    two = api.post("/v1/chat/completions", json=body | {"n": 2})
    assert two.status_code == 400 and two.json()["error"]["param"] == "n"
    bad = api.post("/v1/chat/completions", json={"model": "papers", "messages": []})
    assert bad.status_code == 400 and set(bad.json()["error"]) == {"message", "type", "code", "param"}
    assert "messages" in bad.json()["error"]["message"]
    unknown = api.post("/v1/chat/completions", json=body | {"paper_ids": ["nope"]})
    assert unknown.status_code == 400 and "no indexed paper has id 'nope'" in unknown.json()["error"]["message"]


def test_v1_follow_up_from_the_history_a_client_sends(assistant, corpus_settings) -> None:
    """A chat client sends the whole history: the follow-up is resolved from it, also by a server that never
    answered the earlier turn (restarted: its reply text names the paper)."""
    for app in (create_app(corpus_settings, assistant), create_app(corpus_settings, assistant)):
        api = TestClient(app)
        first = api.post("/v1/chat/completions", json={"messages": [{"role": "user", "content":
                                                                     "What speedup does CoRF report?"}]}).json()
        text = first["choices"][0]["message"]["content"]
        fresh = TestClient(create_app(corpus_settings, assistant))  # knows nothing of the first reply
        for client in (api, fresh):
            follow = client.post("/v1/chat/completions", json={"messages": [
                {"role": "user", "content": "What speedup does CoRF report?"},
                {"role": "assistant", "content": text},
                {"role": "user", "content": "and how much memory does it save?"}]}).json()
            assert "CoRF" in follow["papers"]["rewritten"] and follow["citations"][0]["label"] == "CoRF"
            assert "10.0×" in follow["choices"][0]["message"]["content"]
