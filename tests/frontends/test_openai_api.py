"""`papers serve`: the OpenAI-compatible endpoint driven by the `openai` client (streaming and not) and by curl."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest

from tests.conftest import LlamaServer, free_port

from .helpers import papers_command, papers_env, start, stop

RECMEM_Q = "Over how many test steps does RecMem stay stable?"
KEY = "test-serve-key-7f3a"


@dataclass
class Served:
    url: str
    log: Path

    def client(self, key: str = KEY) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url, api_key=key, max_retries=0, timeout=300)


def _serve(settings, tmp: Path, **env: str) -> Iterator[Served]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = tmp / f"serve-{port}.log"
    proc = start(papers_command("serve", "--port", str(port)), papers_env(settings, **env), f"{url}/models", log)
    try:
        yield Served(url, log)
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def served(corpus_settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from _serve(corpus_settings, tmp_path_factory.mktemp("serve"), PAPERS_SERVE_API_KEY=KEY)


def _expected_text(answer) -> str:
    from rag.frontends.common import with_references

    return with_references(answer)


@pytest.mark.slow
def test_models_and_bearer_auth(served: Served) -> None:
    assert [m.id for m in served.client().models.list()] == ["papers"]
    with pytest.raises(openai.AuthenticationError) as e:
        served.client("wrong-key").models.list()
    assert "PAPERS_SERVE_API_KEY" in str(e.value) and "wrong-key" not in str(e.value) and KEY not in str(e.value)
    with pytest.raises(openai.AuthenticationError):
        served.client("wrong-key").chat.completions.create(model="papers",
                                                           messages=[{"role": "user", "content": RECMEM_Q}])
    assert KEY not in served.log.read_text()


@pytest.mark.slow
def test_chat_completion(served: Served, assistant) -> None:
    expected = assistant.ask(RECMEM_Q)
    r = served.client().chat.completions.create(model="anything", messages=[{"role": "user", "content": RECMEM_Q}])
    content = r.choices[0].message.content
    assert content == _expected_text(expected)
    assert content.startswith(expected.answer) and "\n\nReferences:\n[1] " in content
    for citations in (r.model_extra["citations"], r.choices[0].model_extra["citations"]):
        assert [(c["n"], c["paper_id"], c["label"], c["quote"]) for c in citations] == [
            (c.n, c.paper_id, c.label, c.quote) for c in expected.citations]
        assert {"title", "reference", "source", "position"} <= set(citations[0])
    assert r.model_extra["papers"]["mode"] == "extractive" and r.choices[0].finish_reason == "stop"
    # Request options through extra_body; a content-parts message.
    parts = [{"type": "text", "text": "Which paper proposes ReLoop?"}]
    scoped = served.client().chat.completions.create(model="papers", messages=[{"role": "user", "content": parts}],
                                                     extra_body={"k": 1})
    assert [c["label"] for c in scoped.model_extra["citations"]] == ["ReLoop"]


@pytest.mark.slow
def test_streaming_matches_the_plain_reply(served: Served) -> None:
    messages = [{"role": "user", "content": RECMEM_Q}]
    plain = served.client().chat.completions.create(model="papers", messages=messages)
    chunks = list(served.client().chat.completions.create(model="papers", messages=messages, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert len(chunks) > 4 and text == plain.choices[0].message.content
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert last.model_extra["citations"] == plain.model_extra["citations"]
    assert last.choices[0].model_extra["citations"] == plain.model_extra["citations"]
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


@pytest.mark.slow
def test_follow_ups_use_the_earlier_turns(served: Served) -> None:
    client = served.client()
    history = [{"role": "user", "content": RECMEM_Q}]
    first = client.chat.completions.create(model="papers", messages=history)
    history.append({"role": "assistant", "content": first.choices[0].message.content})
    follow = "and by how much does it improve Recall@50+?"
    r = client.chat.completions.create(model="papers", messages=history + [{"role": "user", "content": follow}])
    assert [c["label"] for c in r.model_extra["citations"]] == ["RecMem"]
    assert "RecMem" in r.model_extra["papers"]["rewritten"]
    # A history this server did not write (another client, or before a restart) is understood too.
    other = [{"role": "user", "content": RECMEM_Q}, {"role": "assistant", "content": "It is stable for long."},
             {"role": "user", "content": follow}]
    r2 = client.chat.completions.create(model="papers", messages=other, stream=True)
    last = list(r2)[-1]
    assert [c["label"] for c in last.model_extra["citations"]] == ["RecMem"]


@pytest.mark.slow
def test_errors(served: Served) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        served.client().chat.completions.create(model="papers", messages=[{"role": "user", "content": "  "}])
    assert e.value.body["message"] == "empty question: type a question about the papers"
    with pytest.raises(openai.BadRequestError) as e:
        served.client().chat.completions.create(model="papers", messages=[{"role": "system", "content": "hi"}])
    assert "no user message" in e.value.body["message"]


@pytest.mark.slow
def test_curl(served: Served) -> None:
    body = json.dumps({"model": "papers", "messages": [{"role": "user", "content": RECMEM_Q}]})
    base = ["curl", "-sS", "--max-time", "300", "-H", f"Authorization: Bearer {KEY}", "-H",
            "Content-Type: application/json"]
    out = subprocess.run(base + ["-d", body, f"{served.url}/chat/completions"], capture_output=True, text=True,
                         check=True, timeout=320)
    reply = json.loads(out.stdout)
    assert reply["object"] == "chat.completion" and reply["citations"][0]["label"] == "RecMem"
    assert "References:" in reply["choices"][0]["message"]["content"]
    stream_body = json.dumps({**json.loads(body), "stream": True})
    out = subprocess.run(base + ["-N", "-d", stream_body, f"{served.url}/chat/completions"], capture_output=True,
                         text=True, check=True, timeout=320)
    events = [line.removeprefix("data: ") for line in out.stdout.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == \
        reply["choices"][0]["message"]["content"]
    assert chunks[-1]["citations"] == reply["citations"]
    unauth = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", f"{served.url}/models"],
                            capture_output=True, text=True, timeout=60)
    assert unauth.stdout == "401"


@pytest.mark.slow
def test_llm_mode_streams_through_the_endpoint(corpus_settings, llama_server: LlamaServer,
                                               tmp_path: Path) -> None:
    """With SmolLM2 behind it: a streamed, citation-checked answer; the reply's shape, not its wording."""
    env = {"OPENAI_BASE_URL": llama_server.url, "PAPERS_LLM_MODEL": "smollm2", "PAPERS_TOP_K": "3",
           "PAPERS_LLM_MAX_TOKENS": "120", "PAPERS_LLM_CONTEXT_WINDOW": "1536", "PAPERS_LLM_TIMEOUT_S": "120"}
    for served in _serve(corpus_settings, tmp_path, **env):
        chunks = list(served.client("no-auth").chat.completions.create(
            model="papers", messages=[{"role": "user", "content": RECMEM_Q}], stream=True))
        last = chunks[-1]
        assert last.choices[0].finish_reason == "stop"
        facts = last.model_extra["papers"]
        assert facts["mode"] == "llm" or facts["notice"]  # generated, or the fallback says why
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        for c in last.model_extra["citations"]:
            assert f"[{c['n']}]" in text and c["paper_id"] in text.split("References:")[1]


@pytest.mark.slow
def test_the_key_and_the_size_are_checked_before_the_body_is_read(served: Served) -> None:
    import http.client
    from urllib.parse import urlparse

    where = urlparse(served.url)

    def post(body: bytes, headers: dict[str, str]) -> int:
        conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
        conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
        status = conn.getresponse().status
        conn.close()
        return status

    assert post(b"{not json", {"Content-Type": "application/json"}) == 401   # no key: refused unread
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    assert post(b"{not json", auth) == 400
    assert post(b"x" * (2 * 2**20), auth) == 413  # declared over the 1 MB limit

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b"y" * 65536

    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    conn.request("POST", "/v1/chat/completions", body=chunked(), headers=auth, encode_chunked=True)
    assert conn.getresponse().status == 413
    conn.close()
