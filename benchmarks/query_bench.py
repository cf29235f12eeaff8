"""Query latency next to its floor, on the 38-paper corpus, with the embedded store and a `chroma run` server.

    python benchmarks/query_bench.py [--rounds 3]

The floor is what any answer must pay: embed the question, one Chroma query, one BM25 query. The measured
path is retrieve + extractive answer (grouping, the catalog lookup, sentence scoring, the citation check).
Both run interleaved in one fresh process per store, so machine noise hits them alike.
Targets: p50 <= 1.5x the floor and <= 50 ms at 38 papers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import ROOT, bench_settings, p50, percentile, table

PROBE = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from rag.settings import load_settings
from rag.qa import Assistant
s = load_settings()
a = Assistant(s)
a.retriever.warm_up()
questions = json.loads({questions!r})
floor, full = [], []
for _ in range({rounds}):
    for q in questions:
        r = a.retriever
        t = time.perf_counter()
        v = r.embedder.get_query_embedding(q)
        r.store.chunks.query(query_embeddings=[v], n_results=s.candidates, include=["distances"])
        r.local_index.search(q, s.candidates)
        floor.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        a.ask(q, mode="extractive")
        full.append((time.perf_counter() - t) * 1000)
print(json.dumps({{"floor": floor, "full": full, "rss_mb": [int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]}}))
"""


def probe(env: dict[str, str], questions: list[str], rounds: int) -> dict:
    code = PROBE.format(root=str(ROOT), questions=json.dumps(questions), rounds=rounds)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def dev_questions() -> list[str]:
    lines = (ROOT / "tests/data/dev_questions.jsonl").read_text().splitlines()
    return [json.loads(x)["question"] for x in lines if x.strip()]


def start_chroma(path: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([str(ROOT / ".venv/bin/chroma"), "run", "--path", str(path), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chroma run did not start")


def row(name: str, result: dict) -> dict:
    full, floor = result["full"], result["floor"]
    return {"store": name, "queries": len(full), "p50_ms": f"{p50(full):.1f}", "p95_ms": f"{percentile(full, 95):.1f}",
            "floor_p50_ms": f"{p50(floor):.1f}", "floor_p95_ms": f"{percentile(floor, 95):.1f}",
            "p50_ratio": f"{p50(full) / p50(floor):.2f}", "rss_mb": f"{result['rss_mb']:.0f}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from rag.ingest import ingest

    questions = dev_questions()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        local = bench_settings(Path(tmp) / "embedded", corpus_paths=[ROOT / "corpus"])
        ingest(local, progress=False)
        env = dict(os.environ, PAPERS_DATA_DIR=str(local.data_dir))
        rows.append(row("embedded PersistentClient", probe(env, questions, args.rounds)))

        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = start_chroma(Path(tmp) / "server", port)
        try:
            remote = bench_settings(Path(tmp) / "client", corpus_paths=[ROOT / "corpus"], chroma_host="127.0.0.1",
                                    chroma_port=port)
            ingest(remote, progress=False)
            env = dict(os.environ, PAPERS_DATA_DIR=str(remote.data_dir), CHROMA_HOST="127.0.0.1",
                       CHROMA_PORT=str(port))
            rows.append(row(f"chroma run server (127.0.0.1:{port})", probe(env, questions, args.rounds)))
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(f"38 papers, {len(questions)} dev questions x {args.rounds} rounds, extractive answers, floor interleaved")
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
