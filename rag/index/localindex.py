"""The local index beside the Chroma store: BM25 over the chunks, plus a snapshot of chunk texts, vectors
and paper records, all for the store's current content version.

BM25 is bm25s used directly rather than through llama-index's BM25Retriever: that wrapper stores every node's
full JSON as its corpus (hundreds of MB at 100k chunks, read on every start), needs llama-index's 2 s import
on the query path, and added 2.3 ms per query to bm25s's 0.4 ms here.

The snapshot exists for speed: with it, answering a question needs exactly one Chroma call (the dense query).
Reading candidate texts, vectors and paper records from Chroma took two more round trips, as long as the
query itself. Vectors are memory-mapped, so a large index costs address space, not resident memory.

Everything is keyed by the store's version: any ingest that changes the store makes a new index (derived from
the previous one, reading back only the chunks of the papers it touched), and a process loads the saved one
instead of rebuilding it. Each saved BM25 index keeps its documents' raw term counts beside bm25s's scores
(`TF_FILE`), so a derived index tokenises only the touched papers' text: the rest of an update is vectorised
array work (see `_updated_bm25`). An ingest publishes the new version's index before it commits that version to the
store, so a reader finds a complete index for every committed version. A store left pending by a killed ingest
is not trusted: its next ingest rebuilds from the store, and an embedded-store reader (which the store lock
guarantees is alone) builds its index from the store in memory until then.

Each version also saves the stems of every word of its texts (`WORDS_FILE`), which a reader loads so that
scoring a question's sentences never stems a corpus word, and a process keeps the last index it saved or read
(`_saved`), so its next ingest or reader starts from it while that folder's files are unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.settings import Settings
from rag.index.store import GET_BATCH, CatalogEntry, Store, StoreError, damaged, write_point
from rag.text import prime_word_stems, stemmer, word_stem_table

logging.getLogger("bm25s").setLevel(logging.ERROR)
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
TABLE_FILE = "chunks.json"
VECTORS_FILE = "vectors.npy"
PAPERS_FILE = "papers.json"
PAPER_VECTORS_FILE = "paper_vectors.npy"
PAPER_BM25_DIR = "paper_bm25"  # title + whole abstract, one document per paper
TITLE_BM25_DIR = "title_bm25"  # the heading alone (title, or label when untitled): the title as its own field
# Beside each bm25s index: how often each (document, term) of its score matrix occurs, in the order of bm25s's
# CSC arrays (one count per stored score). Indexes saved without it are derived by tokenising every row again.
TF_FILE = "tf.csc.index.npy"
# Every word of the chunk texts, titles and labels -> its stems (`rag.text.word_stem_table`): questions read
# them instead of stemming. Indexes saved without it answer the same, stemming words as they meet them.
WORDS_FILE = "word_stems.json"


def index_dir(settings: Settings, version: str) -> Path:
    return settings.data_dir / "index" / f"{settings.collection}-{version}"




def heading(title: str, label: str) -> str:
    """What a paper's chunks are prefixed with when embedded: the title when it has one, else its label."""
    return title.strip() or label


def tokenize(text: str) -> list[str]:
    """The query's BM25 tokens (stemmed, English stopwords out): one tokenisation serves all three indexes.

    The same steps as `bm25s.tokenize` (lower-case, the token pattern, stopwords, stemming), done here for one
    short text: bm25s's corpus tokeniser builds a vocabulary and three progress bars per call, 0.3 ms of a
    question's time (tests/test_localindex.py checks the two give the same tokens)."""
    split, stop = _query_tokenizer()
    return stemmer().stemWords([t for t in split(text.lower()) if t not in stop])


@functools.lru_cache(maxsize=1)
def _query_tokenizer() -> tuple[Any, frozenset[str]]:
    import re

    from bm25s.stopwords import STOPWORDS_EN  # what bm25s.tokenize(stopwords="en") removes

    return re.compile(TOKEN_PATTERN).findall, frozenset(STOPWORDS_EN)


def bm25_index(texts: list[str]) -> Any:
    """bm25s over the texts, carrying their term counts (`term_counts`, aligned with its score arrays)."""
    import bm25s

    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), token_pattern=TOKEN_PATTERN,
                            show_progress=False)
    bm25 = bm25s.BM25()
    bm25.index(tokens, show_progress=False)
    bm25.term_counts = _aligned_counts(bm25, tokens.ids)
    return bm25


def _aligned_counts(bm25: Any, token_ids: list[list[int]]) -> Any:
    """Per stored score of `bm25` (bm25s's CSC arrays: one column per term, rows ascending), how often that
    term occurs in that document; None if the layout is not bm25s's (the index is then never derived)."""
    import itertools

    import numpy as np
    import scipy.sparse as sp

    lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
    flat = np.fromiter(itertools.chain.from_iterable(token_ids), dtype=np.int32, count=int(lengths.sum()))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    n_terms = len(bm25.scores["indptr"]) - 1
    counts = sp.csr_matrix((np.ones(len(flat), dtype=np.int32), flat, indptr), shape=(len(token_ids), n_terms))
    counts.sum_duplicates()
    csc = counts.tocsc()
    csc.sort_indices()
    if not (np.array_equal(csc.indptr, bm25.scores["indptr"]) and np.array_equal(csc.indices, bm25.scores["indices"])):
        logging.getLogger(__name__).warning("bm25s's score layout is not the expected one: the local index will be "
                                            "rebuilt in full on every ingest")
        return None
    return csc.data.astype(np.int32)


