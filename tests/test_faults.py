"""The LLM failing in every way we can cause: each ends in the extractive answer with a one-line reason.

Faults the real llama.cpp server can produce are caused on it: stopped between questions, killed mid-answer,
frozen with SIGSTOP before and during an answer. Faults it cannot produce (HTTP 429 and 500, malformed JSON, an
empty completion, a reply cut off mid-body, silence after the response headers) come from tests/faults.py.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from rag.schema import StreamEvent
from rag.prompts import STREAM_RESET
from rag.service import Assistant, Conversation
from rag.schema import Answer
from rag.settings import Settings

from .conftest import LlamaServer, llm_answered, llm_settings
from .faults import TOKENS, FaultServer

QUESTION = "What speedup does CoRF report?"
FOLLOW_UP = "and how much memory does it save?"
SECRET = "sk-test-SECRET-123"
STALL_TIMEOUT_S = 8   # PAPERS_LLM_TIMEOUT_S when the real server is frozen (a loaded machine needs some)
FAULT_TIMEOUT_S = 2   # PAPERS_LLM_TIMEOUT_S against the fault server
SLACK_S = 12          # retrieval, extractive answer and a loaded machine, on top of a timeout


def assert_fallback(answer: Answer, *reason: str) -> None:
    """The extractive answer about CoRF, with a one-line notice giving the reason."""
    assert answer.mode == "extractive", (answer.mode, answer.notice)
    notice = answer.notice or ""
    assert notice.startswith("LLM not used: the LLM at "), notice
    assert "\n" not in notice and "\r" not in notice and "Traceback" not in notice, notice
    for part in reason:
        assert part in notice, (part, notice)
    assert not answer.abstained and answer.citations, answer.answer
    assert answer.citations[0].label == "CoRF" and "5.9" in answer.answer, answer.answer


def run_stream(assistant: Assistant | Conversation, question: str,
               on_first_token: Callable[[], None] | None = None) -> tuple[str, bool, str, Answer]:
    """(text streamed before a 'reset', whether a reset came, text streamed after it, the final answer)."""
    before: list[str] = []
    after: list[str] = []
    reset = False
    final: Answer | None = None
    for event in assistant.stream(question):
        assert isinstance(event, StreamEvent)
        if event.kind == "token":
            if on_first_token is not None and not before and not reset:
                on_first_token()
            (after if reset else before).append(event.text)
        elif event.kind == "reset":
            assert not reset, "one reset at most"
            reset = True
        elif event.kind == "final":
            final = event.answer
    assert final is not None, "the stream ended without a final answer"
    if not reset:
        before, after = [], before
    return "".join(before), reset, "".join(after), final


def assert_streamed_fallback(result: tuple[str, bool, str, Answer], *reason: str, llm_text: bool) -> None:
    before, reset, after, final = result
    assert_fallback(final, *reason)
    assert after == final.answer, "the extractive answer is streamed in full after the failure"
    if llm_text:
        assert reset and before.strip(), "some generated text arrived, then was withdrawn"
    else:
        assert not reset and not before, "nothing was generated, so nothing is withdrawn"


# --- the real llama.cpp server --------------------------------------------------------------------------

@pytest.fixture()
def own_server(tmp_path: Path) -> Iterator[LlamaServer]:
    """A llama.cpp server of this test alone (it gets stopped or killed)."""
    server = LlamaServer(tmp_path)
    server.start()
    yield server
    server.stop()


@contextmanager
def thawed_after(server: LlamaServer) -> Iterator[Callable[[], None]]:
    """Gives a function that freezes the server process (SIGSTOP: the kernel still accepts connections, nothing
    answers); the process is always continued (SIGCONT) on leaving, whatever happened."""
    assert server.proc is not None and server.proc.poll() is None
    pid = server.proc.pid
    try:
        yield lambda: os.kill(pid, signal.SIGSTOP)
    finally:
        os.kill(pid, signal.SIGCONT)


def stall_assistant(corpus_settings: Settings, server: LlamaServer) -> Assistant:
    """An assistant with a short LLM timeout, once the server has answered QUESTION with the same prompt (waiting
    up to 120 s): the server is then idle and has the prompt cached, so it answers again within the timeout."""
    settings = llm_settings(corpus_settings, server.url, llm_max_tokens=64, llm_timeout_s=STALL_TIMEOUT_S)
    warm = Assistant(settings.model_copy(update={"llm_timeout_s": 120})).ask(QUESTION)
    assert llm_answered(warm), warm.notice
    return Assistant(settings)


@pytest.mark.slow
def test_real_server_stopped_between_questions(corpus_settings, own_server: LlamaServer) -> None:
    assistant = Assistant(llm_settings(corpus_settings, own_server.url))
    first = assistant.ask(QUESTION)
    assert llm_answered(first), first.notice

    own_server.stop()
    t0 = time.monotonic()
    assert_fallback(assistant.ask(QUESTION), "is unreachable")
    assert_streamed_fallback(run_stream(assistant, QUESTION), "is unreachable", llm_text=False)
    conversation = Conversation(assistant)  # a chat: the follow-up cannot be rewritten by the LLM either
    assert_fallback(conversation.ask(QUESTION), "is unreachable")
    follow_up = conversation.ask(FOLLOW_UP)
    assert_fallback(follow_up, "is unreachable", "the follow-up was resolved without it")
    assert follow_up.rewritten and "CoRF" in follow_up.rewritten and "10.0" in follow_up.answer
    assert time.monotonic() - t0 < SLACK_S, "a refused connection falls back at once"

    own_server.start()  # back again: the same assistant uses it again
    again = assistant.ask(QUESTION)
    assert llm_answered(again), again.notice


@pytest.mark.slow
def test_real_server_killed_mid_answer(corpus_settings, own_server: LlamaServer) -> None:
    assistant = Assistant(llm_settings(corpus_settings, own_server.url))
    assert llm_answered(assistant.ask(QUESTION))  # caches the prompt: the streamed answer starts at once

    def kill() -> None:
        own_server.proc.kill()
        own_server.proc.wait(timeout=10)

    result = run_stream(assistant, QUESTION, on_first_token=kill)
    assert_streamed_fallback(result, "dropped the connection mid-reply", llm_text=True)


@pytest.mark.slow
def test_real_server_frozen_before_answering(corpus_settings, llama_server: LlamaServer) -> None:
    assistant = stall_assistant(corpus_settings, llama_server)
    control = assistant.ask(QUESTION)  # the same question, same timeout: answered by the LLM when not frozen
    assert llm_answered(control), control.notice

    with thawed_after(llama_server) as freeze:
        freeze()
        t0 = time.monotonic()
        answer = assistant.ask(QUESTION)
        took_ask = time.monotonic() - t0
        t0 = time.monotonic()
        streamed = run_stream(assistant, QUESTION)
        took_stream = time.monotonic() - t0
    reason = f"did not answer within {STALL_TIMEOUT_S} s"
    assert_fallback(answer, reason)
    assert_streamed_fallback(streamed, reason, llm_text=False)
    for took in (took_ask, took_stream):
        assert STALL_TIMEOUT_S <= took < STALL_TIMEOUT_S + SLACK_S, took


@pytest.mark.slow
def test_real_server_frozen_mid_stream(corpus_settings, llama_server: LlamaServer) -> None:
    assistant = stall_assistant(corpus_settings, llama_server)
    before, reset, after, control = run_stream(assistant, QUESTION)
    assert llm_answered(control)  # not frozen: streamed in full (then, if it gave way to quotes, those)
    assert (before, reset, after) == ((control.raw_answer, True, control.answer) if control.mode != "llm"
                                      else ("", False, control.raw_answer))

    t0 = time.monotonic()
    with thawed_after(llama_server) as freeze:
        result = run_stream(assistant, QUESTION, on_first_token=freeze)
    took = time.monotonic() - t0
    assert_streamed_fallback(result, f"did not answer within {STALL_TIMEOUT_S} s", llm_text=True)
    assert took < STALL_TIMEOUT_S + SLACK_S, took


# --- faults only a misbehaving server produces (tests/faults.py) -----------------------------------------

ASK_FAULTS = {
    "rate_limit": ("HTTP 429", "retry after 7 s"),
    "error": ("HTTP 500",),
    "malformed": ("could not be read",),
    "empty": ("sent an empty reply",),
    "drop": ("dropped the connection mid-reply",),       # body shorter than its Content-Length
    "stall": (f"did not answer within {FAULT_TIMEOUT_S} s",),  # headers sent, then silence
}
STREAM_FAULTS = {k: v for k, v in ASK_FAULTS.items() if k != "stall"}  # a frozen stream: the real server above


def fault_settings(corpus_settings: Settings, fs: FaultServer, **overrides: object) -> Settings:
    return llm_settings(corpus_settings, fs.url, llm_timeout_s=FAULT_TIMEOUT_S, **overrides)


def assert_asked_once(fs: FaultServer, stream: bool) -> None:
    """The LLM was really asked the question, once (no hidden retries), streamed or not as expected."""
    assert len(fs.requests) == 1, fs.requests
    body = fs.requests[0]["body"]
    assert bool(body.get("stream")) is stream
    assert QUESTION in body["messages"][-1]["content"]


@pytest.mark.parametrize("fault", list(ASK_FAULTS))
def test_fault_server_ask(corpus_settings, fault: str) -> None:
    with FaultServer(fault, retry_after=7) as fs:
        assistant = Assistant(fault_settings(corpus_settings, fs))
        t0 = time.monotonic()
        answer = assistant.ask(QUESTION)
        took = time.monotonic() - t0
        assert_asked_once(fs, stream=False)
    assert_fallback(answer, *ASK_FAULTS[fault])
    assert took < FAULT_TIMEOUT_S + SLACK_S, took


@pytest.mark.parametrize("fault", list(STREAM_FAULTS))
def test_fault_server_stream(corpus_settings, fault: str) -> None:
    with FaultServer(fault, retry_after=7, tokens=4) as fs:
        result = run_stream(Assistant(fault_settings(corpus_settings, fs)), QUESTION)
        assert_asked_once(fs, stream=True)
    dropped = fault == "drop"
    assert_streamed_fallback(result, *STREAM_FAULTS[fault], llm_text=dropped)
    if dropped:  # exactly what arrived before the connection went, then withdrawn
        assert result[0] == "".join(TOKENS[:4])


def write_env(path: Path, corpus_settings: Settings, url: str) -> Path:
    path.write_text(f"OPENAI_BASE_URL={url}\nPAPERS_LLM_MODEL=fault\nPAPERS_TOP_K=3\n"
                    f"PAPERS_LLM_TIMEOUT_S={FAULT_TIMEOUT_S}\nPAPERS_DATA_DIR={corpus_settings.data_dir}\n")
    return path


def cli(*args: str):  # noqa: ANN201 - click's Result
    from rag.frontends.cli import app

    return CliRunner().invoke(app, list(args))


def assert_clean_exit(r) -> None:  # noqa: ANN001
    assert r.exit_code == 0 and r.exception is None, (r.exit_code, r.exception, r.output)
    assert "Traceback" not in r.output, r.output


@pytest.mark.slow
def test_cli_survives_llm_faults(corpus_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FaultServer("error") as fs:
        monkeypatch.setenv("PAPERS_ENV_FILE", str(write_env(tmp_path / ".env", corpus_settings, fs.url)))
        r = cli("ask", QUESTION)
        assert_clean_exit(r)
        assert "CoRF [1]" in r.stdout and "note: LLM not used:" in r.stdout and "HTTP 500" in r.stdout
        assert "(extractive" in r.stdout

        r = cli("ask", "--json", QUESTION)
        assert_clean_exit(r)
        d = json.loads(r.stdout)
        assert d["mode"] == "extractive" and "HTTP 500" in d["notice"] and d["citations"][0]["label"] == "CoRF"

        fs.fault = "drop"
        r = cli("ask", "--stream", QUESTION)
        assert_clean_exit(r)
        streamed, _, rest = r.stdout.partition(STREAM_RESET.strip())
        assert streamed.strip() == "".join(TOKENS[:fs.tokens]).strip(), r.stdout
        assert "CoRF [1]" in rest and "dropped the connection mid-reply" in rest
        assert len(fs.requests) == 3


# --- the API key never leaks --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("fault", ["error", "rate_limit", "malformed"])
def test_api_key_never_leaks(corpus_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             caplog: pytest.LogCaptureFixture, fault: str) -> None:
    caplog.set_level(logging.DEBUG)
    with FaultServer(fault) as fs:
        assistant = Assistant(fault_settings(corpus_settings, fs, openai_api_key=SecretStr(SECRET)))
        asked = assistant.ask(QUESTION)
        before, _, after, streamed = run_stream(assistant, QUESTION)
        conversation = Conversation(assistant)
        conversation.ask(QUESTION)
        follow_up = conversation.ask(FOLLOW_UP)

        monkeypatch.setenv("PAPERS_ENV_FILE", str(write_env(tmp_path / ".env", corpus_settings, fs.url)))
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        runs = [cli("ask", QUESTION), cli("ask", "--json", QUESTION), cli("ask", "--stream", QUESTION)]
        requests = fs.requests

    # The premise: the key was sent, and the server's error text quoted it back. Seven requests: ask, stream,
    # the chat's first question, the follow-up's rewrite (whose failure makes that turn extractive), 3 CLI runs.
    assert len(requests) == 7 and all(r["headers"].get("Authorization") == f"Bearer {SECRET}" for r in requests)
    for a in (asked, streamed, follow_up):
        assert_fallback(a)
    for r in runs:
        assert_clean_exit(r)
        assert "note: LLM not used" in r.stdout or '"notice": "LLM not used' in r.stdout
    assert any(rec.name.startswith(("openai", "httpx")) for rec in caplog.records), "logs were captured"

    seen = {
        "answers": [json.dumps(a.to_dict(), ensure_ascii=False) for a in (asked, streamed, follow_up)],
        "notices": [a.notice or "" for a in (asked, streamed, follow_up)],
        "stream": [before, after],
        "cli": [r.output for r in runs] + [r.stderr for r in runs],
        "logs": [caplog.text] + [rec.getMessage() for rec in caplog.records],
    }
    for where, texts in seen.items():
        for text in texts:
            assert SECRET not in text and "SECRET-123" not in text, f"the API key leaked into {where}: {text[:500]}"


# --- the timeout bounds the whole reply -----------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_trickling_server_is_cut_off_at_the_whole_reply_timeout(corpus_settings, stream: bool) -> None:
    """A server that sends a keep-alive byte every 0.4 s (every read succeeds) is given up on at the timeout."""
    with FaultServer("trickle", trickle_s=0.4, stall_s=60) as fs:
        assistant = Assistant(fault_settings(corpus_settings, fs))
        t0 = time.monotonic()
        if stream:
            assert_streamed_fallback(run_stream(assistant, QUESTION), f"did not answer within {FAULT_TIMEOUT_S} s",
                                     llm_text=False)
        else:
            assert_fallback(assistant.ask(QUESTION), f"did not answer within {FAULT_TIMEOUT_S} s")
        took = time.monotonic() - t0
        assert_asked_once(fs, stream=stream)
    assert FAULT_TIMEOUT_S <= took < FAULT_TIMEOUT_S + SLACK_S, took


@pytest.mark.slow
def test_cli_waits_no_longer_than_the_timeout_for_a_trickling_server(corpus_settings, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: keep-alive bytes every 5 s, PAPERS_LLM_TIMEOUT_S=10 (it used to wait 95 s)."""
    with FaultServer("trickle", trickle_s=5, stall_s=120) as fs:
        env = write_env(tmp_path / ".env", corpus_settings, fs.url)
        env.write_text(env.read_text().replace(f"PAPERS_LLM_TIMEOUT_S={FAULT_TIMEOUT_S}", "PAPERS_LLM_TIMEOUT_S=10"))
        monkeypatch.setenv("PAPERS_ENV_FILE", str(env))
        for args in (["ask", QUESTION], ["ask", "--stream", QUESTION]):
            t0 = time.monotonic()
            r = cli(*args)
            took = time.monotonic() - t0
            assert_clean_exit(r)
            assert "did not answer within 10 s" in r.stdout and "CoRF [1]" in r.stdout, r.stdout
            assert 10 <= took < 10 + SLACK_S, (args, took)


