"""The Chroma store: an embedded PersistentClient under data_dir, or a `chroma run` server when configured.

Two collections per index:
- `<name>_chunks`: llama-index nodes (sentence-whole chunks) with their vectors, read by ChromaVectorStore;
- `<name>_papers`: the catalog, one record per paper (abstract, label, source, content hash, chunk count).
  Ingestion diffs against the catalog instead of re-reading every chunk, and writes a paper's catalog
  record only after its chunks, so an interrupted ingest is finished by the next one.

The chunk collection's metadata records the embedding model and dimension: an index built with another
model is refused with a clear message rather than queried with incompatible vectors.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.settings import Settings

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from llama_index.vector_stores.chroma import ChromaVectorStore

SCHEMA = 1
GET_BATCH = 5000


class StoreError(RuntimeError):
    """The store is missing, unreadable, unreachable or built for another model; the message says what to do."""


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
        self.chunks = chunks
        self.papers = papers
        self._vector_store: ChromaVectorStore | None = None

    # --- opening ------------------------------------------------------------------------------------

    @classmethod
    def open(cls, settings: Settings, create: bool = False, dim: int | None = None) -> Store:
        """Open the index; with `create`, make it if missing (`dim` = embedding dimension)."""
        if not create and not settings.chroma_host and not settings.chroma_dir.exists():
            raise StoreError(f"no index at {settings.chroma_dir}: run `papers ingest` first")
        client = _client(settings)
        names = (f"{settings.collection}_chunks", f"{settings.collection}_papers")
        try:
            if create:
                meta = {"embed_model": settings.embed_model, "embed_dim": int(dim or 0), "schema": SCHEMA,
                        "version": uuid.uuid4().hex}
                chunks = client.get_or_create_collection(names[0], metadata=meta,
                                                         configuration={"hnsw": {"space": "cosine"}})
                papers = client.get_or_create_collection(names[1], metadata={"schema": SCHEMA},
                                                         configuration={"hnsw": {"space": "cosine"}})
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
        store.check_model(dim)
        return store

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

    def claim_runtime(self, runtime: str) -> None:
        """Record the runtime about to add vectors, or refuse it when the store holds vectors made another way:
        questions are embedded the way the store's chunks were, so one store never mixes two."""
        from rag.embed import runtime_family

        recorded = self.embed_runtime
        if recorded == runtime:
            return
        same_family = runtime_family(recorded) == runtime_family(runtime)
        if self.chunks.count() and not (recorded is None and same_family):
            keep = "onnx-int8" if runtime_family(recorded) == "int8" else "torch (or onnx)"
            raise StoreError(
                f"the index holds vectors made by {_describe(recorded)} but this ingest embeds with "
                f"{_describe(runtime)}; chunks and questions must be embedded the same way: run "
                f"`papers ingest --rebuild` to re-embed every paper with it, or set PAPERS_EMBED_RUNTIME={keep} "
                "to keep this index")
        meta = dict(self.chunks.metadata or {})
        meta["embed_runtime"] = runtime
        self.chunks.modify(metadata=meta)

    @staticmethod
    def destroy(settings: Settings) -> str | None:
        """Remove the index for a rebuild. A local store directory is moved aside, never deleted outright."""
        if settings.chroma_host:
            client = _client(settings)
            for name in (f"{settings.collection}_chunks", f"{settings.collection}_papers"):
                try:
                    client.delete_collection(name)
                except Exception:  # not there: nothing to remove
                    pass
            return None
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
        meta = dict(self.chunks.metadata or {})
        meta["version"] = uuid.uuid4().hex
        if not meta.get("embed_dim"):
            meta["embed_dim"] = self._observed_dim()
        self.chunks.modify(metadata=meta)
        return meta["version"]

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
        include = ["metadatas", "documents"] if with_text else ["metadatas"]
        for offset in range(0, total, GET_BATCH):
            got = self.papers.get(include=include, limit=GET_BATCH, offset=offset)
            docs = got["documents"] if with_text else [None] * len(got["ids"])
            for pid, meta, doc in zip(got["ids"], got["metadatas"], docs):
                out[pid] = _entry(pid, meta, doc)
        return out

    def chunk_paper_ids(self) -> dict[str, int]:
        """Chunks per paper id as stored (used only to repair a store whose counts disagree)."""
        counts: dict[str, int] = {}
        total = self.chunks.count()
        for offset in range(0, total, GET_BATCH):
            got = self.chunks.get(include=["metadatas"], limit=GET_BATCH, offset=offset)
            for meta in got["metadatas"]:
                pid = str(meta.get("paper_id", ""))
                counts[pid] = counts.get(pid, 0) + 1
        return counts

    def delete_papers(self, paper_ids: list[str]) -> None:
        """Remove papers: chunks first, catalog last, so a crash in between is repaired by the next ingest."""
        for i in range(0, len(paper_ids), 500):
            batch = paper_ids[i:i + 500]
            self.chunks.delete(where={"paper_id": {"$in": batch}})
            self.papers.delete(ids=batch)

    def delete_chunks_of(self, paper_ids: list[str]) -> None:
        for i in range(0, len(paper_ids), 500):
            self.chunks.delete(where={"paper_id": {"$in": paper_ids[i:i + 500]}})

    def write_catalog(self, entries: list[CatalogEntry], embeddings: list[list[float]]) -> None:
        self.papers.upsert(
            ids=[e.paper_id for e in entries],
            documents=[e.text for e in entries],
            metadatas=[_meta(e) for e in entries],
            embeddings=embeddings,
        )

    def get_papers(self, paper_ids: list[str]) -> dict[str, CatalogEntry]:
        """Records of some papers (those not in the index are left out)."""
        out: dict[str, CatalogEntry] = {}
        ids = list(paper_ids)
        for i in range(0, len(ids), GET_BATCH):
            got = self.papers.get(ids=ids[i:i + GET_BATCH], include=["metadatas", "documents"])
            out.update((pid, _entry(pid, meta, doc))
                       for pid, meta, doc in zip(got["ids"], got["metadatas"], got["documents"]))
        return out


_META_FIELDS = ("content_hash", "label", "source", "source_key", "position", "n_chunks", "chunking",
                "title", "url", "authors", "venue", "year")


def _meta(e: CatalogEntry) -> dict[str, Any]:
    return {f: getattr(e, f) for f in _META_FIELDS} | {"paper_id": e.paper_id}


def _entry(pid: str, meta: dict[str, Any] | None, doc: str | None) -> CatalogEntry:
    meta = meta or {}
    return CatalogEntry(
        paper_id=pid, content_hash=str(meta.get("content_hash", "")), label=str(meta.get("label", "")),
        source=str(meta.get("source", "")), source_key=str(meta.get("source_key", "")),
        position=int(meta.get("position", 0) or 0), n_chunks=int(meta.get("n_chunks", 0) or 0),
        chunking=str(meta.get("chunking", "")), title=str(meta.get("title", "")), url=str(meta.get("url", "")),
        authors=str(meta.get("authors", "")), venue=str(meta.get("venue", "")), year=str(meta.get("year", "")),
        text=doc or "",
    )


def _describe(runtime: str | None) -> str:
    if runtime is None:
        return "torch (fp32; recorded before runtimes were)"
    family, _, digest = runtime.partition(":")
    name = "the int8 ONNX copy of the model" if family == "int8" else "torch / fp32 ONNX"
    return f"{name} (weights {digest})" if digest else name


def store_exists(settings: Settings) -> bool:
    return bool(settings.chroma_host) or Path(settings.chroma_dir).exists()