def _counts_matrix(bm25: Any) -> Any:
    """The term counts of a loaded or built index as a CSR matrix [documents, terms], or None without them."""
    import numpy as np
    import scipy.sparse as sp

    tf = getattr(bm25, "term_counts", None)
    if tf is None:
        return None
    scores = bm25.scores
    n_terms = len(scores["indptr"]) - 1
    if len(tf) != len(scores["data"]):
        return None
    csc = sp.csc_matrix((np.asarray(tf), np.asarray(scores["indices"]), np.asarray(scores["indptr"])),
                        shape=(int(scores["num_docs"]), n_terms))
    return csc.tocsr()


def _terms(bm25: Any) -> list[str]:
    """Column -> term of a bm25s index (its vocabulary without the empty token bm25s adds past the columns)."""
    n_terms = len(bm25.scores["indptr"]) - 1
    terms = [""] * n_terms
    for term, i in bm25.vocab_dict.items():
        if i < n_terms:
            terms[i] = term
    return terms


def _updated_bm25(previous: Any, reuse: Any, texts: list[str]) -> Any | None:
    """A bm25s index whose row i is row `reuse[i]` of `previous`, or (where `reuse[i]` is -1) the next of
    `texts`, tokenised here; None when `previous` carries no term counts (or is not a Lucene BM25).

    bm25s has no incremental add: `index` takes every document's tokens, and tokenising and counting them in
    Python was 3.9 s of a 4.1 s update at 43k chunks, though only the touched papers' documents changed. Here
    kept rows' counts are selected from the saved count matrix, only new documents are tokenised, and the
    scores are recomputed from the counts in numpy with bm25s's own formula (see `_bm25_from_counts`): the
    index bm25s builds from the same texts.
    """
    import numpy as np
    import scipy.sparse as sp

    counts = _counts_matrix(previous)
    reuse = np.asarray(reuse, dtype=np.int64)
    if counts is None or (previous.method, previous.idf_method) != ("lucene", "lucene") \
            or reuse.max(initial=-1) >= counts.shape[0]:  # counts of other rows than the index's: not trusted
        return None
    terms = _terms(previous)
    column = {t: i for i, t in enumerate(terms)}
    new_rows = np.flatnonzero(reuse < 0)
    assert len(new_rows) == len(texts)
    cols: list[int] = []
    lengths = []
    if texts:
        import bm25s

        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), token_pattern=TOKEN_PATTERN,
                                return_ids=False, show_progress=False)
        for doc in tokens:
            for t in doc:
                i = column.get(t)
                if i is None:
                    i = column[t] = len(terms)
                    terms.append(t)
                cols.append(i)
            lengths.append(len(doc))
    n_terms = len(terms)
    kept = counts[reuse[reuse >= 0]] if (reuse >= 0).any() else sp.csr_matrix((0, counts.shape[1]), dtype=np.int32)
    kept = sp.csr_matrix((kept.data, kept.indices, kept.indptr), shape=(kept.shape[0], n_terms))
    added = sp.csr_matrix((np.ones(len(cols), dtype=np.int32), np.asarray(cols, dtype=np.int32),
                           np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])), shape=(len(texts), n_terms))
    added.sum_duplicates()
    rows = sp.vstack([kept, added], format="csr")
    if len(new_rows) and new_rows[0] != len(reuse) - len(new_rows):  # new documents are not all at the end
        order = np.empty(len(reuse), dtype=np.int64)
        order[reuse >= 0] = np.arange((reuse >= 0).sum())
        order[new_rows] = kept.shape[0] + np.arange(len(new_rows))
        rows = rows[order]
    return _bm25_from_counts(rows, terms)


def _bm25_from_counts(counts: Any, terms: list[str]) -> Any:
    """The bm25s index (method "lucene", its default) of documents given by their term counts [docs, terms]:
    what `bm25s.BM25().index` makes of the same documents, computed with its formula and number types, so
    retrieve, save, load and the score arrays read by `LocalIndex.idf` behave alike.

    bm25s scores a (document, term) pair idf * tf / (k1 * (1 - b + b * len / avg_len) + tf) with the Lucene idf
    log(1 + (N - df + 0.5) / (df + 0.5)) stored as float32, the rest in float64, the product stored as float32.
    Terms no document holds any more are dropped, as a build from scratch would not have them.
    """
    import bm25s
    import numpy as np
    import scipy.sparse as sp

    counts = counts.tocsr()
    df = np.bincount(counts.indices, minlength=len(terms))
    if (df == 0).any():  # removed documents took the last use of some terms
        live = df > 0
        new_column = (np.cumsum(live) - 1).astype(np.int32)
        counts = sp.csr_matrix((counts.data, new_column[counts.indices], counts.indptr),
                               shape=(counts.shape[0], int(live.sum())))
        terms = [t for t, keep in zip(terms, live) if keep]
        df = df[live]
    n_docs = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1), dtype=np.int64).ravel()
    bm25 = bm25s.BM25()
    k1, b = bm25.k1, bm25.b
    avg_len = lengths.mean() if n_docs else 0.0
    idf = np.zeros(len(terms), dtype=np.float32)
    present = df > 0
    idf[present] = np.log(1 + (n_docs - df[present] + 0.5) / (df[present] + 0.5))
    csc = counts.tocsc()
    csc.sort_indices()
    tf = csc.data.astype(np.float64)
    column = np.repeat(np.arange(len(terms)), np.diff(csc.indptr))
    norm = k1 * ((1 - b) + b * lengths / avg_len) if n_docs else np.zeros(0)
    scores = idf[column].astype(np.float64) * (tf / (norm[csc.indices] + tf))
    bm25.scores = {"data": scores.astype(bm25.dtype), "indices": csc.indices.astype(bm25.int_dtype),
                   "indptr": csc.indptr.astype(np.int64), "num_docs": n_docs}
    bm25.vocab_dict = {t: i for i, t in enumerate(terms)}
    bm25.vocab_dict[""] = len(terms)  # as bm25s.BM25.index adds it (create_empty_token)
    bm25.unique_token_ids_set = set(bm25.vocab_dict.values())
    bm25.nonoccurrence_array = None
    bm25.term_counts = csc.data.astype(np.int32)
    return bm25


