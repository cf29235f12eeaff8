"""The in-memory snapshot of the store beside Chroma: BM25 over the chunks, chunk texts, vectors and paper
records (`LocalIndex`), built from the store or derived from the previous snapshot after an ingest.

It exists for speed: with it, answering a question needs exactly one Chroma call (the dense query). Reading
candidate texts, vectors and paper records from Chroma took two more round trips, as long as the query itself.
Vectors are memory-mapped when loaded, so a large index costs address space, not resident memory.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rag.index.bm25 import bm25_index, tokenize, top, updated_bm25
from rag.index.paper_level import PaperLevel, build_paper_level, heading, updated_paper_level
from rag.index.store import (
    GET_BATCH,
    CatalogEntry,
    Store,
    StoreError,
    damaged,
    documents_of,
    embeddings_of,
    metadatas_of,
    paper_in,
)
from rag.text import word_stem_table

if TYPE_CHECKING:
    import numpy as np
    from chromadb.api.types import GetResult, Include
    from numpy.typing import ArrayLike, NDArray

SPILL_FILE = "vectors.npy"  # the next version's vectors, written beside the versions before it is saved


def embedded_text(head: str, text: str) -> str:
    """What a chunk's vector was computed from: its paper's heading (see `heading`), then its text."""
    return f"{head}: {text}"


class ChunkRows(NamedTuple):
    """Chunks as the store holds them, column by column: the vectors in float32 blocks (one per write or read),
    in row order."""

    chunk_ids: list[str]
    paper_ids: list[str]
    texts: list[str]
    labels: list[str]
    vectors: list[NDArray[np.float32]]


@dataclass
class Written:
    """The chunks an ingest wrote to the store, as the store holds them (id, paper, document text, heading,
    vector), handed to the index update so it does not read them back from Chroma (which cost about as much as
    writing them: one more round trip per 500 papers, and every vector decoded again)."""

    chunk_ids: list[str] = field(default_factory=list)
    paper_ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    vectors: list[NDArray[np.float32]] = field(default_factory=list)  # float32 arrays, one per write

    def add(self, chunk_ids: list[str], paper_ids: list[str], texts: list[str], labels: list[str],
            vectors: ArrayLike) -> None:
        import numpy as np

        self.chunk_ids += chunk_ids
        self.paper_ids += paper_ids
        self.texts += texts
        self.labels += labels
        if len(chunk_ids):
            self.vectors.append(np.asarray(vectors, dtype=np.float32))

    def covers(self, papers: dict[str, CatalogEntry], touched: set[str]) -> bool:
        """Whether these are all the chunks the store now holds of the touched papers: each touched paper with a
        record has exactly its recorded number of chunks here (an interrupted ingest leaves some unwritten)."""
        counts: dict[str, int] = {}
        for pid in self.paper_ids:
            counts[pid] = counts.get(pid, 0) + 1
        if not set(counts) <= touched:
            return False
        return all(counts.get(pid, 0) == (papers[pid].n_chunks if pid in papers else 0) for pid in touched)

    def rows(self) -> ChunkRows:
        """In `read_chunks`'s form."""
        return ChunkRows(list(self.chunk_ids), list(self.paper_ids), list(self.texts), list(self.labels),
                         list(self.vectors))


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
    word_stems: dict[str, str] | None = None  # see versions.WORDS_FILE; built on first use when missing

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
        """Every word of the indexed texts, titles and labels -> its stems (see versions.WORDS_FILE)."""
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
        return top(self.bm25, tokens, n, mask)

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


def read_chunks(store: Store, paper_ids: list[str] | None = None) -> ChunkRows:
    """Chunk ids, paper ids, texts, labels and vectors of every chunk, or of the chunks of some papers."""
    try:
        return _read_chunks_unchecked(store, paper_ids)
    except StoreError:
        raise
    except Exception as e:  # e.g. a damaged HNSW file: vectors cannot be read back
        raise damaged("store's chunk vectors", e) from None


def _read_chunks_unchecked(store: Store, paper_ids: list[str] | None) -> ChunkRows:
    import numpy as np

    rows = ChunkRows([], [], [], [], [])
    include: Include = ["documents", "metadatas", "embeddings"]
    pages: Iterator[GetResult]
    if paper_ids is None:
        total = store.chunks.count()
        pages = (store.chunks.get(include=include, limit=GET_BATCH, offset=o) for o in range(0, total, GET_BATCH))
    else:
        ids = list(paper_ids)
        pages = (store.chunks.get(where=paper_in(ids[i:i + 500]), include=include)
                 for i in range(0, len(ids), 500))
    for got in pages:
        for cid, doc, meta in zip(got["ids"], documents_of(got), metadatas_of(got)):
            rows.chunk_ids.append(cid)
            rows.paper_ids.append(str(meta.get("paper_id", "")))
            rows.texts.append(doc or "")
            rows.labels.append(str(meta.get("heading") or meta.get("label", "")))
        if len(got["ids"]):
            rows.vectors.append(np.asarray(embeddings_of(got), dtype=np.float32))
    return rows


