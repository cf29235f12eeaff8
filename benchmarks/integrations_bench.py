"""Latency each front end adds over the assistant itself, measured side by side in one run.

    python benchmarks/integrations_bench.py [--rounds 5] [--data-dir DIR] [--cold-base REV] [--cold-runs 5]

Warm, extractive answers to 10 hand-written questions, asked round-robin so every front end meets the same machine
load: `Assistant.ask` in-process (the floor), `PapersQueryEngine.query` in-process, the MCP `ask` tool over stdio
and over streamable HTTP (`papers mcp`), and `POST /v1/chat/completions` through the `openai` client, plain and
streamed (`papers serve`). Prints median latency per call and its ratio to `Assistant.ask`.

`--cold-base REV` also times `papers ask` from process start to printed answer for the code at REV and for the
working tree, interleaved (the LlamaIndex import the one answer path adds shows up here).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import ROOT, bench_settings, table

sys.path.insert(0, str(ROOT))
from tests.integrations.helpers import papers_env, seed_questions, start, stop  # noqa: E402


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cold_start(tree: Path, env: dict[str, str], question: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rag.frontends.cli", "ask", "--json", question], cwd=tree, check=True,
                   env=dict(env, PYTHONPATH=str(tree)), capture_output=True, start_new_session=True)
    return time.perf_counter() - t


async def main_async(args: argparse.Namespace, settings, log_dir: Path) -> None:  # noqa: ANN001
    import openai
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from rag.frontends.llamaindex import PapersQueryEngine
    from rag.service import Assistant

    questions = seed_questions(10)
    env = papers_env(settings, PAPERS_ANSWER_MODE="extractive")
    assistant = Assistant(settings.model_copy(update={"answer_mode": "extractive"}))
    engine = PapersQueryEngine(assistant=assistant)
    mcp_port, serve_port = free_port(), free_port()
    mcp_proc = start([sys.executable, "-m", "rag.frontends.cli", "mcp", "--http", "--port", str(mcp_port)], env,
                     f"http://127.0.0.1:{mcp_port}/mcp", log_dir / "mcp.log", new_session=True)
    serve_proc = start([sys.executable, "-m", "rag.frontends.cli", "serve", "--port", str(serve_port)], env,
                       f"http://127.0.0.1:{serve_port}/v1/models", log_dir / "serve.log", new_session=True)
    oai = openai.OpenAI(base_url=f"http://127.0.0.1:{serve_port}/v1", api_key="unused", max_retries=0)
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "rag.frontends.cli", "mcp"], cwd=str(ROOT), env=env)
    try:
        async with Client(stdio, read_timeout_seconds=300) as mcp_stdio, \
                Client(f"http://127.0.0.1:{mcp_port}/mcp", read_timeout_seconds=300) as mcp_http:
            def chat(q: str) -> float:
                r = oai.chat.completions.create(model="papers", messages=[{"role": "user", "content": q}])
                return r.model_extra["papers"]["timings_ms"]["total_ms"]

            def streamed(q: str) -> float:
                last = list(oai.chat.completions.create(model="papers", messages=[{"role": "user", "content": q}],
                                                        stream=True))[-1]
                return last.model_extra["papers"]["timings_ms"]["total_ms"]

            async def tool(client: Client, q: str) -> float:
                r = await client.call_tool("ask", {"question": q})
                return r.structured_content["timings_ms"]["total_ms"]

            # Each call returns the time the Assistant itself spent inside it (its answer's total_ms), so what a
            # front end adds is measured within the call, whatever else the machine was doing at that moment.
            fronts: dict[str, Callable] = {
                "Assistant.ask (in-process)": lambda q: assistant.ask(q).timings_ms["total_ms"],
                "PapersQueryEngine.query (in-process)":
                    lambda q: engine.query(q).metadata["answer"].timings_ms["total_ms"],
                "MCP ask tool, stdio": lambda q: tool(mcp_stdio, q),
                "MCP ask tool, streamable HTTP": lambda q: tool(mcp_http, q),
                "/v1/chat/completions (openai client)": chat,
                "/v1/chat/completions, stream=True": streamed,
            }
            times: dict[str, list[float]] = {name: [] for name in fronts}
            inner: dict[str, list[float]] = {name: [] for name in fronts}
            # A shuffled order per question: a call right after another process's call meets that process's
            # leftover CPU use, so no front end may always follow the same one.
            order = random.Random(0)
            for rnd in range(args.rounds + 1):  # round 0 warms every path up and is not counted
                for q in questions:
                    names = list(fronts)
                    order.shuffle(names)
                    for name in names:
                        t = time.perf_counter()
                        result = fronts[name](q)
                        if asyncio.iscoroutine(result):
                            result = await result
                        if rnd:
                            times[name].append((time.perf_counter() - t) * 1000)
                            inner[name].append(float(result))
    finally:
        stop(mcp_proc)
        stop(serve_proc)
    floor = statistics.median(times["Assistant.ask (in-process)"])
    rows = []
    for name, v in times.items():
        added = [t - a for t, a in zip(v, inner[name])]
        rows.append({"front end": name, "median ms": f"{statistics.median(v):.1f}",
                     "Assistant ms inside": f"{statistics.median(inner[name]):.1f}",
                     "added ms": f"{statistics.median(added):.1f}",
                     "ratio": f"{statistics.median(t / a for t, a in zip(v, inner[name])):.2f}×",
                     "vs in-process ask": f"{statistics.median(v) / floor:.2f}×"})
    print(f"{len(questions)} questions × {args.rounds} rounds, extractive answers, shuffled order per question")
    print("ratio: per call, the front end's latency over the Assistant's own time inside that call (median)")
    print(table(rows, ["front end", "median ms", "Assistant ms inside", "added ms", "ratio", "vs in-process ask"]))


def main() -> None:
    if os.getsid(0) != os.getpid():
        # Linux shares CPU between sessions first (autogroups), and the MCP SDK starts its stdio server in a
        # session of its own: every process of this benchmark gets one, or that server alone would get a
        # bigger share of a busy machine.
        sys.exit(subprocess.run([sys.executable, *sys.argv], start_new_session=True).returncode)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, help="An index of corpus/ to reuse (default: ingest into a temp dir).")
    ap.add_argument("--cold-base", help="Git revision to compare `papers ask` cold start with.")
    ap.add_argument("--cold-runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.data_dir:
            settings = bench_settings(args.data_dir)
        else:
            from rag.index.ingest import ingest

            settings = bench_settings(Path(tmp) / "data", corpus_paths=[ROOT / "corpus"])
            ingest(settings, progress=False)
        asyncio.run(main_async(args, settings, Path(tmp)))
        if args.cold_base:
            base_tree = Path(tmp) / "base"
            base_tree.mkdir()
            archive = subprocess.run(["git", "archive", args.cold_base, "rag", "eval"], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base_tree)], input=archive, check=True)
            env = dict(os.environ, PAPERS_DATA_DIR=str(settings.data_dir), PAPERS_ENV_FILE=os.devnull,
                       PAPERS_ANSWER_MODE="extractive")
            q = seed_questions(1)[0]
            before, after = [], []
            for _ in range(args.cold_runs):  # interleaved, so both meet the same load
                before.append(cold_start(base_tree, env, q))
                after.append(cold_start(ROOT, env, q))
            b, a = statistics.median(before), statistics.median(after)
            print(f"\n`papers ask` cold start, median of {args.cold_runs}: {args.cold_base} {b:.2f} s, "
                  f"working tree {a:.2f} s ({a - b:+.2f} s, {a / b:.2f}×)")


if __name__ == "__main__":
    main()