def _top(bm25: Any, tokens: list[str], n: int, mask: Any = None) -> list[tuple[int, float]]:
    """Top-n (row, score) of a BM25 index with a positive score, best first (ties: lower row first).

    bm25s scores the query (`get_scores`); the selection is done here because `BM25.retrieve` partitions all
    rows with `argpartition(scores, -k)`, which is slow on score arrays that are mostly zeros: 1.7 ms against
    0.2 ms for the same top 100 of 43k chunks. Only rows that hold a query term are ranked.
    """
    import numpy as np

    scores = bm25.get_scores(tokens, weight_mask=mask)
    rows = np.flatnonzero(scores > 0)
    if len(rows) > n:
        rows = rows[np.argpartition(-scores[rows], n - 1)[:n]]
        rows.sort()
    rows = rows[np.argsort(-scores[rows], kind="stable")]
    return [(int(r), float(scores[r])) for r in rows]


@dataclass
class PaperLevel:
    """Paper-level evidence beside the chunk index: BM25 over title + whole abstract, BM25 over the title
    alone, and each paper's mean chunk vector. Rows follow `paper_ids`.

    Sentence-sized chunks miss claims whose words are spread over an abstract; whole-abstract BM25 is the
    standard baseline on such corpora (SciFact), and a title is the densest description of a paper.
    """

    paper_ids: list[str]
    bm25: Any
    title_bm25: Any
    vectors: Any  # [papers, dim], unit length
    row_of: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.row_of = {pid: i for i, pid in enumerate(self.paper_ids)}

    def search(self, tokens: list[str], n: int, title: bool = False,
               paper_ids: list[str] | None = None) -> list[tuple[str, float]]:
        """Top (paper id, BM25 score) over whole papers (or their titles), optionally only some papers."""
        import numpy as np

        bm25 = self.title_bm25 if title else self.bm25
        tokens = [t for t in tokens if t in bm25.vocab_dict]
        if not tokens:
            return []
        mask = None
        if paper_ids:
            mask = np.zeros(len(self.paper_ids), dtype=np.float32)
            mask[[self.row_of[p] for p in paper_ids if p in self.row_of]] = 1.0
            if not mask.any():
                return []
        return [(self.paper_ids[d], s) for d, s in _top(bm25, tokens, n, mask)]


def build_paper_level(papers: dict[str, CatalogEntry], chunk_paper_ids: list[str], vectors: Any) -> PaperLevel:
    """Index titles and whole abstracts of the papers, and average each paper's chunk vectors."""
    ids = [pid for pid in dict.fromkeys(chunk_paper_ids) if pid in papers]
    heads = [heading(papers[p].title, papers[p].label) for p in ids]
    return PaperLevel(ids, bm25_index([_paper_text(papers[p]) for p in ids]), bm25_index(heads),
                      _mean_vectors(ids, chunk_paper_ids, vectors))


def _paper_text(e: CatalogEntry) -> str:
    """The whole-paper BM25 document: heading, then the whole abstract."""
    return f"{heading(e.title, e.label)}. {e.text}"


def _mean_vectors(ids: list[str], chunk_paper_ids: list[str], vectors: Any, first_row: int = 0) -> Any:
    """Unit-length sum of the chunk vectors of each of `ids` (rows of `vectors` follow `chunk_paper_ids`),
    whose chunks are all at `first_row` or after (an update's new rows: not scanning the 434k before them
    saved 0.3 s of adding one paper)."""
    import numpy as np

    row = {pid: i for i, pid in enumerate(ids)}
    sums = np.zeros((len(ids), vectors.shape[1]), dtype=np.float32)
    owners = np.fromiter((row.get(p, -1) for p in chunk_paper_ids[first_row:]), dtype=np.int64,
                         count=len(chunk_paper_ids) - first_row)  # by row from first_row on
    keep = np.flatnonzero(owners >= 0)
    np.add.at(sums, owners[keep], np.asarray(vectors[keep + first_row], dtype=np.float32))
    sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return sums


