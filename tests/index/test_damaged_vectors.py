"""Vector index files overwritten with garbage crash Chroma's native code (SIGSEGV) in whichever process reads
them. A child process reads them first (rag/index/probe.py): commands fail with one line naming the damage and
the way out, `papers doctor` reports it as one finding, and `--repair` (or `papers ingest --rebuild`) brings
the answers back. The child runs once per change of the files, not on every open."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag.answer.retrieve import Retriever
from rag.frontends.cli import app
from rag.index import probe
from rag.index.doctor import diagnose, repair
from rag.index.ingest import ingest
from rag.index.probe import PERSISTED_MARK, fingerprint, hnsw_files
from rag.index.store import HNSW_CONFIGURATION, Store, StoreError, release_reader_lock, writer_lock
from rag.service import Assistant
from rag.settings import Settings
from tests.conftest import ABSTRACTS, make_settings, write_jsonl

QUESTION = "How much does FooNet reduce memory?"


@pytest.fixture()
def synced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma writes a collection's vector index to files once it holds `sync_threshold` records (1000 by
    default): lowered, a few papers give the files a large store has."""
    monkeypatch.setitem(HNSW_CONFIGURATION, "hnsw", {"space": "cosine", "sync_threshold": 2, "batch_size": 2})


def forget_clients(s: Settings) -> None:
    """As a new process would: Chroma reads the store from disk again."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    release_reader_lock(s)


def indexed(data: Path, corpus: Path, embedder) -> Settings:
    """Three papers, then a fourth: the files hold the first ones and Chroma's log the newest, which it adds to
    the loaded index at the first read, walking the index's links (where garbage crashes it)."""
    s = make_settings(data)
    ingest(s, [corpus], embedder=embedder, progress=False)
    write_jsonl(corpus / "more.jsonl", [{"abstract": ABSTRACTS[3]}])
    ingest(s, [corpus], embedder=embedder, progress=False)
    assert fingerprint(s.chroma_dir), "the store keeps no vector index in files"
    return s


def garble(s: Settings) -> int:
    """data_level0.bin of each persisted index overwritten with random bytes of the same size (seeded: the same
    garbage on every run)."""
    forget_clients(s)
    noise = random.Random(0)
    files = [f for f in s.chroma_dir.glob("*/data_level0.bin") if (f.parent / PERSISTED_MARK).exists()]
    for f in files:
        f.write_bytes(noise.randbytes(f.stat().st_size))
    return len(files)


def answer(s: Settings, embedder) -> str:
    forget_clients(s)
    return Assistant(s, Retriever(s, embedder=embedder)).ask(QUESTION, mode="extractive").answer


def test_garbage_vector_files_are_reported_and_repaired(tmp_path: Path, tiny_corpus: Path, embedder,
                                                        synced: None) -> None:
    s = indexed(tmp_path / "data", tiny_corpus, embedder)
    before = answer(s, embedder)
    assert "40%" in before, before
    assert garble(s) >= 1

    with pytest.raises(StoreError) as opened:
        Store.open(s)
    message = str(opened.value)
    assert message.startswith("the store's vector index files are damaged (the reading process died with SIGSEGV)")
    assert "run `papers doctor --repair`" in message and "\n" not in message, message
    probes = probe.spawned
    forget_clients(s)
    r = CliRunner().invoke(app, ["ask", QUESTION], env={"PAPERS_DATA_DIR": str(s.data_dir)})
    assert r.exit_code == 1 and r.output.strip() == f"error: {message}", r.output

    checkup = diagnose(s)
    assert probe.spawned == probes  # the verdict on these files is kept: no process is started again
    assert [f.line() for f in checkup.findings] == [
        "problem: the store's vector index files are damaged (the reading process died with SIGSEGV) — fix: "
        "`papers doctor --repair` (sets the damaged files aside and rebuilds the vector index from the local "
        "index's vectors, no re-embedding)"]
    with writer_lock(s):
        done = repair(s, checkup)
    assert done[0].startswith("set the damaged vector index files aside in ") and any(
        line.startswith("rebuilt the vector index from the local index's vectors (") and line.endswith(" 4 papers)")
        for line in done), done
    assert diagnose(s).findings == []
    assert answer(s, embedder) == before


def test_without_local_vectors_the_fix_is_a_rebuild(tmp_path: Path, tiny_corpus: Path, embedder,
                                                    synced: None) -> None:
    s = indexed(tmp_path / "data", tiny_corpus, embedder)
    before = answer(s, embedder)
    shutil.rmtree(s.data_dir / "index")
    garble(s)
    (finding,) = diagnose(s).findings
    assert "vector index files are damaged" in finding.problem and not finding.repairable
    assert finding.fix.startswith("`papers ingest --rebuild`"), finding.fix
    forget_clients(s)
    report = ingest(s, [tiny_corpus], rebuild=True, embedder=embedder, progress=False)
    assert report.moved_aside and report.total_papers == 4
    assert answer(s, embedder) == before


