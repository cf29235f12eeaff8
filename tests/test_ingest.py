"""Incremental ingest: stable ids, only changes embedded, removals, duplicates, bad files lose nothing."""

from __future__ import annotations

import json
from pathlib import Path

from rag.ingest import ingest
from rag.store import Store

from .conftest import ABSTRACTS, make_settings, write_jsonl


def catalog(settings):  # noqa: ANN001, ANN201
    return Store.open(settings).catalog()


def test_ingest_then_reingest_embeds_nothing(tmp_path: Path, tiny_corpus: Path, counting_embedder) -> None:
    s = make_settings(tmp_path / "data")
    first = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert len(first.added) == 3 and first.total_papers == 3
    embedded = counting_embedder.count
    assert embedded == first.chunks_embedded > 0
    ids = set(catalog(s))

    again = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert counting_embedder.count == embedded, "an unchanged corpus must not be re-embedded"
    assert again.unchanged == 3 and not again.changed
    assert set(catalog(s)) == ids, "ids are stable across ingests"


def test_changed_paper_is_reembedded_alone(tmp_path: Path, tiny_corpus: Path, counting_embedder) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    before = counting_embedder.count
    path = tiny_corpus / "papers.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines()]
    records[1]["abstract"] += " A follow-up sentence about BarBench licensing."
    write_jsonl(path, records)
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert len(report.added) == 1 and len(report.removed) == 1 and report.unchanged == 2
    chunks_of_new = Store.open(s).catalog()[report.added[0]].n_chunks
    assert counting_embedder.count - before == chunks_of_new
    store = Store.open(s)
    assert store.chunks.count() == sum(e.n_chunks for e in store.catalog().values())


def test_user_id_with_changed_text_keeps_id(tmp_path: Path, counting_embedder) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    write_jsonl(folder / "p.jsonl", [{"id": "paper-1", "abstract": ABSTRACTS[0]}])
    s = make_settings(tmp_path / "data")
    ingest(s, [folder], embedder=counting_embedder, progress=False)
    write_jsonl(folder / "p.jsonl", [{"id": "paper-1", "abstract": ABSTRACTS[0] + " It also works on code."}])
    report = ingest(s, [folder], embedder=counting_embedder, progress=False)
    assert report.reembedded == ["paper-1"]
    assert "works on code" in catalog(s)["paper-1"].text


def test_removed_file_removes_its_papers_only(tmp_path: Path, tiny_corpus: Path, counting_embedder) -> None:
    extra = tiny_corpus / "extra.txt"
    extra.write_text(ABSTRACTS[3])
    outside = tmp_path / "outside.jsonl"
    write_jsonl(outside, [{"abstract": ABSTRACTS[4]}])
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    ingest(s, [outside], embedder=counting_embedder, progress=False)
    assert len(catalog(s)) == 5
    extra.unlink()
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert len(report.removed) == 1
    texts = [e.text for e in catalog(s).values()]
    assert len(texts) == 4 and ABSTRACTS[3] not in texts and ABSTRACTS[4] in texts
    store = Store.open(s)
    assert store.chunks.count() == sum(e.n_chunks for e in store.catalog().values())


def test_moved_paper_keeps_vectors(tmp_path: Path, tiny_corpus: Path, counting_embedder) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    before = counting_embedder.count
    path = tiny_corpus / "papers.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(reversed(lines)) + "\n")
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert counting_embedder.count == before and len(report.relocated) == 2
    positions = sorted(e.position for e in catalog(s).values())
    assert positions == [1, 2, 3]
    got = Store.open(s).chunks.get(include=["metadatas"])
    assert {m["position"] for m in got["metadatas"]} == {1, 2, 3}


def test_duplicates_stored_once(tmp_path: Path, counting_embedder) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [{"abstract": ABSTRACTS[0]}, {"abstract": ABSTRACTS[0]}])
    (folder / "b.txt").write_text(ABSTRACTS[0])
    s = make_settings(tmp_path / "data")
    report = ingest(s, [folder], embedder=counting_embedder, progress=False)
    assert report.total_papers == 1 and len(report.duplicates) == 2


def test_bad_files_are_skipped_and_nothing_indexed_is_lost(tmp_path: Path, tiny_corpus: Path,
                                                           counting_embedder) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    before = catalog(s)
    # The corpus file is damaged, and a binary and an empty file appear next to it.
    (tiny_corpus / "papers.jsonl").write_bytes(b"\x00\x01 damaged")
    (tiny_corpus / "image.txt").write_bytes(b"\x89PNG\x00\x00" * 10)
    (tiny_corpus / "empty.md").write_text("")
    (tiny_corpus / "new.txt").write_text(ABSTRACTS[3])
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert len(report.problems) == 3 and all("\n" not in p for p in report.problems)
    assert not report.removed and len(report.added) == 1
    after = catalog(s)
    assert set(before) <= set(after) and len(after) == 4


def test_interrupted_ingest_is_repaired(tmp_path: Path, tiny_corpus: Path, counting_embedder) -> None:
    """Chunks written without their catalog record (a crash between the two) are cleaned up next time."""
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    pid = next(iter(store.catalog()))
    store.papers.delete(ids=[pid])  # as if the process died after writing chunks, before the catalog
    orphan_vec = [0.0] * 384
    orphan_vec[0] = 1.0
    store.chunks.add(ids=["ghost:0"], embeddings=[orphan_vec], documents=["ghost"],
                     metadatas=[{"paper_id": "ghost"}])
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    assert report.repaired == 1 and pid in report.added
    assert store.chunks.count() == sum(e.n_chunks for e in store.catalog().values())
    assert len(store.catalog()) == 3
