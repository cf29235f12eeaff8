"""Ingest on real text: the SciFact corpus (5,183 abstracts, ~43k chunks) with the chosen embedding runtime.

    python benchmarks/ingest_scifact.py guard [--runtime torch-bf16]     # quality guard (vectors cached)
    python benchmarks/ingest_scifact.py speed [--papers 1000] [--runtime torch-bf16]
    python benchmarks/ingest_scifact.py all                               # both

`guard` embeds every SciFact chunk text (the project's own scan, labels and chunker) with torch fp32 and with
the runtime, caches both vector sets under benchmarks/results/vectors, and scores dense retrieval nDCG@10 on the
809 train claims with each set (a paper scores its best chunk), plus the cosine of each vector to torch's.
`speed` times, side by side in one run on a slice of the corpus: the torch fp32 `encode` floor, the runtime's
own encode floor of the same chunk texts, and `ingest` with the runtime; then re-ingest (nothing changed),
adding one paper, query p50/p95 against the query floor, disk and RSS. `--runtime` takes PAPERS_EMBED_RUNTIME's
values (default `auto`); results are labelled with the runtime really used (`auto` is torch-bf16 or onnx).
The corpus is read from ../shared/scifact (never copied into the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, VectorCache, bench_settings, dir_size_mb, p50, peak_rss_mb, percentile, query_probe, table

SCIFACT = Path(os.environ.get("PAPERS_SCIFACT_DIR", ROOT.parent / "shared" / "scifact"))
if not SCIFACT.exists():
    SCIFACT = Path("/work/shared/scifact")
RESULTS = ROOT / "benchmarks" / "results"


def scifact_file(limit: int | None = None, name: str = "scifact") -> Path:
    """SciFact as a corpus file `papers ingest` reads (abstract sentences joined; title and id kept)."""
    out = RESULTS / "scifact" / (f"{name}-{limit}.jsonl" if limit else f"{name}.jsonl")
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            lines.append(json.dumps({"id": str(r["doc_id"]), "title": r["title"],
                                     "abstract": " ".join(r["abstract"])}) + "\n")
            if limit and len(lines) >= limit:
                break
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(out)
    return out


def chunks_of(path: Path) -> tuple[list[str], list[str]]:
    """(paper id, embedded text) of every chunk ingest makes from the file: the project's scan and chunker."""
    from llama_index.core.schema import MetadataMode

    from rag.corpus.scan import scan
    from rag.index.ingest import make_document, make_splitter

    settings = bench_settings(Path(tempfile.gettempdir()) / "scifact-texts")
    found = scan([path], int(settings.max_file_mb * 2**20), settings.max_abstract_chars)
    nodes = make_splitter(settings).get_nodes_from_documents([make_document(p) for p in found.papers])
    return [n.metadata["paper_id"] for n in nodes], [n.get_content(MetadataMode.EMBED) for n in nodes]


def torch_model():  # noqa: ANN201 - the SentenceTransformer inside llama-index's HuggingFaceEmbedding
    from rag.index.embed import get_doc_embedder

    s = bench_settings(Path(tempfile.gettempdir()) / "scifact-embed")
    return get_doc_embedder(s.embed_model, s.embed_batch_size)._model


def runtime_embedder(runtime: str):  # noqa: ANN201 - rag.index.onnx_embed.BatchedEmbedding
    """The ingest embedder of a PAPERS_EMBED_RUNTIME value; its `engine` names what `auto` resolved to."""
    from rag.index.embed import ingest_embedder_for

    return ingest_embedder_for(bench_settings(Path(tempfile.gettempdir()) / "scifact-embed", embed_runtime=runtime))


