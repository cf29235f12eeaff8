"""Hybrid retrieval: dense (Chroma) and BM25 over the same chunks, fused by reciprocal rank, grouped per paper.

Queries go to the Chroma collection and the local index (rag/index/bm25.py, snapshot.py, versions.py: bm25s,
chunk texts, vectors and paper records) directly. Through llama-index's VectorIndexRetriever and BM25Retriever the
same two lookups took 12.1 + 2.7 ms instead of 6.2 + 0.4 ms here, and importing llama-index adds ~2 s to every
command's start; ingestion (IngestionPipeline, node parser, ChromaVectorStore) writes the chunks in llama-index's
node format. A question costs one embedding, one Chroma query and one BM25 query; the rest is in memory.

Each retrieved paper keeps its abstract and its candidate chunks with their cosine similarity to the question,
because the answerer picks sentences and decides whether to abstain from those numbers.

Papers are ranked by a weighted reciprocal-rank fusion of paper rankings: the chunk-level fusion (a paper as
its best chunk), the dense and BM25 chunk lists on their own, BM25 over title + whole abstract, BM25 over the
title alone, and the paper's mean chunk vector. Sentence chunks alone miss claims whose words are spread over
an abstract; whole papers alone miss the one sentence a question paraphrases. The weights and the fusion
constant are fitted by eval/fit_retrieval.py and read from rag/answer/fitted/retrieval.json (or PAPERS_RETRIEVAL_FIT).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from rag.answer import fitted
from rag.corpus.references import reference_line
from rag.index.bm25 import tokenize
from rag.index.embed import query_embedder_for
from rag.index.snapshot import LocalIndex, probe_ids
from rag.index.store import VERSION_CHECK_S, CatalogEntry, Store, damaged
from rag.index.versions import ensure_local_index
from rag.settings import Settings
from rag.text import stems

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rag.index.paper_level import PaperLevel

Mode = Literal["hybrid", "dense", "bm25"]
Item = TypeVar("Item", bound=Hashable)  # what a ranked list ranks: chunk rows, paper ids
# The paper rankings fused (see the module docstring), and which retrieval modes each belongs to.
LISTS: dict[str, tuple[str, ...]] = {
    "chunks": ("hybrid", "dense", "bm25"), "dense_chunks": ("hybrid", "dense"), "bm25_chunks": ("hybrid", "bm25"),
    "bm25_paper": ("hybrid", "bm25"), "bm25_title": ("hybrid", "bm25"), "dense_paper": ("hybrid", "dense"),
    "dense_top2": ("hybrid", "dense"),
}


@dataclass(frozen=True)
class FusionWeights:
    """Weight of each paper ranking in the fusion, and the fusion constant k (score = sum w / (k + rank))."""

    weights: dict[str, float]
    k: float = 60.0

    def active(self, mode: str) -> dict[str, float]:
        """The rankings a mode computes; a mode whose fitted lists all have weight 0 falls back to `chunks`."""
        on = {name: w for name, w in self.weights.items() if w > 0 and mode in LISTS.get(name, ())}
        return on or {"chunks": 1.0}


@lru_cache(maxsize=8)
def load_fusion(path: str | None = None) -> FusionWeights:
    """Fitted fusion weights from a file written by eval/fit_retrieval.py (default: the shipped
    rag/answer/fitted/retrieval.json)."""
    data = json.loads(Path(path).read_text() if path else fitted.read(fitted.RETRIEVAL))
    unknown = set(data["weights"]) - set(LISTS)
    if unknown:
        raise ValueError(f"{path or fitted.RETRIEVAL}: unknown rankings {sorted(unknown)} (known: {sorted(LISTS)})")
    return FusionWeights({k: float(v) for k, v in data["weights"].items()}, float(data["k"]))


@dataclass
class Chunk:
    """A chunk of a retrieved paper with its similarity to the question."""

    chunk_id: str
    text: str
    cosine: float
    rank_score: float = 0.0  # fused score when the chunk was among the retrieved candidates, else 0

    @cached_property
    def index(self) -> int:
        """The chunk's position in its paper (ids end in ":<position>"); read once, as sorting asks it often."""
        return int(self.chunk_id.rsplit(":", 1)[-1])


