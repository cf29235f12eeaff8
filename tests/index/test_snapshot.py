"""The local index (rag/index/snapshot.py, saved by versions.py) after an ingest that changes the store is derived
from the previous one, reading back only the touched papers' chunks; it must equal an index built from scratch,
whatever the change was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag.index import snapshot, versions
from rag.index.bm25 import TF_FILE, tokenize
from rag.index.ingest import ingest
from rag.index.paper_level import heading
from rag.index.snapshot import LocalIndex, build_local_index, embedded_text
from rag.index.store import Store
from rag.index.versions import WORDS_FILE, ensure_local_index, index_dir
from tests.conftest import ABSTRACTS, make_settings, write_jsonl
from tests.index.test_bm25 import assert_same_bm25, scratch_bm25

QUERIES = ["FooNet accuracy", "benchmark licensing", "sparse attention memory", "retrieval augmented"]
WORDS = ["FooNet", "BarBench", "QuuxDB", "accuracy", "memory", "licensing", "chemists", "never-indexed-word"]




def assert_bm25_as_from_scratch(index: LocalIndex) -> None:
    """Chunk, whole-paper and title BM25 of an index equal bm25s's over the index's own rows, and its idf
    equals the one a from-scratch chunk index gives."""
    labels = [heading(index.papers[p].title, index.papers[p].label) for p in index.paper_ids]
    texts = [embedded_text(lab, t) for lab, t in zip(labels, index.texts)]
    queries = QUERIES + [index.texts[i] for i in range(0, index.size, max(1, index.size // 5))]
    assert_same_bm25(index.bm25, texts, queries)
    level = index.papers_index
    papers = [index.papers[p] for p in level.paper_ids]
    assert_same_bm25(level.bm25, [f"{heading(e.title, e.label)}. {e.text}" for e in papers], queries)
    assert_same_bm25(level.title_bm25, [heading(e.title, e.label) for e in papers], queries)
    words = {t for w in WORDS for t in tokenize(w)} | {"never"}
    full = LocalIndex(scratch_bm25(texts), index.chunk_ids, index.paper_ids, index.texts, index.vectors, index.papers)
    assert index.idf(words) == pytest.approx(full.idf(words))


@pytest.fixture()
def tokenised(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts each BM25 tokenisation of the local index was given (queries' single strings left out)."""
    import bm25s

    seen: list[int] = []
    real = bm25s.tokenize

    def spy(texts, *a, **k):
        if not isinstance(texts, str):
            seen.append(len(texts))
        return real(texts, *a, **k)

    monkeypatch.setattr(bm25s, "tokenize", spy)
    return seen


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
    # every word of the texts, titles and labels with its stems (a derived table keeps removed papers' words too)
    table = ours.word_table()
    assert all(table.get(w) == st for w, st in full.word_table().items())


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[list[str] | None]:
    """Records which papers' chunks each index build or update read back from the store (None = all)."""
    seen: list[list[str] | None] = []
    real = snapshot.read_chunks

    def spy(store, paper_ids=None):
        seen.append(None if paper_ids is None else list(paper_ids))
        return real(store, paper_ids)

    monkeypatch.setattr(snapshot, "read_chunks", spy)
    return seen


def test_index_after_add_change_and_removal_equals_a_full_build(tmp_path: Path, tiny_corpus: Path,
                                                                counting_embedder, reads, tokenised) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert reads == [], "a new store's index is built from the chunks the ingest wrote, none read back"

    # Add a file, change one paper, then remove the added file: each ingest hands over the chunks it wrote
    # (reading none back),
    # and tokenises only the touched papers' chunks, abstracts and headings.
    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[3])
    path = tiny_corpus / "papers.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines()]
    records[1]["abstract"] += " A follow-up sentence about BarBench licensing."
    write_jsonl(path, records)
    steps = [lambda: None, lambda: (tiny_corpus / "extra.txt").unlink()]
    for step in steps:
        step()
        reads.clear()
        tokenised.clear()
        report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
        touched = set(report.added) | set(report.reembedded) | set(report.removed)
        assert touched and reads == []
        store = Store.open(s)
        ours = ensure_local_index(s, store)
        assert ours is not None and reads == [], "the updated index was saved for the new version"
        kept = set(report.added) | set(report.reembedded)
        assert sum(tokenised) == sum(p in kept for p in ours.paper_ids) + 2 * len(kept), tokenised
        assert_same_index(ours, build_local_index(store))
        assert_bm25_as_from_scratch(ours)


