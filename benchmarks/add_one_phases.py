"""Where the time of adding one paper to a big store goes: each step of the ingest and of the local index update.

    python benchmarks/add_one_phases.py DATA_DIR [--repeat 3]

DATA_DIR is a store built by a scale benchmark (`benchmarks/scale_scifact.py --keep DIR` leaves DIR/data-x1).
It is copied to a scratch folder per run, so every run adds the same paper to the same store. Steps are timed
by wrapping the functions that make them (inclusive times, nested as called); the embedding model is loaded
and warmed up before the clock starts, as in `scale.add_one_paper`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import bench_settings

STEPS = {  # module -> functions (Class.method for methods); missing ones are skipped
    "rag.index.store": ["Store.open", "Store.check_vectors", "Store.catalog", "Store.get_papers", "Store.begin_update",
                  "Store.commit", "Store.delete_papers", "Store.claim_runtime"],
    "rag.corpus.scan": ["scan"],
    "rag.index.ingest": ["_ingest", "_embed_and_write", "_rewrite_metadata"],
    "rag.index.embed": ["ensure_onnx", "ingest_embedder_for"],
    "rag.index.versions": ["update_local_index", "publish_full_index", "remove_other_versions", "committed_index",
                           "load_index", "_publish", "_save", "_save_vectors"],
    "rag.index.snapshot": ["read_chunks", "updated_local_index", "_index", "_stack_rows"],
    "rag.index.paper_level": ["build_paper_level", "updated_paper_level"],
    "rag.index.bm25": ["bm25_index", "updated_bm25", "_bm25_from_counts"],
}


def instrument(log: list[tuple[int, str, float]]) -> None:
    import importlib

    depth = [0]

    def wrap(fn, name):  # noqa: ANN001, ANN202
        @functools.wraps(fn)
        def timed(*a, **k):  # noqa: ANN002, ANN003, ANN202
            depth[0] += 1
            i = len(log)
            log.append((depth[0], name, 0.0))
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                log[i] = (depth[0], name, time.perf_counter() - t)
                depth[0] -= 1
        return timed

    for mod_name, names in STEPS.items():
        mod = importlib.import_module(mod_name)
        for name in names:
            owner, attr = (getattr(mod, name.split(".")[0], None), name.split(".")[1]) if "." in name else (mod, name)
            fn = getattr(owner, attr, None) if owner is not None else None
            if fn is None:
                continue
            if isinstance(owner, type) and isinstance(owner.__dict__.get(attr), classmethod):
                setattr(owner, attr, classmethod(wrap(owner.__dict__[attr].__func__, name)))
            else:
                setattr(owner, attr, wrap(fn, name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from rag.index.embed import embedder_for
    from rag.index.ingest import ingest

    log: list[tuple[int, str, float]] = []
    instrument(log)
    runs: list[list[tuple[int, str, float]]] = []
    totals = []
    phases: dict[str, list[float]] = defaultdict(list)
    for r in range(args.repeat):
        work = Path(tempfile.mkdtemp(prefix="add-one-"))
        try:
            data = work / "data"
            shutil.copytree(args.data, data)
            os.sync()  # the copy's writeback would slow the timed writes down
            settings = bench_settings(data)
            path = work / "one.jsonl"
            path.write_text(json.dumps({"abstract": "We introduce AddTwoNet, a dense mixture model for graph data "
                                        "that improves accuracy by 3.1% on twelve benchmarks with half the "
                                        "parameters."}) + "\n")
            if r == 0:
                embedder = embedder_for(settings)
                embedder.get_text_embedding("warm up")
            log.clear()
            t = time.perf_counter()
            report = ingest(settings, [path], embedder=embedder, progress=False)
            totals.append(time.perf_counter() - t)
            assert len(report.added) == 1, report
            runs.append(list(log))
            for k, v in report.phases.items():
                phases[k].append(v)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"add one paper: {statistics.median(totals):.2f} s median of {[round(t, 2) for t in totals]}")
    print("ingest's own phases (median s):", {k: round(statistics.median(v), 3) for k, v in phases.items()})
    print("steps (median s over runs, nested as called):")
    for i, (depth, name, _) in enumerate(runs[0]):
        values = [run[i][2] for run in runs if i < len(run) and run[i][1] == name]
        print(f"  {'  ' * (depth - 1)}{name:<{40 - 2 * (depth - 1)}} {statistics.median(values):7.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
