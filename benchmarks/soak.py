"""Soak: concurrent chats against the real UI and `papers serve` for minutes, watching the servers' memory.

    python benchmarks/soak.py [--clients 30] [--minutes 10] [--warmup 2] [--data-dir DIR] [--out FILE]

Starts `papers ui` (with a login) and `papers serve` (with a key) as their own processes over one index (the
seed corpus, ingested into a scratch folder unless --data-dir names an ingested one). Half the clients chat in
the UI through `gradio_client` (each conversation a new session: a login, the development conversations'
turns as follow-ups, one `/ask` and one `/lookup`), the other half over `/v1/chat/completions` with the
`openai` client (the same conversations, the history sent back each turn, streaming every other turn). Every
call is checked: an exception, an HTTP error or an answer that says it failed is an error.

The servers' resident memory (the process and its children) is sampled every few seconds. The warm-up lasts
`--warmup` minutes and until the UI has opened `--warm-sessions` sessions, by default as many as it keeps
(`ui/app.py SESSIONS_KEPT`: until then each new session adds its state, ~0.3 MB); then the load goes on for
`--minutes` more. "Flat" means the highest sample after the warm-up is within 10% of the median of the
warm-up's last minute (goal: 0 errors, flat within 10%).

Then, with the load stopped, five unauthenticated 100 MB request bodies go to each server at once (raw sockets
that declare the length and send until the server answers or closes): each must be refused (401/413) and the
server's memory must not move (goal: under 10 MB). Results are printed and written to --out as JSON.
`make soak` runs it as printed here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from common import ROOT, percentile

from eval.conversations import load_conversations
from ui.app import SESSIONS_KEPT

USER, PASSWORD, KEY = "soak", "soak-password", "soak-key"
CALL_TIMEOUT_S = 120         # one answer, however loaded the servers are
SAMPLE_EVERY_S = 5
FLAT_WITHIN = 0.10           # the goal: memory flat within 10% after the warm-up
BODY_MB, BODIES = 100, 5     # the unauthenticated bodies
BODY_MOVE_MB = 10            # "memory unchanged": less than this
IDLE_WAIT_S = 60             # after the load: twice the servers' idle time before they release memory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    name: str
    proc: subprocess.Popen
    url: str
    samples: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, RSS MB)

    def rss_mb(self) -> float:
        try:
            root = psutil.Process(self.proc.pid)
            return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20
        except psutil.NoSuchProcess:
            return float("nan")


def start(name: str, args: list[str], env: dict[str, str], url: str, log: Path) -> Server:
    proc = subprocess.Popen([str(Path(sys.executable).parent / "papers"), *args], env=env, cwd=ROOT,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=5)
            return Server(name, proc, url)
        except urllib.error.HTTPError:  # up, and answering (a 401 from the guarded API counts)
            return Server(name, proc, url)
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit(f"{name} did not start within 180 s: {log.read_text()[-2000:]}")


def stop(server: Server) -> None:
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGTERM)
        try:
            server.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)


class Load:
    """The clients' shared record: latencies by kind and every error, until `stop` is set."""

    def __init__(self, conversations: list[list[str]]) -> None:
        self.conversations = conversations
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.ui_sessions = 0

    def timed(self, kind: str, call, *args, **kwargs):
        t0 = time.perf_counter()
        out = call(*args, **kwargs)
        with self.lock:
            self.latencies.setdefault(kind, []).append(time.perf_counter() - t0)
        return out

    def error(self, where: str, what: str) -> None:
        with self.lock:
            self.errors.append(f"{where}: {what[:300]}")


def ui_client(load: Load, url: str, n: int) -> None:
    from gradio_client import Client

    turn = 0
    while not load.stop.is_set():
        questions = load.conversations[(n + turn) % len(load.conversations)]
        turn += 1
        try:
            client = Client(url, auth=(USER, PASSWORD), verbose=False, analytics_enabled=False)
            with load.lock:
                load.ui_sessions += 1
            ui_conversation(load, client, questions)
        except Exception as e:
            load.error(f"ui client {n}", f"{type(e).__name__}: {e}")
            time.sleep(1)


