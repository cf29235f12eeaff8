"""Crash consistency: a `papers ingest` SIGKILLed at any of its writes, then finished by the next ingest, leaves
exactly what a clean build of the same files gives: the same answers, papers, chunks and local index.

The ingest under test adds, edits, deletes and renames papers over several batches (PAPERS_INGEST_BATCH_PAPERS=3).
PAPERS_TEST_KILL_AT_WRITE=N makes the process SIGKILL itself just before its Nth write to the store or the
local index; N runs from 1 until an ingest completes, so every write of that ingest is a kill point. Each
process is a real `papers` process forked from tests/forkserver.py (which only saves the library imports).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .test_chroma_server import chroma_server  # noqa: F401  (the `chroma run` fixture)

ROOT = Path(__file__).resolve().parents[2]
TREES = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ironwood", "Juniper", "Kapok",
         "Larch", "Maple", "Nutmeg", "Oak", "Pine", "Quince", "Rowan", "Spruce", "Teak", "Umbrella", "Walnut",
         "Yew", "Zelkova", "Acacia", "Banyan", "Cypress", "Damson", "Ebony", "Fig", "Guava", "Holly", "Ivy",
         "Jujube", "Kumquat", "Lime", "Mango", "Neem", "Olive", "Papaya"]
TASKS = ["false alarms", "missed detections", "wasted compute", "memory use", "latency", "labelling cost",
         "energy use", "parameter count"]
BATCH = 3


def abstract(i: int, percent: int) -> str:
    name = f"{TREES[i]}Net"
    return (f"We propose {name}, a method for {TASKS[i % len(TASKS)]} in sensor networks. "
            f"{name} yields {percent} percent fewer {TASKS[i % len(TASKS)]} than the strongest baseline.")


def question(i: int) -> str:
    return f"How many fewer {TASKS[i % len(TASKS)]} does {TREES[i]}Net have?"


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def before(corpus: Path) -> None:
    """The indexed state: explicit ids, hash ids, a paper list, a file to rename and a file to delete."""
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    write_jsonl(corpus / "a.jsonl", [{"id": TREES[i].lower(), "abstract": abstract(i, 10 + i)} for i in range(8)])
    write_jsonl(corpus / "b.jsonl", [{"abstract": abstract(i, 10 + i)} for i in range(8, 12)])
    (corpus / "old_name.txt").write_text(f"{TREES[12]}Net\n\n{abstract(12, 22)}\n")
    (corpus / "gone.md").write_text(f"# {TREES[13]}Net\n\n{abstract(13, 23)}\n")
    (corpus / "list.txt").write_text("Sensor papers 2026\n\n" + "\n\n".join(abstract(i, 10 + i) for i in (14, 15, 16)))


def after(corpus: Path) -> None:
    """What the killed ingest brings in: edits (40 -> 45 percent style), deletions, a rename, moved lines,
    and enough new papers for several batches."""
    records = [{"id": TREES[i].lower(), "abstract": abstract(i, 10 + i)} for i in range(8)]
    records[3]["abstract"] = abstract(3, 45)  # dogwood: edited in place, same id
    records[1]["abstract"] = abstract(1, 61)
    del records[6]  # deleted lines
    del records[5]
    write_jsonl(corpus / "a.jsonl", records)
    b = [{"abstract": abstract(i, 10 + i)} for i in range(8, 12)]
    b[0]["abstract"] = abstract(8, 77)  # a hash-id paper edited: a new id replaces the old one
    write_jsonl(corpus / "b.jsonl", b[::-1])  # and every line moved
    (corpus / "old_name.txt").rename(corpus / "new_name.txt")
    (corpus / "gone.md").unlink()
    write_jsonl(corpus / "new.jsonl", [{"id": f"new-{TREES[i].lower()}", "abstract": abstract(i, 30 + i)}
                                       for i in range(17, 31)])


EXPECTED = {3: "45 percent", 1: "61 percent", 8: "77 percent", 12: "22 percent", 20: "50 percent"}
GONE = {5, 6, 13}
QUESTIONS = list(range(31))
BM25_QUERIES = ["fewer false alarms", "sensor networks baseline", "DogwoodNet", "memory use", "latency"]


def fingerprint(data_dir: str) -> dict[str, Any]:
    """Everything a user can observe, read the way the commands read it (runs in a forked child)."""
    from rag.index.snapshot import build_local_index
    from rag.index.store import Store
    from rag.service import Assistant
    from rag.settings import load_settings

    settings = load_settings(_env_file=None, data_dir=Path(data_dir))
    store = Store.open(settings)
    assistant = Assistant(settings)
    local = assistant.retriever.local_index
    full = build_local_index(store)
    facts = {}
    for i in QUESTIONS:
        a = assistant.ask(question(i))
        facts[str(i)] = {"answer": a.answer, "abstained": a.abstained,
                         "citations": [[c.paper_id, c.label, c.source, c.position, c.quote] for c in a.citations]}

    def rows(index: Any) -> dict[str, Any]:
        if index is None:
            return {}
        return {cid: [index.paper_ids[r], index.texts[r], np.asarray(index.vectors[r]).round(5).tolist()]
                for cid, r in index.row_of.items()}

    def bm25(index: Any) -> dict[str, Any]:
        return {q: {index.chunk_ids[r]: round(s, 4) for r, s in index.search(q, index.size)} for q in BM25_QUERIES}

    got = store.chunks.get(include=["documents", "metadatas"])
    catalog = {pid: {k: v for k, v in e.__dict__.items() if k != "source_key"} for pid, e in store.catalog().items()}
    return {
        "pending": store.pending,
        "papers": catalog,
        "listed": [[e.paper_id, e.label, e.source, e.position, e.text] for e in assistant.papers()],
        "chunks": {cid: [doc, meta.get("paper_id"), meta.get("label"), meta.get("source"), meta.get("position")]
                   for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])},
        "local_rows": rows(local), "full_rows": rows(full),
        "local_papers": {p: {k: v for k, v in e.__dict__.items() if k != "source_key"}
                         for p, e in (local.papers.items() if local else [])},
        "local_bm25": bm25(local), "full_bm25": bm25(full),
        "facts": facts,
    }


def _cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y) or 1.0)) if len(x) == len(y) else 0.0


def differences(got: dict[str, Any], want: dict[str, Any], where: str = "") -> list[str]:
    """Paths at which two fingerprints differ. Vectors match at cosine >= 0.9999, the bound within which the
    store treats vectors as the same (rag.index.embed.RUNTIME_FAMILY): batches pad differently, and bf16 kernels round
    differently per batch, while a stale vector of other text is far below it."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}/{k}: missing" for k in want if k not in got]
        out += [f"{where}/{k}: unexpected" for k in got if k not in want]
        for k in want.keys() & got.keys():
            out += differences(got[k], want[k], f"{where}/{k}")
        return out
    if isinstance(want, list) and want and isinstance(want[-1], list) and want[-1] and \
            isinstance(want[-1][0], float):  # a row: [..., vector]
        if len(got) != len(want) or got[:-1] != want[:-1] or _cosine(got[-1], want[-1]) < 0.9999:
            return [f"{where}: {str(got)[:120]} != {str(want)[:120]}"]
        return []
    return [] if got == want else [f"{where}: {str(got)[:160]} != {str(want)[:160]}"]


