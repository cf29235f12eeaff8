"""Query latency of the fitted paper-level fusion next to its floor, at 38 papers and at SciFact size.

    python benchmarks/fusion_latency.py [--data-dir DIR] [--questions FILE] [--rounds 2]

In one process, interleaved per question so machine noise hits all alike: the floor (embed the question, one
Chroma query, one BM25 query), retrieval with the chunk-level fusion alone (the ranking before paper-level
evidence), retrieval with the fitted fusion (rag/answer/fitted/retrieval.json), and the full extractive answer.
Without --data-dir the 38-paper corpus is ingested into a temporary folder; --questions takes a JSONL file
with a "question" or "claim" field (default tests/data/dev_questions.jsonl).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import ROOT, bench_settings, p50, percentile, table


def measure(data_dir: Path, questions: list[str], rounds: int) -> list[dict]:
    from rag.service import Assistant
    from rag.answer.retrieve import FusionWeights

    settings = bench_settings(data_dir)
    a = Assistant(settings)
    r = a.retriever
    r.warm_up()
    fitted = r.fusion
    chunk_only = FusionWeights({"chunks": 1.0}, 60.0)
    times: dict[str, list[float]] = {"floor": [], "retrieve, chunk fusion only": [], "retrieve, fitted fusion": [],
                                     "ask (extractive)": []}
    for _ in range(rounds):
        for q in questions:
            t = time.perf_counter()
            v = r.embedder.get_query_embedding(q)
            r.store.chunks.query(query_embeddings=[v], n_results=settings.candidates, include=["distances"])
            r.local_index.search(q, settings.candidates)
            times["floor"].append((time.perf_counter() - t) * 1000)
            for name, fusion in (("retrieve, chunk fusion only", chunk_only), ("retrieve, fitted fusion", fitted)):
                t = time.perf_counter()
                r.retrieve(q, k=10, fusion=fusion)
                times[name].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            a.ask(q, k=10, mode="extractive")
            times["ask (extractive)"].append((time.perf_counter() - t) * 1000)
    floor = p50(times["floor"])
    return [{"path": name, "p50_ms": f"{p50(v):.1f}", "p95_ms": f"{percentile(v, 95):.1f}",
             "p50 / floor": f"{p50(v) / floor:.2f}"} for name, v in times.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--questions", type=Path, default=ROOT / "tests/data/dev_questions.jsonl")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rows = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    questions = [d.get("question") or d.get("claim") for d in rows][:args.limit]
    if args.data_dir is None:
        from rag.index.ingest import ingest

        with tempfile.TemporaryDirectory() as tmp:
            settings = bench_settings(Path(tmp), corpus_paths=[ROOT / "corpus"])
            ingest(settings, progress=False)
            out = measure(Path(tmp), questions, args.rounds)
    else:
        out = measure(args.data_dir, questions, args.rounds)
    print(f"{len(questions)} questions x {args.rounds} rounds, interleaved")
    print(table(out, list(out[0])))


if __name__ == "__main__":
    main()
