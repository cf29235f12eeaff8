"""Concurrent sessions on the real UI through gradio_client: answers stay right and every chat keeps its own history.

Each session is one `gradio_client.Client` (its own Gradio session, so its own chat state) in its own thread. It
asks a question in the chat, a follow-up that only makes sense with that session's history, a question through
the documented `/ask` endpoint, and a second follow-up. All sessions take each step together (a barrier), so a
history shared between sessions would rewrite follow-ups about another session's paper.

`make test` runs 5 sessions; PAPERS_SOAK=1 runs 20. Latency percentiles and the peak RSS of the test process
(which also runs the UI server) go to test-artifacts/load.json.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import pytest
from gradio_client import Client

from ui.app import CSS, build_app

from tests.conftest import ROOT, free_port


SOAK = os.environ.get("PAPERS_SOAK") == "1"  # `make soak`: the full 20 sessions
SESSIONS = 20 if SOAK else 5
CALL_TIMEOUT_S = 120           # one question, however loaded the server is
DEADLINE_S = 1200 if SOAK else 400  # the whole run
ARTIFACTS = ROOT / "test-artifacts"

# (first question, label of the paper it is about): each is answered from that paper, and both follow-ups
# below are answered from it once rewritten about it.
SUBJECTS = [
    ("Over how many test steps does RecMem stay stable?", "RecMem"),
    ("What speedup does CoRF report?", "CoRF"),
    ("By how much do the ReasoningShield models beat LlamaGuard-4?", "ReasoningShield"),
    ("How many parameters does PTRM use?", "PTRM"),
    ("how many expert trajectories does RTCBench release for post-training?", "RTCBench"),
    ("how do models do on the hand-crafted P-ARC set?", "PotARCin"),
    ("Which paper proposes ReLoop?", "ReLoop"),
    ("Which work blames reference-frame dominance for motion suppression in I2V?", "DyMoS"),
    ("how many test-time corruption settings were used to evaluate GMUs on vision data?", "GMU"),
    ("which paper picks high-uncertainty executable actions as anchors for counterfactual branches?", "RICE-PO"),
    ("how much does CORE-Reasoning boost Qwen3.5-9B on drug perturbation data?", "CORE"),
]
FOLLOW_UPS = ["what does it propose?", "and how is it evaluated?"]
STEPS = 4
LABELS = [label for _, label in SUBJECTS]


def chat_endpoint(client: Client) -> str:
    """The api_name Gradio gave the chat's `respond` handler (registered undocumented, so view_api omits it)."""
    names = [d["api_name"] for d in client.config["dependencies"]
             if d.get("api_visibility") == "undocumented" and d.get("api_name") == "respond"]
    assert names, [d.get("api_name") for d in client.config["dependencies"]]
    assert "/respond" not in client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    return "/" + names[0]


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def mentions(text: str, label: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", text) is not None


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


class Session:
    """One user: a client of their own, a fixed script, and what went wrong."""

    def __init__(self, url: str, n: int, ids: dict[str, str], barrier: threading.Barrier) -> None:
        self.url, self.n, self.ids, self.barrier = url, n, ids, barrier
        self.question, self.label = SUBJECTS[n % len(SUBJECTS)]
        self.other_question, self.other_label = SUBJECTS[(n + 3) % len(SUBJECTS)]
        self.latencies: list[tuple[str, float]] = []
        self.problems: list[str] = []

    def call(self, client: Client, kind: str, *args: Any, api_name: str) -> Any:
        t0 = time.perf_counter()
        out = client.submit(*args, api_name=api_name).result(timeout=CALL_TIMEOUT_S)
        self.latencies.append((kind, time.perf_counter() - t0))
        return out

    def check_chat(self, out: tuple, asked: list[str], follow_up: bool) -> list[dict]:
        history, evidence, status = out[0], out[1], out[2]
        step = f"session {self.n} turn {len(asked)}"
        users = [text_of(m) for m in history if m["role"] == "user"]
        if users != asked:
            self.problems.append(f"{step}: chat history is not this session's questions: {users}")
        answers = [text_of(m) for m in history if m["role"] == "assistant" and not m.get("metadata")]
        if not answers or answers[-1].startswith("⚠") or "Answered by" not in status:
            self.problems.append(f"{step}: no answer: {answers[-1:]} / {status}")
        cited = re.findall(r"data-paper='([0-9a-f]+)'", evidence or "")
        if not cited or cited[0] != self.ids[self.label]:
            self.problems.append(f"{step}: expected {self.label} cited first, evidence cites {cited}")
        searched = re.search(r"searched for: “(.+?)”", status)
        if follow_up:
            rewritten = searched.group(1) if searched else ""
            others = [x for x in LABELS if x != self.label and mentions(rewritten, x)]
            if not mentions(rewritten, self.label) or others:
                self.problems.append(f"{step}: follow-up rewritten as {rewritten!r}, not about {self.label}")
        elif searched:
            self.problems.append(f"{step}: a first question was rewritten: {searched.group(1)!r}")
        return history

    def run(self) -> None:
        client = Client(self.url, verbose=False, analytics_enabled=False)
        try:
            chat = chat_endpoint(client)
            asked = [self.question]
            history = self.check_chat(self.call(client, "chat", self.question, [], "extractive", 5, [],
                                                api_name=chat), asked, follow_up=False)
            self.barrier.wait()
            asked.append(FOLLOW_UPS[0])
            history = self.check_chat(self.call(client, "chat", FOLLOW_UPS[0], history, "extractive", 5, [],
                                                api_name=chat), asked, follow_up=True)
            self.barrier.wait()
            d = self.call(client, "ask", self.other_question, "auto", 5, None, api_name="/ask")
            if d.get("error") or not d.get("citations") or d["citations"][0]["label"] != self.other_label:
                self.problems.append(f"session {self.n} /ask: expected {self.other_label}: "
                                     f"{d.get('error') or d.get('answer')}")
            self.barrier.wait()
            asked.append(FOLLOW_UPS[1])  # after an /ask about another paper: the chat is still about its own
            self.check_chat(self.call(client, "chat", FOLLOW_UPS[1], history, "extractive", 5, [], api_name=chat),
                            asked, follow_up=True)
        except threading.BrokenBarrierError:
            self.problems.append(f"session {self.n}: stopped because another session failed")
        except Exception as e:  # noqa: BLE001 - recorded and asserted on in the test thread
            self.problems.append(f"session {self.n}: {type(e).__name__}: {e}")
            self.barrier.abort()
        finally:
            client.close()


@pytest.mark.slow
def test_concurrent_sessions(corpus_settings, assistant, capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    ids = {e.label: e.paper_id for e in assistant.papers()}
    assert set(LABELS) <= set(ids)
    demo = build_app(corpus_settings, assistant)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, css=CSS)
    url = f"http://127.0.0.1:{port}/"
    try:
        # A session without history: the same follow-up is not rewritten about anything.
        lone = Client(url, verbose=False, analytics_enabled=False)
        try:
            out = lone.submit(FOLLOW_UPS[0], [], "extractive", 5, [], api_name=chat_endpoint(lone)).result(
                timeout=CALL_TIMEOUT_S)
            assert "Answered by" in out[2] and "searched for" not in out[2], out[2]
        finally:
            lone.close()

        rss_before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        barrier = threading.Barrier(SESSIONS, timeout=2 * CALL_TIMEOUT_S)
        sessions = [Session(url, n, ids, barrier) for n in range(SESSIONS)]
        pool = ThreadPoolExecutor(max_workers=SESSIONS, thread_name_prefix="session")
        t0 = time.perf_counter()
        futures = [pool.submit(s.run) for s in sessions]
        done, pending = wait(futures, timeout=DEADLINE_S)
        wall = time.perf_counter() - t0
        if pending:
            barrier.abort()
        pool.shutdown(wait=False, cancel_futures=True)
        assert not pending, f"{len(pending)} sessions still running after {DEADLINE_S} s"
    finally:
        demo.close()

    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    latencies = [t for s in sessions for _, t in s.latencies]
    by_kind = {k: [t for s in sessions for kind, t in s.latencies if kind == k] for k in ("chat", "ask")}
    problems = [p for s in sessions for p in s.problems]
    report = {
        "sessions": SESSIONS, "questions_per_session": STEPS, "questions_answered": len(latencies),
        "errors": len(problems), "soak": SOAK, "wall_s": round(wall, 2),
        "p50_s": round(percentile(latencies, 50), 3) if latencies else None,
        "p95_s": round(percentile(latencies, 95), 3) if latencies else None,
        "max_s": round(max(latencies), 3) if latencies else None,
        "p50_by_endpoint_s": {k: round(percentile(v, 50), 3) for k, v in by_kind.items() if v},
        "p95_by_endpoint_s": {k: round(percentile(v, 95), 3) for k, v in by_kind.items() if v},
        "peak_rss_mb": round(peak_rss_mb, 1), "peak_rss_before_load_mb": round(rss_before_mb, 1),
        "endpoints": {"chat": "/respond (undocumented)", "answers": "/ask"},
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "load.json").write_text(json.dumps(report, indent=2) + "\n")
    with capsys.disabled():
        print(f"\nload: {SESSIONS} sessions x {STEPS} questions, p50 {report['p50_s']} s, p95 {report['p95_s']} s, "
              f"max {report['max_s']} s, wall {report['wall_s']} s, peak RSS {report['peak_rss_mb']} MB, "
              f"errors {len(problems)}")

    assert not problems, "\n".join(problems)
    assert len(latencies) == SESSIONS * STEPS