@pytest.mark.slow
def test_killed_ingest_at_every_write_is_repaired_by_the_next(tmp_path: Path) -> None:
    from tests.forkserver import ForkServer

    corpus = tmp_path / "corpus"
    env = {"PAPERS_ENV_FILE": os.devnull, "PAPERS_INGEST_BATCH_PAPERS": str(BATCH)}

    def ingest(fs: ForkServer, data: Path, kill_at: int | None = None, log: str = "ingest") -> dict[str, Any]:
        extra = {"PAPERS_DATA_DIR": str(data)} | ({"PAPERS_TEST_KILL_AT_WRITE": str(kill_at)} if kill_at else {})
        return fs.run({"cli": ["ingest", "corpus"], "env": env | extra, "cwd": str(tmp_path),
                       "out": str(tmp_path / f"{log}.log")})

    def observe(fs: ForkServer, data: Path, name: str) -> dict[str, Any]:
        result = tmp_path / f"{name}.json"
        reply = fs.run({"call": "tests.index.test_consistency:fingerprint", "kwargs": {"data_dir": str(data)},
                        "result": str(result), "out": str(tmp_path / f"{name}.log")})
        assert reply == {"signal": None, "code": 0}, (tmp_path / f"{name}.log").read_text()[-3000:]
        return json.loads(result.read_text())

    with ForkServer(ROOT, tmp_path / "forkserver.log") as fs:
        before(corpus)
        baseline = tmp_path / "baseline"
        assert ingest(fs, baseline) == {"signal": None, "code": 0}, (tmp_path / "ingest.log").read_text()
        after(corpus)
        clean = tmp_path / "clean"
        assert ingest(fs, clean) == {"signal": None, "code": 0}, (tmp_path / "ingest.log").read_text()
        want = observe(fs, clean, "clean")

        # The clean build itself is right: its own index equals a rebuild, edits are answered, deletions gone.
        assert differences(want["local_rows"], want["full_rows"]) == []
        assert differences(want["local_bm25"], want["full_bm25"]) == []
        for i, text in EXPECTED.items():
            assert text in want["facts"][str(i)]["answer"], (i, want["facts"][str(i)])
        for i in GONE:
            assert all(f"{TREES[i]}Net" != c[1] for f in want["facts"].values() for c in f["citations"])
        assert any(c[2] == "corpus/new_name.txt" for c in want["facts"]["12"]["citations"])

        kill_points, diffs, n = 0, [], 0
        while True:
            n += 1
            data = tmp_path / f"kill-{n}"
            shutil.copytree(baseline, data)
            reply = ingest(fs, data, kill_at=n, log=f"kill-{n}")
            if reply["signal"] is None:  # no write left to kill at: this ingest finished
                assert reply["code"] == 0, (tmp_path / f"kill-{n}.log").read_text()
                break
            assert reply["signal"] == signal.SIGKILL, (reply, (tmp_path / f"kill-{n}.log").read_text()[-2000:])
            kill_points += 1
            if n % 6 == 0:  # before the repair, a reader answers from the store as it is, not the stale index
                killed = observe(fs, data, f"killed-{n}")
                diffs += [f"killed at write {n}, before recovery: {d}"
                          for d in differences(killed["local_rows"], killed["full_rows"])]
            recovered = ingest(fs, data, log=f"recover-{n}")
            assert recovered == {"signal": None, "code": 0}, (tmp_path / f"recover-{n}.log").read_text()
            got = observe(fs, data, f"observed-{n}")
            found = differences(got, want)
            diffs += [f"kill at write {n}: {d}" for d in found]
            shutil.rmtree(data)
        print(f"{kill_points} kill points, {len(diffs)} differences")
        assert kill_points >= 20
        assert diffs == [], "\n".join(diffs[:40])


