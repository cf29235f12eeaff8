"""The BM25 side of hybrid retrieval: a bm25s index over the same chunks as Chroma, persisted on disk.

bm25s is used directly rather than through llama-index's BM25Retriever: that wrapper stores every node's full
JSON as its corpus (hundreds of MB at 100k chunks, loaded on every start), needs llama-index's 2 s import on
the query path, and added 2.3 ms per query to bm25s's 0.4 ms here. The index is keyed by the store's content
version: a process loads it (memory-mapped) instead of rebuilding, and an ingest that changes the store
invalidates it. Chunk ids and paper ids are kept beside it in one small JSON file.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.settings import Settings
from rag.store import GET_BATCH, Store

logging.getLogger("bm25s").setLevel(logging.ERROR)
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
IDS_FILE = "chunk_ids.json"


def index_dir(settings: Settings, version: str) -> Path:
    return settings.data_dir / "bm25" / f"{settings.collection}-{version}"


def _stemmer():  # noqa: ANN202 - PyStemmer object
    from rag.text import _stemmer as shared

    return shared()


def _embedded_text(label: str, text: str) -> str:
    """What the chunk's vector was computed from: its paper's label, then its text."""
    return f"{label}: {text}"


@dataclass
class KeywordIndex:
    """A loaded bm25s index and, per row, the chunk id and paper id it belongs to."""

    bm25: Any
    chunk_ids: list[str]
    paper_ids: list[str]

    @property
    def size(self) -> int:
        return len(self.chunk_ids)

    def search(self, query: str, n: int, paper_ids: list[str] | None = None) -> list[tuple[str, str, float]]:
        """Top (chunk id, paper id, BM25 score) for a query, optionally only over chunks of some papers."""
        import bm25s
        import numpy as np

        tokens = bm25s.tokenize(query, stopwords="en", stemmer=_stemmer(), token_pattern=TOKEN_PATTERN,
                                show_progress=False)
        if not tokens.vocab:
            return []
        mask = None
        if paper_ids:
            wanted = set(paper_ids)
            mask = np.fromiter((p in wanted for p in self.paper_ids), dtype=np.float32, count=self.size)
            if not mask.any():
                return []
        k = min(n, self.size)
        docs, scores = self.bm25.retrieve(tokens, k=k, show_progress=False, weight_mask=mask)
        return [(self.chunk_ids[int(d)], self.paper_ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0])
                if s > 0]

    def idf(self, words: set[str]) -> dict[str, float]:
        """BM25 inverse document frequency of stemmed words (words the index has never seen are rarest)."""
        n = self.size
        indptr = self.bm25.scores["indptr"]
        out = {}
        for w in words:
            i = self.bm25.vocab_dict.get(w)
            df = 0 if i is None else int(indptr[i + 1] - indptr[i])
            out[w] = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
        return out


def build_keyword_index(store: Store) -> KeywordIndex | None:
    """Tokenise (stopwords removed, Snowball-stemmed) every chunk with its label, and index it."""
    import bm25s

    chunk_ids: list[str] = []
    paper_ids: list[str] = []
    texts: list[str] = []
    total = store.chunks.count()
    for offset in range(0, total, GET_BATCH):
        got = store.chunks.get(include=["documents", "metadatas"], limit=GET_BATCH, offset=offset)
        for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
            chunk_ids.append(cid)
            paper_ids.append(str(meta.get("paper_id", "")))
            texts.append(_embedded_text(str(meta.get("label", "")), doc or ""))
    if not texts:
        return None
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), token_pattern=TOKEN_PATTERN,
                            show_progress=False)
    bm25 = bm25s.BM25()
    bm25.index(tokens, show_progress=False)
    return KeywordIndex(bm25, chunk_ids, paper_ids)


def ensure_keyword_index(settings: Settings, store: Store, load: bool = True) -> KeywordIndex | None:
    """The BM25 index for the store's current version: loaded from disk, or built and saved.

    With `load=False` (after an ingest) an index that is already on disk is left there unread.
    """
    path = index_dir(settings, store.version)
    if path.exists() and not load:
        return None
    if path.exists():
        try:
            import bm25s

            ids = json.loads((path / IDS_FILE).read_text())
            return KeywordIndex(bm25s.BM25.load(str(path), mmap=True), ids["chunk_ids"], ids["paper_ids"])
        except Exception:  # a damaged cache is rebuilt, never trusted
            shutil.rmtree(path, ignore_errors=True)
    index = build_keyword_index(store)
    if index is None:
        return None
    # Write to a temporary folder and rename, so a killed process never leaves a half-written index.
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}")
    try:
        tmp.mkdir(parents=True)
        index.bm25.save(str(tmp), show_progress=False)
        (tmp / IDS_FILE).write_text(json.dumps({"chunk_ids": index.chunk_ids, "paper_ids": index.paper_ids}))
    except OSError as e:  # an unwritable cache folder costs a rebuild per process, not the answer
        logging.getLogger(__name__).warning("cannot save the BM25 index under %s (%s); using it unsaved",
                                            path.parent, e)
        shutil.rmtree(tmp, ignore_errors=True)
        return index
    try:
        tmp.rename(path)
    except OSError:  # another process finished first: use theirs
        shutil.rmtree(tmp, ignore_errors=True)
    for old in path.parent.glob(f"{settings.collection}-*"):
        if old != path:
            shutil.rmtree(old, ignore_errors=True)
    for stale in path.parent.glob(".tmp-*"):  # left by a killed process (an hour is far longer than a build)
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)
    return index