@dataclass
class PaperHit:
    """A retrieved paper: catalog fields, fused score, and its chunks (the candidates, or all after `complete`),
    in their order in the paper."""

    paper_id: str
    label: str
    source: str
    position: int
    score: float
    text: str
    title: str = ""
    url: str = ""
    authors: str = ""
    venue: str = ""
    year: str = ""
    chunks: list[Chunk] = field(default_factory=list)
    complete: bool = False
    doi: str = ""
    arxiv: str = ""
    key: str = ""
    kind: str = ""
    collection: str = ""
    layout: str = ""
    ranks: dict[str, int] = field(default_factory=dict)  # 1-based rank in each fused paper ranking it is in

    @property
    def best_cosine(self) -> float:
        return max((c.cosine for c in self.chunks), default=0.0)

    @property
    def reference(self) -> str:
        return reference_line(self)


@dataclass
class Retrieval:
    question: str
    papers: list[PaperHit]
    query_vector: list[float] | None
    timings_ms: dict[str, float]
    mode: str
    idf: dict[str, float] = field(default_factory=dict)  # rarity of the question's words in the index
    index: LocalIndex | None = None  # the index version this retrieval used (`complete` reads the same one)


def reciprocal_rank_fusion(ranked_lists: Sequence[Sequence[Item]], k: int) -> dict[Item, float]:
    """RRF over ranked id lists (Cormack et al. 2009).

    Written here rather than using llama-index's QueryFusionRetriever because that class hard-codes k=60,
    overwrites each node's score (the dense cosine is needed later for abstention), and requires an LLM object
    even when it generates no extra queries.
    """
    fused: dict[Item, float] = {}
    for ranked in ranked_lists:
        for rank, item in enumerate(ranked):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank + 1)
    return fused


def weighted_rrf(rankings: dict[str, list[str]], weights: dict[str, float], k: float) -> dict[str, float]:
    """Weighted reciprocal-rank fusion of paper rankings: sum over rankings of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for name, ranked in rankings.items():
        w = weights.get(name, 0.0)
        if w <= 0:
            continue
        for rank, pid in enumerate(ranked, 1):
            fused[pid] = fused.get(pid, 0.0) + w / (k + rank)
    return fused


@dataclass
class Signals:
    """Everything one question's lookups produced, before the papers are fused and cut to k."""

    vector: list[float]
    cosine: dict[int, float]  # chunk row -> cosine, for the dense candidates
    fused_rows: dict[int, float]  # chunk row -> chunk-level RRF score
    rankings: dict[str, list[str]]  # paper rankings, best first
    timings_ms: dict[str, float]
    index: LocalIndex  # the local index version these came from (a question is answered from one version)


def _where_papers(paper_ids: list[str]) -> dict[str, Any]:
    return {"paper_id": paper_ids[0]} if len(paper_ids) == 1 else {"paper_id": {"$in": list(paper_ids)}}