def test_papers_with_stable_ids_reembedded_retitled_removed_and_moved(tmp_path: Path, tiny_corpus: Path,
                                                                      counting_embedder, tokenised) -> None:
    """Papers keep their ids (the input gives them) while their abstract or title changes: each update
    re-tokenises only those papers, and stays the index bm25s builds from scratch (chunks, abstracts, titles)."""
    s = make_settings(tmp_path / "data")
    path = tiny_corpus / "papers.jsonl"
    records = [{"id": f"paper-{i}", "abstract": a, "title": t}
               for i, (a, t) in enumerate(zip(ABSTRACTS[:4], ["FooNet", "", "Clipping in RLHF", "QuuxDB"]))]
    write_jsonl(path, records)
    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[4])
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)

    def change_abstract() -> None:
        records[1]["abstract"] += " A follow-up sentence about BarBench licensing and accuracy."

    def retitle() -> None:
        records[2]["title"] = "Adaptive gradient clipping stabilises RLHF"

    def drop() -> None:
        del records[0]

    def move() -> None:
        records.reverse()

    for step, expect in ((change_abstract, "reembedded"), (retitle, "reembedded"), (drop, "removed"),
                         (move, "relocated")):
        step()
        write_jsonl(path, records)
        tokenised.clear()
        report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
        assert getattr(report, expect), (step.__name__, report)
        store = Store.open(s)
        ours = ensure_local_index(s, store)
        changed = set(report.added) | set(report.reembedded)
        assert sum(tokenised) == sum(p in changed for p in ours.paper_ids) + 2 * len(changed), (step, tokenised)
        assert_same_index(ours, build_local_index(store))
        assert_bm25_as_from_scratch(ours)


def test_kept_rows_whose_heading_changed_are_tokenised_again(tmp_path: Path, tiny_corpus: Path,
                                                             counting_embedder, tokenised) -> None:
    """A paper that is not re-embedded but whose record comes back with another heading (ingest re-embeds on
    a title or label change today; this guards the derivation, not ingest) is re-tokenised in every BM25 index."""
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    pid = next(p for p, e in store.catalog().items() if not e.title)
    entry = store.get_papers([pid])[pid]
    entry.title = "A new heading about QuuxDB robots"
    vector = store.papers.get(ids=[pid], include=["embeddings"])["embeddings"][0]
    store.write_catalog([entry], [list(vector)])
    tokenised.clear()
    versions.update_local_index(s, store, store.version, set(), {pid}, version="relabelled")
    ours = versions.load_index(index_dir(s, "relabelled"))
    assert sum(tokenised) == len(ours.rows_of_paper[pid]) + 2, tokenised
    assert ours.search("QuuxDB robots", 5)
    assert_bm25_as_from_scratch(ours)


def test_moved_papers_update_the_paper_records_without_reading_chunks(tmp_path: Path, tiny_corpus: Path,
                                                                      counting_embedder, reads, tokenised) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    before = index_dir(s, Store.open(s).version)
    path = tiny_corpus / "papers.jsonl"
    path.write_text("\n".join(reversed(path.read_text().splitlines())) + "\n")
    reads.clear()
    tokenised.clear()
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    assert len(report.relocated) == 2 and reads == [] and tokenised == []
    store = Store.open(s)
    ours = ensure_local_index(s, store)
    assert sorted(e.position for e in ours.papers.values()) == [1, 2, 3]
    assert_same_index(ours, build_local_index(store))
    assert_bm25_as_from_scratch(ours)
    after = index_dir(s, store.version)
    for name in (versions.VECTORS_FILE, versions.PAPER_VECTORS_FILE):  # the same rows: one file, linked
        assert (after / name).stat().st_ino == (before / name).stat().st_ino, name


def test_handed_chunks_are_used_only_when_they_are_all_the_touched_papers_chunks() -> None:
    """An interrupted ingest writes some batches: a touched paper whose recorded chunks were not all handed over
    (or a handed chunk of an untouched paper) means reading the touched papers back from the store."""
    from rag.index.snapshot import Written
    from rag.index.store import CatalogEntry

    def entry(pid: str, n: int) -> CatalogEntry:
        return CatalogEntry(paper_id=pid, content_hash="h", label=pid, source="s", source_key="s", position=1,
                            n_chunks=n, chunking="c")

    written = Written()
    written.add(["a:0", "a:1"], ["a", "a"], ["one.", "two."], ["A", "A"], np.zeros((2, 3), dtype=np.float32))
    assert written.covers({"a": entry("a", 2)}, {"a"})
    assert written.covers({"a": entry("a", 2)}, {"a", "gone"})  # a removed paper: no record, no chunks
    assert not written.covers({"a": entry("a", 2), "b": entry("b", 1)}, {"a", "b"})  # b's batch was abandoned
    assert not written.covers({"a": entry("a", 3)}, {"a"})
    assert not written.covers({"a": entry("a", 2)}, set())
    ids, owners, texts, labels, vectors = written.rows()
    assert (ids, owners, texts, labels) == (["a:0", "a:1"], ["a", "a"], ["one.", "two."], ["A", "A"])
    assert np.concatenate(vectors).shape == (2, 3)


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



