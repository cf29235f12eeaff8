"""BM25 over chunk and paper texts: bm25s used directly, built, derived incrementally, saved and loaded.

bm25s rather than llama-index's BM25Retriever: that wrapper stores every node's full JSON as its corpus
(hundreds of MB at 100k chunks, read on every start), needs llama-index's 2 s import on the query path, and added
2.3 ms per query to bm25s's 0.4 ms here. Each saved index keeps its documents' raw term counts beside bm25s's
scores (`TF_FILE`), so a derived index tokenises only the touched papers' text: the rest of an update is
vectorised array work (see `updated_bm25`), because bm25s has no incremental add.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

from rag.text import stemmer

logging.getLogger("bm25s").setLevel(logging.ERROR)


TOKEN_PATTERN = r"(?u)\b\w\w+\b"


# Beside each bm25s index: how often each (document, term) of its score matrix occurs, in the order of bm25s's
# CSC arrays (one count per stored score). Indexes saved without it are derived by tokenising every row again.
TF_FILE = "tf.csc.index.npy"


def tokenize(text: str) -> list[str]:
    """The query's BM25 tokens (stemmed, English stopwords out): one tokenisation serves all three indexes.

    The same steps as `bm25s.tokenize` (lower-case, the token pattern, stopwords, stemming), done here for one
    short text: bm25s's corpus tokeniser builds a vocabulary and three progress bars per call, 0.3 ms of a
    question's time (tests/index/test_bm25.py checks the two give the same tokens)."""
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


def updated_bm25(previous: Any, reuse: Any, texts: list[str]) -> Any | None:
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


def top(bm25: Any, tokens: list[str], n: int, mask: Any = None) -> list[tuple[int, float]]:
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


def save_bm25(bm25: Any, folder: Path) -> None:
    import numpy as np

    bm25.save(str(folder), show_progress=False)
    if getattr(bm25, "term_counts", None) is not None:
        np.save(folder / TF_FILE, bm25.term_counts)


def load_bm25(folder: Path) -> Any:
    import bm25s
    import numpy as np

    bm25 = bm25s.BM25.load(str(folder), mmap=True)
    # Plain ndarray views of the mapped files (no copy): bm25s slices its score arrays a dozen times per query,
    # and each slice of an np.memmap builds a memmap object, 0.2 ms of a question at 38 papers.
    bm25.scores = {k: np.asarray(v) if isinstance(v, np.memmap) else v for k, v in bm25.scores.items()}
    bm25.term_counts = np.load(folder / TF_FILE, mmap_mode="r") if (folder / TF_FILE).exists() else None
    return bm25
