"""Writes larger than Chroma's own batch limit (5,461 rows on SQLite) are split, not refused: a catalog of
thousands of papers, or the chunk records of papers that only moved, rewritten in one ingest."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.index.store import CatalogEntry, Store
from tests.conftest import make_settings

ROWS = 6000  # over Chroma's limit: one call with these many rows raises "Batch size ... greater than max"


def test_catalog_and_chunk_metadata_writes_over_chromas_batch_limit(tmp_path: Path) -> None:
    store = Store.open(make_settings(tmp_path / "data"), create=True, dim=384)
    assert store.client.get_max_batch_size() < ROWS
    entries = [CatalogEntry(paper_id=f"p{i:05d}", content_hash=str(i), label=f"P{i}", source="list.jsonl",
                            source_key=str(i), position=i, n_chunks=1, chunking="sentence", title=f"Paper {i}")
               for i in range(ROWS)]
    vectors = np.eye(1, 384, dtype=np.float32).repeat(ROWS, axis=0).tolist()
    store.write_catalog(entries, vectors)
    assert store.papers.count() == ROWS

    ids = [f"c{i:05d}" for i in range(ROWS)]
    store.chunks.add(ids=ids[:4000], embeddings=vectors[:4000], metadatas=[{"paper_id": "x"}] * 4000)
    store.chunks.add(ids=ids[4000:], embeddings=vectors[4000:], metadatas=[{"paper_id": "x"}] * 2000)
    store.update_chunk_metadata(ids, [{"paper_id": "x", "source": "moved.jsonl"}] * ROWS)
    got = store.chunks.get(where={"source": "moved.jsonl"}, include=[])
    assert len(got["ids"]) == ROWS
