"""The Chroma store: an embedded PersistentClient under data_dir, or a `chroma run` server when configured.

Two collections per index:
- `<name>_chunks`: llama-index nodes (sentence-whole chunks) with their vectors, read by ChromaVectorStore;
- `<name>_papers`: the catalog, one record per paper (abstract, label, source, content hash, chunk count).
  Ingestion diffs against the catalog instead of re-reading every chunk, and writes a paper's catalog
  record only after its chunks, so an interrupted ingest is finished by the next one.

The chunk collection's metadata records the embedding model and dimension: an index built with another
model is refused with a clear message rather than queried with incompatible vectors.

It also holds the content version (which keys the local index) and a `pending` marker: an ingest sets
`pending` before its first write and replaces both in one metadata write after its local index is published
(`begin_update` / `commit`). A store found with `pending` set was left by an interrupted ingest; the next
ingest then checks every paper's chunks and rebuilds the local index from the store.

The embedded store is for one process at a time while it is written: readers hold a shared lock on
`data_dir/.store.lock`, an ingest an exclusive one, so an ingest never runs under a serving UI (or the other
way round) and is refused with a message instead. Ingests on one data dir also exclude each other
(`.ingest.lock`), with a Chroma server too.

Damaged vector index files can crash Chroma's native code, not just make it raise: an embedded store is opened
only after a child process has read them (rag/index/probe.py), once per change of the files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rag.errors import UnavailableError
from rag.index.embed import runtime_family
from rag.index.probe import vector_damage
from rag.settings import Settings

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.collection_configuration import CreateCollectionConfiguration
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import (
        Embeddings,
        GetResult,
        Include,
        LiteralValue,
        Metadata,
        PyEmbedding,
        PyEmbeddings,
        Vector,
        Where,
    )
    from chromadb.base_types import InclusionExclusionOperator
    from llama_index.vector_stores.chroma import ChromaVectorStore

SCHEMA = 1
# How often a serving process re-reads the store's version (an ingest elsewhere may have published a new one).
VERSION_CHECK_S = 2.0
GET_BATCH = 5000
WRITE_BATCH = 2000  # rows per Chroma write; its limit (5,461 on SQLite) refuses larger ones outright
# The vector index of new collections. Tests lower Chroma's sync_threshold and batch_size here, so that a store
# of a few papers keeps its index in files as a large one does.
HNSW_CONFIGURATION: CreateCollectionConfiguration = {"hnsw": {"space": "cosine"}}


class StoreError(UnavailableError):
    """The store is missing, unreadable, unreachable or built for another model; the message says what to do."""


DOCTOR_HINT = "run `papers doctor` to see what is wrong (`papers doctor --repair` fixes what it can)"


def collection_names(settings: Settings) -> list[str]:
    return [f"{settings.collection}_chunks", f"{settings.collection}_papers"]


def vector_files_damage(settings: Settings) -> str | None:
    """What is wrong with the embedded store's vector index files, found by a child process (rag/index/probe.py)
    when they changed since the last look; None when they read fine (never checked here with a server)."""
    if settings.chroma_host:
        return None
    return vector_damage(settings.chroma_dir, settings.data_dir, collection_names(settings))


def local_vectors_path(settings: Settings, version: str) -> Path:
    """Where the local index of a version keeps its vectors: `index_dir(...) / VECTORS_FILE` of
    rag/index/versions.py, which imports this module (tests/index/test_damaged_vectors.py checks they agree)."""
    return settings.data_dir / "index" / f"{settings.collection}-{version}" / "vectors.npy"


def vector_files_fix(settings: Settings, version: str) -> str:
    """The way out of damaged vector index files: rebuilt from the vectors the local index keeps, when it has
    them for the store's version, else re-embedded."""
    if version and local_vectors_path(settings, version).exists():
        return ("`papers doctor --repair` (sets the damaged files aside and rebuilds the vector index from the "
                "local index's vectors, no re-embedding)")
    return "`papers ingest --rebuild` (re-embeds every paper; the damaged store is moved aside)"