def updated_paper_level(previous: PaperLevel | None, previous_papers: dict[str, CatalogEntry],
                        papers: dict[str, CatalogEntry], chunk_paper_ids: list[str], vectors: Any,
                        touched: set[str], new_from: int | None = None) -> PaperLevel:
    """`build_paper_level` of the new rows, from the previous paper level: a paper whose chunks were not
    touched keeps its mean vector, and its BM25 documents when its title and abstract are unchanged; only the
    other papers' texts are tokenised."""
    import numpy as np

    if previous is None:
        return build_paper_level(papers, chunk_paper_ids, vectors)
    ids = [pid for pid in dict.fromkeys(chunk_paper_ids) if pid in papers]

    def same_head(a: CatalogEntry, b: CatalogEntry) -> bool:
        return heading(a.title, a.label) == heading(b.title, b.label)

    def kept_rows(pid: str) -> tuple[int, int, int]:
        """The paper's previous row for its mean vector, its title document and its whole-paper document, each
        -1 when it must be made anew (touched papers; a changed heading; a changed heading or abstract)."""
        old, new = previous_papers.get(pid), papers[pid]
        row = previous.row_of.get(pid, -1)
        if row < 0 or pid in touched or old is None:
            return -1, -1, -1
        if old is new:
            return row, row, row
        head = row if same_head(old, new) else -1
        return row, head, head if head >= 0 and old.text == new.text else -1

    rows = np.array([kept_rows(p) for p in ids], dtype=np.int64).reshape(-1, 3)
    reuse_vector, reuse_head, reuse_text = (np.ascontiguousarray(rows[:, i]) for i in range(3))
    bm25 = _updated_bm25(previous.bm25, reuse_text,
                         [_paper_text(papers[ids[i]]) for i in np.flatnonzero(reuse_text < 0)])
    if bm25 is None:
        bm25 = bm25_index([_paper_text(papers[p]) for p in ids])
    heads = [heading(papers[ids[i]].title, papers[ids[i]].label) for i in np.flatnonzero(reuse_head < 0)]
    title_bm25 = _updated_bm25(previous.title_bm25, reuse_head, heads)
    if title_bm25 is None:
        title_bm25 = bm25_index([heading(papers[p].title, papers[p].label) for p in ids])
    if np.array_equal(reuse_vector, np.arange(len(previous.paper_ids))):  # the same papers' chunks, in order
        return PaperLevel(ids, bm25, title_bm25, previous.vectors)
    means = np.empty((len(ids), vectors.shape[1]), dtype=np.float32)
    old = reuse_vector >= 0
    means[old] = np.asarray(previous.vectors)[reuse_vector[old]] if old.any() else 0
    if not old.all():
        fresh = [ids[i] for i in np.flatnonzero(~old)]
        # Touched papers' chunks are the rows from `new_from` on (read back from the store after the kept ones).
        start = new_from if new_from is not None and all(p in touched for p in fresh) else 0
        means[~old] = _mean_vectors(fresh, chunk_paper_ids, vectors, start)
    return PaperLevel(ids, bm25, title_bm25, means)


def embedded_text(head: str, text: str) -> str:
    """What a chunk's vector was computed from: its paper's heading (see `heading`), then its text."""
    return f"{head}: {text}"


@dataclass
class LocalIndex:
    """BM25 plus, per row, the chunk's id, paper id, text and vector; and the paper records."""

    bm25: Any
    chunk_ids: list[str]
    paper_ids: list[str]
    texts: list[str]
    vectors: Any  # numpy array [rows, dim], memory-mapped when loaded from disk
    papers: dict[str, CatalogEntry]
    paper_level: PaperLevel | None = None  # built on first use when an index saved without it is loaded
    word_stems: dict[str, str] | None = None  # see WORDS_FILE; built on first use when missing

    # The row maps are built on first use: an ingest deriving the next index never needs them (0.2 s per index
    # at 130k chunks); `ensure_local_index` builds them for readers as it loads.
    @functools.cached_property
    def row_of(self) -> dict[str, int]:
        return dict(zip(self.chunk_ids, range(len(self.chunk_ids))))

    @functools.cached_property
    def rows_of_paper(self) -> dict[str, list[int]]:
        rows: dict[str, list[int]] = {}
        for i, pid in enumerate(self.paper_ids):
            rows.setdefault(pid, []).append(i)
        return rows

    @functools.cached_property
    def matrix(self) -> Any:
        """The vectors as a plain ndarray (a view of the mapped file, no copy) for the query path: indexing an
        np.memmap makes a memmap object each time. `vectors` stays the memmap, which names its file."""
        import numpy as np

        return np.asarray(self.vectors)

    @property
    def papers_index(self) -> PaperLevel:
        if self.paper_level is None:
            self.paper_level = build_paper_level(self.papers, self.paper_ids, self.vectors)
        return self.paper_level

    def word_table(self) -> dict[str, str]:
        """Every word of the indexed texts, titles and labels -> its stems (see WORDS_FILE)."""
        if self.word_stems is None:
            self.word_stems = word_stem_table(self.texts + _heads(self.papers))
        return self.word_stems

    @property
    def size(self) -> int:
        return len(self.chunk_ids)

    def search(self, query: str | list[str], n: int, paper_ids: list[str] | None = None) -> list[tuple[int, float]]:
        """Top (row, BM25 score) for a query (text, or its `tokenize` tokens), optionally only over chunks of
        some papers."""
        import numpy as np

        tokens = [t for t in (tokenize(query) if isinstance(query, str) else query) if t in self.bm25.vocab_dict]
        if not tokens:
            return []
        mask = None
        if paper_ids:
            mask = np.zeros(self.size, dtype=np.float32)
            for pid in paper_ids:
                mask[self.rows_of_paper.get(pid, [])] = 1.0
            if not mask.any():
                return []
        return _top(self.bm25, tokens, n, mask)

    @functools.cached_property
    def _doc_freq(self) -> list[int]:
        """Chunks holding each BM25 term, by term id (a list: a question looks up a few hundred, one by one)."""
        import numpy as np

        return np.diff(np.asarray(self.bm25.scores["indptr"])).tolist()

    @functools.cached_property
    def idf_table(self) -> dict[str, float]:
        """idf of every BM25 term (a word not in it has the idf `idf` gives unseen words), made on the first
        question (~20 ms at 43k chunks): a question about papers not asked about before looks up several
        hundred new words, one by one."""
        n, df, log = self.size, self._doc_freq, math.log
        # bm25s's vocabulary may hold a term past its score columns (the empty token): no chunk holds it.
        return {w: log((n - df[i] + 0.5) / (df[i] + 0.5) + 1.0) for w, i in self.bm25.vocab_dict.items()
                if i < len(df)}

    def idf(self, words: set[str] | list[str]) -> dict[str, float]:
        """BM25 inverse document frequency of stemmed words (words the index has never seen are rarest)."""
        table, unseen = self.idf_table, math.log((self.size + 0.5) / 0.5 + 1.0)
        return {w: table.get(w, unseen) for w in words}