# --- credentials inside URL settings never leave ----------------------------------------------------------

URL_USER, URL_PASSWORD = "admin", "URLSECRET456"


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["error", "rate_limit", "trickle"])
def test_url_credentials_never_leak(corpus_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture, fault: str) -> None:
    caplog.set_level(logging.DEBUG)
    with FaultServer(fault, trickle_s=0.3, stall_s=30) as fs:
        url = with_credentials(fs.url)
        # URL credentials alone: with an API key as well the start is refused (test below), both cannot be sent
        settings = fault_settings(corpus_settings, fs, openai_base_url=url)
        assistant = Assistant(settings)
        asked = assistant.ask(QUESTION)
        before, _, after, streamed = run_stream(assistant, QUESTION)
        monkeypatch.setenv("PAPERS_ENV_FILE", str(write_env(tmp_path / ".env", corpus_settings, url)))
        runs = [cli("ask", QUESTION), cli("ask", "--json", QUESTION), cli("ask", "--stream", QUESTION)]
        requests = fs.requests
    # The premise: the URL's credentials were used (as HTTP basic auth) and the URL was logged.
    assert len(requests) == 5 and all(r["headers"].get("Authorization", "").startswith("Basic ") for r in requests)
    assert any("127.0.0.1" in rec.getMessage() for rec in caplog.records if rec.name.startswith(("openai", "httpx")))
    for a in (asked, streamed):
        assert_fallback(a)
        assert f"the LLM at http://***@127.0.0.1:{fs.port}/v1 " in a.notice, a.notice
    for r in runs:
        assert_clean_exit(r)
        assert "http://***@127.0.0.1" in r.stdout, r.stdout
    texts = [json.dumps(a.to_dict(), ensure_ascii=False) for a in (asked, streamed)] + [before, after]
    texts += [r.output for r in runs] + [r.stderr for r in runs] + [caplog.text]
    texts += [rec.getMessage() for rec in caplog.records]
    for text in texts:
        for secret in (URL_PASSWORD, f"{URL_USER}:", SECRET):
            assert secret not in text, (secret, text[:400])


