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
instead of rebuilding it. An ingest publishes the new version's index before it commits that version to the
store, so a reader finds a complete index for every committed version. A store left pending by a killed ingest
is not trusted: its next ingest rebuilds from the store, and an embedded-store reader (which the store lock
guarantees is alone) builds its index from the store in memory until then.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.settings import Settings
from rag.store import GET_BATCH, CatalogEntry, Store, StoreError, damaged, write_point

logging.getLogger("bm25s").setLevel(logging.ERROR)
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
TABLE_FILE = "chunks.json"
VECTORS_FILE = "vectors.npy"
PAPERS_FILE = "papers.json"
PAPER_VECTORS_FILE = "paper_vectors.npy"
PAPER_BM25_DIR = "paper_bm25"  # title + whole abstract, one document per paper
TITLE_BM25_DIR = "title_bm25"  # the heading alone (title, or label when untitled): the title as its own field


def index_dir(settings: Settings, version: str) -> Path:
    return settings.data_dir / "index" / f"{settings.collection}-{version}"


def _stemmer():  # noqa: ANN202 - PyStemmer object
    from rag.text import _stemmer as shared

    return shared()


def heading(title: str, label: str) -> str:
    """What a paper's chunks are prefixed with when embedded: the title when it has one, else its label."""
    return title.strip() or label


def tokenize(text: str) -> list[str]:
    """The query's BM25 tokens (stemmed, English stopwords out): one tokenisation serves all three indexes."""
    import bm25s

    return bm25s.tokenize(text, stopwords="en", stemmer=_stemmer(), token_pattern=TOKEN_PATTERN,
                          return_ids=False, show_progress=False)[0]


def bm25_index(texts: list[str]) -> Any:
    import bm25s

    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), token_pattern=TOKEN_PATTERN,
                            show_progress=False)
    bm25 = bm25s.BM25()
    bm25.index(tokens, show_progress=False)
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
    import numpy as np

    ids = [pid for pid in dict.fromkeys(chunk_paper_ids) if pid in papers]
    heads = [heading(papers[p].title, papers[p].label) for p in ids]
    row = {pid: i for i, pid in enumerate(ids)}
    sums = np.zeros((len(ids), vectors.shape[1]), dtype=np.float32)
    owners = np.fromiter((row.get(p, -1) for p in chunk_paper_ids), dtype=np.int64, count=len(chunk_paper_ids))
    keep = owners >= 0
    np.add.at(sums, owners[keep], np.asarray(vectors, dtype=np.float32)[keep])
    sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return PaperLevel(ids, bm25_index([f"{h}. {papers[p].text}" for h, p in zip(heads, ids)]),
                      bm25_index(heads), sums)


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
    row_of: dict[str, int] = field(default_factory=dict)
    rows_of_paper: dict[str, list[int]] = field(default_factory=dict)
    paper_level: PaperLevel | None = None  # built on first use when an index saved without it is loaded

    def __post_init__(self) -> None:
        self.row_of = {cid: i for i, cid in enumerate(self.chunk_ids)}
        for i, pid in enumerate(self.paper_ids):
            self.rows_of_paper.setdefault(pid, []).append(i)

    @property
    def papers_index(self) -> PaperLevel:
        if self.paper_level is None:
            self.paper_level = build_paper_level(self.papers, self.paper_ids, self.vectors)
        return self.paper_level

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


def _index(chunk_ids: list[str], paper_ids: list[str], texts: list[str], labels: list[str], vectors: Any,
           papers: dict[str, CatalogEntry]) -> LocalIndex:
    """Tokenise and BM25-index the chunks and papers (bm25s has no incremental add, so this always covers every
    row)."""
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
    chunk_ids = [previous.chunk_ids[i] for i in keep] + chunk_ids
    paper_ids = [previous.paper_ids[i] for i in keep] + paper_ids
    labels = [heading(papers[previous.paper_ids[i]].title, papers[previous.paper_ids[i]].label)
              for i in keep] + labels
    texts = [previous.texts[i] for i in keep] + texts
    if not texts:
        return None
    all_vectors = np.concatenate([np.asarray(previous.vectors[keep], dtype=np.float32), *vectors])
    return _index(chunk_ids, paper_ids, texts, labels, all_vectors, papers)


