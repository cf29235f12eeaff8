"""The papers grid against asking the same cells one by one, in one process on the 38-paper corpus.

    python benchmarks/grid_bench.py [--data DATA_DIR] [--rounds 3]

A 38 x 5 grid (the default columns) is 190 cells; the baseline is 190 `Assistant.ask` calls, one per cell (each
column's question about each paper, scoped to that paper), as a user would fill the table by hand. Both run after
one warm-up, interleaved per round, and the medians are printed. Goal: the grid under 2 s.
Without --data the corpus is ingested into a scratch folder first.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import ROOT, bench_settings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, help="a data dir whose index holds corpus/ (default: ingest one)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from rag.answer.grid import COLUMNS
    from rag.service import Assistant

    if args.data:
        settings = bench_settings(args.data)
    else:
        from rag.index.ingest import ingest

        settings = bench_settings(Path(tempfile.mkdtemp(prefix="grid-bench-")), corpus_paths=[ROOT / "corpus"])
        ingest(settings, progress=False)
    assistant = Assistant(settings)
    ids = [e.paper_id for e in assistant.papers()]
    questions = list(COLUMNS.values())

    def grid() -> float:
        t = time.perf_counter()
        table = assistant.grid()
        assert len(table.rows) * len(table.columns) == len(ids) * len(COLUMNS)
        return time.perf_counter() - t

    def asks() -> float:
        t = time.perf_counter()
        for pid in ids:
            for q in questions:
                assistant.ask(q, paper_ids=[pid], mode="extractive")
        return time.perf_counter() - t

    grid(), assistant.ask(questions[0], paper_ids=ids[:1], mode="extractive")  # warm-up: models, index, caches
    g, a = [], []
    for _ in range(args.rounds):
        g.append(grid())
        a.append(asks())
    cells = len(ids) * len(COLUMNS)
    print(f"papers: {len(ids)}, columns: {len(COLUMNS)}, cells: {cells}, rounds: {args.rounds}")
    print(f"grid ({len(ids)} x {len(COLUMNS)}):      median {statistics.median(g):.3f} s  (min {min(g):.3f} s)")
    print(f"ask x {cells} (one per cell): median {statistics.median(a):.3f} s  (min {min(a):.3f} s)")
    print(f"grid goal < 2 s: {'met' if statistics.median(g) < 2 else 'missed'}")


if __name__ == "__main__":
    main()
