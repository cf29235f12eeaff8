"""How ingest, queries, disk and memory grow from 1k to 100k chunks (synthetic abstracts, cached vectors).

    python benchmarks/scale.py [--sizes 1000 10000 100000] [--queries 40]

Embedding is the slow part (all-MiniLM-L6-v2 on 2 CPU cores), so each synthetic corpus's vectors are computed
once with the real model and cached under benchmarks/results/vectors; the store and query measurements reuse
them, and the embedding cost is reported separately (measured when the cache is filled, else estimated from a
timed sample). Prints a table and writes benchmarks/results/scale.{json,png}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import (
    ROOT,
    CachedEmbedding,
    VectorCache,
    bench_settings,
    chunk_texts,
    dir_size_mb,
    p50,
    percentile,
    query_probe,
    table,
)
from synth import generate

from rag.settings import Settings
from rag.index.store import release_reader_lock

RESULTS = ROOT / "benchmarks" / "results"
AVG_CHUNKS_PER_PAPER = 8.0  # measured on the synthetic generator; refined below


def corpus_for(chunks: int, seed: int = 7) -> tuple[list[dict], list[str]]:
    """Synthetic papers whose chunk count reaches `chunks` (the chunk count is what scales)."""
    settings = bench_settings(Path(tempfile.gettempdir()) / "scale-count")
    n = max(10, int(chunks / AVG_CHUNKS_PER_PAPER))
    while True:
        records = generate(n, seed=seed)
        texts = chunk_texts(records, settings)
        if len(texts) >= chunks:
            return records, texts
        n = int(n * chunks / max(1, len(texts))) + 5


def fill_cache(cache: VectorCache, texts: list[str]) -> tuple[int, float]:
    """Embed the texts the cache lacks with the real model; return (how many, seconds)."""
    missing = cache.missing(texts)
    if not missing:
        return 0, 0.0
    from rag.index.embed import embedder_for

    model = embedder_for(bench_settings(Path(tempfile.gettempdir()) / "scale-embed"))._model
    t = time.perf_counter()
    for i in range(0, len(missing), 20_000):  # saved in slices, so an interrupted fill keeps its work
        part = missing[i:i + 20_000]
        cache.add(part, model.encode(part, batch_size=64, normalize_embeddings=True, show_progress_bar=False))
        print(f"  embedded {min(i + 20_000, len(missing))}/{len(missing)}", file=sys.stderr, flush=True)
    return len(missing), time.perf_counter() - t


def encode_rate(texts: list[str], sample: int = 1000) -> float:
    from rag.index.embed import embedder_for

    model = embedder_for(bench_settings(Path(tempfile.gettempdir()) / "scale-embed"))._model
    part = texts[:sample]
    model.encode(part[:32])
    t = time.perf_counter()
    model.encode(part, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    return len(part) / (time.perf_counter() - t)


def add_one_paper(settings: Settings, path: Path) -> tuple[float, float, float]:
    """Seconds to ingest one new paper into the store (model loaded: the local index is updated from the
    previous one) in a process that has not read the index yet, then a second paper in the same process (which
    starts from the index the first saved, as the UI does), next to rebuilding the local index from the whole
    store, measured right after."""
    from rag.index import versions
    from rag.index.embed import embedder_for
    from rag.index.ingest import ingest
    from rag.index.snapshot import build_local_index
    from rag.index.store import Store

    embedder = embedder_for(settings)
    embedder.get_text_embedding("warm up")
    versions._LAST = None  # the index this process kept from its earlier steps: read from disk, as a new one
    times = []
    for _ in range(2):
        # A new text each time, so a store kept from an earlier run (--keep) gets a new paper too.
        path.write_text(json.dumps({"abstract": "We introduce AddOneNet, a sparse mixture model for tabular data "
                                    "that improves accuracy by 3.1% on twelve benchmarks with half the parameters. "
                                    f"Code: run {uuid.uuid4().hex[:8]}."}) + "\n")
        t = time.perf_counter()
        report = ingest(settings, [path], embedder=embedder, progress=False)
        times.append(time.perf_counter() - t)
        assert len(report.added) == 1
    t = time.perf_counter()
    build_local_index(Store.open(settings))
    return times[0], times[1], time.perf_counter() - t


def questions_for(records: list[dict], n: int) -> list[str]:
    """Questions that name a synthetic paper's method, as users ask them."""
    from rag.corpus.labels import extract_label
    from rag.text import clean_markup

    step = max(1, len(records) // n)
    labels = [extract_label(clean_markup(r["abstract"]), raw=r["abstract"]) for r in records[::step][:n]]
    forms = ["What does {} improve?", "Which paper proposes {}?", "How much does {} gain on its benchmark?"]
    return [forms[i % len(forms)].format(label) for i, label in enumerate(labels)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--keep", type=Path, help="keep the built stores under this folder")
    ap.add_argument("--prepare-only", action="store_true", help="only fill the vector caches, measure nothing")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="scale-"))
    try:
        rows = measure(args, work)
    finally:
        if not args.keep:  # the stores take ~1 GB at 100k chunks
            shutil.rmtree(work, ignore_errors=True)
    if args.prepare_only:
        return
    cols = ["chunks", "papers", "embed_s", "ingest_s", "reingest_s", "reingest_cli_s", "query_p50_ms",
            "query_p95_ms", "floor_p50_ms", "ratio", "add1_s", "add1_again_s", "index_rebuild_s", "load_s", "disk_mb", "rss_mb"]
    print(table(rows, cols))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale.json").write_text(json.dumps(rows, indent=1))
    plot(rows, RESULTS / "scale.png")
    print(f"wrote {RESULTS / 'scale.json'} and {RESULTS / 'scale.png'}")


