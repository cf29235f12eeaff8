"""The same ingest and queries against a real `chroma run` server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.index.ingest import ingest
from rag.service import Assistant
from tests.conftest import free_port, make_settings

pytestmark = pytest.mark.slow


@pytest.fixture()
def chroma_server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    port = free_port()
    exe = Path(sys.executable).with_name("chroma")
    log = open(tmp_path / "chroma.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([str(exe), "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
    url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError((tmp_path / "chroma.log").read_text()) from None
            time.sleep(0.3)
    yield "127.0.0.1", port
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


def test_ingest_and_ask_through_chroma_server(tmp_path: Path, tiny_corpus: Path, chroma_server, embedder) -> None:
    host, port = chroma_server
    s = make_settings(tmp_path / "local", chroma_host=host, chroma_port=port)
    report = ingest(s, [tiny_corpus], embedder=embedder, progress=False)
    assert report.total_papers == 3 and not (tmp_path / "local" / "chroma").exists()
    again = ingest(s, [tiny_corpus], embedder=embedder, progress=False)
    assert again.unchanged == 3 and not again.changed

    assistant = Assistant(s)
    a = assistant.ask("How much memory does FooNet save on LongBench?")
    assert not a.abstained and a.citations[0].label == "FooNet" and "40%" in a.answer
    lookup = assistant.cite("chemistry benchmark")
    assert lookup[0].label == "BarBench"

    import chromadb

    client = chromadb.HttpClient(host=host, port=port)
    assert client.get_collection("papers_chunks").count() == sum(
        e.n_chunks for e in assistant.retriever.store.catalog().values())


def test_a_shared_server_keeps_removals_and_refuses_a_rebuild(tmp_path: Path, tiny_corpus: Path, chroma_server,
                                                              embedder) -> None:
    from rag.index.ingest import remove
    from rag.index.store import Store, StoreError

    host, port = chroma_server
    one = make_settings(tmp_path / "one", chroma_host=host, chroma_port=port)
    other = make_settings(tmp_path / "other", chroma_host=host, chroma_port=port)
    ingest(one, [tiny_corpus], embedder=embedder, progress=False)
    gone = sorted(Store.open(one).catalog(with_text=False))[0]
    remove(one, [gone], embedder=embedder, progress=False)
    again = ingest(other, [tiny_corpus], embedder=embedder, progress=False)  # another data dir, same server
    assert gone not in Store.open(other).catalog(with_text=False) and not again.added
    back = remove(other, [gone], undo=True, embedder=embedder, progress=False)  # undone from the other side
    assert back.added == [gone]
    with pytest.raises(StoreError, match="refused on the shared Chroma server"):
        ingest(one, [tiny_corpus], rebuild=True, embedder=embedder, progress=False)
    assert gone in Store.open(one).catalog(with_text=False)  # nothing deleted
