"""SciFact: retrieval and answers on 5,183 real abstracts and 809 expert claims the project was not written for.

    python benchmarks/scifact.py [--data-dir DIR] [--scifact DIR] [--limit N] [--ingest-seconds S]

Ingests ../shared/scifact/corpus.jsonl into its own data dir once (re-runs reuse it; --data-dir may point at a
store that already holds it), then asks every train claim through the code path of `papers ask --k 10`
(Assistant.ask, extractive) and of `papers cite` (Assistant.cite), and prints side by side, in one run:
whole-abstract BM25 (bm25s), MiniLM dense over whole abstracts, their RRF, the naive answer (cite the fused top
result, quote its sentence closest to the claim by cosine), and the project. Metrics come from eval.metrics
(the code `papers eval` uses, checked against ranx in the tests); anchors and answer scoring from eval/scifact.py.

Query p50 of the project is shown next to its floor (embed the claim, one Chroma query, one BM25 query),
measured interleaved with it. The ingest time is shown next to the raw encode floor of the same chunk texts,
measured on a sample of papers and extrapolated to all chunks.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import ROOT, VectorCache, bench_settings, p50, table

from rag.answer import fitted
from eval.scifact import (Claim, answer_figures, answer_outcome, bm25_rankings, default_dir, dense_rankings,
                          ensure_ingested, load_claims, load_corpus, retrieval_figures, rrf_rankings,
                          whole_abstract)

K = 10


def cached_vectors(name: str, texts: list[str], embed) -> list[list[float]]:  # noqa: ANN001
    """Vectors of texts with the project's model, computed once and kept under benchmarks/results/vectors."""
    import numpy as np

    cache = VectorCache(name)
    missing = cache.missing(texts)
    for i in range(0, len(missing), 512):
        cache.add(missing[i:i + 512], np.asarray(embed(missing[i:i + 512]), dtype=np.float32))
    return [cache.get(t) for t in texts]