def measure(args: argparse.Namespace, work: Path) -> list[dict]:
    """One row per size: build the store from cached vectors under `work`, then time re-ingest, queries and
    adding a paper."""
    from rag.index.ingest import ingest

    rows: list[dict] = []
    for size in args.sizes:
        print(f"== {size} chunks", file=sys.stderr, flush=True)
        records, texts = corpus_for(size)
        cache = VectorCache(f"synth-7-{len(records)}")
        embedded, embed_s = fill_cache(cache, texts)
        if args.prepare_only:
            print(f"  cache ready: {len(texts)} texts ({embedded} embedded in {embed_s:.0f} s)", file=sys.stderr)
            continue
        rate = embedded / embed_s if embedded else encode_rate(texts)
        corpus = work / f"synth-{size}.jsonl"
        corpus.parent.mkdir(parents=True, exist_ok=True)
        corpus.write_text("".join(json.dumps(r) + "\n" for r in records))
        settings = bench_settings(work / f"data-{size}")
        t = time.perf_counter()
        report = ingest(settings, [corpus], embedder=CachedEmbedding(cache), progress=False)
        ingest_s = time.perf_counter() - t
        t = time.perf_counter()
        again = ingest(settings, [corpus], progress=False)
        reingest_s = time.perf_counter() - t
        assert not again.changed and report.chunks_embedded == len(texts)
        env = {"PAPERS_DATA_DIR": str(settings.data_dir), "PAPERS_ENV_FILE": "/dev/null", "PATH": "/usr/bin:/bin",
               "HF_HUB_OFFLINE": "1", "HOME": str(Path.home())}
        release_reader_lock(settings)  # this process read the store: the command's ingest may write it
        t = time.perf_counter()
        subprocess.run([str(ROOT / ".venv/bin/papers"), "ingest", str(corpus)], check=True, capture_output=True,
                       env=env, cwd=ROOT)
        reingest_cli_s = time.perf_counter() - t
        env = dict(os.environ, PAPERS_DATA_DIR=str(settings.data_dir))
        probe = query_probe(env, questions_for(records, args.queries))
        add1_s, add1_again_s, rebuild_s = add_one_paper(settings, work / f"one-{size}.jsonl")
        rows.append({
            "chunks": report.chunks_embedded, "papers": report.total_papers,
            "embed_s": round(len(texts) / rate, 1), "embed_rate": round(rate, 1),
            "ingest_s": round(ingest_s, 1), "reingest_s": round(reingest_s, 2), "reingest_cli_s": round(reingest_cli_s, 2),
            "query_p50_ms": round(p50(probe["full"]), 1), "query_p95_ms": round(percentile(probe["full"], 95), 1),
            "floor_p50_ms": round(p50(probe["floor"]), 1),
            "ratio": round(p50(probe["full"]) / p50(probe["floor"]), 2),
            "add1_s": round(add1_s, 2), "add1_again_s": round(add1_again_s, 2), "index_rebuild_s": round(rebuild_s, 2),
            "load_s": round(probe["load_s"], 2), "disk_mb": round(dir_size_mb(settings.data_dir), 1),
            "rss_mb": round(probe["rss_mb"], 0),
        })
        print(table(rows[-1:], list(rows[-1])), file=sys.stderr, flush=True)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["chunks"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(x, [r["ingest_s"] for r in rows], "o-", label="ingest (cached vectors)")
    axes[0].plot(x, [r["embed_s"] for r in rows], "s--", label="embedding alone")
    axes[0].set_ylabel("seconds")
    axes[1].plot(x, [r["query_p50_ms"] for r in rows], "o-", label="query p50")
    axes[1].plot(x, [r["floor_p50_ms"] for r in rows], "s--", label="floor p50")
    axes[1].set_ylabel("ms")
    axes[2].plot(x, [r["disk_mb"] for r in rows], "o-", label="disk MB")
    axes[2].plot(x, [r["rss_mb"] for r in rows], "s--", label="query process RSS MB")
    for ax, title in zip(axes, ["Ingest", "Query", "Disk and memory"]):
        ax.set_xscale("log")
        ax.set_xlabel("chunks")
        ax.set_title(title)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