def as_recorded_by_an_older_release(store: Store, folder: Path) -> None:
    """The store's digest as releases that saved indexes without some files recorded it (texts and paper
    records only): a folder missing a file is then an older index, not an edited one."""
    store.commit(store.version, versions._texts_digest(folder))


def test_index_saved_without_term_counts_is_rebuilt_once_then_derived(tmp_path: Path, tiny_corpus: Path,
                                                                      counting_embedder, tokenised) -> None:
    """An index saved before term counts were kept loads and answers; the next ingest tokenises every row
    (and saves the counts), the one after only what it touched."""
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    folder = index_dir(s, store.version)
    removed = [f for f in folder.rglob(TF_FILE)]
    assert len(removed) == 3
    for f in removed:
        f.unlink()
    as_recorded_by_an_older_release(store, folder)
    old = ensure_local_index(s, store)
    assert old.bm25.term_counts is None and old.search("FooNet", 5)

    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[3])
    tokenised.clear()
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    rebuilt = ensure_local_index(s, store)
    n_papers = len(rebuilt.papers_index.paper_ids)
    assert tokenised == [rebuilt.size, n_papers, n_papers], "every chunk, abstract and heading is tokenised"
    assert len(list(index_dir(s, store.version).rglob(TF_FILE))) == 3
    assert_same_index(rebuilt, build_local_index(store))
    assert_bm25_as_from_scratch(rebuilt)

    (tiny_corpus / "more.txt").write_text(ABSTRACTS[4])
    tokenised.clear()
    report = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    ours = ensure_local_index(s, store)
    assert sum(tokenised) == sum(p in report.added for p in ours.paper_ids) + 2, tokenised
    assert_same_index(ours, build_local_index(store))
    assert_bm25_as_from_scratch(ours)


def test_saved_word_table_spares_questions_the_stemming(tmp_path: Path, tiny_corpus: Path, counting_embedder,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every version's index saves its words' stems and a reader loads them, so no indexed word is stemmed at
    question time; an index saved without the table answers the same, stemming words as it meets them."""
    from rag import text

    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[3])
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)  # a derived version
    store = Store.open(s)
    folder = index_dir(s, store.version)
    assert (folder / WORDS_FILE).exists()
    want = {t: text.term_stems(t) for t in build_local_index(store).texts}
    stemmed: list[str] = []
    real = text._stems_of_word
    monkeypatch.setattr(text, "_stems_of_word", lambda w: stemmed.append(w) or real(w))
    monkeypatch.setattr(text, "_WORD_STEMS", text._WordStems())
    loaded = ensure_local_index(s, store)
    assert loaded.word_stems is not None and "quuxdb" in " ".join(loaded.word_stems)  # the added paper's words
    assert {t: text.term_stems(t) for t in loaded.texts} == want and stemmed == []

    (folder / WORDS_FILE).unlink()
    as_recorded_by_an_older_release(store, folder)
    monkeypatch.setattr(text, "_WORD_STEMS", text._WordStems())
    old = ensure_local_index(s, store)
    assert old.word_stems is None
    assert {t: text.term_stems(t) for t in old.texts} == want and stemmed, "stemmed as met"


def test_an_ingest_starts_from_the_index_its_process_saved(tmp_path: Path, tiny_corpus: Path, counting_embedder,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one process, the next ingest and a reader use the index the last ingest saved without reading it
    back; once a file of it changes on disk it is read again, and a damaged one is rebuilt."""
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    loads: list[Path] = []
    real = versions.load_index
    monkeypatch.setattr(versions, "load_index", lambda folder: loads.append(folder) or real(folder))
    store = Store.open(s)
    first = versions.committed_index(s, store)
    assert first is not None and first is ensure_local_index(s, store) and loads == []
    (tiny_corpus / "extra.txt").write_text(ABSTRACTS[3])
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    ours = ensure_local_index(s, store)
    assert loads == [] and ours is not first
    assert_same_index(ours, build_local_index(store))
    assert isinstance(ours.vectors, np.memmap) and isinstance(ours.papers_index.vectors, np.memmap)

    folder = index_dir(s, store.version)
    data = (folder / versions.PAPERS_FILE).read_bytes()  # rewritten by someone else: the same bytes, a new file
    (folder / versions.PAPERS_FILE).unlink()
    (folder / versions.PAPERS_FILE).write_bytes(data)
    again = ensure_local_index(s, store)
    assert loads == [folder] and again is not ours
    assert_same_index(again, ours)
    (folder / versions.TABLE_FILE).write_text("{")  # damaged: its digest is not the store's, so it is not read
    rebuilt = ensure_local_index(s, store)
    assert len(loads) == 1 and rebuilt is not again
    assert_same_index(rebuilt, build_local_index(store))


def test_index_files_round_trip_text_orjson_refuses(tmp_path: Path) -> None:
    """A lone surrogate (seen in broken PDF text) is written through json and read back through json."""
    from rag.index.versions import _json_bytes, _json_load

    value = {"texts": ["plain", "broken \ud800 text", "ünïcode ✓"]}
    path = tmp_path / "t.json"
    path.write_bytes(_json_bytes(value))
    assert _json_load(path) == value
    path.write_bytes(_json_bytes({"texts": ["plain"]}))
    assert _json_load(path) == {"texts": ["plain"]}


@pytest.mark.parametrize("fails", ["never", "every other run", "always"])
def test_vectors_written_file_to_file_equal_the_rows_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               fails: str) -> None:
    """The next version's vectors: kept runs of the saved file copied by the kernel, then the new rows. A file
    system without copy_file_range (it raises; faked here) goes through user space, run by run."""
    from rag.index.snapshot import _spill_path, _stack_rows

    (tmp_path / "v1").mkdir()
    saved = np.arange(40 * 4, dtype=np.float32).reshape(40, 4)
    np.save(tmp_path / "v1" / "vectors.npy", saved)
    previous = np.load(tmp_path / "v1" / "vectors.npy", mmap_mode="r")
    keep = np.array([0, 1, 2, 5, 6, 9, 10, 11, 30], dtype=np.int64)
    new = [np.ones((3, 4), dtype=np.float32)]
    real, calls = os.copy_file_range, [0]

    def copy(*args: int) -> int:
        calls[0] += 1
        if fails == "always" or (fails == "every other run" and calls[0] % 2):
            raise OSError(38, "copy_file_range not supported")
        return real(*args)

    monkeypatch.setattr(os, "copy_file_range", copy)
    got = _stack_rows(previous, keep, new, _spill_path(previous))
    assert isinstance(got, np.memmap) and str(got.filename).startswith(str(tmp_path))
    assert np.array_equal(np.asarray(got), np.concatenate([saved[keep], new[0]]))