def ui_conversation(load: Load, client, questions: list[str]) -> None:
    try:
        chat = "/" + next(d["api_name"] for d in client.config["dependencies"] if d.get("api_name") == "respond")
        history: list = []
        for q in questions:
            if load.stop.is_set():
                return
            out = load.timed("ui chat", lambda q=q, h=history: client.submit(q, h, "extractive", 5, [], api_name=chat)
                             .result(timeout=CALL_TIMEOUT_S))
            history, status = out[0], out[2]
            if "Answered by" not in status:
                load.error("ui chat", f"{q!r}: {status}")
        d = load.timed("ui ask", lambda: client.submit(questions[0], "auto", 5, None, api_name="/ask")
                       .result(timeout=CALL_TIMEOUT_S))
        if d.get("error") or not d.get("citations"):
            load.error("ui /ask", f"{questions[0]!r}: {d.get('error') or d.get('answer')}")
        hits = load.timed("ui lookup", lambda: client.submit(questions[0], 5, api_name="/lookup")
                          .result(timeout=CALL_TIMEOUT_S))
        if not hits or hits[0].get("error"):
            load.error("ui /lookup", f"{questions[0]!r}: {hits}")
    finally:
        client.close()


def api_client(load: Load, url: str, n: int) -> None:
    from openai import OpenAI

    api = OpenAI(base_url=url, api_key=KEY, timeout=CALL_TIMEOUT_S, max_retries=0)
    turn = 0
    while not load.stop.is_set():
        questions = load.conversations[(n + turn) % len(load.conversations)]
        turn += 1
        messages: list[dict] = []
        for i, q in enumerate(questions):
            if load.stop.is_set():
                return
            messages.append({"role": "user", "content": q})
            try:
                text = load.timed("v1 stream" if i % 2 else "v1", api_answer, api, messages, stream=bool(i % 2))
            except Exception as e:
                load.error(f"v1 client {n}", f"{type(e).__name__}: {e}")
                break
            if not text.strip() or text.lstrip().startswith("⚠"):
                load.error(f"v1 client {n}", f"{q!r}: {text!r}")
            messages.append({"role": "assistant", "content": text})


def api_answer(api, messages: list[dict], stream: bool) -> str:
    if not stream:
        return api.chat.completions.create(model="papers", messages=messages).choices[0].message.content or ""
    parts = []
    for chunk in api.chat.completions.create(model="papers", messages=messages, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts)


def warm_up(load: Load, at_least_s: float, sessions: int, t0: float) -> float:
    """Seconds of load until the warm-up ends: `at_least_s`, and until the UI has had `sessions` sessions (by
    default SESSIONS_KEPT, so its bounded store of session state is full and a later session replaces one)."""
    while time.monotonic() - t0 < at_least_s or load.ui_sessions < sessions:
        if load.stop.wait(1):
            break
    return time.monotonic() - t0


def sampler(servers: list[Server], stop: threading.Event, t0: float) -> None:
    while not stop.wait(SAMPLE_EVERY_S):
        for s in servers:
            s.samples.append((time.monotonic() - t0, s.rss_mb()))


def flatness(server: Server, warmup_s: float) -> dict:
    """Warm-up level (median of its last minute), the highest sample after it, and their ratio."""
    warm = [mb for t, mb in server.samples if warmup_s - 60 <= t < warmup_s] or [server.samples[0][1]]
    after = [mb for t, mb in server.samples if t >= warmup_s]
    level, peak = statistics.median(warm), max(after)
    return {"warm_mb": round(level, 1), "peak_after_mb": round(peak, 1), "end_mb": round(after[-1], 1),
            "growth": round(peak / level - 1, 4), "flat": peak <= level * (1 + FLAT_WITHIN)}


