"""`papers doctor` finds each kind of inconsistency between store, catalog and local index, says how to fix it in
one line, and `--repair` fixes what needs no re-embedding; a damaged vector index is named on ask and ingest."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rag.frontends.cli import app
from rag.index.ingest import ingest
from rag.index.store import Store, StoreError
from rag.index.versions import index_dir, publish_full_index
from tests.conftest import make_settings


def run(data: Path, *args: str):
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # as a new process would: the store is read from disk again
    return CliRunner().invoke(app, list(args), env={"PAPERS_DATA_DIR": str(data)})


def run_process(data: Path, *args: str):
    """The real `papers` command in its own process: reading damaged vector files may crash Chroma's native
    code, which must show here as a failed command rather than take the test run down with it."""
    import subprocess
    import sys

    env = {**os.environ, "PAPERS_DATA_DIR": str(data), "PAPERS_ENV_FILE": os.devnull}
    done = subprocess.run([sys.executable, "-m", "rag.frontends.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])
    done.exit_code, done.output = done.returncode, done.stdout + done.stderr  # type: ignore[attr-defined]
    return done


def problems(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("problem: ")]


def test_doctor_finds_and_repairs_each_inconsistency(tmp_path: Path, tiny_corpus: Path, embedder) -> None:
    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=embedder, progress=False)
    r = run(s.data_dir, "doctor")
    assert r.exit_code == 0 and "no problems found" in r.output and "3 papers" in r.output, r.output

    # A missing local index.
    store = Store.open(s)
    shutil.rmtree(index_dir(s, store.version))
    r = run(s.data_dir, "doctor")
    assert r.exit_code == 1 and len(problems(r.output)) == 1, r.output
    assert "no local index" in r.output and "fix: `papers doctor --repair`" in r.output
    r = run(s.data_dir, "doctor", "--repair")
    assert "repaired: rebuilt the local index" in r.output and r.exit_code == 0, r.output

    # Chunks of a paper the catalog does not know (what a killed ingest can leave).
    store = Store.open(s)
    store.chunks.add(ids=["ghost:0"], documents=["A ghost chunk."], metadatas=[{"paper_id": "ghost"}],
                     embeddings=[[1.0] + [0.0] * 383])
    r = run(s.data_dir, "doctor")
    lines = problems(r.output)
    assert r.exit_code == 1 and any("1 papers missing from the catalog" in x and "--repair" in x for x in lines), lines
    r = run(s.data_dir, "doctor", "--repair")
    assert "deleted the chunks of 1 papers" in r.output and r.exit_code == 0, r.output
    assert "ghost" not in Store.open(s).chunk_paper_ids()

    # A catalog record that disagrees with its chunks: marked, then re-embedded by the next ingest.
    store = Store.open(s)
    pid = next(iter(store.catalog()))
    got = store.papers.get(ids=[pid], include=["metadatas"])
    meta = dict(got["metadatas"][0], content_hash="0" * 12)
    store.papers.update(ids=[pid], metadatas=[meta])
    r = run(s.data_dir, "doctor")
    assert any("disagree with the catalog" in x and "`papers ingest`" in x for x in problems(r.output)), r.output
    r = run(s.data_dir, "doctor", "--repair")
    assert "marked 1 papers for re-embedding" in r.output and "interrupted" in r.output and r.exit_code == 1
    report = ingest(s, [tiny_corpus], embedder=embedder, progress=False)
    assert pid in report.reembedded
    r = run(s.data_dir, "doctor")
    assert r.exit_code == 0 and "no problems found" in r.output, r.output


def synthetic_store(data: Path, n_chunks: int = 1600) -> Path:
    """A store with enough chunks that Chroma persists its vector index (HNSW) to disk, without the model."""
    s = make_settings(data)
    store = Store.open(s, create=True, dim=384)
    rng = np.random.default_rng(0)
    target = store.begin_update()
    for start in range(0, n_chunks, 400):
        ids = [f"p{i // 4:04d}:{i % 4}" for i in range(start, start + 400)]
        vecs = rng.normal(size=(400, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.chunks.add(ids=ids, embeddings=vecs.tolist(),
                         documents=[f"Method{i // 4:04d} reaches {i % 97} percent on task {i % 4}." for i in
                                    range(start, start + 400)],
                         metadatas=[{"paper_id": f"p{i // 4:04d}", "label": f"Method{i // 4:04d}",
                                     "source": "synthetic.jsonl", "position": i // 4 + 1} for i in
                                    range(start, start + 400)])
    from rag.index.store import CatalogEntry

    entries = [CatalogEntry(f"p{j:04d}", f"h{j}", f"Method{j:04d}", "synthetic.jsonl", "/x/synthetic.jsonl", j + 1, 4,
                            "c", text=f"Method{j:04d} is a synthetic paper with four chunks.")
               for j in range(n_chunks // 4)]
    for i in range(0, len(entries), 200):
        store.write_catalog(entries[i:i + 200], [[1.0] + [0.0] * 383] * len(entries[i:i + 200]))
    publish_full_index(s, store, target)
    store.commit(target)
    return s.chroma_dir


@pytest.mark.slow
def test_damaged_vector_index_names_doctor_and_is_repaired_without_reembedding(tmp_path: Path) -> None:
    data = tmp_path / "data"
    chroma = synthetic_store(data)
    q = "What does Method0007 reach?"
    before = run_process(data, "ask", "--mode", "extractive", q)
    assert before.exit_code == 0, before.output
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    damaged = 0
    for f in glob.glob(str(chroma / "*" / "data_level0.bin")):
        size = os.path.getsize(f)
        if size > 100_000:
            with open(f, "r+b") as fh:
                fh.truncate(size // 3)
            damaged += 1
    assert damaged >= 1

    for args in (["ask", q], ["ingest", str(tmp_path / "nothing-here")], ["list"], ["cite", "Method0007"]):
        r = run_process(data, *args)
        assert r.exit_code == 1, (args, r.exit_code, r.output)
        assert "papers doctor" in r.output and "InternalError" not in r.output and "Error executing plan" not in \
            r.output.split("(")[0], (args, r.output)
        assert "unchanged" not in r.output, r.output

    r = run_process(data, "doctor")
    lines = problems(r.output)
    assert r.exit_code == 1 and len(lines) == 1 and "vector index" in lines[0] and "--repair" in lines[0], r.output
    r = run_process(data, "doctor", "--repair")
    assert r.exit_code == 0 and "rebuilt the vector index from the local index's vectors (1600 chunks" in r.output, \
        r.output
    after = run_process(data, "ask", "--mode", "extractive", q)
    assert after.exit_code == 0 and after.output.split("(extractive")[0] == before.output.split("(extractive")[0]


def test_damaged_vector_index_without_a_local_copy_needs_rebuild(tmp_path: Path) -> None:
    """What cannot be repaired without re-embedding says so, naming `papers ingest --rebuild`."""
    from rag.index.doctor import Checkup, Finding, repair

    data = tmp_path / "data"
    s = make_settings(data)
    synthetic_store(data, n_chunks=400)
    shutil.rmtree(data / "index")
    store = Store.open(s)
    with pytest.raises(StoreError, match="papers ingest --rebuild"):
        repair(s, Checkup([Finding("the vector index of the chunks cannot be read", "")], "", store))


@pytest.mark.slow
def test_garbage_pages_in_the_database_give_one_finding_and_the_rebuild_fixes_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    chroma = synthetic_store(data)
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    db = chroma / "chroma.sqlite3"
    pages = os.path.getsize(db) // 4096
    with open(db, "r+b") as fh:  # eight pages of noise in the middle of the file, as a failing disk leaves it
        for i in range(8):
            fh.seek((pages // 2 + 3 * i) * 4096)
            fh.write(np.random.default_rng(i).bytes(4096))
    checked = run_process(data, "doctor")
    assert checked.exit_code == 1, checked.output
    assert "Traceback" not in checked.output and "panicked" not in checked.output, checked.output
    problems = [ln for ln in checked.output.splitlines() if ln.startswith("problem:")]
    assert len(problems) == 1 and "`papers ingest --rebuild`" in problems[0], checked.output
