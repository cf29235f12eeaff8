"""rag/frontends/llamaindex.py: the LlamaIndex retriever and query engine on the seed corpus, the same answers as
`papers ask`, and the engine as a QueryEngineTool of a real LlamaIndex agent whose LLM is the llama.cpp server."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.schema import NodeWithScore

from rag.errors import QuestionError
from rag.frontends.llamaindex import PapersQueryEngine, PapersRetriever, query_engine_tool
from tests.conftest import LlamaServer, llm_settings

from .helpers import ROOT, papers_command, papers_env, seed_questions

RECMEM_Q = "Over how many test steps does RecMem stay stable?"


def test_retriever_returns_one_node_per_paper_with_metadata(assistant) -> None:
    retriever = PapersRetriever(assistant.retriever, k=4)
    nodes = retriever.retrieve(RECMEM_Q)
    direct = assistant.retriever.retrieve(RECMEM_Q, k=4)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [p.paper_id for p in direct.papers]
    assert [n.score for n in nodes] == pytest.approx([p.score for p in direct.papers])
    top = nodes[0].node
    assert top.metadata["label"] == "RecMem" and top.metadata["paper_id"] == direct.papers[0].paper_id
    assert {"title", "authors", "year", "source", "position"} <= set(top.metadata)
    assert "1,800 test steps" in top.get_content()
    # The metadata an LLM sees when it reads the node names the paper, not where it is stored.
    llm_view = top.get_content(metadata_mode="llm")
    assert "label: RecMem" in llm_view and "source:" not in llm_view
    # Restricted to chosen papers, and async.
    other = direct.papers[1].paper_id
    assert [n.node.node_id for n in PapersRetriever(assistant.retriever, paper_ids=[other]).retrieve(RECMEM_Q)] == [
        other]
    anodes = asyncio.run(retriever.aretrieve(RECMEM_Q))
    assert [n.node.node_id for n in anodes] == [n.node.node_id for n in nodes]


class _Recorder(BaseEventHandler):
    events: list[BaseEvent] = []

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


def test_the_retriever_gives_the_papers_ask_retrieves(assistant) -> None:
    """`PapersRetriever` retrieves exactly the papers `papers ask` answers from, and LlamaIndex instrumentation sees
    its retrievals (retrieval events carry its nodes)."""
    recorder = _Recorder(events=[])
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(recorder)
    try:
        nodes = PapersRetriever(assistant.retriever).retrieve(RECMEM_Q)
    finally:
        dispatcher.event_handlers.remove(recorder)
    answer = assistant.ask(RECMEM_Q)
    assert [n.node.node_id for n in nodes] == [r.paper_id for r in answer.retrieved]
    assert [round(n.score, 4) for n in nodes] == [r["score"] for r in answer.to_dict()["retrieved"]]
    ends = [e for e in recorder.events if isinstance(e, RetrievalEndEvent)]
    assert len(ends) == 1 and [n.node.node_id for n in ends[0].nodes] == [n.node.node_id for n in nodes]


def test_query_engine_gives_the_papers_ask_answers(assistant, corpus_settings) -> None:
    """10 hand-written questions: the engine's text, citations and source nodes equal `papers ask --json`."""
    questions = seed_questions(10)
    out = subprocess.run(papers_command("ask", "--json", "-"), input="\n".join(questions), capture_output=True,
                         text=True, env=papers_env(corpus_settings), cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    cli = [json.loads(line) for line in out.stdout.splitlines()]
    assert [c["question"] for c in cli] == questions
    engine = PapersQueryEngine(assistant=assistant)
    abstained = 0
    for q, expected in zip(questions, cli):
        response = engine.query(q)
        assert response.response == expected["answer"], q
        cited = [(c["n"], c["paper_id"], c["quote"]) for c in expected["citations"]]
        assert [(c["n"], c["paper_id"], c["quote"]) for c in response.metadata["citations"]] == cited, q
        assert [n.node.node_id for n in response.source_nodes] == [c[1] for c in cited], q  # citation order
        assert [n.node.metadata["citation"] for n in response.source_nodes] == [c[0] for c in cited]
        assert response.metadata["abstained"] == expected["abstained"]
        abstained += expected["abstained"]
        if cited:  # what a QueryEngineTool hands an agent: the answer, then the references
            text = str(response)
            assert text.startswith(expected["answer"]) and "References:" in text
            assert all(f"[{n}] " in text.split("References:")[1] for n, _, _ in cited)
    assert 0 < abstained < len(questions)  # the set has answered and unanswerable questions


def test_streaming_and_async_give_the_same_answer(assistant) -> None:
    engine = PapersQueryEngine(assistant=assistant)
    plain = engine.query(RECMEM_Q)
    streaming = PapersQueryEngine(assistant=assistant, streaming=True).query(RECMEM_Q)
    assert streaming.metadata == {}  # filled when the stream ends
    pieces = list(streaming.response_gen)
    assert len(pieces) > 3 and "".join(pieces) == plain.response
    assert streaming.metadata["citations"] == plain.metadata["citations"]
    assert [n.node.node_id for n in streaming.source_nodes] == [n.node.node_id for n in plain.source_nodes]

    async def run() -> tuple[Any, str, Any]:
        a = await engine.aquery(RECMEM_Q)
        s = await PapersQueryEngine(assistant=assistant, streaming=True).aquery(RECMEM_Q)
        text = "".join([t async for t in s.async_response_gen()])
        return a, text, s

    a, text, s = asyncio.run(run())
    assert a.response == plain.response and text == plain.response
    assert s.metadata["citations"] == plain.metadata["citations"]


def test_engine_options_and_bad_questions(assistant) -> None:
    some = assistant.retriever.retrieve("ReLoop", k=1).papers[0].paper_id
    scoped = PapersQueryEngine(assistant=assistant, paper_ids=[some], k=1).query("Which paper proposes ReLoop?")
    assert [r["paper_id"] for r in scoped.metadata["retrieved"]] == [some]
    with pytest.raises(QuestionError, match="empty question"):
        PapersQueryEngine(assistant=assistant).query("   ")
    with pytest.raises(QuestionError, match="empty question"):  # streaming: at query time, not mid-iteration
        PapersQueryEngine(assistant=assistant, streaming=True).query("   ")
    with pytest.raises(QuestionError, match="LLM mode needs"):
        PapersQueryEngine(assistant=assistant, mode="llm").query(RECMEM_Q)


@pytest.mark.slow
def test_query_engine_tool_in_a_llamaindex_agent(corpus_settings, llama_server: LlamaServer) -> None:
    """A FunctionAgent whose LLM is SmolLM2 on llama.cpp calls the papers tool and returns its cited answer."""
    from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
    from llama_index.llms.openai_like import OpenAILike

    from rag.service import Assistant

    settings = llm_settings(corpus_settings, llama_server.url)
    engine = PapersQueryEngine(assistant=Assistant(settings), mode="extractive")
    tool = query_engine_tool(engine)
    tool.metadata.return_direct = True  # the agent's final answer is the tool's cited answer, unreworded
    llm = OpenAILike(api_base=llama_server.url, api_key="unused", model="smollm2", is_chat_model=True,
                     is_function_calling_model=True, context_window=2048, max_tokens=128, timeout=120, temperature=0)
    agent = FunctionAgent(tools=[tool], llm=llm, streaming=False, initial_tool_choice=tool.metadata.name,
                          system_prompt="Call the papers tool with the user's question, copied word for word.")

    async def run() -> tuple[Any, list[ToolCallResult]]:
        handler = agent.run(user_msg=RECMEM_Q)
        calls = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
        return await handler, calls

    result, calls = asyncio.run(run())
    # The protocol: one call of the papers tool, its output our cited Response, returned as the agent's answer.
    assert [c.tool_name for c in calls] == ["papers"] and not calls[0].tool_output.is_error
    query = calls[0].tool_kwargs["input"]
    assert isinstance(query, str) and query.strip()
    response = calls[0].tool_output.raw_output
    final = str(result.response.content)
    assert final == str(response) == str(engine.query(query))  # what the engine itself answers for that input
    citations = response.metadata["citations"]
    assert response.metadata["abstained"] == (not citations)
    if citations:  # SmolLM2 writes the tool's input: a garbled query may rightly get the abstention
        assert "[1]" in final and "References:" in final and citations[0]["paper_id"] in final
    else:
        assert final == response.response and "References:" not in final