def fill(cache: VectorCache, texts: list[str], encode) -> float:  # noqa: ANN001 - texts -> array
    """Embed the texts the cache lacks, in slices saved as they finish (an interrupted fill keeps its work)."""
    missing = cache.missing(texts)
    t = time.perf_counter()
    step = int(os.environ.get("FILL_SLICE", "2000"))
    for i in range(0, len(missing), step):
        part = missing[i:i + step]
        cache.add(part, encode(part))
        print(f"  {cache.dir.name}: {min(i + step, len(missing))}/{len(missing)} "
              f"({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)
    return time.perf_counter() - t


def vectors(cache: VectorCache, texts: list[str]):  # noqa: ANN201 - numpy array
    import numpy as np

    from common import _key

    return np.asarray(cache.vectors)[[cache.index[_key(t)] for t in texts]]


def claims() -> tuple[list[str], list[set[str]]]:
    """The 809 train claims and their relevant abstracts (BEIR qrels)."""
    gold: dict[str, set[str]] = {}
    for line in (SCIFACT / "qrels_train.tsv").read_text().splitlines()[1:]:
        q, d, score = line.strip().split("\t")
        if int(score) > 0:
            gold.setdefault(q, set()).add(d)
    qs, gs = [], []
    for line in (SCIFACT / "claims_train.jsonl").read_text().splitlines():
        r = json.loads(line)
        if str(r["id"]) in gold:
            qs.append(r["claim"])
            gs.append(gold[str(r["id"])])
    return qs, gs


def dense_ndcg(chunk_vecs, paper_of: list[str], claim_vecs, gold: list[set[str]], k: int = 10) -> dict:  # noqa: ANN001
    """Dense retrieval over chunks (a paper scores its best chunk), scored with the project's metric code."""
    import numpy as np

    from eval.metrics import ndcg_at, reciprocal_rank

    papers = sorted(set(paper_of))
    col = {p: i for i, p in enumerate(papers)}
    idx = np.asarray([col[p] for p in paper_of])
    ndcg, mrr = [], []
    for i in range(0, len(claim_vecs), 64):
        sims = claim_vecs[i:i + 64] @ chunk_vecs.T
        best = np.full((sims.shape[0], len(papers)), -2.0, dtype=np.float32)
        for row in range(sims.shape[0]):
            np.maximum.at(best[row], idx, sims[row])
        for row, g in zip(best, gold[i:i + 64]):
            ranked = [papers[j] for j in np.argsort(-row)[:100]]
            ndcg.append(ndcg_at(ranked, g, k))
            mrr.append(reciprocal_rank(ranked, g))
    return {"ndcg@10": float(np.mean(ndcg)), "mrr": float(np.mean(mrr))}


def guard_chunks() -> tuple[list[str], list[str], list[str], list[set[str]]]:
    """Claims, and the corpus chunks ordered with the claims' relevant papers first, so that a guard cut short
    by time still scores every claim against its gold papers plus as many distractors as were embedded."""
    paper_of, texts = chunks_of(scifact_file())
    qs, gold = claims()
    wanted = set().union(*gold)
    order = sorted(range(len(texts)), key=lambda i: paper_of[i] not in wanted)  # stable: corpus order kept
    return [paper_of[i] for i in order], [texts[i] for i in order], qs, gold


def complete_prefix(paper_of: list[str], texts: list[str], caches: list[VectorCache]) -> int:
    """How many leading chunks every cache holds, cut back to a paper boundary."""
    n = 0
    while n < len(texts) and all(not c.missing([texts[n]]) for c in caches):
        n += 1
    while 0 < n < len(texts) and paper_of[n] == paper_of[n - 1]:
        n -= 1
    return n


def guard(runtime: str, fill_missing: bool = True) -> dict:
    import numpy as np

    paper_of, texts, qs, gold = guard_chunks()
    print(f"SciFact: {len(set(paper_of))} papers, {len(texts)} chunks, {len(qs)} claims", file=sys.stderr)
    rt = runtime_embedder(runtime)
    runtime = rt.engine
    torch_cache, rt_cache = VectorCache("scifact-torch"), VectorCache(f"scifact-{runtime}")
    if fill_missing:
        fill(rt_cache, qs + texts, lambda part: np.asarray(rt.embed_texts(part), dtype=np.float32))
    if fill_missing and torch_cache.missing(qs + texts):
        model = torch_model()
        fill(torch_cache, qs + texts, lambda part: model.encode(part, batch_size=64, normalize_embeddings=True,
                                                                show_progress_bar=False))
    n = complete_prefix(paper_of, texts, [torch_cache, rt_cache])
    paper_of, texts = paper_of[:n], texts[:n]
    # A guard cut short by time scores the claims whose cited papers were all embedded (all of them when
    # the whole corpus was); the corpus size it used is reported with it.
    have = set(paper_of)
    keep = [i for i, g in enumerate(gold) if g <= have]
    qs, gold = [qs[i] for i in keep], [gold[i] for i in keep]
    tv, rv = vectors(torch_cache, texts), vectors(rt_cache, texts)
    cos = np.sum(tv * rv, axis=1) / (np.linalg.norm(tv, axis=1) * np.linalg.norm(rv, axis=1))
    out = {"runtime": rt.runtime, "chunks": len(texts), "papers": len(set(paper_of)), "claims": len(qs),
           "cosine_mean": float(cos.mean()), "cosine_min": float(cos.min()),
           "cosine_p01": float(np.percentile(cos, 1)),
           "torch": dense_ndcg(tv, paper_of, vectors(torch_cache, qs), gold),
           runtime: dense_ndcg(rv, paper_of, vectors(rt_cache, qs), gold)}
    out["ndcg_delta"] = out[runtime]["ndcg@10"] - out["torch"]["ndcg@10"]
    print(table([{"vectors": "torch fp32", "nDCG@10": f"{out['torch']['ndcg@10']:.4f}",
                  "MRR": f"{out['torch']['mrr']:.4f}", "cosine to torch": "1"},
                 {"vectors": f"{runtime} ({rt.runtime})", "nDCG@10": f"{out[runtime]['ndcg@10']:.4f}",
                  "MRR": f"{out[runtime]['mrr']:.4f}",
                  "cosine to torch": f"mean {out['cosine_mean']:.6f}, min {out['cosine_min']:.6f}"}],
                ["vectors", "nDCG@10", "MRR", "cosine to torch"]))
    (RESULTS / f"scifact_guard_{runtime}.json").write_text(json.dumps(out, indent=1))
    return out


def speed(runtime: str, n_papers: int, rounds: int = 1) -> dict:
    """Throughput of ingest against both encode floors on the same chunk texts, then re-ingest, add one paper,
    queries, disk and memory. Floors and ingest alternate so machine noise falls on all of them."""

    from rag.index.ingest import ingest

    path = scifact_file(n_papers)
    paper_of, texts = chunks_of(path)
    rt = runtime_embedder(runtime)
    runtime = rt.engine
    model = torch_model()
    rt.embed_texts(texts[:64])
    model.encode(texts[:64], batch_size=64)
    rows = {"rt_floor": [], "torch_floor": [], "ingest": [], "ingest_papers": []}
    phases: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            t = time.perf_counter()
            rt.embed_texts(texts)
            rows["rt_floor"].append(len(texts) / (time.perf_counter() - t))
            s = bench_settings(Path(tmp) / f"round{r}", embed_runtime=runtime)
            t = time.perf_counter()
            report = ingest(s, [path], embedder=rt, progress=False)
            dt = time.perf_counter() - t
            assert report.chunks_embedded == len(texts), (report.chunks_embedded, len(texts))
            assert report.embed_engine == runtime, (report.embed_engine, runtime)
            rows["ingest"].append(len(texts) / dt)
            rows["ingest_papers"].append(report.total_papers / dt)
            phases.append(report.phases)
            t = time.perf_counter()
            model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
            rows["torch_floor"].append(len(texts) / (time.perf_counter() - t))
        t = time.perf_counter()
        again = ingest(s, [path], progress=False)
        reingest = time.perf_counter() - t
        assert again.unchanged == report.total_papers and not again.changed
        extra = Path(tmp) / "one.jsonl"
        with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i == n_papers:
                    r1 = json.loads(line)
        extra.write_text(json.dumps({"id": str(r1["doc_id"]), "title": r1["title"],
                                     "abstract": " ".join(r1["abstract"])}) + "\n")
        t = time.perf_counter()
        one = ingest(s, [extra], embedder=rt, progress=False)
        add_one = time.perf_counter() - t
        assert len(one.added) == 1
        qs = claims()[0][:40]
        env = {**os.environ, "PAPERS_DATA_DIR": str(s.data_dir), "PAPERS_ENV_FILE": os.devnull}
        probe = query_probe(env, qs, rounds=2)
        disk = dir_size_mb(s.data_dir)
    med = {k: statistics.median(v) for k, v in rows.items()}
    phase = {k: statistics.median(ph.get(k, 0.0) for ph in phases) for k in phases[0]}
    out = {"runtime": rt.runtime, "engine": runtime, "papers": n_papers, "chunks": len(texts), "rounds": rounds, **med,
           "ratio_vs_torch_floor": med["ingest"] / med["torch_floor"],
           "ratio_vs_own_floor": med["ingest"] / med["rt_floor"],
           "phases": phase, "reingest_s": reingest, "add_one_s": add_one,
           "query_p50_ms": p50(probe["full"]), "query_p95_ms": percentile(probe["full"], 95),
           "floor_p50_ms": p50(probe["floor"]), "query_rss_mb": probe["rss_mb"], "disk_mb": disk,
           "bench_rss_mb": peak_rss_mb()}
    print(f"SciFact slice: {n_papers} papers, {len(texts)} chunks; {rounds} round(s), floors and ingest side by side")
    print(table([
        {"measure": "torch fp32 encode (floor)", "chunks/s": f"{med['torch_floor']:.1f}", "ratio": "1.00"},
        {"measure": f"{runtime} encode of the same texts (own floor)", "chunks/s": f"{med['rt_floor']:.1f}",
         "ratio": f"{med['rt_floor'] / med['torch_floor']:.2f}"},
        {"measure": f"papers ingest with {runtime}", "chunks/s": f"{med['ingest']:.1f}",
         "ratio": f"{out['ratio_vs_torch_floor']:.2f} of torch, {out['ratio_vs_own_floor']:.2f} of own floor"},
    ], ["measure", "chunks/s", "ratio"]))
    print("ingest phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phase.items()))
    parts = sum(phase.get(k, 0.0) for k in ("chunk_s", "tokenize_s", "embed_s", "write_chunks_s", "write_catalog_s"))
    print(f"embed beside the writes: embed+write wall {phase.get('embed_and_write_s', 0.0):.1f} s against "
          f"{parts:.1f} s for its parts one after another")
    print(table([{"measure": "re-ingest, nothing changed", "value": f"{reingest:.2f} s"},
                 {"measure": "add one paper (model loaded)", "value": f"{add_one:.2f} s"},
                 {"measure": "query p50 / p95 (extractive answer)",
                  "value": f"{out['query_p50_ms']:.1f} / {out['query_p95_ms']:.1f} ms (floor p50 "
                           f"{out['floor_p50_ms']:.1f} ms, {out['query_p50_ms'] / out['floor_p50_ms']:.2f}x)"},
                 {"measure": "disk; query process RSS; this process RSS",
                  "value": f"{disk:.0f} MB; {probe['rss_mb']:.0f} MB; {out['bench_rss_mb']:.0f} MB"}],
                ["measure", "value"]))
    (RESULTS / f"scifact_speed_{runtime}_{n_papers}.json").write_text(json.dumps(out, indent=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["guard", "speed", "all", "torch-fill", "runtime-fill"])
    ap.add_argument("--score-only", action="store_true",
                    help="guard on the chunks both caches already hold (gold papers first), embedding nothing")
    ap.add_argument("--runtime", default="auto", choices=["auto", "torch-bf16", "onnx", "onnx-int8", "torch"])
    ap.add_argument("--papers", type=int, default=200, help="corpus slice for the speed run (all: 5183)")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    os.chdir(ROOT)
    if args.what == "torch-fill":  # only the torch vectors (slow): lets the guard run later from the cache
        paper_of, texts, qs, _ = guard_chunks()
        model = torch_model()
        fill(VectorCache("scifact-torch"), qs + texts,
             lambda part: model.encode(part, batch_size=64, normalize_embeddings=True, show_progress_bar=False))
        return
    if args.what == "runtime-fill":
        import numpy as np

        paper_of, texts, qs, _ = guard_chunks()
        rt = runtime_embedder(args.runtime)
        fill(VectorCache(f"scifact-{rt.engine}"), qs + texts,
             lambda part: np.asarray(rt.embed_texts(part), dtype=np.float32))
        return
    if args.what in ("guard", "all"):
        guard(args.runtime, fill_missing=not args.score_only)
    if args.what in ("speed", "all"):
        speed(args.runtime, args.papers, args.rounds)


if __name__ == "__main__":
    main()