def _save(index: LocalIndex, folder: Path) -> None:
    import numpy as np

    index.bm25.save(str(folder), show_progress=False)
    (folder / TABLE_FILE).write_text(json.dumps({"chunk_ids": index.chunk_ids, "paper_ids": index.paper_ids,
                                                 "texts": index.texts}))
    np.save(folder / VECTORS_FILE, index.vectors)
    (folder / PAPERS_FILE).write_text(json.dumps([e.__dict__ for e in index.papers.values()]))
    level = index.papers_index
    level.bm25.save(str(folder / PAPER_BM25_DIR), show_progress=False)
    level.title_bm25.save(str(folder / TITLE_BM25_DIR), show_progress=False)
    np.save(folder / PAPER_VECTORS_FILE, level.vectors)


def _load(folder: Path) -> LocalIndex:
    import bm25s
    import numpy as np

    table = json.loads((folder / TABLE_FILE).read_text())
    papers = {d["paper_id"]: CatalogEntry(**d) for d in json.loads((folder / PAPERS_FILE).read_text())}
    level = None
    if (folder / PAPER_VECTORS_FILE).exists():  # indexes saved before paper-level evidence build it on use
        level = PaperLevel([pid for pid in dict.fromkeys(table["paper_ids"]) if pid in papers],
                           bm25s.BM25.load(str(folder / PAPER_BM25_DIR), mmap=True),
                           bm25s.BM25.load(str(folder / TITLE_BM25_DIR), mmap=True),
                           np.load(folder / PAPER_VECTORS_FILE, mmap_mode="r"))
    return LocalIndex(bm25s.BM25.load(str(folder), mmap=True), table["chunk_ids"], table["paper_ids"],
                      table["texts"], np.load(folder / VECTORS_FILE, mmap_mode="r"), papers, paper_level=level)


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
            return _load(path)
        except Exception:  # a damaged index is rebuilt, never trusted
            shutil.rmtree(path, ignore_errors=True)
    index = build_local_index(store)
    if index is not None:
        _publish(settings, path, index)
    return index


def update_local_index(settings: Settings, store: Store, previous_version: str, touched: set[str],
                       moved: set[str], version: str | None = None) -> None:
    """After an ingest that changed the store: derive the index of `version` (default: the store's) from the
    previous version's (see updated_local_index), or build it from scratch when there is none to start from."""
    version = version or store.version
    old = index_dir(settings, previous_version) if previous_version else None
    previous = None
    if old is not None and old.exists():
        try:
            previous = _load(old)
        except Exception:  # a damaged index is rebuilt, never trusted
            previous = None
    if previous is None:
        publish_full_index(settings, store, version)
        return
    index = updated_local_index(previous, store, touched, moved)
    if index is not None:
        _publish(settings, index_dir(settings, version), index, replace=True)


def publish_full_index(settings: Settings, store: Store, version: str) -> LocalIndex | None:
    """Build the index from everything in the store and save it as `version`'s (before that version is
    committed: readers switch to it only at the commit)."""
    index = build_local_index(store)
    if index is not None:
        _publish(settings, index_dir(settings, version), index, replace=True)
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


def _publish(settings: Settings, path: Path, index: LocalIndex, replace: bool = False) -> None:
    """Save an index for its version (older ones are removed after the ingest's commit). An ingest `replace`s
    an index of its uncommitted version left by a killed ingest; readers keep one another's."""
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
        return
    if replace and path.exists():
        shutil.rmtree(path, ignore_errors=True)
    try:
        tmp.rename(path)
    except OSError:  # another process finished first: use theirs
        shutil.rmtree(tmp, ignore_errors=True)
