"""Conference scale on real text: SciFact repeated (1x = 43k chunks, 10x = 434k chunks), cached vectors.

    python benchmarks/scale_scifact.py [--copies 1 10] [--queries 40] [--keep DIR]

Copy c of a paper gets the id `<doc id>-c<c>` and its abstract with word c wrapped in `\\emph{}`: the cleaned
text, and so every chunk and its vector, is the original's, while the raw text differs (ingest keeps one copy
of an abstract it sees twice). The chunk vectors come from `benchmarks/ingest_scifact.py`'s cache of the
runtime's vectors (run its `guard` or `speed` once to fill it; missing texts are embedded here), so ingest is
timed without the model's arithmetic, which that script measures. Reported per size, in one run: ingest,
re-ingest with nothing changed (in-process and as a `papers ingest` command), adding one paper (in a
process that has not read the index yet, then a second one in the same process) next to rebuilding the local index, query p50/p95 of SciFact train claims against the floor (embed, one Chroma query,
one BM25 query, interleaved in a fresh process), index load time, disk and the query process's RSS.
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
from pathlib import Path

from common import ROOT, CachedEmbedding, VectorCache, bench_settings, dir_size_mb, p50, percentile, query_probe, table
from ingest_scifact import SCIFACT, chunks_of, fill, runtime_embedder, scifact_file
from scale import add_one_paper

RESULTS = ROOT / "benchmarks" / "results"


def copied(records: list[dict], copies: int) -> list[dict]:
    """The corpus `copies` times; copy 0 is the original."""
    out = []
    for c in range(copies):
        for r in records:
            if c == 0:
                out.append(r)
                continue
            words = r["abstract"].split(" ")
            # A non-empty word: "\\emph{}" at two neighbouring blanks of a double space would give copies the
            # same text once whitespace is collapsed (and ingest keeps such copies once).
            filled = [j for j, w in enumerate(words) if w]
            i = filled[(c - 1) % len(filled)]
            words[i] = "\\emph{" + words[i] + "}"
            out.append({"id": f"{r['id']}-c{c}", "title": r["title"], "abstract": " ".join(words)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--queries", type=int, default=40, help="SciFact train claims asked (2 rounds)")
    ap.add_argument("--runtime", default="auto", help="whose cached vectors to use (PAPERS_EMBED_RUNTIME)")
    ap.add_argument("--keep", type=Path, help="keep the built stores under this folder")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    base = scifact_file()
    records = [json.loads(line) for line in base.read_text(encoding="utf-8").splitlines() if line.strip()]
    _, texts = chunks_of(base)
    embedder = runtime_embedder(args.runtime)
    cache = VectorCache(f"scifact-{embedder.engine}")
    fill(cache, texts, embedder.embed_texts)
    claims = [json.loads(line)["claim"] for line in (SCIFACT / "claims_train.jsonl").read_text().splitlines()
              if line.strip()]
    questions = claims[::max(1, len(claims) // args.queries)][:args.queries]

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="scale-scifact-"))
    rows = []
    try:
        for copies in args.copies:
            print(f"== SciFact x{copies}", file=sys.stderr, flush=True)
            corpus = work / f"scifact-x{copies}"  # one file per copy: each stays under PAPERS_MAX_FILE_MB
            corpus.mkdir(parents=True, exist_ok=True)
            every = copied(records, copies)
            for c in range(copies):
                part = every[c * len(records):(c + 1) * len(records)]
                (corpus / f"copy-{c}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
            settings = bench_settings(work / f"data-x{copies}", embed_runtime=args.runtime)
            from rag.index.ingest import ingest
            from rag.index.store import release_reader_lock

            reused = settings.chroma_dir.exists()  # --keep from an earlier run: an update, not a build
            t = time.perf_counter()
            report = ingest(settings, [corpus], embedder=CachedEmbedding(cache), progress=False)
            ingest_s = time.perf_counter() - t
            assert not report.problems and not report.duplicates, (report.problems[:3], report.duplicates[:3])
            t = time.perf_counter()
            again = ingest(settings, [corpus], progress=False)
            reingest_s = time.perf_counter() - t
            assert not again.changed
            env = {"PAPERS_DATA_DIR": str(settings.data_dir), "PAPERS_ENV_FILE": "/dev/null", "PATH": "/usr/bin:/bin",
                   "HF_HUB_OFFLINE": "1", "HOME": str(Path.home()), "PAPERS_EMBED_RUNTIME": args.runtime}
            release_reader_lock(settings)  # this process read the store: the command's ingest may write it
            t = time.perf_counter()
            subprocess.run([str(ROOT / ".venv/bin/papers"), "ingest", str(corpus)], check=True, capture_output=True,
                           env=env, cwd=ROOT)
            reingest_cli_s = time.perf_counter() - t
            probe = query_probe(dict(os.environ, PAPERS_DATA_DIR=str(settings.data_dir)), questions)
            add1_s, add1_again_s, rebuild_s = add_one_paper(settings, work / f"one-x{copies}.jsonl")
            rows.append({
                "copies": copies, "papers": report.total_papers, "chunks": report.chunks_embedded if not reused else len(texts) * copies,
                "ingest_s": round(ingest_s, 1), "ingest": "update" if reused else "full", "reingest_s": round(reingest_s, 2),
                "reingest_cli_s": round(reingest_cli_s, 2), "add1_s": round(add1_s, 2), "add1_again_s": round(add1_again_s, 2),
                "index_rebuild_s": round(rebuild_s, 2), "query_p50_ms": round(p50(probe["full"]), 1),
                "query_p95_ms": round(percentile(probe["full"], 95), 1), "floor_p50_ms": round(p50(probe["floor"]), 1),
                "ratio": round(p50(probe["full"]) / p50(probe["floor"]), 2), "load_s": round(probe["load_s"], 2),
                "disk_mb": round(dir_size_mb(settings.data_dir), 0), "rss_mb": round(probe["rss_mb"], 0),
            })
            print(table(rows[-1:], list(rows[-1])), file=sys.stderr, flush=True)
    finally:
        if not args.keep:  # ~4 GB at 10x
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows, list(rows[0]) if rows else []))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale_scifact.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