# --- serving while ingesting -------------------------------------------------------------------------------

SERVE_QUESTION = question(3)  # DogwoodNet
NEW_QUESTION = question(39)  # PapayaNet, added by the ingest


@pytest.mark.slow
def test_serving_during_an_ingest_answers_from_one_version(tmp_path: Path, chroma_server, embedder) -> None:  # noqa: F811
    """A UI process's assistant (Chroma server) asked again and again while an ingest edits DogwoodNet (10 -> 45
    percent) and adds PapayaNet: every step whose paper list did not change meanwhile answers from that list's
    version (never "listed but not answerable", never the old number beside the new text)."""
    import threading
    import time

    from rag.index.ingest import ingest as run_ingest
    from rag.service import Assistant
    from rag.settings import load_settings

    host, port = chroma_server
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    papers = [{"id": TREES[i].lower(), "abstract": abstract(i, 10 + i)} for i in range(12)]
    write_jsonl(corpus / "a.jsonl", papers)
    s = load_settings(_env_file=None, data_dir=tmp_path / "data", chroma_host=host, chroma_port=port,
                      ingest_batch_papers=1)
    run_ingest(s, [corpus], embedder=embedder, progress=False)
    serving = Assistant(s)
    assert "papaya" not in {e.paper_id for e in serving.papers()}

    papers[3]["abstract"] = abstract(3, 45)
    write_jsonl(corpus / "a.jsonl", papers + [{"id": "papaya", "abstract": abstract(39, 33)}]
                + [{"id": f"x{i}", "abstract": abstract(12 + i, 50 + i)} for i in range(6)])
    steps: list[dict] = []
    done = threading.Event()

    def serve() -> None:
        until = None
        while True:
            listed = {e.paper_id: e.text for e in serving.papers()}
            dog = serving.ask(SERVE_QUESTION)
            new = serving.ask(NEW_QUESTION)
            hits = serving.cite("PapayaNet")
            again = {e.paper_id: e.text for e in serving.papers()}
            steps.append({"same": listed == again, "listed": listed, "dog": dog.answer,
                          "new_cited": any(c.paper_id == "papaya" for c in new.citations),
                          "hit": bool(hits) and hits[0].paper_id == "papaya"})
            if done.is_set():  # after the ingest: until the new version is served (or 30 s)
                until = until or time.monotonic() + 30
                if (steps[-1]["same"] and "papaya" in listed) or time.monotonic() > until:
                    return

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    time.sleep(1)
    run_ingest(s, [corpus], embedder=embedder, progress=False)
    done.set()
    worker.join(timeout=120)
    assert not worker.is_alive()
    stable = [x for x in steps if x["same"]]
    old = [x for x in stable if "papaya" not in x["listed"]]
    new = [x for x in stable if "papaya" in x["listed"]]
    assert old and new, (len(old), len(new))
    bad = []
    for x in stable:
        has_new = "papaya" in x["listed"]
        dog_text = x["listed"]["dogwood"]
        number = "45 percent" if "45 percent" in dog_text else "13 percent"
        if x["new_cited"] != has_new or x["hit"] != has_new or number not in x["dog"]:
            bad.append(x)
    print(f"{len(steps)} serving steps during the ingest ({len(old)} old version, {len(new)} new), "
          f"{len(bad)} inconsistent")
    assert bad == []
    seen_new = [("papaya" in x["listed"]) for x in stable]
    assert seen_new == sorted(seen_new), "once the new version is served, the old one never comes back"


