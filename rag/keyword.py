"""The BM25 side of hybrid retrieval: llama-index's BM25Retriever (bm25s) over the same chunks as Chroma.

llama-index cannot build BM25 from a Chroma-backed index (its docstore stays empty), so the nodes are read
back from the chunk collection. The index is persisted under data_dir, keyed by the store's content version:
a process loads it instead of rebuilding, and any ingest that changes the store invalidates it.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from rag.settings import Settings
from rag.store import GET_BATCH, Store

if TYPE_CHECKING:
    from llama_index.retrievers.bm25 import BM25Retriever

for _name in ("bm25s", "llama_index.retrievers.bm25"):
    logging.getLogger(_name).setLevel(logging.ERROR)


def index_dir(settings: Settings, version: str) -> Path:
    return settings.data_dir / "bm25" / f"{settings.collection}-{version}"


def _nodes(store: Store) -> list:
    from llama_index.core.vector_stores.utils import metadata_dict_to_node

    nodes = []
    total = store.chunks.count()
    for offset in range(0, total, GET_BATCH):
        got = store.chunks.get(include=["documents", "metadatas"], limit=GET_BATCH, offset=offset)
        for meta, doc in zip(got["metadatas"], got["documents"]):
            nodes.append(metadata_dict_to_node(meta, text=doc))
    return nodes


def ensure_keyword_index(settings: Settings, store: Store, load: bool = True) -> BM25Retriever | None:
    """Load the BM25 index for the store's current version, building and persisting it if needed.

    With `load=False` (after an ingest) an index that is already on disk is left there unread.
    """
    version = store.version
    path = index_dir(settings, version)
    if path.exists() and not load:
        return None
    from llama_index.retrievers.bm25 import BM25Retriever

    if path.exists():
        try:
            return BM25Retriever.from_persist_dir(str(path))
        except Exception:  # a damaged cache is rebuilt, never trusted
            shutil.rmtree(path, ignore_errors=True)
    nodes = _nodes(store)
    if not nodes:
        return None
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=min(settings.candidates, len(nodes)))
    # Write to a temporary folder and rename, so a killed process never leaves a half-written index.
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    retriever.persist(str(tmp), show_progress=False)
    try:
        tmp.rename(path)
    except OSError:  # another process finished first: use theirs
        shutil.rmtree(tmp, ignore_errors=True)
    for old in path.parent.glob(f"{settings.collection}-*"):
        if old != path:
            shutil.rmtree(old, ignore_errors=True)
    return retriever
