"""Generated answers through a real llama.cpp server (SmolLM2-135M): shape, streaming, checks, fallbacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag import prompts
from rag.answer.cite import UNSUPPORTED_MARK, SourceText, check_answer
from rag.answer.llm import LLMConfigError, is_local_url
from rag.answer.render import sources_for
from rag.service import Assistant, Conversation
from rag.answer.retrieve import Retriever
from rag.settings import load_settings

from tests.conftest import DATA, LlamaServer, free_port, llm_answered, llm_settings

QUESTION = "What speedup does CoRF report?"


def assert_answer_shape(a) -> None:
    retrieved = {r.paper_id for r in a.retrieved}
    assert isinstance(a.answer, str) and a.answer.strip()
    assert {c.paper_id for c in a.citations} <= retrieved
    assert [c.n for c in a.citations] == list(range(1, len(a.citations) + 1))
    assert all(check.reason for check in a.checks)
    for u in a.unsupported:  # every flagged sentence is visibly marked in the text (policy "mark")
        assert f"{UNSUPPORTED_MARK} {u['sentence']}" in a.answer


@pytest.mark.slow
def test_llm_answer_non_streaming(corpus_settings, llama_server: LlamaServer) -> None:
    a = Assistant(llm_settings(corpus_settings, llama_server.url)).ask(QUESTION)
    assert llm_answered(a) and (a.notice is None) == (a.mode == "llm")
    assert_answer_shape(a)
    assert a.timings_ms["check_ms"] < 1000


@pytest.mark.slow
def test_llm_answer_streaming(corpus_settings, llama_server: LlamaServer) -> None:
    events = list(Assistant(llm_settings(corpus_settings, llama_server.url)).stream(QUESTION))
    kinds = [e.kind for e in events]
    resets = [i for i, k in enumerate(kinds) if k == "reset"]
    assert kinds[-1] == "final" and len(resets) <= 1
    a = events[-1].answer
    streamed = [e.text for e in events[:resets[0] if resets else -1] if e.kind == "token"]
    assert llm_answered(a) and len(streamed) > 1 and "".join(streamed) == a.raw_answer
    assert a.timings_ms["first_token_ms"] > 0
    if a.mode != "llm":  # the model's text was withdrawn, then the extractive answer streamed in full
        assert resets and events[resets[0]].text == a.notice
        assert "".join(e.text for e in events[resets[0]:] if e.kind == "token") == a.answer
    else:
        assert not resets
    assert_answer_shape(a)


@pytest.mark.slow
def test_real_smollm2_output_is_checked(corpus_settings, llama_server: LlamaServer) -> None:
    """What the model really writes is never passed on unchecked: no kept sentence lacks a valid citation."""
    assistant = Assistant(llm_settings(corpus_settings, llama_server.url))
    for q in ["how many expert trajectories does RTCBench release?", "By how much do the ReasoningShield "
              "models beat LlamaGuard-4?"]:
        a = assistant.ask(q)
        assert_answer_shape(a)
        for check in a.checks:
            if check.supported and check.reason != "abstention":
                assert check.citations, check


def test_recorded_smollm2_answers() -> None:
    """Real SmolLM2 answers recorded by benchmarks/llm_check.py, re-checked deterministically."""
    records = [json.loads(x) for x in (DATA / "smollm2_answers.jsonl").read_text().splitlines() if x.strip()]
    removed = invented = 0
    for r in records:
        sources = [SourceText(s["n"], s["label"], s["sentences"]) for s in r["sources"]]
        result = check_answer(r["raw_answer"], sources)
        removed += len(result.removed_citations)
        invented += sum("number in no source" in c.reason or "number not in cited" in c.reason
                        for c in result.checks)
        assert all(not c.supported or c.citations or c.reason == "abstention" for c in result.checks)
    assert removed >= 3 and invented >= 5, (removed, invented)
    by_q = {r["question"]: r for r in records}
    corf = by_q["what's the max speedup CoRF reports?"]
    result = check_answer(corf["raw_answer"], [SourceText(s["n"], s["label"], s["sentences"])
                                               for s in corf["sources"]])
    assert "1.97" in result.checks[0].reason  # the paper says 5.9x; the model made up 1.97x


@pytest.mark.slow
def test_fallback_when_server_stops_and_when_nothing_listens(corpus_settings, tmp_path: Path) -> None:
    server = LlamaServer(tmp_path)
    server.start()
    assistant = Assistant(llm_settings(corpus_settings, server.url))
    assert llm_answered(assistant.ask(QUESTION))
    server.stop()
    a = assistant.ask(QUESTION)
    assert a.mode == "extractive" and "unreachable" in a.notice and a.citations[0].label == "CoRF"
    streamed = list(assistant.stream(QUESTION))
    assert streamed[-1].answer.mode == "extractive" and "unreachable" in streamed[-1].answer.notice

    nothing = Assistant(llm_settings(corpus_settings, f"http://127.0.0.1:{free_port()}/v1"))
    b = nothing.ask(QUESTION)
    assert b.mode == "extractive" and b.notice.startswith("LLM not used: the LLM at http://127.0.0.1:")


@pytest.mark.slow
def test_cli_json_in_llm_mode_and_fallback_exit_code(corpus_settings, llama_server: LlamaServer,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.frontends.cli import app

    env = tmp_path / ".env"
    env.write_text(f"OPENAI_BASE_URL={llama_server.url}\nPAPERS_LLM_MODEL=smollm2\nPAPERS_TOP_K=3\n"
                   "PAPERS_LLM_CONTEXT_WINDOW=1536\nPAPERS_LLM_MAX_TOKENS=120\nPAPERS_LLM_TIMEOUT_S=120\n"
                   f"PAPERS_DATA_DIR={corpus_settings.data_dir}\n")
    monkeypatch.setenv("PAPERS_ENV_FILE", str(env))
    r = CliRunner().invoke(app, ["ask", "--json", QUESTION])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["raw_answer"] and {c["paper_id"] for c in d["citations"]} <= {x["paper_id"] for x in d["retrieved"]}
    assert all("repaired" in c for c in d["checks"])
    env.write_text(env.read_text().replace(llama_server.url, f"http://127.0.0.1:{free_port()}/v1"))
    r = CliRunner().invoke(app, ["ask", QUESTION])
    assert r.exit_code == 0 and "note: LLM not used" in r.stdout and "Traceback" not in r.output


def test_follow_up_without_llm(assistant) -> None:
    conv = Conversation(assistant)
    first = conv.ask("What does RecMem compress?")
    assert first.citations[0].label == "RecMem"
    second = conv.ask("and how many fewer decoder-side tokens does it use?")
    assert second.rewritten and "RecMem" in second.rewritten and "it" not in second.rewritten.split()
    assert second.citations and second.citations[0].label == "RecMem" and "5.6x" in second.answer
    assert second.question == "and how many fewer decoder-side tokens does it use?"


def test_new_subject_is_not_a_follow_up(assistant) -> None:
    conv = Conversation(assistant)
    conv.ask("What does RecMem compress?")
    a = conv.ask("Which paper proposes PotARCin?")
    assert a.rewritten is None and a.citations[0].label == "PotARCin"


@pytest.mark.slow
def test_follow_up_with_llm(corpus_settings, llama_server: LlamaServer) -> None:
    conv = Conversation(Assistant(llm_settings(corpus_settings, llama_server.url)))
    conv.ask("What speedup does CoRF report?", mode="extractive")
    rw, notice = conv.resolve("and how much memory does it save?", use_llm=True)
    assert notice is None and rw.how in ("llm", "reference") and "CoRF" in rw.question and rw.papers
    a = conv.ask("and how much memory does it save?")
    assert a.rewritten and "CoRF" in a.rewritten and llm_answered(a)


class EmbedSpy:
    """Passes embedding calls to the real question embedder and records which texts were embedded."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, []

    def get_query_embedding(self, query: str) -> list[float]:
        return self.inner.get_query_embedding(query)

    def get_text_embedding_batch(self, texts: list[str], **_: object) -> list[list[float]]:
        self.calls.append(list(texts))
        return self.inner.get_text_embedding_batch(texts)