def damaged(what: str, error: BaseException) -> StoreError:
    """A Chroma failure while reading, as a StoreError that names the way out instead of Chroma's internals."""
    first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
    return StoreError(f"the {what} cannot be read ({first}): {DOCTOR_HINT}")


# --- test hook: a real SIGKILL at a chosen write ---------------------------------------------------------
# Not a user setting: the crash-consistency test (tests/test_consistency.py) sets this variable so that a real
# `papers ingest` process kills itself (SIGKILL, no clean-up) just before its Nth write to the store or to the
# local index, which makes kill points exact and repeatable instead of timed.
_KILL_AT_ENV = "PAPERS_TEST_KILL_AT_WRITE"
_writes = 0


def write_point(what: str) -> None:
    """Count one write; with the test hook set, the process dies here at the chosen one."""
    global _writes
    target = os.environ.get(_KILL_AT_ENV)
    if not target:
        return
    _writes += 1
    if _writes == int(target):
        os.kill(os.getpid(), signal.SIGKILL)


class _CountedWrites:
    """A Chroma collection whose mutating calls pass through `write_point` (only while the test hook is set)."""

    _MUTATING = frozenset({"add", "upsert", "update", "delete", "modify"})

    def __init__(self, collection: Collection) -> None:
        self._collection = collection

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._collection, name)
        if name in self._MUTATING:
            def counted(*args: Any, **kwargs: Any) -> Any:
                write_point(f"{self._collection.name}.{name}")
                return attr(*args, **kwargs)
            return counted
        return attr


def _counted(collection: Collection) -> Collection:
    # the proxy forwards every attribute to the collection it wraps: typed as that collection
    return cast("Collection", _CountedWrites(collection)) if os.environ.get(_KILL_AT_ENV) else collection


# --- reading Chroma's results ----------------------------------------------------------------------------

def paper_in(paper_ids: Sequence[str]) -> Where:
    """The filter selecting the chunks of some papers."""
    values: list[LiteralValue] = list(paper_ids)
    condition: dict[InclusionExclusionOperator, list[LiteralValue]] = {"$in": values}
    return {"paper_id": condition}


def metadatas_of(got: GetResult) -> list[Metadata]:
    """The metadatas of a get that asked for them (Chroma leaves a field out, None, when not asked)."""
    found = got["metadatas"]
    if found is None:
        raise StoreError(f"the store answered without the metadata asked for: {DOCTOR_HINT}")
    return found


def documents_of(got: GetResult) -> list[str]:
    """The documents of a get that asked for them."""
    found = got["documents"]
    if found is None:
        raise StoreError(f"the store answered without the documents asked for: {DOCTOR_HINT}")
    return found


def embeddings_of(got: GetResult) -> Embeddings | PyEmbeddings | Vector:
    """The vectors of a get that asked for them (a numpy array or lists, as the client returns them)."""
    found = got["embeddings"]
    if found is None:
        raise StoreError(f"the store answered without the vectors asked for: {DOCTOR_HINT}")
    return found


def as_embeddings(vectors: Iterable[Sequence[float]]) -> list[PyEmbedding]:
    """Vectors in the form Chroma's writes and queries take (its lists are typed invariant)."""
    return list(vectors)


# --- process locks ---------------------------------------------------------------------------------------

_store_locks: dict[str, tuple[int, str]] = {}  # data dir -> (fd, "sh" | "ex"), one per process


def _lock_file(settings: Settings, name: str) -> int:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return os.open(settings.data_dir / name, os.O_RDWR | os.O_CREAT, 0o644)


def hold_reader_lock(settings: Settings) -> None:
    """A process reading the embedded store holds a shared lock for its lifetime (no-op with a server)."""
    if settings.chroma_host:
        return
    key = str(settings.data_dir.resolve())
    if key in _store_locks:
        return
    fd = _lock_file(settings, ".store.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreError(f"`papers ingest` is writing the embedded store at {settings.chroma_dir} right now; try "
                         "again when it has finished, or run a `chroma run` server (CHROMA_HOST) to serve while "
                         "ingesting") from None
    _store_locks[key] = (fd, "sh")


