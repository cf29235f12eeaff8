"""The fusion fit (eval/fit_retrieval.py) on synthetic rankings: its array scoring equals the runtime fusion
scored with eval.metrics, and the fit finds the informative ranking and reports held-out figures."""

from __future__ import annotations

import random

import numpy as np
import pytest

from eval.fit_retrieval import NAMES, Batch, cross_validate, fit, measured


def synthetic(n: int, good: str, seed: int) -> list[dict]:
    """Questions whose gold paper is first in the `good` ranking and at a random place (or absent) elsewhere."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        gold = f"g{i}"
        pool = [f"p{i}-{j}" for j in range(12)]
        rankings = {}
        for name in NAMES:
            ranked = pool[:]
            rnd.shuffle(ranked)
            if name == good:
                ranked.insert(0, gold)
            elif rnd.random() < 0.5:
                ranked.insert(rnd.randrange(len(ranked)), gold)
            rankings[name] = ranked[:10]
        out.append({"id": f"q{i}", "gold": {gold}, "rankings": rankings})
    return out


def test_array_scores_equal_the_runtime_fusion() -> None:
    records = synthetic(30, "bm25_paper", 1)
    batch = Batch(records, 10)
    w = np.array([0.5, 1.0, 0.0, 2.0, 0.25, 1.5, 0.75][:len(NAMES)])
    fast = batch.scores(w, 7.0, np.arange(len(records)))
    slow = measured(records, {n: float(x) for n, x in zip(NAMES, w)}, 7.0, 10)
    assert fast["ndcg"] == pytest.approx(slow["ndcg@10"], abs=1e-4)
    assert fast["mrr"] == pytest.approx(slow["mrr"], abs=1e-4)
    assert fast["hit1"] == pytest.approx(slow["hit@1"], abs=1e-4)


def test_fit_weights_the_informative_ranking_and_reports_held_out_figures() -> None:
    sf, seed = synthetic(60, "dense_paper", 2), synthetic(25, "dense_paper", 3)
    w, k = fit(Batch(sf, 10), Batch(seed, 5), np.arange(60), np.arange(25))
    weights = dict(zip(NAMES, w))
    assert weights["dense_paper"] == max(weights.values()) > 0
    result = cross_validate(sf, seed, {r["id"]: "paraphrase" for r in seed})
    held = result["heldout_5fold"]
    before = result["before (chunk-level fusion only)"]
    assert held["scifact_train"]["hit@1"] > before["scifact_train"]["hit@1"]
    assert held["questions"]["paraphrase_hit@1"] == held["questions"]["hit@1"] > 0.9
    assert len(result["fold_fits"]) == 5