def send_body(host: str, port: int, path: str, mb: int) -> dict:
    """POST `mb` MB without credentials on a raw socket; stop sending when the server answers or closes."""
    sent = 0
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall((f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {mb * 2**20}\r\nConnection: close\r\n\r\n").encode())
        block = b"x" * 2**20
        s.settimeout(0.05)
        reply = b""
        try:
            for _ in range(mb):
                s.sendall(block)
                sent += 1
                try:
                    reply += s.recv(4096)
                    if reply:
                        break
                except TimeoutError:
                    continue
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.settimeout(30)
        try:
            while b"\r\n" not in reply:
                more = s.recv(4096)
                if not more:
                    break
                reply += more
        except (OSError, TimeoutError):
            pass
    status = reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/") else "no reply"
    return {"status": status, "mb_sent": sent}


def bodies(server: Server, path: str) -> dict:
    host, port = server.url.split("//")[1].split("/")[0].split(":")
    before = server.rss_mb()
    peak = before
    with ThreadPoolExecutor(BODIES) as pool:
        futures = [pool.submit(send_body, host, int(port), path, BODY_MB) for _ in range(BODIES)]
        while not all(f.done() for f in futures):
            peak = max(peak, server.rss_mb())
            time.sleep(0.1)
        results = [f.result() for f in futures]
    time.sleep(2)
    after = server.rss_mb()
    return {"path": path, "replies": [r["status"] for r in results], "mb_sent": [r["mb_sent"] for r in results],
            "rss_before_mb": round(before, 1), "rss_peak_mb": round(peak, 1), "rss_after_mb": round(after, 1),
            "refused": all(r["status"] in ("401", "413") for r in results),
            "unchanged": peak - before < BODY_MOVE_MB}


def prepare_data(data_dir: Path | None, scratch: Path, env: dict[str, str]) -> Path:
    if data_dir is not None:
        return data_dir
    data = scratch / "data"
    subprocess.run([str(Path(sys.executable).parent / "papers"), "ingest"], env={**env, "PAPERS_DATA_DIR": str(data)},
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return data


def conversations() -> list[list[str]]:
    return [[t.q for t in case.turns] for case in load_conversations(ROOT / "eval" / "conversations.jsonl")]


def run(args: argparse.Namespace, scratch: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERS_", "OPENAI_", "CHROMA_"))}
    env.update(PAPERS_ENV_FILE=os.devnull, PAPERS_ANSWER_MODE="extractive")
    env["PAPERS_DATA_DIR"] = str(prepare_data(args.data_dir, scratch, env))
    ui_port, api_port = free_port(), free_port()
    ui = start("papers ui", ["ui", "--port", str(ui_port)], {**env, "PAPERS_UI_AUTH": f"{USER}:{PASSWORD}"},
               f"http://127.0.0.1:{ui_port}/", scratch / "ui.log")
    api = start("papers serve", ["serve", "--port", str(api_port)], {**env, "PAPERS_SERVE_API_KEY": KEY},
                f"http://127.0.0.1:{api_port}/v1", scratch / "serve.log")
    servers = [ui, api]
    try:
        return soak(args, servers)
    finally:
        for s in servers:
            stop(s)


def soak(args: argparse.Namespace, servers: list[Server]) -> dict:
    ui, api = servers
    load = Load(conversations())
    t0 = time.monotonic()
    sampling = threading.Event()
    threading.Thread(target=sampler, args=(servers, sampling, t0), daemon=True).start()
    n_ui = args.clients // 2
    pool = ThreadPoolExecutor(args.clients)
    for n in range(args.clients):
        pool.submit(ui_client if n < n_ui else api_client, load, ui.url if n < n_ui else api.url, n)
    warmup_s = warm_up(load, args.warmup * 60, args.warm_sessions, t0)
    time.sleep(args.minutes * 60)
    load.stop.set()
    pool.shutdown(wait=True)
    time.sleep(IDLE_WAIT_S)  # idle: the servers give freed memory back (rag/frontends/memory.py)
    sampling.set()
    idle = {s.name: round(s.rss_mb(), 1) for s in servers}
    answered = {k: len(v) for k, v in load.latencies.items()}
    return {
        "clients": {"ui": n_ui, "v1": args.clients - n_ui}, "warmup_min": round(warmup_s / 60, 1),
        "minutes": args.minutes, "ui_sessions": load.ui_sessions,
        "calls": answered, "calls_total": sum(answered.values()), "errors": len(load.errors),
        "first_errors": load.errors[:10],
        "p50_s": {k: round(percentile(v, 50), 3) for k, v in load.latencies.items()},
        "p95_s": {k: round(percentile(v, 95), 3) for k, v in load.latencies.items()},
        "memory": {s.name: {**flatness(s, warmup_s), "idle_mb": idle[s.name]} for s in servers},
        "samples_mb": {s.name: [round(mb, 1) for _, mb in s.samples] for s in servers},
        "bodies": {"papers serve": bodies(api, "/v1/chat/completions"), "papers ui": bodies(ui, "/gradio_api/upload")},
    }


def report(result: dict) -> str:
    lines = [f"soak: {result['clients']['ui']} UI + {result['clients']['v1']} /v1 clients, "
             f"{result['warmup_min']} min warm-up + {result['minutes']} min, {result['ui_sessions']} UI sessions: "
             f"{result['calls_total']} calls "
             f"{result['calls']}, errors {result['errors']} (goal 0)"]
    lines += [f"  p50 / p95 s: {k} {result['p50_s'][k]} / {result['p95_s'][k]}" for k in result["p50_s"]]
    for name, m in result["memory"].items():
        lines.append(f"  {name}: warm-up {m['warm_mb']} MB, peak after {m['peak_after_mb']} MB, end {m['end_mb']} MB,"
                     f" growth {m['growth']:+.1%} ({'flat' if m['flat'] else 'NOT flat'} within {FLAT_WITHIN:.0%}),"
                     f" {m['idle_mb']} MB after {IDLE_WAIT_S} s idle")
    for name, b in result["bodies"].items():
        lines.append(f"  {BODIES} unauthenticated {BODY_MB} MB bodies to {name} {b['path']}: replies {b['replies']}, "
                     f"MB sent before the reply {b['mb_sent']}, RSS {b['rss_before_mb']} → peak {b['rss_peak_mb']} "
                     f"→ {b['rss_after_mb']} MB "
                     f"({'refused, unchanged' if b['refused'] and b['unchanged'] else 'FAIL'})")
    return "\n".join(lines)


def passed(result: dict) -> bool:
    return (result["errors"] == 0 and all(m["flat"] for m in result["memory"].values())
            and all(b["refused"] and b["unchanged"] for b in result["bodies"].values()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=30, help="concurrent clients, half UI and half /v1")
    ap.add_argument("--minutes", type=float, default=10, help="minutes of load after the warm-up")
    ap.add_argument("--warmup", type=float, default=2, help="minutes of load before memory is judged")
    ap.add_argument("--warm-sessions", type=int, default=SESSIONS_KEPT,
                    help="UI sessions opened before memory is judged (default: as many as the UI keeps)")
    ap.add_argument("--data-dir", type=Path, help="an ingested data dir (default: the seed corpus, ingested)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "soak.json")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="papers-soak-"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args, scratch)
    finally:
        for log in scratch.glob("*.log"):  # the servers' own output, kept beside the result
            shutil.copy(log, args.out.with_name(f"soak-{log.name}"))
        shutil.rmtree(scratch, ignore_errors=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))
    sys.exit(0 if passed(result) else 1)


if __name__ == "__main__":
    main()
