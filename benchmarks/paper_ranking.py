"""The ranking by paper vector two ways, on an ingested store: the exact scan of the mean chunk vectors in memory,
and a query of Chroma's paper collection (HNSW), which `PAPERS_PAPER_SCAN_LIMIT` switches to above that many
papers. Prints, side by side in one run, each one's latency (p50), how often the two agree on the top n, and,
with `--qrels` claims (SciFact), the retrieval figures of the whole hybrid ranking with either.

    python benchmarks/paper_ranking.py --data-dir DIR [--claims ../shared/scifact] [--n 200]

`DIR` is a PAPERS_DATA_DIR (e.g. the store `benchmarks/scifact.py` or `benchmarks/scale_scifact.py --keep` made).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from common import bench_settings, p50, table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--claims", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "scifact",
                    help="folder with claims_train.jsonl (the questions; relevance judgements when present)")
    ap.add_argument("--n", type=int, default=200, help="claims asked")
    args = ap.parse_args()

    import numpy as np

    from eval.scifact import load_claims, retrieval_figures
    from rag.service import Assistant
    from rag.answer.retrieve import _top_papers, one_blas_thread

    claims = load_claims(args.claims)[:args.n]
    settings = bench_settings(args.data_dir, answer_mode="extractive")
    scan, query = (Assistant(settings.model_copy(update={"paper_scan_limit": limit})).retriever
                   for limit in (10**9, 0))
    level = scan.local_index.papers_index
    n = settings.candidates
    vectors = [scan.embedder.get_query_embedding(c.claim) for c in claims]
    times: dict[str, list[float]] = {"scan": [], "collection": []}
    agree = []
    with one_blas_thread():
        for v in vectors:
            t = time.perf_counter()
            exact = _top_papers(level, np.asarray(v, dtype=np.float32), n, None)
            times["scan"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            approx = query._paper_query(level, v, n)
            times["collection"].append((time.perf_counter() - t) * 1000)
            agree.append(len(set(exact) & set(approx)) / max(1, len(exact)))
    rows = []
    for name, retriever in (("scan", scan), ("collection", query)):
        ranks = [[p.paper_id for p in retriever.retrieve(c.claim, k=10).papers] for c in claims]
        figures = retrieval_figures(claims, ranks) if any(c.gold for c in claims) else {}
        rows.append({"paper ranking": name, "p50 ms": f"{p50(times[name]):.2f}",
                     **{k: f"{v:.4f}" for k, v in figures.items()}})
    print(f"{len(level.paper_ids):,} papers, {len(claims)} claims, top {n}: the two agree on "
          f"{sum(agree) / len(agree):.3f} of the top papers on average (min {min(agree):.2f})")
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