def test_source_sentences_are_embedded_while_the_llm_generates(corpus_settings) -> None:
    """The check after generation embeds only the answer's own sentences: the sources' were prefetched."""
    from rag.index.embed import query_embedder_for

    spy = EmbedSpy(query_embedder_for(corpus_settings))
    assistant = Assistant(corpus_settings, Retriever(corpus_settings, embedder=spy))
    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(QUESTION, k=3))
    assistant._prefetch(retrieval).result()
    sources = sources_for(retrieval.papers)
    assert len(spy.calls) == 1 and set(spy.calls[0]) == {s for src in sources for s in src.sentences}

    spy.calls.clear()
    words = sources[0].sentences[0].rstrip(".").split()
    paraphrase = "The authors write that " + " ".join(w for i, w in enumerate(words) if i % 4 != 2)
    answer = assistant._finish_llm(QUESTION, retrieval, paraphrase + " [1].")
    assert answer.checks[0].supported and answer.checks[0].reason == "semantic match"
    assert spy.calls == [[paraphrase + "."]]


def test_missing_key_for_remote_endpoint_is_a_config_error(corpus_settings) -> None:
    remote = corpus_settings.model_copy(update={"openai_base_url": "https://llm.example.com/v1"})
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY is required"):
        Assistant(remote)
    assert is_local_url("http://127.0.0.1:8080/v1") and is_local_url("http://localhost:11434/v1")
    assert not is_local_url("https://api.openai.com/v1")
    with pytest.raises(LLMConfigError):
        Assistant(load_settings(answer_mode="llm"))