def _read_chunks(store: Store, paper_ids: list[str] | None = None) -> tuple[list[str], list[str], list[str],
                                                                         list[str], Any]:
    """Chunk ids, paper ids, texts, labels and vectors of every chunk, or of the chunks of some papers."""
    try:
        return _read_chunks_unchecked(store, paper_ids)
    except StoreError:
        raise
    except Exception as e:  # e.g. a damaged HNSW file: vectors cannot be read back
        raise damaged("store's chunk vectors", e) from None


def _read_chunks_unchecked(store: Store, paper_ids: list[str] | None) -> tuple[list[str], list[str], list[str],
                                                                            list[str], Any]:
    import numpy as np

    chunk_ids: list[str] = []
    owners: list[str] = []
    texts: list[str] = []
    labels: list[str] = []
    vectors: list[Any] = []
    include = ["documents", "metadatas", "embeddings"]
    if paper_ids is None:
        total = store.chunks.count()
        pages = (store.chunks.get(include=include, limit=GET_BATCH, offset=o) for o in range(0, total, GET_BATCH))
    else:
        ids = list(paper_ids)
        pages = (store.chunks.get(where={"paper_id": {"$in": ids[i:i + 500]}}, include=include)
                 for i in range(0, len(ids), 500))
    for got in pages:
        for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
            chunk_ids.append(cid)
            owners.append(str(meta.get("paper_id", "")))
            texts.append(doc or "")
            labels.append(str(meta.get("heading") or meta.get("label", "")))
        if len(got["ids"]):
            vectors.append(np.asarray(got["embeddings"], dtype=np.float32))
    return chunk_ids, owners, texts, labels, vectors


def _heads(papers: dict[str, CatalogEntry]) -> list[str]:
    """The titles and labels the answerer stems beside the chunk texts."""
    return [part for e in papers.values() for part in (e.title, e.label) if part]


def _index(chunk_ids: list[str], paper_ids: list[str], texts: list[str], labels: list[str], vectors: Any,
           papers: dict[str, CatalogEntry]) -> LocalIndex:
    """Tokenise and BM25-index every chunk and paper."""
    bm25 = bm25_index([embedded_text(lab, t) for lab, t in zip(labels, texts)])
    return LocalIndex(bm25, chunk_ids, paper_ids, texts, vectors, papers,
                      paper_level=build_paper_level(papers, paper_ids, vectors))


def build_local_index(store: Store) -> LocalIndex | None:
    """Read every chunk (text, vector) and paper record from the store; tokenise and index the chunks."""
    import numpy as np

    chunk_ids, paper_ids, texts, labels, vectors = _read_chunks(store)
    if not texts:
        return None
    return _index(chunk_ids, paper_ids, texts, labels, np.concatenate(vectors), store.catalog())


def updated_local_index(previous: LocalIndex, store: Store, touched: set[str],
                        moved: set[str] | None = None) -> LocalIndex | None:
    """The index after an ingest, from the one before it: rows and paper records of untouched papers are
    kept, and only the chunks and records of touched papers (added, re-embedded or removed) and the records
    of moved ones are read from the store.

    Reading every chunk and record back is most of a full build (1.6 of 3.3 s at 10k chunks here) and grows
    with the store, while an ingest usually touches a few papers. Kept rows take their label from the paper
    record, which ingest writes from the same paper as the chunks' metadata.
    """
    import numpy as np

    reread = touched | (moved or set())
    papers = {pid: e for pid, e in previous.papers.items() if pid not in reread}
    papers.update(store.get_papers(sorted(reread)))
    keep = [i for i, pid in enumerate(previous.paper_ids) if pid not in touched and pid in papers]
    chunk_ids, paper_ids, texts, labels, vectors = _read_chunks(store, sorted(touched))
    n_new = len(chunk_ids)
    chunk_ids = [previous.chunk_ids[i] for i in keep] + chunk_ids
    paper_ids = [previous.paper_ids[i] for i in keep] + paper_ids
    heads = {pid: heading(e.title, e.label) for pid, e in papers.items() if pid not in touched}
    labels = [heads[previous.paper_ids[i]] for i in keep] + labels
    texts = [previous.texts[i] for i in keep] + texts
    if not texts:
        return None
    keep_rows = np.asarray(keep, dtype=np.int64)
    unchanged = not n_new and len(keep) == previous.size  # only records changed: the same rows, in order
    all_vectors = previous.vectors if unchanged else _stack_rows(previous.vectors, keep_rows, vectors,
                                                                 _spill_path(previous.vectors))
    # A kept chunk keeps its BM25 counts unless its heading (part of its BM25 text) changed with its record.
    relabelled = {pid for pid in reread - touched if pid in papers and pid in previous.papers
                  and heading(previous.papers[pid].title, previous.papers[pid].label) != heads[pid]}
    reuse = np.concatenate([keep_rows, np.full(n_new, -1, dtype=np.int64)])
    if relabelled:
        reuse[[i for i in range(len(keep)) if paper_ids[i] in relabelled]] = -1
    bm25 = _updated_bm25(previous.bm25, reuse, [embedded_text(labels[i], texts[i]) for i in np.flatnonzero(reuse < 0)])
    if bm25 is None:  # saved without term counts: tokenise every row once, the next update is incremental
        return _index(chunk_ids, paper_ids, texts, labels, all_vectors, papers)
    level = updated_paper_level(previous.paper_level, previous.papers, papers, paper_ids, all_vectors, touched,
                                len(keep))
    words = None  # built from every text at save when the previous index has no table
    if previous.word_stems is not None:  # a word's stems never change: add the words of the rows and records read
        words = word_stem_table(texts[len(keep):] + _heads({pid: papers[pid] for pid in reread if pid in papers}),
                                known=previous.word_stems)
    return LocalIndex(bm25, chunk_ids, paper_ids, texts, all_vectors, papers, paper_level=level, word_stems=words)