def _hold(kind: str, data: Path) -> subprocess.Popen:
    """Another process holding the embedded store: as a reader (a UI) or as a writer (an ingest)."""
    code = ("import sys, time; from pathlib import Path; from rag.settings import load_settings; "
            "from rag.index import store; s = load_settings(_env_file=None, data_dir=Path(sys.argv[1])); "
            + ("store.hold_reader_lock(s)" if kind == "reader" else "held = store.writer_lock(s); held.__enter__()")
            + "; print('held', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(data)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_embedded_store_refuses_a_second_process_instead_of_serving_half_an_update(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rag.frontends.cli import app
    from rag.index.store import StoreError, hold_reader_lock, ingest_running, writer_lock
    from rag.settings import load_settings

    data = tmp_path / "data"
    s = load_settings(_env_file=None, data_dir=data)
    reader = _hold("reader", data)
    try:
        with pytest.raises(StoreError, match="open in another papers process.*chroma run"), writer_lock(s):
            pass
        r = CliRunner().invoke(app, ["ingest", str(tmp_path)], env={"PAPERS_DATA_DIR": str(data)})
        assert r.exit_code == 1 and "open in another papers process" in r.output, r.output
    finally:
        reader.kill()
        reader.wait()
    writer = _hold("writer", data)
    try:
        assert ingest_running(s)
        with pytest.raises(StoreError, match="`papers ingest` is writing"):
            hold_reader_lock(s)
        with pytest.raises(StoreError, match=r"another `papers ingest` \(pid \d+\)"), writer_lock(s):
            pass
    finally:
        writer.kill()  # a killed ingest holds nothing
        writer.wait()
    assert not ingest_running(s)
    with writer_lock(s):
        assert ingest_running(s)