def release_reader_lock(settings: Settings) -> None:
    """Stop holding the embedded store open (a script or test done reading, before another process ingests)."""
    held = _store_locks.pop(str(settings.data_dir.resolve()), None)
    if held is not None:
        os.close(held[0])


def _holder(settings: Settings) -> str:
    try:
        pid = (settings.data_dir / ".ingest.lock").read_text().strip()
    except OSError:
        pid = ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextlib.contextmanager
def writer_lock(settings: Settings) -> Iterator[None]:
    """Held by an ingest: excludes other ingests on this data dir and, with the embedded store, its readers."""
    fd = _lock_file(settings, ".ingest.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreError(f"another `papers ingest`{_holder(settings)} is writing {settings.data_dir}; wait for it to "
                         "finish") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    key = str(settings.data_dir.resolve())
    store_fd = None
    try:
        if not settings.chroma_host:
            held = _store_locks.get(key)
            store_fd = held[0] if held else _lock_file(settings, ".store.lock")
            try:
                fcntl.flock(store_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if held:  # the conversion may have dropped our shared lock: take it back
                    with contextlib.suppress(OSError):
                        fcntl.flock(store_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                else:
                    os.close(store_fd)
                raise StoreError(
                    f"the embedded store at {settings.chroma_dir} is open in another papers process (a running "
                    "`papers ui`, `chat` or `ask`); stop it before ingesting, or run a `chroma run` server "
                    "(CHROMA_HOST) so the UI can keep serving and switch to the new index when ingest ends"
                ) from None
            _store_locks[key] = (store_fd, "ex")
        yield
    finally:
        if store_fd is not None and _store_locks.get(key, (None,))[0] == store_fd:
            fcntl.flock(store_fd, fcntl.LOCK_SH)  # this process may go on reading, like any reader
            _store_locks[key] = (store_fd, "sh")
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def ingest_running(settings: Settings) -> bool:
    """Whether an ingest on this machine holds the data dir's ingest lock now (a killed one holds nothing)."""
    path = settings.data_dir / ".ingest.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@dataclass
class CatalogEntry:
    """What the catalog remembers about one indexed paper."""

    paper_id: str
    content_hash: str
    label: str
    source: str
    source_key: str
    position: int
    n_chunks: int
    chunking: str
    title: str = ""
    url: str = ""
    authors: str = ""
    venue: str = ""
    year: str = ""
    text: str = ""
    doi: str = ""
    arxiv: str = ""
    key: str = ""         # the input's citation key (BibTeX key, CSL id, RIS ID)
    kind: str = ""        # BibTeX entry type (article, inproceedings, misc, ...)
    collection: str = ""  # name of the paper list the paper came from
    layout: str = ""      # PDF full texts: JSON [[offset, page, section], ...] into `text`
    volume: str = ""      # bibliographic fields the input had (rag/corpus/records.py Paper), for the exports
    number: str = ""
    pages: str = ""
    month: str = ""
    issn: str = ""
    publisher: str = ""


def _client(settings: Settings) -> ClientAPI:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_host:
        try:
            return chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings)
        except Exception as e:
            raise StoreError(f"cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} "
                             f"(CHROMA_HOST/CHROMA_PORT): {e}") from None
    try:
        return chromadb.PersistentClient(path=str(settings.chroma_dir), settings=chroma_settings)
    except Exception as e:
        raise StoreError(f"the store at {settings.chroma_dir} is unreadable ({type(e).__name__}: {e}); "
                         "run `papers ingest --rebuild` to rebuild it (the damaged copy is kept aside)") from None


class Store:
    """Both collections of one index, opened for reading or writing."""

    def __init__(self, settings: Settings, client: ClientAPI, chunks: Collection, papers: Collection) -> None:
        self.settings = settings
        self.client = client
        self.chunks = _counted(chunks)
        self.papers = _counted(papers)
        self._vector_store: ChromaVectorStore | None = None

    # --- opening ------------------------------------------------------------------------------------

    @classmethod
    def open(cls, settings: Settings, create: bool = False, dim: int | None = None, probe: bool = True) -> Store:
        """Open the index; with `create`, make it if missing (`dim` = embedding dimension).

        With `probe` (all but `papers doctor`, which reports it), damaged vector index files are a StoreError
        here, before this process reads them (see `vector_files_damage`)."""
        if not create and not settings.chroma_host and not settings.chroma_dir.exists():
            raise StoreError(f"no index at {settings.chroma_dir}: run `papers ingest` first")
        if not create:
            hold_reader_lock(settings)
        client = _client(settings)
        names = collection_names(settings)
        try:
            if create:
                meta = {"embed_model": settings.embed_model, "embed_dim": int(dim or 0), "schema": SCHEMA,
                        "version": uuid.uuid4().hex}
                chunks = client.get_or_create_collection(names[0], metadata=meta, configuration=HNSW_CONFIGURATION)
                papers = client.get_or_create_collection(names[1], metadata={"schema": SCHEMA},
                                                         configuration=HNSW_CONFIGURATION)
            else:
                chunks = client.get_collection(names[0])
                papers = client.get_collection(names[1])
        except StoreError:
            raise
        except Exception as e:
            if not create and "does not exist" in str(e).lower():
                raise StoreError(f"no index named '{settings.collection}' in the store: run `papers ingest` first"
                                 ) from None
            where = (f"{settings.chroma_host}:{settings.chroma_port}" if settings.chroma_host
                     else str(settings.chroma_dir))
            raise StoreError(f"the store at {where} is unreadable ({type(e).__name__}: {e}); "
                             "run `papers ingest --rebuild` to rebuild it") from None
        store = cls(settings, client, chunks, papers)
        if probe:
            store.probe_vector_files()
        store.check_model(dim)
        return store

    def probe_vector_files(self) -> None:
        """Raise StoreError when the vector index files would crash this process: a segfault in Chroma's native
        code cannot be caught, so a child process reads them first (only after they changed)."""
        damage = vector_files_damage(self.settings)
        if damage:
            raise StoreError(f"the store's vector index files are damaged ({damage}): run "
                             f"{vector_files_fix(self.settings, self.version)}")

    def check_model(self, dim: int | None = None) -> None:
        """Refuse an index built with another embedding model or dimension."""
        meta = self.chunks.metadata or {}
        built_with = meta.get("embed_model")
        built_dim = int(meta.get("embed_dim") or 0)
        if meta.get("schema", SCHEMA) != SCHEMA:
            raise StoreError(f"the index was built by an incompatible version (schema {meta.get('schema')}): "
                             "run `papers ingest --rebuild`")
        if built_with and built_with != self.settings.embed_model:
            raise StoreError(f"the index was built with embedding model '{built_with}' but PAPERS_EMBED_MODEL is "
                             f"'{self.settings.embed_model}': run `papers ingest --rebuild` or set it back")
        if dim and built_dim and dim != built_dim:
            raise StoreError(f"the index holds {built_dim}-dimensional vectors but the embedding model makes "
                             f"{dim}-dimensional ones: run `papers ingest --rebuild`")

    @property
    def embed_runtime(self) -> str | None:
        """Which runtime and weights made the stored vectors ('int8:<hash>', 'fp32:<hash>'); None for a store
        made before this was recorded (those were all built with torch, fp32)."""
        value = (self.chunks.metadata or {}).get("embed_runtime")
        return str(value) if value else None

    @property
    def embed_engines(self) -> list[str]:
        """The PAPERS_EMBED_RUNTIME values that wrote the stored vectors (torch, onnx and torch-bf16 share the
        fp32 record); empty for a store made before this was recorded."""
        value = (self.chunks.metadata or {}).get("embed_engines")
        return str(value).split(",") if value else []

    def claim_runtime(self, runtime: str, engine: str = "") -> None:
        """Record the runtime about to add vectors, or refuse it when the store holds vectors made another way:
        questions are embedded the way the store's chunks were, so one store never mixes two. `engine` (what
        really computes the vectors) is recorded beside it, for `papers ingest --json` and for debugging."""
        recorded = self.embed_runtime
        engines = self.embed_engines if recorded == runtime else []
        if recorded == runtime and (not engine or engine in engines):
            return
        same_family = runtime_family(recorded) == runtime_family(runtime)
        if recorded != runtime and self.chunks.count() and not (recorded is None and same_family):
            keep = "onnx-int8" if runtime_family(recorded) == "int8" else "auto (or torch-bf16, onnx, torch)"
            raise StoreError(
                f"the index holds vectors made by {_describe(recorded)} but this ingest embeds with "
                f"{_describe(runtime)}; chunks and questions must be embedded the same way: run "
                f"`papers ingest --rebuild` to re-embed every paper with it, or set PAPERS_EMBED_RUNTIME={keep} "
                "to keep this index")
        meta = dict(self.chunks.metadata or {})
        meta["embed_runtime"] = runtime
        if engine:
            meta["embed_engines"] = ",".join(sorted({*engines, engine}))
        self.chunks.modify(metadata=meta)

    @staticmethod
    def destroy(settings: Settings) -> str | None:
        """Remove the index for a rebuild. A local store directory is moved aside, never deleted outright; the
        collections of a shared `chroma run` server are never deleted (every process serving them would lose
        its papers, and no copy could be kept): a rebuild there goes to a new collection name."""
        if settings.chroma_host:
            raise StoreError(f"`--rebuild` is refused on the shared Chroma server at {settings.chroma_host}: it "
                             f"would delete the collections '{settings.collection}_*' that every process using the "
                             "server reads. Ingest into a new collection instead (PAPERS_COLLECTION=<new name> papers "
                             "ingest), then point the servers at it.")
        if settings.chroma_dir.exists():
            aside = settings.chroma_dir.with_name(f"chroma.old-{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.move(str(settings.chroma_dir), str(aside))
            # chromadb keeps one client per path in the process; forget the one bound to the moved store
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
            return str(aside)
        return None

    # --- state --------------------------------------------------------------------------------------

    @property
    def version(self) -> str:
        """Changes whenever the indexed content changes; keys the BM25 cache."""
        return str((self.chunks.metadata or {}).get("version", ""))

    def bump_version(self) -> str:
        return self.commit(uuid.uuid4().hex)

    def removed(self) -> dict[str, dict[str, str]]:
        """The papers `papers remove` took out (id -> source_key, label, title), kept in the store itself: every
        data dir using a shared server sees the same removals."""
        raw = (self.papers.metadata or {}).get("removed") or "{}"
        try:
            data = json.loads(raw)
        except ValueError:
            raise StoreError("the store's list of removed papers is damaged: `papers remove --undo` cannot read "
                             "it; run `papers doctor`") from None
        return data if isinstance(data, dict) else {}

    def set_removed(self, removed: dict[str, dict[str, str]]) -> None:
        meta = dict(self.papers.metadata or {})
        meta["removed"] = json.dumps(removed, ensure_ascii=False, sort_keys=True)
        self.papers.modify(metadata=meta)

    @property
    def pending(self) -> str:
        """The version an unfinished ingest was writing ('' when the last ingest finished)."""
        return str((self.chunks.metadata or {}).get("pending", ""))

    def begin_update(self) -> str:
        """Mark the store as being changed, before the first write; returns the version being written."""
        meta = dict(self.chunks.metadata or {})
        meta["pending"] = uuid.uuid4().hex
        self.chunks.modify(metadata=meta)
        return meta["pending"]

    def commit(self, version: str, index_digest: str = "") -> str:
        """The last write of an ingest: the new content version, the digest of its local index's texts (what
        a reader checks before serving them, rag/index/versions.py) and the pending marker cleared, at once."""
        meta = dict(self.chunks.metadata or {})
        meta["version"] = version
        meta["pending"] = ""
        meta["index_digest"] = index_digest
        if not meta.get("embed_dim"):
            meta["embed_dim"] = self._observed_dim()
        self.chunks.modify(metadata=meta)
        return version

    @property
    def index_digest(self) -> str:
        """The digest the last ingest recorded for its local index ("" for stores written before it was kept)."""
        return str((self.chunks.metadata or {}).get("index_digest", ""))

    def refresh(self) -> None:
        """Re-read the collections' metadata (another process may have committed a new version)."""
        self.chunks = _counted(self.client.get_collection(self.chunks.name))

    def check_vectors(self, full: bool = False, sample: tuple[list[str], list[str]] | None = None) -> bool:
        """Raise StoreError (naming `papers doctor`) when the vector index cannot answer.

        A quick probe reads 17 vectors spread evenly over each collection (a damaged file usually loses a
        whole range of them) and runs one query; `full` reads every vector. A damaged HNSW file (e.g. a
        truncated data_level0.bin) then fails here, not in the middle of an answer.

        `sample` names the chunk and paper ids to read instead (spread over the collections in the order they
        were added, e.g. from the local index): a read by id costs ~2 ms, while each read by offset makes
        Chroma scan the collection (0.04 s at 43k chunks). Returns False when some sampled id is not in the
        store (the probe is then made by offset).
        """
        found = True
        for what, col, ids in (("vector index of the chunks", self.chunks, sample[0] if sample else None),
                               ("vector index of the paper catalog", self.papers, sample[1] if sample else None)):
            try:
                total = col.count()
                if not total:
                    found = found and not ids
                    continue
                pages: Iterable[GetResult] | None = None
                if ids and not full:
                    got = col.get(ids=ids, include=["embeddings"])
                    if len(got["ids"]) == len(ids):
                        pages = [got]
                    else:
                        found = False
                if pages is None:
                    offsets = range(0, total, GET_BATCH) if full else sorted({total * i // 16 for i in range(16)}
                                                                              | {total - 1})
                    pages = (col.get(include=["embeddings"], limit=GET_BATCH if full else 1, offset=offset)
                             for offset in offsets)
                dim = 0
                for got in pages:
                    embs = got["embeddings"]
                    if embs is None or len(embs) != len(got["ids"]):
                        raise RuntimeError("vectors missing")
                    dim = len(embs[0])
                col.query(query_embeddings=as_embeddings([[1.0] + [0.0] * (dim - 1)]), n_results=min(total, 3),
                          include=[])
            except Exception as e:
                raise damaged(what, e) from None
        return found

    def _observed_dim(self) -> int:
        got = self.chunks.get(limit=1, include=["embeddings"])
        embs = got.get("embeddings")
        return len(embs[0]) if embs is not None and len(embs) else 0

    @property
    def vector_store(self) -> ChromaVectorStore:
        if self._vector_store is None:
            from llama_index.vector_stores.chroma import ChromaVectorStore

            self._vector_store = ChromaVectorStore(chroma_collection=self.chunks)
        return self._vector_store

    def catalog(self, with_text: bool = True) -> dict[str, CatalogEntry]:
        """Every indexed paper, read in pages so a large index never needs one huge response.

        Ingest diffs on metadata alone (`with_text=False`), which reads a fraction of the bytes.
        """
        out: dict[str, CatalogEntry] = {}
        total = self.papers.count()
        include: Include = ["metadatas", "documents"] if with_text else ["metadatas"]
        for offset in range(0, total, GET_BATCH):
            got = self.papers.get(include=include, limit=GET_BATCH, offset=offset)
            docs: Sequence[str | None] = documents_of(got) if with_text else [None] * len(got["ids"])
            for pid, meta, doc in zip(got["ids"], metadatas_of(got), docs):
                out[pid] = _entry(pid, meta, doc)
        return out

    def chunk_paper_ids(self) -> dict[str, int]:
        """Chunks per paper id as stored (used only to repair a store whose counts disagree)."""
        return {pid: n for pid, (n, _) in self.chunk_summary().items()}

    def chunk_summary(self) -> dict[str, tuple[int, set[str]]]:
        """Per paper id: how many chunks are stored, and the content hashes they were cut from.

        Chunks written before chunks carried a hash have none (''); they are judged by their count alone.
        """
        out: dict[str, tuple[int, set[str]]] = {}
        total = self.chunks.count()
        for offset in range(0, total, GET_BATCH):
            got = self.chunks.get(include=["metadatas"], limit=GET_BATCH, offset=offset)
            for meta in metadatas_of(got):
                pid = str(meta.get("paper_id", ""))
                n, hashes = out.get(pid, (0, set()))
                hashes.add(str(meta.get("content_hash", "")))
                out[pid] = (n + 1, hashes)
        return out

    def delete_papers(self, paper_ids: list[str]) -> None:
        """Remove papers: chunks first, catalog last, so a crash in between is repaired by the next ingest."""
        for i in range(0, len(paper_ids), 500):
            batch = paper_ids[i:i + 500]
            self.chunks.delete(where=paper_in(batch))
            self.papers.delete(ids=batch)

    def delete_chunks_of(self, paper_ids: list[str]) -> None:
        for i in range(0, len(paper_ids), 500):
            self.chunks.delete(where=paper_in(paper_ids[i:i + 500]))

    def write_catalog(self, entries: list[CatalogEntry], embeddings: Sequence[Sequence[float]]) -> None:
        for i in range(0, len(entries), WRITE_BATCH):  # Chroma refuses a write over its max batch size
            batch = entries[i:i + WRITE_BATCH]
            self.papers.upsert(
                ids=[e.paper_id for e in batch],
                documents=[e.text for e in batch],
                metadatas=[_meta(e) for e in batch],
                embeddings=as_embeddings(embeddings[i:i + WRITE_BATCH]),
            )

    def update_chunk_metadata(self, ids: list[str], metadatas: Sequence[Metadata]) -> None:
        for i in range(0, len(ids), WRITE_BATCH):
            self.chunks.update(ids=ids[i:i + WRITE_BATCH], metadatas=list(metadatas[i:i + WRITE_BATCH]))

    def get_papers(self, paper_ids: list[str]) -> dict[str, CatalogEntry]:
        """Records of some papers (those not in the index are left out)."""
        out: dict[str, CatalogEntry] = {}
        ids = list(paper_ids)
        for i in range(0, len(ids), GET_BATCH):
            got = self.papers.get(ids=ids[i:i + GET_BATCH], include=["metadatas", "documents"])
            out.update((pid, _entry(pid, meta, doc))
                       for pid, meta, doc in zip(got["ids"], metadatas_of(got), documents_of(got)))
        return out


_META_FIELDS = ("content_hash", "label", "source", "source_key", "position", "n_chunks", "chunking",
                "title", "url", "authors", "venue", "year")
# Added later: records written before them read back as "" (no DOI, no layout, ...).
_OPTIONAL_FIELDS = ("doi", "arxiv", "key", "kind", "collection", "layout",
                    "volume", "number", "pages", "month", "issn", "publisher")


def _meta(e: CatalogEntry) -> dict[str, Any]:
    # every field is written, empty ones too: Chroma merges metadata on upsert, so a field left out would keep
    # a value the input no longer has
    return {f: getattr(e, f) for f in _META_FIELDS + _OPTIONAL_FIELDS} | {"paper_id": e.paper_id}


def _int(value: object) -> int:
    """A number kept in metadata (none, or "", reads as 0)."""
    if not value:
        return 0
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


def _entry(pid: str, meta: Metadata | None, doc: str | None) -> CatalogEntry:
    meta = meta or {}
    return CatalogEntry(
        paper_id=pid, content_hash=str(meta.get("content_hash", "")), label=str(meta.get("label", "")),
        source=str(meta.get("source", "")), source_key=str(meta.get("source_key", "")),
        position=_int(meta.get("position", 0)), n_chunks=_int(meta.get("n_chunks", 0)),
        chunking=str(meta.get("chunking", "")), title=str(meta.get("title", "")), url=str(meta.get("url", "")),
        authors=str(meta.get("authors", "")), venue=str(meta.get("venue", "")), year=str(meta.get("year", "")),
        text=doc or "", **{f: str(meta.get(f) or "") for f in _OPTIONAL_FIELDS},
    )


def _describe(runtime: str | None) -> str:
    if runtime is None:
        return "torch (fp32; recorded before runtimes were)"
    family, _, digest = runtime.partition(":")
    name = "the int8 ONNX copy of the model" if family == "int8" else "fp32 (torch, fp32 ONNX or torch-bf16)"
    return f"{name} (weights {digest})" if digest else name


def store_exists(settings: Settings) -> bool:
    return bool(settings.chroma_host) or Path(settings.chroma_dir).exists()