def _spill_path(previous: Any) -> Path | None:
    """Where the next version's vectors are written when the previous ones are a saved file: a `.tmp-` folder
    beside the versions (what a killed process leaves there is removed by `remove_other_versions`)."""
    import numpy as np

    source = getattr(previous, "filename", None) if isinstance(previous, np.memmap) else None
    if not source or previous.dtype != np.float32 or previous.ndim != 2 or not previous.flags["C_CONTIGUOUS"] \
            or getattr(previous, "offset", None) is None \
            or os.path.getsize(source) != previous.offset + previous.size * 4:  # a slice of the file: in memory
        return None
    return Path(source).parent.parent / f".tmp-{uuid.uuid4().hex}" / VECTORS_FILE


def _stack_rows(previous: Any, keep: Any, parts: list[Any], spill: Path | None = None) -> Any:
    """Rows `keep` of `previous` (memory-mapped), then `parts`, copied once into a new float32 array (taking
    the rows and concatenating copied everything twice).

    With `spill`, the array is a new .npy file there, memory-mapped: saving the index then links that file
    instead of writing the rows a second time (at 434k chunks, 636 MB: 1.3 s of adding one paper was the copy
    in memory and then `np.save`)."""
    import numpy as np

    shape = (len(keep) + sum(len(p) for p in parts), previous.shape[1])
    if spill is not None:
        try:
            spill.parent.mkdir(parents=True)
            _write_rows(spill, previous, keep, parts, shape)
            return np.load(spill, mmap_mode="r")  # read-only, as a loaded index's vectors are
        except OSError:  # an unwritable index folder: in memory, and the save reports the folder
            shutil.rmtree(spill.parent, ignore_errors=True)
    out = np.empty(shape, dtype=np.float32)
    at = 0
    for part in _runs(previous, keep) + list(parts):
        out[at:at + len(part)] = part
        at += len(part)
    return out


def _write_rows(path: Path, previous: Any, keep: Any, parts: list[Any], shape: tuple[int, int]) -> None:
    """A .npy of rows `keep` of the saved file `previous` memory-maps, then `parts`. The kept rows' bytes are
    copied file to file by the kernel (`os.copy_file_range`): filling a memory map page by page took 1.15 s
    for 434k rows here."""
    import numpy as np

    row_bytes = previous.shape[1] * 4
    with open(path, "wb") as out, open(previous.filename, "rb") as src:
        np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": shape})
        out.flush()
        for run in _row_ranges(keep):
            start, count = previous.offset + run[0] * row_bytes, (run[1] - run[0]) * row_bytes
            while count:
                try:
                    done = os.copy_file_range(src.fileno(), out.fileno(), count, start)
                except OSError:  # a file system without it: through user space
                    src.seek(start)
                    done = out.write(src.read(count))
                    out.flush()  # the next copy_file_range writes at the file's offset, after these bytes
                if not done:
                    raise OSError(f"{previous.filename} is shorter than its header says")
                start, count = start + done, count - done
        for part in parts:
            out.write(np.ascontiguousarray(part, dtype="<f4").tobytes())


def _row_ranges(rows: Any) -> list[tuple[int, int]]:
    """Ascending rows as [start, end) ranges of consecutive rows."""
    import numpy as np

    if not len(rows):
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [len(rows)]])
    return [(int(rows[a]), int(rows[b - 1]) + 1) for a, b in zip(starts, ends)]


def _drop_spill(vectors: Any) -> None:
    """Remove the `.tmp-` folder of vectors `_stack_rows` spilled (the published index links the file)."""
    import numpy as np

    source = getattr(vectors, "filename", None) if isinstance(vectors, np.memmap) else None
    if source and Path(source).parent.name.startswith(".tmp-"):
        shutil.rmtree(Path(source).parent, ignore_errors=True)


def _runs(array: Any, rows: Any) -> list[Any]:
    """Rows `rows` (ascending) of `array` as slices, one per run of consecutive rows: views, not copies."""
    return [array[a:b] for a, b in _row_ranges(rows)]


def _json_bytes(value: Any) -> bytes:
    """JSON as `json.dumps` writes it, in a fifth of the time (orjson, which chromadb requires); text orjson
    refuses (lone surrogates from a broken PDF) goes through json."""
    import orjson

    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value).encode()


