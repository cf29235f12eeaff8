"""Shared pieces of the benchmark scripts: settings in a scratch folder, chunk texts, a vector cache, stats."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("PAPERS_ENV_FILE", os.devnull)

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

from rag.settings import Settings, load_settings  # noqa: E402

CACHE = ROOT / "benchmarks" / "results" / "vectors"


def bench_settings(data_dir: Path, **overrides: object) -> Settings:
    return load_settings(data_dir=data_dir, **overrides)


def chunk_texts(records: list[dict], settings: Settings) -> list[str]:
    """Exactly the texts ingest embeds for these records (label-prefixed whole-sentence chunks)."""
    from rag.index.chunking import WholeSentenceChunker
    from rag.corpus.scan import Paper
    from rag.index.ingest import make_document
    from rag.corpus.labels import extract_label
    from rag.text import clean_markup, stable_id
    from llama_index.core.schema import MetadataMode

    chunker = WholeSentenceChunker(chunk_tokens=settings.chunk_tokens, include_prev_next_rel=False)
    docs = []
    for i, r in enumerate(records, 1):
        text = clean_markup(r["abstract"])
        paper = Paper(str(r.get("id") or stable_id(r["abstract"])), text, "bench.jsonl", i,
                      extract_label(text, raw=r["abstract"]), stable_id(r["abstract"]))
        docs.append(make_document(paper))
    return [n.get_content(MetadataMode.EMBED) for n in chunker.get_nodes_from_documents(docs)]


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class VectorCache:
    """Vectors of texts, computed once with the real model and kept on disk for the next runs."""

    def __init__(self, name: str) -> None:
        self.dir = CACHE / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.index: dict[str, int] = {}
        self.vectors = None
        if (self.dir / "keys.json").exists():
            import numpy as np

            self.index = {k: i for i, k in enumerate(json.loads((self.dir / "keys.json").read_text()))}
            self.vectors = np.load(self.dir / "vectors.npy", mmap_mode="r")

    def missing(self, texts: list[str]) -> list[str]:
        return list(dict.fromkeys(t for t in texts if _key(t) not in self.index))

    def add(self, texts: list[str], vectors) -> None:  # noqa: ANN001 - numpy array
        import numpy as np

        keys = [k for k, _ in sorted(self.index.items(), key=lambda kv: kv[1])] + [_key(t) for t in texts]
        old = np.asarray(self.vectors) if self.vectors is not None else np.zeros((0, vectors.shape[1]), np.float32)
        merged = np.concatenate([old, np.asarray(vectors, dtype=np.float32)])
        np.save(self.dir / "vectors.npy", merged)
        (self.dir / "keys.json").write_text(json.dumps(keys))
        self.index = {k: i for i, k in enumerate(keys)}
        self.vectors = np.load(self.dir / "vectors.npy", mmap_mode="r")

    def get(self, text: str) -> list[float]:
        return [float(x) for x in self.vectors[self.index[_key(text)]]]


class CachedEmbedding(BaseEmbedding):
    """Ingest's embedder replaced by cache lookups: everything but the model's arithmetic is measured."""

    _cache: VectorCache = PrivateAttr()

    def __init__(self, cache: VectorCache) -> None:
        super().__init__(model_name="cached", embed_batch_size=1024)
        self._cache = cache

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._cache.get(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._cache.get(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._cache.get(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._cache.get(t) for t in texts]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1)))))]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def peak_rss_mb() -> float:
    """Peak resident memory of this process (VmHWM; ru_maxrss would carry a forking parent's peak over)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 2**20


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain text table (also valid Markdown)."""
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    line = "| " + " | ".join(c.ljust(widths[c]) for c in columns) + " |"
    sep = "|" + "|".join("-" * (widths[c] + 2) for c in columns) + "|"
    body = ["| " + " | ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns) + " |" for r in rows]
    return "\n".join([line, sep, *body])


QUERY_PROBE = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from rag.settings import load_settings
from rag.service import Assistant
s = load_settings()
t0 = time.perf_counter()
a = Assistant(s)
a.retriever.warm_up()
load_s = time.perf_counter() - t0
questions = json.loads({questions!r})
from rag.answer.retrieve import _dense_in_index
floor, scan_floor, full = [], [], []
for _ in range({rounds}):
    for q in questions:
        r = a.retriever
        t = time.perf_counter()
        v = r.embedder.get_query_embedding(q)
        r.store.chunks.query(query_embeddings=[v], n_results=s.candidates, include=["distances"])
        r.local_index.search(q, s.candidates)
        floor.append((time.perf_counter() - t) * 1000)
        if r.local_index.size <= s.chunk_scan_limit:  # the dense search the answer makes at this size
            t = time.perf_counter()
            v = r.embedder.get_query_embedding(q)
            _dense_in_index(r.local_index, v, s.candidates, None, {{}})
            r.local_index.search(q, s.candidates)
            scan_floor.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        a.ask(q, mode="extractive")
        full.append((time.perf_counter() - t) * 1000)
rss = [int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(json.dumps({{"load_s": load_s, "floor": floor, "scan_floor": scan_floor, "full": full, "rss_mb": rss}}))
"""


def query_probe(env: dict[str, str], questions: list[str], rounds: int = 2) -> dict:
    """Queries in a fresh process (its memory is the query path's alone): the floor (embed the question, one
    Chroma query, one BM25 query) and the full extractive answer, interleaved so machine noise hits both; on an
    index small enough that the answer scans its vectors instead of querying Chroma (PAPERS_CHUNK_SCAN_LIMIT),
    also the floor with that scan in place of the Chroma query (`scan_floor`)."""
    import subprocess

    code = QUERY_PROBE.format(root=str(ROOT), questions=json.dumps(questions), rounds=rounds)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