def test_idf_counts_the_chunks_holding_each_word() -> None:
    """idf of every indexed term and of unseen words is BM25's log(1 + (N - df + 0.5) / (df + 0.5)), with df
    counted here from each chunk's own tokens."""
    import math

    texts = ABSTRACTS + ["FooNet FooNet and memory", "memory again", ""]
    bm25 = scratch_bm25(texts)
    index = LocalIndex(bm25, [f"c:{i}" for i in range(len(texts))], ["p"] * len(texts), texts,
                       np.zeros((len(texts), 2), dtype=np.float32), {})
    tokens = [set(tokenize(t)) for t in texts]
    words = set().union(*tokens) | {"zzzunseen"}
    n = len(texts)
    expected = {w: math.log(1 + (n - sum(w in t for t in tokens) + 0.5) / (sum(w in t for t in tokens) + 0.5))
                for w in words}
    assert index.idf(words) == pytest.approx(expected, rel=1e-12)
    assert index.idf(["zzzunseen"])["zzzunseen"] > max(v for w, v in expected.items() if w != "zzzunseen")


@pytest.mark.parametrize("edit", ["vectors", "paper vectors", "bm25"])
def test_a_local_index_with_edited_vectors_or_tables_is_rebuilt_not_served(tmp_path: Path, tiny_corpus: Path,
                                                                           counting_embedder, edit: str) -> None:
    """Texts intact, a paper's vectors replaced by random unit vectors (or a BM25 table changed): still a valid
    index that would answer other questions with that paper, so it is rebuilt from the store."""
    import numpy as np

    from rag.index.versions import PAPER_VECTORS_FILE, VECTORS_FILE, ensure_local_index, index_dir

    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    folder = index_dir(s, store.version)
    if edit == "bm25":
        target = next(p for p in sorted(folder.glob("*.npy")) if p.name not in (VECTORS_FILE, PAPER_VECTORS_FILE))
    else:
        target = folder / (VECTORS_FILE if edit == "vectors" else PAPER_VECTORS_FILE)
    original = np.load(target)
    edited = np.array(original, copy=True)
    if edit == "bm25":
        edited[0] = edited[0] + 1
    else:
        noise = np.random.default_rng(0).normal(size=edited[0].shape).astype(edited.dtype)
        edited[0] = noise / np.linalg.norm(noise)
    target.unlink()  # a new file: the saved one may be hard-linked from another version
    np.save(target, edited)
    index = ensure_local_index(s, store)
    assert index is not None
    rebuilt = np.load(target)  # from the store's vectors (equal to float precision) and tables
    assert np.allclose(rebuilt, original, atol=1e-6) and not np.allclose(rebuilt, edited, atol=1e-3)