def _json_load(path: Path) -> Any:
    """A file `_json_bytes` wrote: orjson (0.7 s instead of 1.2 s for the two files of a 434k-chunk index), or
    json for the escaped lone surrogates orjson refuses."""
    import orjson

    data = path.read_bytes()
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _save(index: LocalIndex, folder: Path) -> None:
    import numpy as np

    _save_bm25(index.bm25, folder)
    (folder / TABLE_FILE).write_bytes(_json_bytes({"chunk_ids": index.chunk_ids, "paper_ids": index.paper_ids,
                                                   "texts": index.texts}))
    _save_vectors(index.vectors, folder / VECTORS_FILE)
    (folder / PAPERS_FILE).write_bytes(_json_bytes([e.__dict__ for e in index.papers.values()]))
    level = index.papers_index
    _save_bm25(level.bm25, folder / PAPER_BM25_DIR)
    _save_bm25(level.title_bm25, folder / TITLE_BM25_DIR)
    _save_vectors(level.vectors, folder / PAPER_VECTORS_FILE)
    (folder / WORDS_FILE).write_bytes(_json_bytes(index.word_table()))


def _save_vectors(vectors: Any, path: Path) -> None:
    """np.save, or a hard link to the saved file the vectors are a memory map of, whole: an ingest that only
    moved papers keeps every row (nothing is ever written into a saved file, so versions may share one)."""
    import numpy as np

    source = getattr(vectors, "filename", None) if isinstance(vectors, np.memmap) else None
    if source:
        try:
            if np.load(source, mmap_mode="r").shape == vectors.shape:
                os.link(source, path)
                return
        except OSError:  # another file system, or links not allowed: written out
            pass
    np.save(path, vectors)


def _save_bm25(bm25: Any, folder: Path) -> None:
    import numpy as np

    bm25.save(str(folder), show_progress=False)
    if getattr(bm25, "term_counts", None) is not None:
        np.save(folder / TF_FILE, bm25.term_counts)


def _load_bm25(folder: Path) -> Any:
    import bm25s
    import numpy as np

    bm25 = bm25s.BM25.load(str(folder), mmap=True)
    # Plain ndarray views of the mapped files (no copy): bm25s slices its score arrays a dozen times per query,
    # and each slice of an np.memmap builds a memmap object, 0.2 ms of a question at 38 papers.
    bm25.scores = {k: np.asarray(v) if isinstance(v, np.memmap) else v for k, v in bm25.scores.items()}
    bm25.term_counts = np.load(folder / TF_FILE, mmap_mode="r") if (folder / TF_FILE).exists() else None
    return bm25


# The index this process last saved or read, with the state of its folder's files then. An ingest in a process
# that ingested or answered before (the UI, a benchmark) starts from it instead of reading it back (1.1 s of
# the 5.2 s of adding one paper at 434k chunks), and a reader loading the version an ingest in its process
# just published shares that ingest's. Trusted only while every file of the folder is the one it was then.
_LAST: tuple[Path, tuple, LocalIndex] | None = None


