"""Query latency next to its floor, on the 38-paper corpus, with the embedded store and a `chroma run` server.

    python benchmarks/query_bench.py [--rounds 3]

The floor is what any answer must pay: embed the question, one Chroma query, one BM25 query. At 38 papers the
answer scans the chunk vectors in memory instead of querying Chroma (PAPERS_CHUNK_SCAN_LIMIT), so the table also
gives the floor with that scan in the Chroma query's place. The measured
path is retrieve + extractive answer (grouping, the catalog lookup, sentence scoring, the citation check).
Both run interleaved in one fresh process per store, so machine noise hits them alike.
Targets: p50 <= 1.5x the floor and <= 50 ms at 38 papers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from common import ROOT, bench_settings, p50, percentile, query_probe, table

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
    full, floor, scan = result["full"], result["floor"], result.get("scan_floor") or []
    return {"store": name, "queries": len(full), "p50_ms": f"{p50(full):.1f}", "p95_ms": f"{percentile(full, 95):.1f}",
            "floor_p50_ms": f"{p50(floor):.1f}", "floor_p95_ms": f"{percentile(floor, 95):.1f}",
            "p50_ratio": f"{p50(full) / p50(floor):.2f}",
            "scan_floor_p50_ms": f"{p50(scan):.1f}" if scan else "",
            "p50_ratio_to_scan_floor": f"{p50(full) / p50(scan):.2f}" if scan else "",
            "rss_mb": f"{result['rss_mb']:.0f}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from rag.index.ingest import ingest

    questions = dev_questions()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        local = bench_settings(Path(tmp) / "embedded", corpus_paths=[ROOT / "corpus"])
        ingest(local, progress=False)
        env = dict(os.environ, PAPERS_DATA_DIR=str(local.data_dir))
        rows.append(row("embedded PersistentClient", query_probe(env, questions, args.rounds)))

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
            rows.append(row(f"chroma run server (127.0.0.1:{port})", query_probe(env, questions, args.rounds)))
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(f"38 papers, {len(questions)} dev questions x {args.rounds} rounds, extractive answers, floor interleaved")
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
