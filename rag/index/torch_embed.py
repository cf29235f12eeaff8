"""Ingest embedding in bf16 on CPUs that compute it natively (AVX512-BF16, AMX-BF16).

bf16 matmuls run about twice as fast as fp32 there, and the vectors stay within cosine 0.9999 of fp32 torch's
(tests/test_embed.py), so a store they fill is an fp32 store: questions keep the fp32 ONNX path. Elsewhere
torch emulates bf16, slower than fp32, so this embedder is only chosen where `native_bf16()` holds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from rag.index.onnx_embed import BatchedEmbedding

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from sentence_transformers import SentenceTransformer


@lru_cache(maxsize=1)
def native_bf16() -> bool:
    """True when torch's CPU kernels have bf16 instructions: AVX512-BF16 (Intel Cooper Lake and Sapphire Rapids
    on, AMD Zen 4 on) or AMX tiles (Intel Sapphire Rapids on). Uses torch's own CPU feature checks."""
    try:
        import torch.cpu
    except ImportError:
        return False
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private helpers: absent means no
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


class Bf16Embedding(BatchedEmbedding):
    """The sentence-transformers model run under bf16 autocast, with the batching of the ONNX embedder.

    Autocast, not bf16 weights: it keeps layer norms, softmax and the pooling in fp32, for vectors closer to
    fp32 (cosine mean 0.99998 against 0.99995 on SciFact chunks), leaves the fp32 weights untouched, and
    is fast enough for the ingest goal (see benchmarks/README.md). Torch releases the GIL in its kernels, so
    ingest's worker thread embeds while the main thread writes to Chroma.
    """

    engine = "torch-bf16"

    def __init__(self, model: SentenceTransformer, name: str, embed_batch_size: int = 32, runtime: str = "") -> None:
        self._model = model  # a SentenceTransformer on the CPU, fp32 weights
        self.model_name = f"torch-bf16:{name}"
        self.runtime = runtime
        self.embed_batch_size = embed_batch_size

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, truncated as sentence-transformers truncates (whitespace stripped first)."""
        return self._model.tokenizer([t.strip() for t in texts], truncation=True,
                                     max_length=self._model.max_seq_length)["input_ids"]

    def run_batch(self, ids: list[list[int]]) -> NDArray[np.float32]:
        """L2-normalised fp32 vectors of one batch, padded to its longest text. Autocast and inference mode are
        per thread, so they are entered here, on the thread that runs the model."""
        import torch

        features = self._model.tokenizer.pad({"input_ids": ids}, return_tensors="pt")
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            out = self._model(dict(features))["sentence_embedding"]
        return torch.nn.functional.normalize(out.float(), dim=-1).numpy()