# --- the answer prompt, repair and fallback on the real index (no server) -------------------------------------

def test_prompt_shows_the_format_with_the_first_sources_real_label(assistant) -> None:
    from rag.answer.llm import answer_messages

    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(QUESTION, k=3))
    system, user = answer_messages(QUESTION, retrieval.papers, assistant.settings)
    first = retrieval.papers[0].label
    assert f"A sentence about {first} ends with [1]" in user.content
    assert user.content.index("[1] " + first) < user.content.index("[2] ")  # the first source is [1]
    assert "[2]" not in system.content + user.content.split("Question:")[-1]


def test_wrong_citation_is_repaired_and_shown_in_final_numbering(assistant) -> None:
    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(QUESTION, k=3))
    corf = next(i for i, p in enumerate(retrieval.papers, 1) if p.label == "CoRF")
    other = next(i for i in range(1, 4) if i != corf)
    quote = next(s for s in sources_for(retrieval.papers)[corf - 1].sentences if "5.9" in s)
    a = assistant._finish_llm(QUESTION, retrieval, f"CoRF [{other}]: {quote}")
    assert a.mode == "llm" and not a.abstained and not a.unsupported
    (check,) = a.checks
    assert check.supported and check.repaired == f"from {retrieval.papers[other - 1].label} to [1]"
    assert a.citations[0].label == "CoRF" and a.answer.startswith("CoRF [1]")
    plain = assistant._finish_llm(QUESTION, retrieval, f"CoRF [{other}]: {quote}", salvage=False)
    assert plain.abstained and not plain.checks[0].repaired


def test_untraceable_or_abstaining_model_answer_gives_way_to_quotes(assistant) -> None:
    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(QUESTION, k=3))
    invented = "CoRF [1] cuts memory use by 31% on long documents [1]."
    for raw, notice in ((invented, prompts.FALLBACK_UNTRACEABLE),
                        (f"{prompts.ABSTAIN_PREFIX} this.", prompts.FALLBACK_MODEL_ABSTAINED)):
        a = assistant._finish_llm(QUESTION, retrieval, raw)
        assert a.mode == "extractive" and a.notice == notice and a.raw_answer == raw
        assert not a.abstained and a.citations[0].label == "CoRF" and "5.9" in a.answer and "31%" not in a.answer


def test_abstention_stands_when_the_extractive_answerer_abstains_too(assistant) -> None:
    question = "How many GPUs were used to train RecMem?"
    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(question, k=3))
    assert assistant._extractive(question, retrieval).abstained  # the premise
    a = assistant._finish_llm(question, retrieval, "RecMem [1] was trained on 64 GPUs [1].")
    assert a.mode == "llm" and a.abstained and a.notice is None and f"{UNSUPPORTED_MARK} RecMem" in a.answer


def test_cli_marks_a_repaired_sentence(assistant, capsys: pytest.CaptureFixture[str]) -> None:
    from rag.frontends.cli import _print_answer

    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(QUESTION, k=3))
    corf = next(i for i, p in enumerate(retrieval.papers, 1) if p.label == "CoRF")
    quote = next(s for s in sources_for(retrieval.papers)[corf - 1].sentences if "5.9" in s)
    a = assistant._finish_llm(QUESTION, retrieval, f"CoRF: {quote}")  # names CoRF, cites nothing
    _print_answer(a)
    out = capsys.readouterr().out
    assert f"↻ citation repaired from none to [1]: {a.checks[0].sentence}" in out
    assert json.loads(json.dumps(a.to_dict()))["checks"][0]["repaired"] == "from none to [1]"


@pytest.mark.slow
def test_record_then_replay_a_real_server(corpus_settings, llama_server: LlamaServer, tmp_path: Path) -> None:
    """`llm_check.py --record` against SmolLM2 writes the documented format; replaying it gives the same answers."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks import llm_check

    out = tmp_path / "recorded.jsonl"
    assert llm_check.main(["--record", str(out), "--base-url", llama_server.url, "--model", "smollm2",
                           "--limit", "2", "--context", "1536", "--max-tokens", "120",
                           "--data-dir", str(corpus_settings.data_dir)]) == 0
    records = llm_check.load_records(out)
    assert [r["id"] for r in records] == ["q001", "q002"] and all(r["raw_answer"] for r in records)
    for r in records:
        assert [s["n"] for s in r["sources"]] == [1, 2, 3] and r["gold"] and "cited" in r["extractive"]
    assistant = Assistant(corpus_settings)
    _, after, done = llm_check.replay(assistant, records, say=lambda _m: None)
    assert after.replayed == 2
    for r, _, replayed in done:
        assert replayed.answer == r["answer"] and replayed.mode == r["mode"], (r, replayed)
