"""Cold start: process start to the first printed answer of `papers ask`, and to the UI answering.

    python benchmarks/cold_start.py [--runs 5]

Target: `papers ask` < 6 s. Also prints where the time goes (imports, index load, first embedding) and the
same command with the torch query path, for comparison in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, bench_settings, table

PAPERS = str(ROOT / ".venv/bin/papers")
QUESTION = "Over how many test steps does RecMem stay stable?"


def time_ask(env: dict[str, str]) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([PAPERS, "ask", "--json", QUESTION], capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - t
    return wall, json.loads(out.stdout)["timings_ms"]


def import_seconds(env: dict[str, str]) -> float:
    code = "import time; t=time.perf_counter(); import rag.frontends.cli, rag.service, chromadb, bm25s, onnxruntime; " \
           "print(time.perf_counter()-t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip())


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def time_ui(env: dict[str, str]) -> tuple[float, float]:
    """Seconds from `papers ui` to its first answer over the API, and its resident memory after 20 questions."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.perf_counter()
    proc = subprocess.Popen([PAPERS, "ui", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        from gradio_client import Client

        deadline = time.monotonic() + 120
        while True:
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
                answer = client.predict(QUESTION, "extractive", 5, None, api_name="/ask")
                assert answer["citations"][0]["label"] == "RecMem"
                first = time.perf_counter() - t
                questions = [json.loads(x)["question"] for x in
                             (ROOT / "tests/data/dev_questions.jsonl").read_text().splitlines() if x.strip()]
                for q in questions[:19]:
                    client.predict(q, "extractive", 5, None, api_name="/ask")
                return first, rss_mb(proc.pid)
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from rag.index.ingest import ingest

    with tempfile.TemporaryDirectory() as tmp:
        settings = bench_settings(Path(tmp) / "data", corpus_paths=[ROOT / "corpus"])
        ingest(settings, progress=False)
        env = dict(os.environ, PAPERS_DATA_DIR=str(settings.data_dir), PAPERS_ENV_FILE=os.devnull)
        torch_env = dict(env, PAPERS_QUERY_EMBEDDER="torch")
        onnx_runs, torch_runs, parts = [], [], []
        for _ in range(args.runs):  # interleaved, so both paths meet the same machine load
            wall, timings = time_ask(env)
            onnx_runs.append(wall)
            parts.append(timings)
            torch_runs.append(time_ask(torch_env)[0])
        imports = statistics.median(import_seconds(env) for _ in range(3))
        ui, ui_rss = time_ui(env)
    first = {k: statistics.median(p[k] for p in parts) for k in ("load_ms", "embed_ms", "total_ms")}
    rows = [
        {"measure": "`papers ask` to printed answer (ONNX question path)", "seconds": f"{statistics.median(onnx_runs):.2f}",
         "target": "< 6"},
        {"measure": "`papers ask` with PAPERS_QUERY_EMBEDDER=torch", "seconds": f"{statistics.median(torch_runs):.2f}",
         "target": ""},
        {"measure": "  of which imports (rag, chromadb, bm25s, onnxruntime)", "seconds": f"{imports:.2f}", "target": ""},
        {"measure": "  of which opening store + BM25 index", "seconds": f"{first['load_ms'] / 1000:.2f}", "target": ""},
        {"measure": "  of which first question embedding (model load)", "seconds": f"{first['embed_ms'] / 1000:.2f}",
         "target": ""},
        {"measure": "`papers ui` start to first answer over the API", "seconds": f"{ui:.2f}", "target": ""},
    ]
    rows.append({"measure": "`papers ui` resident memory after 20 questions (MB)", "seconds": f"{ui_rss:.0f}",
                 "target": ""})
    print(f"median of {args.runs} runs")
    print(table(rows, ["measure", "seconds", "target"]))


if __name__ == "__main__":
    main()