def test_an_unchanged_store_is_probed_once(tmp_path: Path, tiny_corpus: Path, embedder, synced: None) -> None:
    s = indexed(tmp_path / "data", tiny_corpus, embedder)
    (s.data_dir / probe.RECORD_FILE).unlink()  # files never read: the next open probes them
    first = probe.spawned
    for _ in range(2):
        forget_clients(s)
        Store.open(s)
    assert probe.spawned == first + 1
    assert probe.recorded(s.data_dir) == {"fingerprint": fingerprint(s.chroma_dir), "damage": ""}

    write_jsonl(tiny_corpus / "more.jsonl", [{"abstract": ABSTRACTS[3]}, {"abstract": ABSTRACTS[4]}])
    forget_clients(s)
    ingest(s, [tiny_corpus], embedder=embedder, progress=False)  # its open probes nothing: the files are as read
    assert probe.spawned == first + 1
    assert fingerprint(s.chroma_dir) != probe.recorded(s.data_dir)["fingerprint"]  # it wrote new ones
    for _ in range(2):
        forget_clients(s)
        Store.open(s)
    assert probe.spawned == first + 2  # the next reader probes them, once


def test_a_store_without_vector_files_is_never_probed(tmp_path: Path, tiny_corpus: Path, embedder) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=embedder, progress=False)  # under Chroma's sync threshold: no files
    first = probe.spawned
    Store.open(s)
    assert probe.spawned == first and fingerprint(s.chroma_dir) == "" and probe.recorded(s.data_dir) == {}


def test_the_store_knows_where_the_local_index_keeps_vectors(tmp_path: Path) -> None:
    from rag.index.store import local_vectors_path
    from rag.index.versions import VECTORS_FILE, index_dir

    s = make_settings(tmp_path / "data")
    assert local_vectors_path(s, "abc") == index_dir(s, "abc") / VECTORS_FILE


# What the child's end says about the files: (exit code, or None for a timeout) -> (damage, verdict kept).
OUTCOMES = [
    (0, None, True),
    (-11, "the reading process died with SIGSEGV", True),
    (-6, "the reading process died with SIGABRT", True),
    (-9, None, False),  # killed from outside (out of memory, a user): nothing known about the files
    (3, "Chroma cannot load them: Error loading hnsw index", True),
    (2, None, False),  # another failure (a damaged database): this process reads and reports it as before
    (1, None, False),
    (None, "reading them did not finish within 120 s", False),
]


@pytest.mark.parametrize(("code", "damage", "settled"), OUTCOMES)
def test_what_the_probe_exit_says(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, code: int | None,
                                    damage: str | None, settled: bool) -> None:
    def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
        if code is None:
            raise subprocess.TimeoutExpired(cmd, probe.TIMEOUT_S)
        return subprocess.CompletedProcess(cmd, code, "", "Error loading hnsw index\n")

    monkeypatch.setattr(subprocess, "run", run)
    assert probe._run_child(tmp_path, ["c_chunks"], probe.TIMEOUT_S) == (damage, settled)


def _segment(chroma: Path, name: str, files: dict[str, int], persisted: bool = True) -> None:
    folder = chroma / name
    folder.mkdir(parents=True, exist_ok=True)
    for f, size in {**files, **({PERSISTED_MARK: 10} if persisted else {})}.items():
        (folder / f).write_bytes(b"x" * size)


def _touch(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _overwrite_keeping_mtime(path: Path) -> None:
    """New bytes with the old size and mtime (as a copy that keeps times would leave them): its ctime moves."""
    mtime = path.stat().st_mtime_ns
    time.sleep(0.05)  # past the file system's clock tick
    path.write_bytes(os.urandom(path.stat().st_size))
    _touch(path, mtime)


# Each change applied to a store holding one persisted index (segment "a") and one that Chroma rebuilds from
# its log at each open (segment "b", no index_metadata.pickle), and whether the fingerprint changes.
CHANGES = [
    ("nothing", lambda c: None, False),
    ("the database", lambda c: (c / "chroma.sqlite3").write_bytes(b"more"), False),
    ("a file of a segment Chroma rebuilds at each open", lambda c: (c / "b" / "data_level0.bin").write_bytes(b"z"),
     False),
    ("a file's bytes, same size and mtime", lambda c: _overwrite_keeping_mtime(c / "a" / "header.bin"), True),
    ("a file's size", lambda c: (c / "a" / "data_level0.bin").write_bytes(b"x" * 301), True),
    ("a file's mtime", lambda c: _touch(c / "a" / "length.bin", 10**18), True),
    ("a new file", lambda c: (c / "a" / "extra.bin").write_bytes(b""), True),
    ("a renamed segment", lambda c: (c / "a").rename(c / "c"), True),
    ("a segment becoming persisted", lambda c: (c / "b" / PERSISTED_MARK).write_bytes(b"p"), True),
    ("the index files removed", lambda c: shutil.rmtree(c / "a"), True),
]


@pytest.mark.parametrize(("what", "change", "differs"), CHANGES, ids=[c[0] for c in CHANGES])
def test_fingerprint(tmp_path: Path, what: str, change, differs: bool) -> None:
    chroma = tmp_path / "chroma"
    assert fingerprint(chroma) == "" and hnsw_files(chroma) == []  # no store
    chroma.mkdir()
    (chroma / "chroma.sqlite3").write_bytes(b"db")
    _segment(chroma, "b", {"data_level0.bin": 50, "header.bin": 100}, persisted=False)
    assert fingerprint(chroma) == ""  # a store with no persisted index needs no probe
    _segment(chroma, "a", {"data_level0.bin": 300, "header.bin": 100, "length.bin": 4, "link_lists.bin": 0})
    before = fingerprint(chroma)
    assert before and [f[:2] for f in hnsw_files(chroma)] == [
        ("a/data_level0.bin", 300), ("a/header.bin", 100), ("a/index_metadata.pickle", 10), ("a/length.bin", 4),
        ("a/link_lists.bin", 0)]
    change(chroma)
    assert (fingerprint(chroma) != before) is differs, what
