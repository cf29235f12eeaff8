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
from typing import Any

ONNX_OPSET = 17


def onnx_path(model_dir: str, cache_dir: Path) -> Path:
    """Where the exported model lives: keyed by the source folder and its weights' size and time."""
    weights = next((Path(model_dir) / n for n in ("model.safetensors", "pytorch_model.bin")
                    if (Path(model_dir) / n).exists()), Path(model_dir))
    stat = weights.stat()
    key = hashlib.sha1(f"{Path(model_dir).resolve()}|{stat.st_size}|{int(stat.st_mtime)}".encode()).hexdigest()[:12]
    return cache_dir / f"{Path(model_dir).name}-{key}.onnx"


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


class OnnxEmbedding:
    """Question embedder on onnxruntime and the `tokenizers` library: no torch or llama-index import.

    It offers the methods of llama-index's BaseEmbedding that the query path calls; being a plain class keeps
    llama-index (a 2 s import) off that path.
    """

    def __init__(self, onnx_file: Path, model_dir: str, embed_batch_size: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.model_name = f"onnx:{Path(model_dir).name}"
        self.embed_batch_size = embed_batch_size
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        tok.enable_truncation(max_length=_max_length(model_dir))
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tok

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        out: list[list[float]] = []
        for i in range(0, len(texts), self.embed_batch_size):
            encodings = self._tokenizer.encode_batch(texts[i:i + self.embed_batch_size])
            feed = {
                "input_ids": np.asarray([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.asarray([e.type_ids for e in encodings], dtype=np.int64),
            }
            out += self._session.run(None, feed)[0].tolist()
        return out

    def get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    def get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def get_text_embedding_batch(self, texts: list[str], **_: Any) -> list[list[float]]:
        return self._embed(list(texts))