class Retriever:
    """Holds the store, the question embedder and the BM25 index for one process."""

    def __init__(self, settings: Settings, store: Store | None = None, embedder: Any = None) -> None:
        self.settings = settings
        self.store = store or Store.open(settings)
        self._embedder = embedder
        self._local: LocalIndex | None = None
        self._bm25_version: str | None = None
        self._checked_at = 0.0
        self._refresh_lock = threading.Lock()
        self._changing = False  # an ingest had the store pending at the last refresh

    @property
    def embedder(self) -> Any:
        """The question embedder (ONNX when exported, else sentence-transformers), loaded on first use."""
        if self._embedder is None:
            self._embedder = query_embedder_for(self.settings, self.store.embed_runtime)
        return self._embedder

    def _refresh(self) -> None:
        """Pick up a new store version (another process ingested) at most every few seconds.

        The new version's index is loaded completely before it replaces the old one in a single assignment,
        and each retrieval keeps the index it started with: a question is answered from one version.
        """
        now = time.monotonic()
        if self._bm25_version is not None and now - self._checked_at < VERSION_CHECK_S:
            return
        with self._refresh_lock:
            if self._bm25_version is not None and time.monotonic() - self._checked_at < VERSION_CHECK_S:
                return
            self.store.refresh()
            key = f"{self.store.version}/{self.store.pending}"
            changing = bool(self.store.pending) and bool(self.settings.chroma_host)
            if self._bm25_version != key:
                local = ensure_local_index(self.settings, self.store)
                # A damaged vector index is named here, with the way out. The probe reads vectors by the ids the
                # local index names (by offset, Chroma scans the collection: ~3 s at 130k chunks).
                self.store.check_vectors(sample=probe_ids(local) if local is not None else None)
                self._local = local
                self._bm25_version = key
            self._changing = changing
            self._checked_at = time.monotonic()

    def warm_up(self) -> None:
        """Load the models and indexes now rather than on the first question."""
        self._refresh()
        self.embedder.get_query_embedding("warm up")

    @property
    def local_index(self) -> LocalIndex | None:
        self._refresh()
        return self._local

    def idf(self, words: set[str]) -> dict[str, float]:
        return self._local.idf(words) if self._local is not None else {w: 1.0 for w in words}

    def signals(self, question: str, paper_ids: list[str] | None = None, mode: Mode | None = None,
                fusion: FusionWeights | None = None, k: int = 0) -> Signals | None:
        """Run the lookups a question needs (one embedding, one Chroma query, the BM25 queries, the paper-vector
        scan) and rank papers in every active list; None when the index is empty. The fitting script calls this
        once per question and fuses the rankings with many candidate weights."""
        mode = mode or self.settings.retrieval
        active = (fusion or self.fusion).active(mode)
        n = self.settings.candidates
        timings: dict[str, float] = {}
        t = time.perf_counter()
        self._refresh()
        timings["load_ms"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        vector = self.embedder.get_query_embedding(question)
        timings["embed_ms"] = (time.perf_counter() - t) * 1000
        local = self._local
        if local is None:  # an empty index
            return None
        chunk_lists: dict[str, list[int]] = {}
        cosine: dict[int, float] = {}
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            chunk_lists["dense_chunks"] = self._dense_rows(local, vector, n, paper_ids, cosine)
            timings["dense_ms"] = (time.perf_counter() - t) * 1000
        tokens: list[str] = []
        if mode in ("hybrid", "bm25"):
            t = time.perf_counter()
            tokens = tokenize(question)
            chunk_lists["bm25_chunks"] = [row for row, _ in local.search(tokens, n, paper_ids)]
            timings["bm25_ms"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        fused_rows = reciprocal_rank_fusion(list(chunk_lists.values()), self.settings.rrf_k)
        rankings = self._rankings(local, active, chunk_lists, fused_rows, tokens, vector, max(n, k), paper_ids)
        timings["papers_ms"] = (time.perf_counter() - t) * 1000
        return Signals(vector, cosine, fused_rows, rankings, timings, index=local)

    def _dense_rows(self, local: LocalIndex, vector: list[float], n: int, paper_ids: list[str] | None,
                    cosine: dict[int, float]) -> list[int]:
        """The dense chunk ranking (rows of the local index, best first); their cosines are put in `cosine`."""
        if self._changing or local.size <= self.settings.chunk_scan_limit:
            # An ingest is writing the store: its vectors are not this index version's, so the dense search
            # runs over the version's own vectors (exact, in memory) until the new version is loaded. A small
            # index is scanned too: faster than Chroma's query there, and exact (HNSW's top 40 of the same 297
            # chunks differed between processes: 1 run in 10 swapped two papers of a list answer).
            return _dense_in_index(local, vector, n, paper_ids, cosine)
        query: list[Sequence[float] | Sequence[int]] = [vector]
        try:
            got = self.store.chunks.query(query_embeddings=query, n_results=n,
                                          where=_where_papers(paper_ids) if paper_ids else None,
                                          include=["distances"])
        except Exception as e:  # a damaged vector index: say how to repair it, not Chroma's internals
            raise damaged("store's vector index", e) from None
        ids, distances = got["ids"][0], got["distances"]
        assert distances is not None  # asked for by `include`
        rows = [local.row_of[cid] for cid in ids if cid in local.row_of]
        for cid, dist in zip(ids, distances[0]):
            if cid in local.row_of:
                cosine[local.row_of[cid]] = 1.0 - float(dist)  # the collection uses the cosine space
        return rows

    def _rankings(self, local: LocalIndex, active: dict[str, float], chunk_lists: dict[str, list[int]],
                  fused_rows: dict[int, float], tokens: list[str], vector: list[float], n: int,
                  paper_ids: list[str] | None) -> dict[str, list[str]]:
        """Papers ranked in every active list: by their best fused chunk, by each chunk list, and (up to `n`) by the
        paper-level lookups."""
        import numpy as np

        rankings: dict[str, list[str]] = {}
        # A paper's chunk-level score is its best chunk's: on the dev questions, adding a share of its other
        # chunks lowered hit@1 (0.947 -> 0.842 at a 0.3 share), since long abstracts then win by length.
        paper_scores: dict[str, float] = {}
        for row, score in fused_rows.items():
            pid = local.paper_ids[row]
            paper_scores[pid] = max(paper_scores.get(pid, 0.0), score)
        rankings["chunks"] = sorted(paper_scores, key=lambda p: paper_scores[p], reverse=True)
        for name, rows in chunk_lists.items():
            if name in active:
                rankings[name] = list(dict.fromkeys(local.paper_ids[r] for r in rows))
        if "bm25_paper" in active or "bm25_title" in active or "dense_paper" in active:
            level = local.papers_index  # paper rankings alone can fill the k papers asked for (`n`)
            if "bm25_paper" in active:
                rankings["bm25_paper"] = [p for p, _ in level.search(tokens, n, False, paper_ids)]
            if "bm25_title" in active:
                rankings["bm25_title"] = [p for p, _ in level.search(tokens, n, True, paper_ids)]
            if "dense_paper" in active:
                if paper_ids or self._changing or len(level.paper_ids) <= self.settings.paper_scan_limit:
                    rankings["dense_paper"] = _top_papers(level, np.asarray(vector, dtype=np.float32), n, paper_ids)
                else:
                    rankings["dense_paper"] = self._paper_query(level, vector, n)
        if "dense_top2" in active:
            # The candidates re-ranked by the mean cosine of their two closest chunks (all their chunks, exact):
            # a claim often matches two sentences of the abstract that supports it.
            pool = list(dict.fromkeys(p for r in rankings.values() for p in r))
            rankings["dense_top2"] = _top2(local, pool, np.asarray(vector, dtype=np.float32))
        return rankings

    def _paper_query(self, level: PaperLevel, vector: list[float], n: int) -> list[str]:
        """Papers closest by mean chunk vector from the store's paper collection (HNSW): the same unit-length
        means as the local index's, written with the version. At 51,830 papers a query took 2.3 ms against
        8.0 ms for the exact scan; at 5,183 the scan is faster (`paper_scan_limit`)."""
        query: list[Sequence[float] | Sequence[int]] = [vector]
        try:
            got = self.store.papers.query(query_embeddings=query, n_results=min(n, len(level.paper_ids)),
                                          include=["distances"])
        except Exception as e:  # a damaged vector index: say how to repair it, not Chroma's internals
            raise damaged("store's paper vector index", e) from None
        return [pid for pid in got["ids"][0] if pid in level.row_of]

    @property
    def fusion(self) -> FusionWeights:
        """The fitted fusion weights (PAPERS_RETRIEVAL_FIT, or the shipped rag/answer/fitted/retrieval.json)."""
        path = self.settings.retrieval_fit
        return load_fusion(str(path) if path else None)

    def retrieve(self, question: str, k: int | None = None, paper_ids: list[str] | None = None,
                 mode: Mode | None = None, fusion: FusionWeights | None = None) -> Retrieval:
        """Top-k papers for a question, optionally restricted to some paper ids (`fusion`: other weights than
        the fitted ones, for comparisons)."""
        with one_blas_thread():
            return self._retrieve(question, k, paper_ids, mode, fusion)

    def _retrieve(self, question: str, k: int | None, paper_ids: list[str] | None, mode: Mode | None,
                  fusion: FusionWeights | None) -> Retrieval:
        import numpy as np

        k = k or self.settings.top_k
        mode = mode or self.settings.retrieval
        fusion = fusion or self.fusion
        sig = self.signals(question, paper_ids, mode, fusion, k)
        if sig is None:
            return Retrieval(question, [], None, {}, mode, {}, index=None)
        local = sig.index
        t = time.perf_counter()
        active = fusion.active(mode)
        paper_scores = weighted_rrf(sig.rankings, active, fusion.k)
        top = [pid for pid in sorted(paper_scores, key=lambda p: paper_scores[p], reverse=True)
               if pid in local.papers][:k]
        top_set = set(top)
        q = np.asarray(sig.vector, dtype=np.float32)
        hits_by_id = {pid: _hit(local.papers[pid], paper_scores[pid]) for pid in top}
        for name, ranked in sig.rankings.items():
            for rank, pid in enumerate(ranked, 1):
                if pid in top_set and name in active:
                    hits_by_id[pid].ranks[name] = rank
        kept = [row for row in sig.fused_rows if local.paper_ids[row] in top_set]
        unscored = sorted(row for row in kept if row not in sig.cosine)  # found by BM25 only: one product for all
        cosine = dict(sig.cosine)
        if unscored:
            cosine.update(zip(unscored, (local.matrix[unscored] @ q).tolist()))
        for row in kept:
            hits_by_id[local.paper_ids[row]].chunks.append(
                Chunk(local.chunk_ids[row], local.texts[row], float(cosine[row]), sig.fused_rows[row]))
        for hit in hits_by_id.values():
            if not hit.chunks:  # found by a paper-level ranking only: every chunk is a candidate
                rows = local.rows_of_paper.get(hit.paper_id, [])
                cosines = (local.matrix[rows] @ q).tolist() if rows else []
                hit.chunks = [Chunk(local.chunk_ids[r], local.texts[r], c) for r, c in zip(rows, cosines)]
                hit.complete = True
            hit.chunks.sort(key=lambda c: c.index)
        sig.timings_ms["fuse_ms"] = (time.perf_counter() - t) * 1000 + sig.timings_ms.pop("papers_ms", 0.0)
        return Retrieval(question=question, papers=[hits_by_id[p] for p in top if p in hits_by_id],
                         query_vector=sig.vector, timings_ms=sig.timings_ms, mode=mode,
                         idf=local.idf(stems(question)), index=local)

    def complete(self, retrieval: Retrieval) -> Retrieval:
        """Give every retrieved paper all of its chunks, in order (for generation and the evidence panel)."""
        import numpy as np

        local = retrieval.index if retrieval.index is not None else self._local
        q = np.asarray(retrieval.query_vector or [], dtype=np.float32)
        for p in retrieval.papers:
            if p.complete or local is None:
                continue
            fused = {c.chunk_id: c.rank_score for c in p.chunks}
            rows = local.rows_of_paper.get(p.paper_id, [])
            cosines = (local.matrix[rows] @ q).tolist() if rows and q.size else [0.0] * len(rows)
            ids, texts = local.chunk_ids, local.texts
            p.chunks = sorted([Chunk(ids[r], texts[r], c, fused.get(ids[r], 0.0)) for r, c in zip(rows, cosines)],
                              key=lambda c: c.index)
            p.complete = True
        return retrieval


def _dense_in_index(local: LocalIndex, vector: list[float], n: int, paper_ids: list[str] | None,
                    cosine: dict[int, float]) -> list[int]:
    """Top-n rows by cosine over the local index's own vectors (they are normalised), optionally within papers."""
    import numpy as np

    q = np.asarray(vector, dtype=np.float32)
    rows = None if not paper_ids else [r for pid in paper_ids for r in local.rows_of_paper.get(pid, [])]
    if rows == []:
        return []
    sims = (local.matrix if rows is None else local.matrix[rows]) @ q
    top = np.argsort(-sims, kind="stable")[:n]
    out = [int(i) if rows is None else rows[int(i)] for i in top]
    cosine.update((row, float(sims[i])) for row, i in zip(out, top))
    return out


def _top2(local: LocalIndex, papers: list[str], q: NDArray[Any]) -> list[str]:
    """Papers ordered by the mean of their two highest chunk cosines (one chunk: that chunk's)."""
    import numpy as np

    rows_of = local.rows_of_paper
    kept: list[str] = []
    flat: list[int] = []
    owner: list[int] = []
    for p in papers:
        rs = rows_of.get(p)
        if rs:
            owner += [len(kept)] * len(rs)
            flat += rs
            kept.append(p)
    if not kept:
        return []
    sims = local.matrix[flat] @ q  # a paper's rows are its own: no row is shared
    # Each paper's two best in one pass over the (few hundred) cosines; a loop, as numpy's group-by (lexsort,
    # searchsorted) cost more than the products here. The mean is taken in float32, as the cosines are.
    best = [-np.inf] * len(kept)
    second = [-np.inf] * len(kept)
    for o, sim in zip(owner, sims.tolist()):
        if sim > best[o]:
            best[o], second[o] = sim, best[o]
        elif sim > second[o]:
            second[o] = sim
    top = np.asarray(best, dtype=np.float32)
    two = np.asarray([s if s > -np.inf else b for b, s in zip(best, second)], dtype=np.float32)
    score = (top + two) / 2
    return [kept[int(i)] for i in np.argsort(-score, kind="stable")]


def _top_papers(level: PaperLevel, q: NDArray[Any], n: int, paper_ids: list[str] | None) -> list[str]:
    """Papers whose mean chunk vector is closest to the question (an exact scan: one row per paper)."""
    import numpy as np

    if paper_ids:
        rows = np.asarray([level.row_of[p] for p in paper_ids if p in level.row_of], dtype=np.int64)
    else:
        rows = np.arange(len(level.paper_ids))
    if not len(rows):
        return []
    sims = np.asarray(level.vectors[rows] if paper_ids else level.vectors) @ q
    top = np.argpartition(-sims, min(n, len(sims)) - 1)[:n] if len(sims) > n else np.arange(len(sims))
    top = top[np.argsort(-sims[top], kind="stable")]
    return [level.paper_ids[int(rows[i])] for i in top]


@lru_cache(maxsize=1)
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread. A question's products are small (a vector against a
    few thousand rows), and OpenBLAS's second thread only waits on the other core: on 2 busy cores a
    5,183 x 384 product took 12 ms with two threads and 0.8 ms with one (benchmarks/query_bench.py measures
    the whole question)."""
    return _blas().limit(limits=1, user_api="blas")


def _hit(e: CatalogEntry, score: float) -> PaperHit:
    return PaperHit(paper_id=e.paper_id, label=e.label, source=e.source, position=e.position, score=score,
                    text=e.text, title=e.title, url=e.url, authors=e.authors, venue=e.venue, year=e.year,
                    doi=e.doi, arxiv=e.arxiv, key=e.key, kind=e.kind, collection=e.collection, layout=e.layout)
