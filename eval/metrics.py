"""Retrieval metrics against gold paper ids (binary relevance), checked against ranx in the tests."""

from __future__ import annotations

import math
from collections.abc import Sequence


def hit_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """1 if any gold paper is in the top k."""
    return float(any(p in gold for p in ranked[:k]))


def reciprocal_rank(ranked: Sequence[str], gold: set[str]) -> float:
    """1/rank of the first gold paper, 0 if none is retrieved."""
    for i, p in enumerate(ranked, 1):
        if p in gold:
            return 1.0 / i
    return 0.0


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """Share of gold papers found in the top k."""
    return len(gold.intersection(ranked[:k])) / len(gold) if gold else 0.0


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """Normalised discounted cumulative gain with binary gains (the trec_eval/ranx definition)."""
    dcg = sum(1.0 / math.log2(i + 1) for i, p in enumerate(ranked[:k], 1) if p in gold)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return dcg / ideal if ideal else 0.0


def retrieval_scores(ranked: Sequence[str], gold: set[str], k: int = 5) -> dict[str, float]:
    """All retrieval metrics of one question."""
    return {
        "hit@1": hit_at(ranked, gold, 1),
        f"hit@{k}": hit_at(ranked, gold, k),
        "mrr": reciprocal_rank(ranked, gold),
        f"ndcg@{k}": ndcg_at(ranked, gold, k),
        f"recall@{k}": recall_at(ranked, gold, k),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
