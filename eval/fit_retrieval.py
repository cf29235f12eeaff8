"""Fit the paper-ranking fusion weights (rag/answer/retrieve.py) on SciFact train claims and the project's questions.

    python eval/fit_retrieval.py [--scifact-store DIR] [--seed-store DIR] [--out rag/answer/fitted/retrieval.json]

Every question is looked up once through Retriever.signals (the same lookups `papers ask` makes); the weights
of the fused rankings and the fusion constant are then chosen by coordinate ascent over a small grid, which
needs nothing but the rankings. Coordinate ascent over a grid rather than a learned ranker: there are seven
numbers, the objective (nDCG) is not differentiable, and a grid cannot overfit beyond its few steps.

The objective is the mean of SciFact nDCG@10 and the project's questions' nDCG@5 (the same measure on both, and
one that counts every relevant paper of a list or a comparison), so a weight that helps one corpus and hurts the
other is not chosen. Held-out figures come from 5-fold cross-validation (fold f of both sets is
left out, the rest fitted); the final weights are fitted on everything and written with those figures.
Refit on your own corpus by pointing --seed-store/--questions at it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np  # noqa: E402

from eval.metrics import hit_at, ndcg_at, recall_at, reciprocal_rank  # noqa: E402
from rag.answer import fitted  # noqa: E402
from rag.answer.retrieve import LISTS, FusionWeights, weighted_rrf  # noqa: E402

GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
K_GRID = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 100.0)
FOLDS = 5
ALL_ON = FusionWeights(dict.fromkeys(LISTS, 1.0), 60.0)
NAMES = list(LISTS)


def collect(retriever, questions: list[tuple[str, str, set[str]]]) -> list[dict]:  # noqa: ANN001
    """Every ranking of every question (id, text, gold), from one lookup each."""
    out = []
    for qid, text, gold in questions:
        sig = retriever.signals(text, fusion=ALL_ON)
        out.append({"id": qid, "gold": gold, "rankings": sig.rankings if sig else {}})
    return out


class Batch:
    """Rankings as padded arrays, so one weight setting is scored over all questions in a few numpy calls."""

    def __init__(self, records: list[dict], k_cut: int) -> None:
        self.k_cut = k_cut
        cands = [list(dict.fromkeys(p for n in NAMES for p in r["rankings"].get(n, []))) for r in records]
        width = max((len(c) for c in cands), default=1) or 1
        self.ranks = np.full((len(records), len(NAMES), width), np.inf, dtype=np.float64)
        self.gold = np.zeros((len(records), width), dtype=bool)
        self.n_gold = np.array([len(r["gold"]) for r in records], dtype=np.float64)
        for qi, (r, c) in enumerate(zip(records, cands)):
            col = {p: j for j, p in enumerate(c)}
            for li, n in enumerate(NAMES):
                for rank, p in enumerate(r["rankings"].get(n, []), 1):
                    self.ranks[qi, li, col[p]] = rank
            for p in r["gold"]:
                if p in col:
                    self.gold[qi, col[p]] = True
        self.valid = np.isfinite(self.ranks).any(axis=1)
        discounts = 1.0 / np.log2(np.arange(2, k_cut + 2))
        self.discounts = discounts
        self.ideal = np.array([discounts[:int(min(g, k_cut))].sum() for g in self.n_gold])

    def scores(self, w: np.ndarray, k: float, rows: np.ndarray) -> dict[str, float]:
        fused = (w[None, :, None] / (k + self.ranks[rows])).sum(axis=1)
        fused[~self.valid[rows]] = -1.0
        order = np.argsort(-fused, axis=1, kind="stable")
        gold = np.take_along_axis(self.gold[rows], order, axis=1) & (np.take_along_axis(fused, order, axis=1) > 0)
        top = gold[:, :self.k_cut]
        ndcg = (top * self.discounts[None, :top.shape[1]]).sum(axis=1) / np.maximum(self.ideal[rows], 1e-12)
        first = np.where(gold.any(axis=1), gold.argmax(axis=1) + 1, np.inf)
        return {"ndcg": float(ndcg.mean()), "mrr": float((1.0 / first).mean()), "hit1": float(gold[:, 0].mean())}


def objective(sf: Batch, seed: Batch, w: np.ndarray, k: float, sf_rows: np.ndarray, seed_rows: np.ndarray) -> float:
    return 0.5 * sf.scores(w, k, sf_rows)["ndcg"] + 0.5 * seed.scores(w, k, seed_rows)["ndcg"]


def fit(sf: Batch, seed: Batch, sf_rows: np.ndarray, seed_rows: np.ndarray,
        sweeps: int = 3) -> tuple[np.ndarray, float]:
    """Coordinate ascent from equal weights: each weight (and k) in turn takes its best grid value."""
    w = np.ones(len(NAMES))
    k = 60.0
    best = objective(sf, seed, w, k, sf_rows, seed_rows)
    for _ in range(sweeps):
        improved = False
        for i in range(len(NAMES) + 1):
            for value in (K_GRID if i == len(NAMES) else GRID):
                cw, ck = w.copy(), k
                if i == len(NAMES):
                    ck = value
                else:
                    cw[i] = value
                if not cw.any():
                    continue
                got = objective(sf, seed, cw, ck, sf_rows, seed_rows)
                if got > best + 1e-9:
                    best, w, k, improved = got, cw, ck, True
        if not improved:
            break
    return w, k


def measured(records: list[dict], weights: dict[str, float], k: float, cut: int, types: dict[str, str] | None = None
             ) -> dict[str, float]:
    """Figures of one weight setting with the runtime fusion (rag.answer.retrieve.weighted_rrf) and eval.metrics."""
    out: dict[str, list[float]] = {}
    for r in records:
        fused = weighted_rrf(r["rankings"], weights, k)
        ranked = sorted(fused, key=fused.get, reverse=True)
        row = {f"ndcg@{cut}": ndcg_at(ranked, r["gold"], cut), f"recall@{cut}": recall_at(ranked, r["gold"], cut),
               "hit@1": hit_at(ranked, r["gold"], 1), "mrr": reciprocal_rank(ranked, r["gold"])}
        if types and types.get(r["id"]) == "paraphrase":
            row["paraphrase_hit@1"] = row["hit@1"]
        for name, v in row.items():
            out.setdefault(name, []).append(v)
    return {name: round(float(np.mean(v)), 4) for name, v in out.items()}


def folds(n: int, seed: int = 13) -> np.ndarray:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    f = np.zeros(n, dtype=int)
    for pos, i in enumerate(order):
        f[i] = pos % FOLDS
    return f


def seed_questions(path: Path) -> tuple[list[tuple[str, str, set[str]]], dict[str, str]]:
    qs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [(q["id"], q["question"], set(q["gold"])) for q in qs if q["gold"]], {q["id"]: q["type"] for q in qs}


def open_retriever(data_dir: Path, ingest_paths: list[Path] | None = None):  # noqa: ANN201
    from rag.answer.retrieve import Retriever
    from rag.settings import load_settings

    settings = load_settings(data_dir=data_dir, _env_file=os.devnull)
    if ingest_paths is not None:
        from rag.index.ingest import ingest

        ingest(settings, ingest_paths, progress=False)  # a no-op when the store is up to date
    return Retriever(settings)


def cross_validate(sf_records: list[dict], seed_records: list[dict], types: dict[str, str]) -> dict:
    """5-fold held-out figures of the fitting procedure, and the weights fitted on everything."""
    sf, seed = Batch(sf_records, 10), Batch(seed_records, 5)
    sf_fold, seed_fold = folds(len(sf_records)), folds(len(seed_records))
    held_sf: list[dict] = []
    held_seed: list[dict] = []
    fold_weights = []
    for f in range(FOLDS):
        w, k = fit(sf, seed, np.flatnonzero(sf_fold != f), np.flatnonzero(seed_fold != f))
        weights = {n: float(x) for n, x in zip(NAMES, w) if x > 0}
        fold_weights.append({"weights": weights, "k": k})
        held_sf += [dict(r, w=weights, k=k) for r, g in zip(sf_records, sf_fold) if g == f]
        held_seed += [dict(r, w=weights, k=k) for r, g in zip(seed_records, seed_fold) if g == f]

    def heldout(records: list[dict], cut: int, kinds: dict[str, str] | None = None) -> dict[str, float]:
        per = [measured([r], r["w"], r["k"], cut, kinds) for r in records]
        names = dict.fromkeys(m for p in per for m in p)
        return {m: round(float(np.mean([p[m] for p in per if m in p])), 4) for m in names}

    w, k = fit(sf, seed, np.arange(len(sf_records)), np.arange(len(seed_records)))
    weights = {n: float(x) for n, x in zip(NAMES, w) if x > 0}
    baseline = {"chunks": 1.0}
    result = {
        "k": k, "weights": weights,
        "fitted_by": "eval/fit_retrieval.py",
        "objective": "0.5 SciFact train nDCG@10 + 0.5 eval/questions.jsonl nDCG@5",
        "heldout_5fold": {"scifact_train": heldout(held_sf, 10), "questions": heldout(held_seed, 5, types)},
        "in_sample": {"scifact_train": measured(sf_records, weights, k, 10),
                      "questions": measured(seed_records, weights, k, 5, types)},
        "before (chunk-level fusion only)": {"scifact_train": measured(sf_records, baseline, 60, 10),
                                             "questions": measured(seed_records, baseline, 60, 5, types)},
        "fold_fits": fold_weights,
    }
    return result


def main() -> None:
    from eval.scifact import default_dir, ensure_ingested, load_claims

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scifact", type=Path, default=None, help="SciFact folder (default ../shared/scifact)")
    ap.add_argument("--scifact-store", type=Path, default=ROOT / "benchmarks/results/scifact",
                    help="data dir holding the ingested SciFact corpus (ingested there when empty)")
    ap.add_argument("--seed-store", type=Path, default=ROOT / "benchmarks/results/seed",
                    help="data dir for the project's corpus/ (ingested there, a no-op when up to date)")
    ap.add_argument("--questions", type=Path, default=ROOT / "eval/questions.jsonl")
    ap.add_argument("--out", type=Path, default=fitted.source_path(fitted.RETRIEVAL))
    ap.add_argument("--note", default="", help="what the fit was run on, kept in the output")
    ap.add_argument("--records", type=Path, default=None,
                    help="cache of the looked-up rankings: read when it exists, else written (refits in seconds)")
    args = ap.parse_args()
    folder = args.scifact or default_dir()

    t0 = time.perf_counter()
    questions, types = seed_questions(args.questions)
    if args.records and args.records.exists():
        cached = json.loads(args.records.read_text())
        sf_records, seed_records = ([dict(r, gold=set(r["gold"])) for r in cached[name]] for name in ("sf", "seed"))
    else:
        sf_retriever = open_retriever(args.scifact_store)
        ensure_ingested(sf_retriever.settings, folder)
        claims = load_claims(folder)
        sf_records = collect(sf_retriever, [(c.id, c.claim, c.gold) for c in claims])
        seed_records = collect(open_retriever(args.seed_store, [ROOT / "corpus"]), questions)
        if args.records:
            args.records.parent.mkdir(parents=True, exist_ok=True)
            args.records.write_text(json.dumps({name: [dict(r, gold=sorted(r["gold"])) for r in recs]
                                                for name, recs in (("sf", sf_records), ("seed", seed_records))}))
    print(f"looked up {len(sf_records)} SciFact claims and {len(seed_records)} questions in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)

    result = cross_validate(sf_records, seed_records, types)
    result["data"] = {"scifact_train_claims": len(sf_records), "questions": len(seed_records), "note": args.note}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({key: result[key] for key in ("k", "weights", "heldout_5fold", "in_sample",
                                                    "before (chunk-level fusion only)")}, indent=1))


if __name__ == "__main__":
    main()
