"""Saved local indexes, one folder per store content version: save, load, publish, and clean up.

Any ingest that changes the store makes a new index (derived from the previous one and the chunks the ingest
wrote of the papers it touched; rag/index/snapshot.py), and a process loads the saved one instead of
rebuilding it. An ingest publishes the new version's index before it commits that version to the store, so a
reader finds a complete index for every committed version. A store left pending by a killed ingest is not
trusted: its next ingest rebuilds from the store, and an embedded-store reader (which the store lock guarantees
is alone) builds its index from the store in memory until then.

Each version also saves the stems of every word of its texts (`WORDS_FILE`), which a reader loads so that
scoring a question's sentences never stems a corpus word, and a process keeps the last index it saved or read
(`_saved`), so its next ingest or reader starts from it while that folder's files are unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from rag.index.bm25 import load_bm25, save_bm25
from rag.index.paper_level import PaperLevel
from rag.index.snapshot import LocalIndex, Written, build_local_index, drop_spill, updated_local_index
from rag.index.store import CatalogEntry, Store, write_point
from rag.settings import Settings
from rag.text import prime_word_stems

TABLE_FILE = "chunks.json"


VECTORS_FILE = "vectors.npy"


PAPERS_FILE = "papers.json"


PAPER_VECTORS_FILE = "paper_vectors.npy"


PAPER_BM25_DIR = "paper_bm25"  # title + whole abstract, one document per paper


TITLE_BM25_DIR = "title_bm25"  # the heading alone (title, or label when untitled): the title as its own field


# Every word of the chunk texts, titles and labels -> its stems (`rag.text.word_stem_table`): questions read
# them instead of stemming. Indexes saved without it answer the same, stemming words as they meet them.
WORDS_FILE = "word_stems.json"


def index_dir(settings: Settings, version: str) -> Path:
    return settings.data_dir / "index" / f"{settings.collection}-{version}"


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

    save_bm25(index.bm25, folder)
    (folder / TABLE_FILE).write_bytes(_json_bytes({"chunk_ids": index.chunk_ids, "paper_ids": index.paper_ids,
                                                   "texts": index.texts}))
    _save_vectors(index.vectors, folder / VECTORS_FILE)
    (folder / PAPERS_FILE).write_bytes(_json_bytes([e.__dict__ for e in index.papers.values()]))
    level = index.papers_index
    save_bm25(level.bm25, folder / PAPER_BM25_DIR)
    save_bm25(level.title_bm25, folder / TITLE_BM25_DIR)
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
        paper_vectors = folder / PAPER_VECTORS_FILE
        if level is not None and getattr(level.vectors, "filename", None) != os.path.abspath(paper_vectors):
            level.vectors = np.load(paper_vectors, mmap_mode="r")
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
                           load_bm25(folder / PAPER_BM25_DIR), load_bm25(folder / TITLE_BM25_DIR),
                           np.load(folder / PAPER_VECTORS_FILE, mmap_mode="r"))
    words = _json_load(folder / WORDS_FILE) if (folder / WORDS_FILE).exists() else None
    return LocalIndex(load_bm25(folder), table["chunk_ids"], table["paper_ids"], table["texts"],
                      np.load(folder / VECTORS_FILE, mmap_mode="r"), papers, paper_level=level, word_stems=words)


DIGEST_V2 = "v2:"  # digests of every file of the folder; older stores recorded TABLE_FILE and PAPERS_FILE only


def index_digest(folder: Path) -> str:
    """A digest of everything a local index serves: each file of its folder (chunk texts, paper records,
    vectors, BM25 tables), with its path (sha256, read in blocks). Vectors count: a random vector in place of a
    paper's answers other questions with it, though every text is intact."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        _hash_file(h, path)
    return DIGEST_V2 + h.hexdigest()[:32]


def _texts_digest(folder: Path) -> str:
    """The digest stores recorded before DIGEST_V2: the chunk texts and paper records alone."""
    h = hashlib.sha256()
    for name in (TABLE_FILE, PAPERS_FILE):
        _hash_file(h, folder / name)
    return h.hexdigest()[:32]


def _hash_file(h: Any, path: Path) -> None:
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)


def verified(folder: Path, store: Store) -> bool:
    """The saved index is the one the store's last ingest published (no file of it edited); a store that
    recorded no digest (written before digests were kept) trusts it."""
    recorded = store.index_digest
    if not recorded:
        return True
    try:
        return (index_digest(folder) if recorded.startswith(DIGEST_V2) else _texts_digest(folder)) == recorded
    except OSError:
        return False


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
    if path.exists() and not verified(path, store):
        # edited or damaged since the ingest published it: rebuilt from the store, never served as it is
        logging.getLogger(__name__).warning("the local index %s does not match the store; rebuilding it", path)
        shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        try:
            saved = _saved(path)
            saved.row_of, saved.rows_of_paper  # noqa: B018 - built here, not in the first question
            if saved.word_stems is not None:
                prime_word_stems(saved.word_stems)
            return saved
        except Exception:  # a damaged index is rebuilt, never trusted
            shutil.rmtree(path, ignore_errors=True)
    index = build_local_index(store)
    if index is not None:
        if _publish(settings, path, index):
            _remember(path, index)
        prime_word_stems(index.word_table())
    return index


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
                       moved: set[str], version: str | None = None, previous: LocalIndex | None = None,
                       written: Written | None = None) -> None:
    """After an ingest that changed the store: derive the index of `version` (default: the store's) from the
    previous version's (`previous` when the caller has it loaded; see updated_local_index), or build it from
    scratch when there is none to start from; `written`: the chunks the ingest wrote, so they are not read back."""
    version = version or store.version
    old = index_dir(settings, previous_version) if previous_version else None
    if previous is None and old is not None and old.exists():
        try:
            previous = _saved(old)
        except Exception:  # a damaged index is rebuilt, never trusted
            previous = None
    if previous is None:
        publish_full_index(settings, store, version, written)
        return
    index = updated_local_index(previous, store, touched, moved, written)
    if index is not None:
        path = index_dir(settings, version)
        published = _publish(settings, path, index, replace=True)
        drop_spill(index.vectors)
        if published:
            _remember(path, index)


def publish_full_index(settings: Settings, store: Store, version: str, written: Written | None = None
                       ) -> LocalIndex | None:
    """Build the index from everything in the store (from `written` when an ingest just wrote all of it) and
    save it as `version`'s (before that version is committed: readers switch to it only at the commit)."""
    index = build_local_index(store, written)
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