def _heads(papers: dict[str, CatalogEntry]) -> list[str]:
    """The titles and labels the answerer stems beside the chunk texts."""
    return [part for e in papers.values() for part in (e.title, e.label) if part]


def _index(chunk_ids: list[str], paper_ids: list[str], texts: list[str], labels: list[str], vectors: Any,
           papers: dict[str, CatalogEntry]) -> LocalIndex:
    """Tokenise and BM25-index every chunk and paper."""
    bm25 = bm25_index([embedded_text(lab, t) for lab, t in zip(labels, texts)])
    return LocalIndex(bm25, chunk_ids, paper_ids, texts, vectors, papers,
                      paper_level=build_paper_level(papers, paper_ids, vectors))


def build_local_index(store: Store, written: Written | None = None) -> LocalIndex | None:
    """Read every chunk (text, vector) and paper record from the store (or take the chunks from `written` when
    an ingest just wrote every one of them); tokenise and index the chunks."""
    import numpy as np

    if written is not None and written.chunk_ids and len(written.chunk_ids) == store.chunks.count():
        chunk_ids, paper_ids, texts, labels, vectors = written.rows()
    else:
        chunk_ids, paper_ids, texts, labels, vectors = read_chunks(store)
    if not texts:
        return None
    return _index(chunk_ids, paper_ids, texts, labels, np.concatenate(vectors), store.catalog())


def updated_local_index(previous: LocalIndex, store: Store, touched: set[str],
                        moved: set[str] | None = None, written: Written | None = None) -> LocalIndex | None:
    """The index after an ingest, from the one before it: rows and paper records of untouched papers are
    kept, and only the chunks and records of touched papers (added, re-embedded or removed) and the records
    of moved ones are read from the store (the touched papers' chunks come from `written` when the ingest hands
    over every chunk it wrote of them).

    Reading every chunk and record back is most of a full build (1.6 of 3.3 s at 10k chunks here) and grows
    with the store, while an ingest usually touches a few papers. Kept rows take their label from the paper
    record, which ingest writes from the same paper as the chunks' metadata.
    """
    import numpy as np

    reread = touched | (moved or set())
    papers = {pid: e for pid, e in previous.papers.items() if pid not in reread}
    papers.update(store.get_papers(sorted(reread)))
    keep = [i for i, pid in enumerate(previous.paper_ids) if pid not in touched and pid in papers]
    if written is not None and written.covers(papers, touched):
        chunk_ids, paper_ids, texts, labels, vectors = written.rows()
    else:
        chunk_ids, paper_ids, texts, labels, vectors = read_chunks(store, sorted(touched))
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
    bm25 = updated_bm25(previous.bm25, reuse, [embedded_text(labels[i], texts[i]) for i in np.flatnonzero(reuse < 0)])
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
    return Path(source).parent.parent / f".tmp-{uuid.uuid4().hex}" / SPILL_FILE


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


def drop_spill(vectors: Any) -> None:
    """Remove the `.tmp-` folder of vectors `_stack_rows` spilled (the published index links the file)."""
    import numpy as np

    source = getattr(vectors, "filename", None) if isinstance(vectors, np.memmap) else None
    if source and Path(source).parent.name.startswith(".tmp-"):
        shutil.rmtree(Path(source).parent, ignore_errors=True)


def _runs(array: Any, rows: Any) -> list[Any]:
    """Rows `rows` (ascending) of `array` as slices, one per run of consecutive rows: views, not copies."""
    return [array[a:b] for a, b in _row_ranges(rows)]


def probe_ids(index: LocalIndex) -> tuple[list[str], list[str]]:
    """Chunk and paper ids spread evenly over the local index's rows (kept in the order the store added them),
    the last ones included: what `Store.check_vectors` reads."""
    chunks, papers = index.chunk_ids, list(index.papers)
    pick = lambda ids: sorted({ids[len(ids) * i // 16] for i in range(16)} | {ids[-1]}) if ids else []  # noqa: E731
    return pick(chunks), pick(papers)