QUERY_SECRETS = ("PCTSECRET", "JWTSECRET", "BARESECRET", "FRAGSECRET")
SECRET_QUERY = "?api%2Dkey=PCTSECRET&jwt=JWTSECRET;BARESECRET#FRAGSECRET"  # no name a list of secret names holds


def test_query_string_and_fragment_never_leak(corpus_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Every query value and the fragment of the LLM URL are redacted wherever the URL is shown: the notice of
    an answer (the LLM answering with an error, or unreachable), `papers ask` and `--json`, the logs."""
    caplog.set_level(logging.DEBUG)
    with FaultServer("error") as fs:
        asked = Assistant(fault_settings(corpus_settings, fs, openai_base_url=fs.url + SECRET_QUERY)).ask(QUESTION)
        requests = fs.requests
    monkeypatch.setenv("PAPERS_ENV_FILE", str(write_env(tmp_path / ".env", corpus_settings,
                                                        f"http://127.0.0.1:1/v1{SECRET_QUERY}")))
    runs = [cli("ask", "--mode", "llm", QUESTION), cli("ask", "--json", "--mode", "llm", QUESTION)]
    # The premise: the query reached the LLM server, and the URL was logged.
    assert requests and "PCTSECRET" in requests[0]["path"], requests
    assert any("127.0.0.1" in rec.getMessage() for rec in caplog.records if rec.name.startswith(("openai", "httpx")))
    assert_fallback(asked)
    assert "?api%2Dkey=***&jwt=***;***#*** " in (asked.notice or ""), asked.notice
    for r in runs:
        assert_clean_exit(r)
        assert "http://127.0.0.1:1/v1?api%2Dkey=***&jwt=***;***#*** " in r.stdout, r.stdout
    texts = [json.dumps(asked.to_dict(), ensure_ascii=False), caplog.text]
    texts += [r.output for r in runs] + [r.stderr for r in runs] + [rec.getMessage() for rec in caplog.records]
    for text in texts:
        for secret in QUERY_SECRETS:
            assert secret not in text, (secret, text[:400])


def test_settings_errors_redact_url_credentials() -> None:
    from rag.answer.llm import LLMConfigError, check_llm_settings
    from rag.settings import load_settings, redact

    assert redact("see http://admin:pw@host:8080/v1 and https://tok@h/x") == "see http://***@host:8080/v1 and " \
                                                                             "https://***@h/x"
    assert redact("mail alice@example.org") == "mail alice@example.org"
    s = load_settings(_env_file=None, openai_base_url="http://admin:URLSECRET456@example.org/v1",
                      answer_mode="llm")
    with pytest.raises(LLMConfigError) as e:
        check_llm_settings(s)
    assert "URLSECRET456" not in str(e.value) and "http://***@example.org/v1" in str(e.value)


def test_a_url_password_and_an_api_key_together_are_refused_naming_both() -> None:
    from rag.answer.llm import LLMConfigError, check_llm_settings
    from rag.settings import load_settings

    s = load_settings(_env_file=None, openai_base_url="http://admin:URLSECRET456@127.0.0.1:8080/v1",
                      openai_api_key="sk-KEYSECRET789", answer_mode="llm")
    with pytest.raises(LLMConfigError) as e:
        check_llm_settings(s)
    message = str(e.value)
    assert "OPENAI_BASE_URL" in message and "OPENAI_API_KEY" in message
    assert "URLSECRET456" not in message and "KEYSECRET789" not in message
    local = load_settings(_env_file=None, openai_base_url="http://admin:URLSECRET456@127.0.0.1:8080/v1",
                          answer_mode="llm")
    check_llm_settings(local)  # the URL's credentials alone are sent as they are: accepted
