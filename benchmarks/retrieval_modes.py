"""Compare dense, BM25 and fused retrieval (and chunk sizes) on the hand-written questions.

    python benchmarks/retrieval_modes.py [--chunk-tokens 48 96 160] [--questions FILE ...]

Builds a throw-away index per chunk size under a temporary folder, asks every answerable question in each
mode and prints hit@1, hit@5, MRR, nDCG@5 and recall@5 of the gold papers.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.metrics import retrieval_scores  # noqa: E402
from rag.index.ingest import ingest  # noqa: E402
from rag.answer.retrieve import Retriever  # noqa: E402
from rag.settings import load_settings  # noqa: E402


def load_questions(paths: list[Path]) -> list[dict]:
    out = []
    for p in paths:
        out += [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in out if q["gold"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunk-tokens", type=int, nargs="+", default=[32])
    ap.add_argument("--questions", type=Path, nargs="+",
                    default=[ROOT / "tests/data/dev_questions.jsonl"])
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    questions = load_questions(args.questions)
    print(f"{len(questions)} answerable questions from {', '.join(p.name for p in args.questions)}")
    print(f"{'chunk':>5} {'mode':7} {'hit@1':>6} {'hit@5':>6} {'MRR':>6} {'nDCG@5':>7} {'rec@5':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.chunk_tokens:
            settings = load_settings(data_dir=Path(tmp) / f"c{size}", chunk_tokens=size,
                                     corpus_paths=[ROOT / "corpus"], chroma_host=None)
            ingest(settings, progress=False)
            retriever = Retriever(settings)
            for mode in ("dense", "bm25", "hybrid"):
                sums: dict[str, float] = {}
                for q in questions:
                    res = retriever.retrieve(q["question"], k=args.k, mode=mode)
                    scores = retrieval_scores([p.paper_id for p in res.papers], set(q["gold"]), args.k)
                    for name, v in scores.items():
                        sums[name] = sums.get(name, 0.0) + v
                n = len(questions)
                print(f"{size:>5} {mode:7} {sums['hit@1'] / n:6.3f} {sums[f'hit@{args.k}'] / n:6.3f} "
                      f"{sums['mrr'] / n:6.3f} {sums[f'ndcg@{args.k}'] / n:7.3f} {sums[f'recall@{args.k}'] / n:6.3f}")


if __name__ == "__main__":
    main()
