"""A fast-start path for embedding questions: the same sentence-transformers model run by onnxruntime.

Importing sentence-transformers (transformers + torch) takes ~8 s here, longer than answering. onnxruntime is
already installed (chromadb needs it) and starts in a fraction of that. sentence-transformers' own ONNX
backend needs optimum, which conflicts with sentence-transformers 6, so the model is exported here once, at
ingest time (when torch is loaded anyway), with mean pooling and normalisation inside the graph.
Tests check that both paths give the same vectors (cosine >= 0.99).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

ONNX_OPSET = 17
# How the int8 copy is made: onnxruntime dynamic quantisation, int8 weights with one scale per output channel.
# Per-tensor scales (the default) gave cosine 0.95-0.98 to the fp32 vectors on SciFact sentences; per-channel
# 0.993 mean, 0.989 min (measured in benchmarks/ingest_scifact.py). Bump the tag when the recipe changes: the
# tag is part of the file name and of the runtime recorded in the store.
INT8_RECIPE = "int8pc1"


def onnx_path(model_dir: str, cache_dir: Path) -> Path:
    """Where the exported model lives: keyed by the source folder and its weights' size and time."""
    weights = next((Path(model_dir) / n for n in ("model.safetensors", "pytorch_model.bin")
                    if (Path(model_dir) / n).exists()), Path(model_dir))
    stat = weights.stat()
    key = hashlib.sha1(f"{Path(model_dir).resolve()}|{stat.st_size}|{int(stat.st_mtime)}".encode()).hexdigest()[:12]
    return cache_dir / f"{Path(model_dir).name}-{key}.onnx"


def int8_path(fp32_file: Path) -> Path:
    """The int8 copy of an export: a file name of its own, so the fp32 export others read is never replaced."""
    return fp32_file.with_name(f"{fp32_file.stem}-{INT8_RECIPE}.onnx")


def quantize_int8(fp32_file: Path, out: Path) -> Path:
    """Write the int8 copy of an fp32 export (dynamic quantisation: weights int8, activations quantised per
    batch at run time), atomically. Needs only onnx and onnxruntime, not torch."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # "consider pre-processing"
    tmp = out.with_name(f"{out.stem}.tmp-{os.getpid()}.onnx")
    try:
        quantize_dynamic(str(fp32_file), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


_DIGESTS: dict[tuple[str, int, int], str] = {}


def weights_digest(model_dir: str) -> str:
    """A short content hash of the model's weights: recorded in the store with the runtime, so vectors from
    other weights under the same model name are never mixed in. Cached per file size and time in-process."""
    weights = next((Path(model_dir) / n for n in ("model.safetensors", "pytorch_model.bin")
                    if (Path(model_dir) / n).exists()), None)
    if weights is None:
        return hashlib.sha1(str(model_dir).encode()).hexdigest()[:12]
    stat = weights.stat()
    key = (str(weights.resolve()), stat.st_size, int(stat.st_mtime))
    if key not in _DIGESTS:
        h = hashlib.sha1()
        with open(weights, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()[:12]
    return _DIGESTS[key]


def export_onnx(model_dir: str, out: Path) -> Path:
    """Export a BERT-style sentence-transformers model (mean pooling, L2-normalised) to ONNX, atomically."""
    import warnings

    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    class Pooled(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    wrapped = Pooled(AutoModel.from_pretrained(model_dir).eval()).eval()
    sample = tokenizer(["a short text", "a slightly longer second text"], padding=True, return_tensors="pt")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp-{os.getpid()}")
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "token_type_ids": {0: "batch", 1: "seq"}, "embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes about constant shapes: the axes are declared dynamic
        torch.onnx.export(wrapped, (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
                          str(tmp), input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["embedding"], dynamic_axes=axes, opset_version=ONNX_OPSET, dynamo=False)
    tmp.replace(out)
    return out


def _max_length(model_dir: str) -> int:
    cfg = Path(model_dir) / "sentence_bert_config.json"
    if cfg.exists():
        return int(json.loads(cfg.read_text()).get("max_seq_length", 256))
    return 256


@runtime_checkable
class TokenBatches(Protocol):
    """An embedder whose tokenising and model runs are separate calls (ingest times and batches them apart)."""

    def encode_ids(self, texts: list[str]) -> list[list[int]]: ...

    def run_batch(self, ids: list[list[int]]) -> NDArray[np.float32]: ...


class BatchedEmbedding:
    """The batching shared by the ingest embedders: subclasses give `encode_ids` (texts to token ids) and
    `run_batch` (ids to vectors); ingest's worker calls those two, so tokenising and the model time apart."""

    embed_batch_size: int = 32

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def run_batch(self, ids: list[list[int]]) -> NDArray[np.float32]:
        raise NotImplementedError

    def embed_texts(self, texts: list[str], batch_size: int | None = None) -> NDArray[np.float32]:
        """Vectors in input order, computed on batches of texts of similar token length (sorted, not padded
        to the longest text overall)."""
        import numpy as np

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        ids = self.encode_ids(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        step = batch_size or self.embed_batch_size
        out = np.zeros((0, 0), dtype=np.float32)
        for start in range(0, len(order), step):
            rows = order[start:start + step]
            vecs = self.run_batch([ids[i] for i in rows])
            if start == 0:  # the first batch says the width
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
        return out

    def get_query_embedding(self, query: str) -> list[float]:
        return self.embed_texts([query])[0].tolist()

    def get_text_embedding(self, text: str) -> list[float]:
        return self.embed_texts([text])[0].tolist()

    def get_text_embedding_batch(self, texts: list[str], **_: Any) -> list[list[float]]:
        return self.embed_texts(list(texts)).tolist() if texts else []


class OnnxEmbedding(BatchedEmbedding):
    """Sentence embedder on onnxruntime and the `tokenizers` library: no torch or llama-index import.

    Used for questions (fast start) and, with the int8 file, for ingest. It offers the methods of llama-index's
    BaseEmbedding that the query path calls; being a plain class keeps llama-index (a 2 s import) off that path.
    `runtime` names the vectors it makes (see rag.index.embed.runtime_id): the store records it.
    """

    def __init__(self, onnx_file: Path, model_dir: str, embed_batch_size: int = 32, threads: int = 0,
                 runtime: str = "") -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.model_name = f"onnx:{Path(model_dir).name}"
        self.runtime = runtime
        self.embed_batch_size = embed_batch_size
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        tok.enable_truncation(max_length=_max_length(model_dir))
        tok.no_padding()  # each batch is padded to its own longest text (see embed_texts)
        self._tokenizer = tok

    @property
    def engine(self) -> str:
        """The PAPERS_EMBED_RUNTIME value this embedder is (ingest reports it)."""
        return "onnx-int8" if self.runtime.startswith("int8") else "onnx"

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text (truncated, unpadded): the part of embedding that runs before the model."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def run_batch(self, ids: list[list[int]]) -> NDArray[np.float32]:
        """Vectors of one batch of token ids, padded to the batch's longest (onnxruntime releases the GIL)."""
        import numpy as np

        width = max(len(i) for i in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        return self._session.run(None, feed)[0]
