"""The local index after an ingest that changes the store is derived from the previous one, reading back only
the touched papers' chunks; it must equal an index built from scratch, whatever the change was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag import localindex
from rag.ingest import ingest
from rag.localindex import LocalIndex, build_local_index, ensure_local_index, tokenize
from rag.store import Store

from .conftest import ABSTRACTS, make_settings, write_jsonl

QUERIES = ["FooNet accuracy", "benchmark licensing", "sparse attention memory", "retrieval augmented"]


def assert_same_index(ours: LocalIndex, full: LocalIndex) -> None:
    """Same rows (by chunk id), texts, owners and vectors, same papers, and the same BM25 scores per chunk."""
    assert sorted(ours.chunk_ids) == sorted(full.chunk_ids)
    for cid in full.chunk_ids:
        a, b = ours.row_of[cid], full.row_of[cid]
        assert (ours.paper_ids[a], ours.texts[a]) == (full.paper_ids[b], full.texts[b])
        assert np.allclose(np.asarray(ours.vectors[a]), np.asarray(full.vectors[b]))
    assert {p: e.__dict__ for p, e in ours.papers.items()} == {p: e.__dict__ for p, e in full.papers.items()}
    for q in QUERIES:
        got = {ours.chunk_ids[r]: round(s, 5) for r, s in ours.search(q, 50)}
        want = {full.chunk_ids[r]: round(s, 5) for r, s in full.search(q, 50)}
        assert got == want, q
    # paper-level evidence: the same whole-paper and title BM25 scores, the same mean vectors
    mine, theirs = ours.papers_index, full.papers_index
    assert sorted(mine.paper_ids) == sorted(theirs.paper_ids)
    for q in QUERIES:
        for title in (False, True):
            got = dict(mine.search(tokenize(q), 50, title))
            assert got == pytest.approx(dict(theirs.search(tokenize(q), 50, title))), (q, title)
    for pid in theirs.paper_ids:
        assert np.allclose(np.asarray(mine.vectors[mine.row_of[pid]]), np.asarray(theirs.vectors[theirs.row_of[pid]]),
                           atol=1e-5)


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[list[str] | None]:
    """Records which papers' chunks each index build or update read back from the store (None = all)."""
    seen: list[list[str] | None] = []
    real = localindex._read_chunks

    def spy(store, paper_ids=None):
        seen.append(None if paper_ids is None else list(paper_ids))
        return real(store, paper_ids)

    monkeypatch.setattr(localindex, "_read_chunks", spy)
    return seen


def test_index_after_add_change_and_removal_equals_a_full_build(tmp_path: Path, tiny_corpus: Path,
                                                                counting_embedder, reads) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert reads == [None], "a new store is built from every chunk"

    # Add a file, change one paper, then remove the added file: each ingest reads back only what it touched.
    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[3])
    path = tiny_corpus / "papers.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines()]
    records[1]["abstract"] += " A follow-up sentence about BarBench licensing."
    write_jsonl(path, records)
    steps = [lambda: None, lambda: (tiny_corpus / "extra.txt").unlink()]
    for step in steps:
        step()
        reads.clear()
        report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
        touched = set(report.added) | set(report.reembedded) | set(report.removed)
        assert touched and reads == [sorted(touched)]
        store = Store.open(s)
        ours = ensure_local_index(s, store)
        assert ours is not None and len(reads) == 1, "the updated index was saved for the new version"
        assert_same_index(ours, build_local_index(store))


def test_moved_papers_update_the_paper_records_without_reading_chunks(tmp_path: Path, tiny_corpus: Path,
                                                                      counting_embedder, reads) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    path = tiny_corpus / "papers.jsonl"
    path.write_text("\n".join(reversed(path.read_text().splitlines())) + "\n")
    reads.clear()
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert len(report.relocated) == 2 and reads == [[]]
    store = Store.open(s)
    ours = ensure_local_index(s, store)
    assert sorted(e.position for e in ours.papers.values()) == [1, 2, 3]
    assert_same_index(ours, build_local_index(store))


def test_missing_previous_index_means_a_full_build(tmp_path: Path, tiny_corpus: Path, counting_embedder,
                                                   reads) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    for folder in (s.data_dir / "index").iterdir():
        if folder.is_dir():
            shutil.rmtree(folder)  # the index folder holds the paper-level BM25 indexes in subfolders
    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[3])
    reads.clear()
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert reads == [None]
    store = Store.open(s)
    assert_same_index(ensure_local_index(s, store), build_local_index(store))