def _stamp(folder: Path) -> tuple:
    """Each file under the folder with its inode, size and modification time."""
    out = []
    for root, _, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(root, name))
            out.append((os.path.relpath(os.path.join(root, name), folder), st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def _remember(folder: Path, index: LocalIndex, stamp: tuple | None = None) -> None:
    """Keep the index saved in `folder` (its vectors read from the saved file, as a loaded index's are)."""
    global _LAST
    import numpy as np

    try:
        stamp = stamp or _stamp(folder)
        if getattr(index.vectors, "filename", None) != os.path.abspath(folder / VECTORS_FILE):
            index.vectors = np.load(folder / VECTORS_FILE, mmap_mode="r")
            index.__dict__.pop("matrix", None)
        level = index.paper_level  # its vectors too: the next version links the file when they are unchanged
        if level is not None and getattr(level.vectors, "filename", None) != os.path.abspath(folder / PAPER_VECTORS_FILE):
            level.vectors = np.load(folder / PAPER_VECTORS_FILE, mmap_mode="r")
    except OSError:
        _LAST = None
        return
    _LAST = (folder, stamp, index)


def _saved(folder: Path) -> LocalIndex:
    """The index saved in `folder`: the one kept in this process while the folder's files are unchanged, else
    read (and kept)."""
    last = _LAST
    stamp = _stamp(folder)  # before reading: files replaced while it reads are not trusted next time
    if last is not None and last[0] == folder and last[1] == stamp:
        return last[2]
    index = load_index(folder)
    _remember(folder, index, stamp)
    return index


def load_index(folder: Path) -> LocalIndex:
    with _gc_paused():  # ~1M new objects at 434k chunks: the collector's passes over them cost a third more
        return _load_unpaused(folder)


@contextlib.contextmanager
def _gc_paused() -> Any:
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _load_unpaused(folder: Path) -> LocalIndex:
    import numpy as np

    table = _json_load(folder / TABLE_FILE)
    papers = {d["paper_id"]: CatalogEntry(**d) for d in _json_load(folder / PAPERS_FILE)}
    level = None
    if (folder / PAPER_VECTORS_FILE).exists():  # indexes saved before paper-level evidence build it on use
        level = PaperLevel([pid for pid in dict.fromkeys(table["paper_ids"]) if pid in papers],
                           _load_bm25(folder / PAPER_BM25_DIR), _load_bm25(folder / TITLE_BM25_DIR),
                           np.load(folder / PAPER_VECTORS_FILE, mmap_mode="r"))
    words = _json_load(folder / WORDS_FILE) if (folder / WORDS_FILE).exists() else None
    return LocalIndex(_load_bm25(folder), table["chunk_ids"], table["paper_ids"], table["texts"],
                      np.load(folder / VECTORS_FILE, mmap_mode="r"), papers, paper_level=level, word_stems=words)


def ensure_local_index(settings: Settings, store: Store, load: bool = True) -> LocalIndex | None:
    """The local index for the store's current version: loaded from disk, or built and saved.

    With `load=False` (after an ingest) an index that is already on disk is left there unread.
    """
    if store.pending and not settings.chroma_host and load:
        # A killed ingest left the store ahead of its last committed index; no ingest is running (this process
        # holds the embedded store's reader lock), so the store itself is the truth until the next ingest.
        logging.getLogger(__name__).warning("an ingest was interrupted; answering from the store as it is (run "
                                            "`papers ingest` to finish it)")
        return build_local_index(store)
    path = index_dir(settings, store.version)
    if path.exists() and not load:
        return None
    if path.exists():
        try:
            index = _saved(path)
            index.row_of, index.rows_of_paper  # noqa: B018 - built here, not in the first question
            if index.word_stems is not None:
                prime_word_stems(index.word_stems)
            return index
        except Exception:  # a damaged index is rebuilt, never trusted
            shutil.rmtree(path, ignore_errors=True)
    index = build_local_index(store)
    if index is not None:
        if _publish(settings, path, index):
            _remember(path, index)
        prime_word_stems(index.word_table())
    return index


def probe_ids(index: LocalIndex) -> tuple[list[str], list[str]]:
    """Chunk and paper ids spread evenly over the local index's rows (kept in the order the store added them),
    the last ones included: what `Store.check_vectors` reads."""
    chunks, papers = index.chunk_ids, list(index.papers)
    pick = lambda ids: sorted({ids[len(ids) * i // 16] for i in range(16)} | {ids[-1]}) if ids else []  # noqa: E731
    return pick(chunks), pick(papers)


def committed_index(settings: Settings, store: Store) -> LocalIndex | None:
    """The saved index of the store's committed version, if it holds as many papers and chunks as the store
    (else None: a store left pending, no index, or one that disagrees with the store).

    Ingest diffs against its paper records instead of reading the catalog back from Chroma, which took 0.7-1.0
    s at 5k papers and 3.7 s at 15k here; they are the catalog as the version was committed.
    """
    if store.pending or not store.version:
        return None
    path = index_dir(settings, store.version)
    if not path.exists():
        return None
    try:
        index = _saved(path)
        matches = store.papers.count() == len(index.papers) and store.chunks.count() == index.size
    except Exception:  # a damaged index is rebuilt by the ingest, never trusted (a damaged store is named next)
        return None
    return index if matches else None


def update_local_index(settings: Settings, store: Store, previous_version: str, touched: set[str],
                       moved: set[str], version: str | None = None, previous: LocalIndex | None = None) -> None:
    """After an ingest that changed the store: derive the index of `version` (default: the store's) from the
    previous version's (`previous` when the caller has it loaded; see updated_local_index), or build it from
    scratch when there is none to start from."""
    version = version or store.version
    old = index_dir(settings, previous_version) if previous_version else None
    if previous is None and old is not None and old.exists():
        try:
            previous = _saved(old)
        except Exception:  # a damaged index is rebuilt, never trusted
            previous = None
    if previous is None:
        publish_full_index(settings, store, version)
        return
    index = updated_local_index(previous, store, touched, moved)
    if index is not None:
        path = index_dir(settings, version)
        published = _publish(settings, path, index, replace=True)
        _drop_spill(index.vectors)
        if published:
            _remember(path, index)


def publish_full_index(settings: Settings, store: Store, version: str) -> LocalIndex | None:
    """Build the index from everything in the store and save it as `version`'s (before that version is
    committed: readers switch to it only at the commit)."""
    index = build_local_index(store)
    if index is not None and _publish(settings, index_dir(settings, version), index, replace=True):
        _remember(index_dir(settings, version), index)
    return index


def remove_other_versions(settings: Settings, keep: set[str]) -> None:
    """After a commit: drop indexes of versions no longer current (and of ones a killed ingest never committed).

    The previous version is kept too, for readers that are loading it right now."""
    folder = settings.data_dir / "index"
    for old in folder.glob(f"{settings.collection}-*"):
        if old.name.removeprefix(f"{settings.collection}-") not in keep:
            shutil.rmtree(old, ignore_errors=True)
    for stale in folder.glob(".tmp-*"):  # left by a killed process (an hour is far longer than a build)
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > 3600:
                shutil.rmtree(stale, ignore_errors=True)


def _publish(settings: Settings, path: Path, index: LocalIndex, replace: bool = False) -> bool:
    """Save an index for its version (older ones are removed after the ingest's commit). An ingest `replace`s
    an index of its uncommitted version left by a killed ingest; readers keep one another's. True when the
    folder now holds this index's files."""
    # Write to a temporary folder and rename, so a killed process never leaves a half-written index.
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}")
    try:
        write_point("local index")
        tmp.mkdir(parents=True)
        _save(index, tmp)
        write_point("local index rename")
    except OSError as e:  # an unwritable folder costs a rebuild per process, not the answer
        logging.getLogger(__name__).warning("cannot save the local index under %s (%s); using it unsaved",
                                            path.parent, e)
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    if replace and path.exists():
        shutil.rmtree(path, ignore_errors=True)
    try:
        tmp.rename(path)
    except OSError:  # another process finished first: use theirs
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    return True
