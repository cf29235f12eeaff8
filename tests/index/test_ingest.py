"""Incremental ingest: stable ids, only changes embedded, removals, duplicates, bad files lose nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.errors import QuestionError
from rag.index.ingest import REMOVED_FILE, ingest, remove
from rag.index.store import Store, StoreError
from tests.conftest import ABSTRACTS, ROOT, make_settings, write_jsonl


def catalog(settings):
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


def test_removed_papers_leave_store_catalog_and_index_and_stay_out_until_undone(tmp_path: Path, tiny_corpus: Path,
                                                                                counting_embedder) -> None:
    from rag.index.snapshot import build_local_index
    from rag.index.versions import ensure_local_index

    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    before = catalog(s)
    gone = sorted(before)[0]
    report = remove(s, [gone], embedder=counting_embedder, progress=False)
    assert report.removed == [gone] and not report.added and report.total_papers == len(before) - 1

    def consistent() -> set[str]:
        store = Store.open(s)
        index = ensure_local_index(s, store)
        assert set(index.papers) == set(catalog(s)) == set(build_local_index(store).papers)
        assert store.chunks.count() == index.size == sum(e.n_chunks for e in index.papers.values())
        return set(index.papers)

    assert gone not in consistent()
    again = ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)  # the file still holds it
    assert not again.added and gone not in catalog(s)
    assert any("removed with `papers remove`" in w for w in again.warnings)
    with pytest.raises(QuestionError, match="no indexed paper has id 'nope'"):
        remove(s, ["nope"], progress=False)
    with pytest.raises(QuestionError, match="not removed"):
        remove(s, [sorted(before)[1]], undo=True, progress=False)

    back = remove(s, [gone], undo=True, embedder=counting_embedder, progress=False)
    assert back.added == [gone] and consistent() == set(before)
    (s.data_dir / REMOVED_FILE).write_text("{broken")
    with pytest.raises(StoreError, match="removed papers"):
        ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)


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


def test_store_records_runtime_and_refuses_a_mix(tmp_path: Path, tiny_corpus: Path, embedder) -> None:
    from rag.answer.retrieve import Retriever
    from rag.index.embed import ingest_embedder_for

    s = make_settings(tmp_path / "data", embed_runtime="onnx-int8")
    first = ingest(s, [tiny_corpus], embedder=ingest_embedder_for(s), progress=False)
    assert first.embed_runtime.startswith("int8:") and Store.open(s).embed_runtime == first.embed_runtime
    assert Retriever(s).embedder.runtime == first.embed_runtime, "questions are embedded as the chunks were"
    extra = write_jsonl(tmp_path / "more.jsonl", [{"abstract": ABSTRACTS[4]}])
    with pytest.raises(StoreError, match=r"`papers ingest --rebuild`.*PAPERS_EMBED_RUNTIME=onnx-int8"):
        ingest(s, [extra], embedder=embedder, progress=False)  # torch, fp32 vectors
    assert len(catalog(s)) == 3 and Store.open(s).chunks.count() == first.chunks_embedded, "nothing mixed in"
    rebuilt = ingest(s, [tiny_corpus, extra], rebuild=True, embedder=embedder, progress=False)
    assert rebuilt.embed_runtime.startswith("fp32:") and rebuilt.total_papers == 4
    assert not getattr(Retriever(s).embedder, "runtime", "").startswith("int8")


def test_bf16_and_onnx_vectors_share_a_store(tmp_path: Path, tiny_corpus: Path, monkeypatch) -> None:
    """torch-bf16 makes fp32-family vectors: papers added with the fp32 export go into the same store, and the
    store records both runtimes that wrote it."""
    import rag.index.embed
    import rag.index.torch_embed
    from rag.index.embed import ingest_embedder_for

    if not rag.index.torch_embed.native_bf16():
        pytest.skip("this CPU has no native bf16 (AVX512-BF16 or AMX): torch-bf16 is never used here")
    s = make_settings(tmp_path / "data", embed_runtime="auto")
    first = ingest(s, [tiny_corpus], embedder=ingest_embedder_for(s), progress=False)
    assert first.embed_engine == "torch-bf16" and first.embed_runtime.startswith("fp32:")
    monkeypatch.setattr(rag.index.embed, "native_bf16", lambda: False)  # a CPU without: auto means onnx
    extra = write_jsonl(tmp_path / "more.jsonl", [{"abstract": ABSTRACTS[4]}])
    more = ingest(s, [tiny_corpus, extra], embedder=ingest_embedder_for(s), progress=False)
    assert more.embed_engine == "onnx" and more.embed_runtime == first.embed_runtime and more.added
    store = Store.open(s)
    assert store.embed_runtime == first.embed_runtime and store.embed_engines == ["onnx", "torch-bf16"]


def test_cli_says_how_to_get_out_of_a_mix(tmp_path: Path, tiny_corpus: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from rag.frontends.cli import app

    monkeypatch.setenv("PAPERS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PAPERS_ENV_FILE", "/dev/null")
    monkeypatch.setenv("PAPERS_EMBED_RUNTIME", "onnx-int8")
    runner = CliRunner()
    first = runner.invoke(app, ["ingest", "--json", str(tiny_corpus)])
    assert first.exit_code == 0, first.output
    d = json.loads(first.stdout)
    assert d["embed_runtime"].startswith("int8:") and d["interrupted"] is False and d["not_embedded"] == 0
    assert d["embed_engine"] == "onnx-int8"
    assert {"open_store_s", "scan_s", "load_model_s", "chunk_s", "tokenize_s", "embed_s", "write_chunks_s",
            "write_catalog_s", "embed_and_write_s", "local_index_s"} <= set(d["phases"])
    assert d["phases"]["embed_s"] > 0 and d["phases"]["embed_and_write_s"] <= d["seconds"]
    write_jsonl(tiny_corpus / "more.jsonl", [{"abstract": ABSTRACTS[4]}])
    monkeypatch.setenv("PAPERS_EMBED_RUNTIME", "torch")
    refused = runner.invoke(app, ["ingest", str(tiny_corpus)])
    assert refused.exit_code == 1
    assert "papers ingest --rebuild" in refused.output and "PAPERS_EMBED_RUNTIME=onnx-int8" in refused.output


def test_progress_bar_shows_rates(tmp_path: Path, tiny_corpus: Path, counting_embedder, capfd) -> None:
    report = ingest(make_settings(tmp_path / "data"), [tiny_corpus], embedder=counting_embedder, progress=True)
    err = capfd.readouterr().err
    assert "3/3" in err and "paper/s" in err and "chunks/s" in err, err
    assert report.phases["embed_s"] > 0 and all(v >= 0 for v in report.phases.values())


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_the_next_ingest_resumes(tmp_path: Path) -> None:
    """A real SIGINT to a real `papers ingest`: it exits 130 saying how to resume, keeps what it wrote, and the
    next ingest embeds only the rest."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    from rag.index.store import release_reader_lock
    from rag.settings import Settings

    PAPERS_PER_BATCH = Settings.model_fields["ingest_batch_papers"].default

    n = PAPERS_PER_BATCH * 3
    corpus = write_jsonl(tmp_path / "many.jsonl", [
        {"id": f"p{i}", "abstract": f"We study method M{i} for task T{i % 17}. It improves accuracy by "
                                    f"{i % 9}.{i % 7}% on benchmark B{i}."} for i in range(n)])
    env = {**os.environ, "PAPERS_DATA_DIR": str(tmp_path / "data"), "PAPERS_ENV_FILE": "/dev/null",
           "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    cmd = [sys.executable, "-m", "rag.frontends.cli", "ingest", "--json", "--progress", str(corpus)]
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        deadline = time.monotonic() + 900
        # Wait until the first batch is embedded (handed to the writer) and the second is under way.
        while time.monotonic() < deadline and proc.poll() is None:
            done = [int(x) for x in re.findall(rf"(\d+)/{n} \[", err_path.read_text())]
            if done and max(done) > PAPERS_PER_BATCH + 4:
                break
            time.sleep(0.2)
        assert proc.poll() is None, err_path.read_text()[-2000:]
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, err_path.read_text()[-2000:]
    assert "run `papers ingest` again to resume" in err_path.read_text()
    first = json.loads(out)
    assert first["interrupted"] is True and 0 < first["not_embedded"] < n
    settings = make_settings(tmp_path / "data")
    store = Store.open(settings)
    kept = store.catalog()
    assert len(kept) == n - first["not_embedded"] >= PAPERS_PER_BATCH
    assert store.chunks.count() == sum(e.n_chunks for e in kept.values()), "no half-written paper"
    release_reader_lock(settings)  # this test process read the store: let the next ingest write it

    again = subprocess.run(cmd[:-2] + [str(corpus)], env=env, cwd=ROOT, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    second = json.loads(again.stdout)
    assert len(second["added"]) == first["not_embedded"] and second["unchanged"] == len(kept)
    assert second["total_papers"] == n and second["interrupted"] is False
    store = Store.open(settings)
    assert store.chunks.count() == sum(e.n_chunks for e in store.catalog().values())


def test_the_same_id_in_another_file_is_reported_never_a_silent_replacement(tmp_path: Path,
                                                                              counting_embedder) -> None:
    settings = make_settings(tmp_path / "data")
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(first, [{"id": "paper-1", "abstract": ABSTRACTS[0]}])
    write_jsonl(second, [{"id": "paper-1", "abstract": ABSTRACTS[1]}])
    ingest(settings, [first], embedder=counting_embedder, progress=False)
    report = ingest(settings, [second], embedder=counting_embedder, progress=False)
    assert not report.reembedded and not report.added
    assert any("b.jsonl#1: id 'paper-1' is already used by another paper" in p for p in report.problems)
    assert Store.open(settings).get_papers(["paper-1"])["paper-1"].source.endswith("a.jsonl")
    first.unlink()  # the first file is gone: its id is free for the other paper
    report = ingest(settings, [second], embedder=counting_embedder, progress=False)
    assert report.reembedded == ["paper-1"] and not report.problems


def test_an_edited_local_index_is_rebuilt_from_the_store_not_served(tmp_path: Path, tiny_corpus: Path,
                                                                     counting_embedder) -> None:
    from rag.index.versions import TABLE_FILE, ensure_local_index, index_dir

    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    store = Store.open(s)
    table = index_dir(s, store.version) / TABLE_FILE
    data = json.loads(table.read_text())
    original = data["texts"][0]
    data["texts"][0] = original.replace(original.split()[-1], "9.9x")  # still a valid index, other words
    table.write_text(json.dumps(data))
    index = ensure_local_index(s, store)
    assert index is not None and index.texts[0] == original


def test_a_newcomer_with_an_indexed_id_never_takes_it_whatever_the_scan_order(tmp_path: Path,
                                                                               counting_embedder) -> None:
    """The paper indexed under an explicit id keeps it; another file's paper with that id, read first (its name
    sorts first in the folder), is reported and not indexed."""
    settings = make_settings(tmp_path / "data")
    folder = tmp_path / "folder"
    folder.mkdir()
    write_jsonl(folder / "z_first.jsonl", [{"id": "paper-X", "title": "Original", "abstract": ABSTRACTS[0]}])
    ingest(settings, [folder], embedder=counting_embedder, progress=False)
    write_jsonl(folder / "a_impostor.jsonl", [{"id": "paper-X", "title": "Impostor", "abstract": ABSTRACTS[1]}])
    report = ingest(settings, [folder], embedder=counting_embedder, progress=False)
    assert not report.reembedded and not report.added and report.unchanged == 1
    (problem,) = report.problems
    assert problem.startswith("folder/a_impostor.jsonl#1: id 'paper-X' is already used by") or \
        "a_impostor.jsonl#1: id 'paper-X' is already used by" in problem
    assert "z_first.jsonl#1" in problem and "not indexed" in problem
    kept = Store.open(settings).get_papers(["paper-X"])["paper-X"]
    assert kept.source.endswith("z_first.jsonl") and kept.title == "Original"


def test_one_unreadable_path_is_one_line_and_the_others_are_ingested(tmp_path: Path, counting_embedder) -> None:
    """A symlink loop named as a path and a JSON record with a lone surrogate: neither stops the ingest."""
    settings = make_settings(tmp_path / "data")
    good = write_jsonl(tmp_path / "good.jsonl", [{"abstract": ABSTRACTS[0]}])
    (tmp_path / "selfloop").symlink_to("selfloop")
    surrogate = tmp_path / "surrogate.jsonl"
    surrogate.write_text('{"abstract": "' + ABSTRACTS[1].replace("chemistry", "\\udfff") + '"}\n', encoding="utf-8")
    report = ingest(settings, [good, tmp_path / "selfloop", surrogate], embedder=counting_embedder,
                    progress=False)
    assert len(report.added) == 2 and report.total_papers == 2
    (problem,) = report.problems
    assert "selfloop: cannot be read (Symlink loop" in problem
    assert any(w.startswith(f"{report_source(surrogate)}:1: ") for w in report.warnings)
    texts = [e.text for e in catalog(settings).values()]
    assert any("\ufffd" in t for t in texts)


def report_source(path: Path) -> str:
    from rag.corpus.records import display_path

    return display_path(path)