def encode_floor(settings, corpus: dict[str, dict], sample: int, total_chunks: int) -> dict:  # noqa: ANN001
    """Raw sentence-transformers encode of the exact chunk texts of every n-th paper, extrapolated to all chunks."""
    from llama_index.core.schema import MetadataMode
    from sentence_transformers import SentenceTransformer

    from rag.corpus.scan import Paper
    from rag.index.embed import resolve_model_path
    from rag.index.ingest import make_document, make_splitter

    ids = list(corpus)[::max(1, len(corpus) // sample)][:sample]
    splitter = make_splitter(settings)
    docs = [make_document(Paper(pid, " ".join(corpus[pid]["sentences"]), "scifact.jsonl", i, "", "",
                                corpus[pid]["title"])) for i, pid in enumerate(ids, 1)]
    texts = [n.get_content(MetadataMode.EMBED) for n in splitter.get_nodes_from_documents(docs)]
    model = SentenceTransformer(resolve_model_path(settings.embed_model), device="cpu")
    model.encode(texts[:32], batch_size=settings.embed_batch_size)
    t = time.perf_counter()
    model.encode(texts, batch_size=settings.embed_batch_size)
    seconds = time.perf_counter() - t
    rate = len(texts) / seconds
    return {"sample_papers": len(ids), "sample_chunks": len(texts), "texts_per_s": rate,
            "floor_s_all_chunks": total_chunks / rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / "benchmarks/results/scifact",
                    help="data dir of the SciFact store (ingested there when it does not hold the corpus)")
    ap.add_argument("--scifact", type=Path, default=None, help="SciFact folder (default ../shared/scifact)")
    ap.add_argument("--limit", type=int, default=0, help="ask only the first N claims (0 = all 809)")
    ap.add_argument("--ingest-seconds", type=float, default=None,
                    help="wall time of the ingest that built a reused store (shown next to the encode floor)")
    ap.add_argument("--floor-sample", type=int, default=300, help="papers whose chunks the encode floor encodes")
    ap.add_argument("--no-dense-anchor", action="store_true",
                    help="skip the dense whole-abstract anchor and its RRF (embedding 5,183 abstracts); the naive "
                         "answer then cites the BM25 top result")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scifact.json")
    args = ap.parse_args()
    folder = args.scifact or default_dir()
    settings = bench_settings(args.data_dir)

    ingest_s = ensure_ingested(settings, folder, progress=True, partial_ok=True)
    ingest_note = "measured in this run"
    if ingest_s is None:
        ingest_s, ingest_note = args.ingest_seconds, "store reused (--ingest-seconds)"

    from rag.service import Assistant

    assistant = Assistant(settings)
    retriever = assistant.retriever
    retriever.warm_up()
    embedder = retriever.embedder
    local = retriever.local_index
    corpus = load_corpus(folder)
    claims: list[Claim] = load_claims(folder)
    scope = ""
    if len(local.papers) < len(corpus):  # a store holding part of the corpus: claims whose papers are all in it
        corpus = {pid: d for pid, d in corpus.items() if pid in local.papers}
        claims = [c for c in claims if c.gold <= set(corpus)]
        scope = f" (PARTIAL store: {len(corpus)} papers, the claims whose cited papers are all in it)"
    if args.limit:
        claims = claims[:args.limit]

    # Anchors.
    doc_ids = list(corpus)
    texts = [c.claim for c in claims]
    t = time.perf_counter()
    bm25 = bm25_rankings(corpus, texts, K)
    bm25_ms = (time.perf_counter() - t) * 1000 / max(1, len(texts))
    claim_vectors, embed_ms = [], []
    for q in texts:
        t = time.perf_counter()
        claim_vectors.append(embedder.get_query_embedding(q))
        embed_ms.append((time.perf_counter() - t) * 1000)
    dense = fused = None
    scan_ms = 0.0
    if not args.no_dense_anchor:
        doc_vectors = cached_vectors("scifact-abstracts", [whole_abstract(corpus[i]) for i in doc_ids],
                                     embedder.get_text_embedding_batch)
        t = time.perf_counter()
        dense = dense_rankings(doc_ids, doc_vectors, claim_vectors, K)
        scan_ms = (time.perf_counter() - t) * 1000 / max(1, len(texts))
        fused = rrf_rankings(bm25, dense, K)

    # The naive answer: the fused top result and its sentence closest to the claim. The sentence vectors are
    # the store's chunk vectors (a chunk is about one sentence; the quote is the chunk's text), so no extra
    # embedding is needed.
    import numpy as np

    naive = []
    for c, r, v in zip(claims, fused or bm25, claim_vectors):
        rows = local.rows_of_paper.get(r[0], []) if r else []
        if not rows:
            naive.append(answer_outcome(c, [], True, corpus))
            continue
        sims = np.asarray(local.vectors[rows]) @ np.asarray(v, dtype=np.float32)
        naive.append(answer_outcome(c, [(r[0], local.texts[rows[int(np.argmax(sims))]])], False, corpus))

    # The project, through the same calls as `papers ask --k 10` and `papers cite`, with the floor interleaved.
    asked, cited, ask_ms, cite_ms, floor_ms = [], [], [], [], []
    ask_rank, cite_rank = [], []
    for c in claims:
        t = time.perf_counter()
        v = embedder.get_query_embedding(c.claim)
        retriever.store.chunks.query(query_embeddings=[v], n_results=settings.candidates, include=["distances"])
        local.search(c.claim, settings.candidates)
        floor_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        answer = assistant.ask(c.claim, k=K, mode="extractive")
        ask_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        hits = assistant.cite(c.claim, k=K)
        cite_ms.append((time.perf_counter() - t) * 1000)
        ask_rank.append([r.paper_id for r in answer.retrieved])
        quotes = [(x.paper_id, s) for x in answer.citations for s in x.quote.split(" … ") if s]
        asked.append(answer_outcome(c, quotes, answer.abstained, corpus))
        cite_rank.append([h.paper_id for h in hits])
        cited.append(answer_outcome(c, [(hits[0].paper_id, hits[0].sentence)] if hits else [], not hits, corpus))

    def row(name: str, ranking: list[list[str]], outcomes=None, ms: float | None = None) -> dict:  # noqa: ANN001
        f = retrieval_figures(claims, ranking, K)
        out = {"method": name, "nDCG@10": f"{f['ndcg@10']:.3f}", "recall@10": f"{f['recall@10']:.3f}",
               "hit@1": f"{f['hit@1']:.3f}"}
        if outcomes is not None:
            a = answer_figures(claims, outcomes)
            out |= {"cites relevant": f"{a['cites_relevant']:.3f}", "rationale quote": f"{a['rationale_quote']:.3f}",
                    "wrong abstentions": f"{a['wrong_abstentions']} ({a['wrong_abstentions_pct']:.1f}%)"}
        out["query p50 ms"] = f"{ms:.1f}" if ms is not None else ""
        return out

    rows = [row("BM25 whole abstract (bm25s)", bm25, ms=bm25_ms)]
    if fused is not None:
        rows += [row("MiniLM dense whole abstract", dense, ms=p50(embed_ms) + scan_ms),
                 row("RRF of both", fused, ms=p50(embed_ms) + scan_ms + bm25_ms)]
    rows += [row(f"naive answer ({'RRF' if fused else 'BM25'} top, closest sentence)", fused or bm25, naive,
                 ms=p50(embed_ms) + scan_ms + bm25_ms),
            row("project: Assistant.ask --k 10", ask_rank, asked, ms=p50(ask_ms)),
            row("project: Assistant.cite --k 10 (top hit)", cite_rank, cited, ms=p50(cite_ms))]
    fit_file = settings.retrieval_fit or fitted.source_path(fitted.RETRIEVAL)
    fit = json.loads(Path(fit_file).read_text())
    held = fit.get("heldout_5fold", {}).get("scifact_train")
    if held:
        rows.append({"method": "project retrieval, 5-fold held-out (eval/fit_retrieval.py)",
                     "nDCG@10": f"{held['ndcg@10']:.3f}", "recall@10": f"{held['recall@10']:.3f}",
                     "hit@1": f"{held['hit@1']:.3f}"})
    columns = ["method", "nDCG@10", "recall@10", "hit@1", "cites relevant", "rationale quote", "wrong abstentions",
               "query p50 ms"]
    n_chunks = local.size
    floor = encode_floor(settings, corpus, args.floor_sample, n_chunks)
    print(f"SciFact train: {len(claims)} claims ({sum(bool(c.rationales) for c in claims)} with evidence), "
          f"{len(corpus)} abstracts, {n_chunks} chunks in the store{scope}")
    print(table(rows, columns))
    print(f"query p50: project ask {p50(ask_ms):.1f} ms vs floor {p50(floor_ms):.1f} ms "
          f"(embed + one Chroma query + one BM25 query, interleaved): {p50(ask_ms) / p50(floor_ms):.2f}x")
    ingest_txt = f"{ingest_s:.0f} s ({ingest_note})" if ingest_s else f"not measured ({ingest_note})"
    print(f"ingest of {len(corpus)} papers: {ingest_txt}; raw encode floor of the same {n_chunks} chunk texts: "
          f"{floor['floor_s_all_chunks']:.0f} s ({floor['texts_per_s']:.1f} texts/s on {floor['sample_chunks']} "
          f"chunks of {floor['sample_papers']} papers, extrapolated)"
          + (f", ratio {ingest_s / floor['floor_s_all_chunks']:.2f}x" if ingest_s else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "floor_p50_ms": p50(floor_ms), "ask_p50_ms": p50(ask_ms),
                                    "ingest_s": ingest_s, "ingest_note": ingest_note, "encode_floor": floor,
                                    "claims": len(claims), "chunks": n_chunks}, indent=1))


if __name__ == "__main__":
    main()
