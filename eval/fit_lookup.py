"""Fit the citation-lookup model (rag/answer/lookup.py) and report it on folds it was not fitted on.

    python eval/fit_lookup.py --seed-data DIR --scifact-data DIR [--scifact ../shared/scifact] \
        [--limit N] [--cache FILE] [--write]

Labelled lookups, each asked through the path of `papers cite` (retrieve k = PAPERS_TOP_K, complete, score):
- scifact:  SciFact train claims against a SciFact index; a hit is relevant when it is one of the claim's cited
            abstracts (`cited_doc_ids`);
- seed:     eval/labels/lookups.jsonl against an index of corpus/ (hand labels: the papers that propose or report
            what is asked, or every paper on a topic; `offtopic` lookups have none);
- off-topic: one corpus's queries asked of the other: the seed lookups and eval/questions*.jsonl against the
            SciFact index, the SciFact claims against the seed index; no hit is relevant.

Model: a logistic regression (scikit-learn) on the hit features of rag/answer/lookup.py, each labelled corpus
weighing as much as the other and the off-topic sets half as much each. Thresholds, on the training folds:
`strong_at` is the lowest grid value at which strong hits are relevant at least 92% of the time in each labelled
corpus (two points of margin over the 0.9 goal) and no off-topic query has a strong hit; `weak_at` the highest
at which at most 5% of the hits below it are relevant in each labelled corpus. `rerank` (order hits by the
fitted probability) is kept when it does not lower the training folds' hit@1.

Reported: 5-fold cross-validation (a SciFact claim, or a seed lookup, and its off-topic copy share a fold), each
fold scored with constants fitted without it, next to the previous rule (the best sentence's evidence
probability at evidence.json's strong_at, the retriever's order). `--write` stores the constants fitted on all
data in rag/answer/fitted/lookup.json. The evidence scorer itself was fitted on all SciFact train claims
(eval/fit_evidence.py), so its probabilities are not held out from the SciFact folds here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rag.answer import fitted  # noqa: E402

OUT = fitted.source_path(fitted.LOOKUP)
FOLDS = 5
PRECISION_GOAL, MARGIN = 0.9, 0.02
MISSED_BELOW_WEAK = 0.05
STRONG_GRID = [round(0.3 + 0.01 * i, 2) for i in range(70)]
WEAK_GRID = [round(0.01 * i, 2) for i in range(1, 60)]
SET_WEIGHT = {"scifact": 1.0, "seed": 1.0, "off_sci": 0.5, "off_seed": 0.5}
LABELLED = ("scifact", "seed")


@dataclass
class Item:
    """One lookup asked once: where, its gold papers, and per hit (in the retriever's order) its features."""

    set: str
    qid: str
    query: str
    gold: list[str]
    kind: str
    hits: list[dict[str, Any]] = field(default_factory=list)  # {"paper_id", "features"}
    by_chance: bool = False
    group: str = ""
    fold: int = 0

    @property
    def offtopic(self) -> bool:
        return not self.gold


def _assistant(data_dir: Path) -> Any:
    from rag.service import Assistant
    from rag.settings import load_settings

    a = Assistant(load_settings(data_dir=data_dir, answer_mode="extractive", _env_file=None))
    a.retriever.warm_up()
    return a


def ask(assistant: Any, queries: list[tuple[str, str, list[str], str, str]], name: str) -> list[Item]:
    """(qid, query, gold, kind, group) asked of one index, as `papers cite` asks them."""
    from rag.answer.lookup import LookupConstants, lookup_rows
    from rag.answer.question import clean_question

    unfitted = LookupConstants({}, 0.0, 1.0, 0.0)  # only the features are kept: the fit gives the probabilities

    vocab = assistant.vocabulary()
    out = []
    t = time.time()
    for n, (qid, query, gold, kind, group) in enumerate(queries, 1):
        q = clean_question(query, assistant.settings.max_question_chars)
        r = assistant.retriever.complete(assistant.retriever.retrieve(q))
        rows, by_chance = lookup_rows(q, r, vocab, unfitted)
        rows.sort(key=lambda row: -row.features["rank"])  # the retriever's order, whatever `rerank` says
        out.append(Item(name, qid, query, gold, kind, [{"paper_id": row.paper.paper_id, "features": row.features}
                                                       for row in rows], by_chance, group))
        if n % 100 == 0:
            print(f"  {name}: {n}/{len(queries)} ({time.time() - t:.0f} s)", file=sys.stderr, flush=True)
    return out


def load_queries(scifact: Path, limit: int | None) -> dict[str, list[tuple[str, str, list[str], str, str]]]:
    claims = [json.loads(line) for line in (scifact / "claims_train.jsonl").read_text().splitlines() if line.strip()]
    claims = claims[:limit] if limit else claims
    sci = [(f"c{d['id']}", d["claim"], [str(x) for x in d["cited_doc_ids"]], "claim", f"c{d['id']}") for d in claims]
    lookups = [json.loads(line) for line in (ROOT / "eval/labels/lookups.jsonl").read_text().splitlines()
               if line.strip()]
    seed = [(d["id"], d["query"], list(d["gold"]), d["kind"], d["id"]) for d in lookups]
    questions = []
    for name in ("questions.jsonl", "questions_heldout.jsonl"):
        path = ROOT / "eval" / name
        if path.exists():
            questions += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {"scifact": sci, "seed": seed,
            "off_sci": [(q, text, [], kind, g) for q, text, _, kind, g in seed]
            + [(d["id"], d["question"], [], "question", d["id"]) for d in questions],
            "off_seed": [(q, text, [], kind, g) for q, text, _, kind, g in sci]}


def collect(args: argparse.Namespace) -> list[Item]:
    if args.cache and args.cache.exists():
        return [Item(**d) for d in json.loads(args.cache.read_text())]
    queries = load_queries(args.scifact, args.limit)
    seed = _assistant(args.seed_data)
    items = ask(seed, queries["seed"], "seed") + ask(seed, queries["off_seed"], "off_seed")
    if args.scifact_data:
        sci = _assistant(args.scifact_data)
        items += ask(sci, queries["scifact"], "scifact") + ask(sci, queries["off_sci"], "off_sci")
    if args.cache:
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_text(json.dumps([asdict(it) for it in items]))
    return items


def assign_folds(items: list[Item]) -> None:
    groups = sorted({it.group for it in items})
    random.Random(0).shuffle(groups)
    fold = {g: i % FOLDS for i, g in enumerate(groups)}
    for it in items:
        it.fold = fold[it.group]


# --- model ---------------------------------------------------------------------------------------------

def fit(train: list[Item]) -> Any:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from rag.answer.lookup import LOOKUP_FEATURES, LookupConstants

    X, y, w = [], [], []
    hits_in = {s: sum(len(it.hits) for it in train if it.set == s) for s in SET_WEIGHT}
    for it in train:
        for h in it.hits:
            X.append([h["features"][k] for k in LOOKUP_FEATURES])
            y.append(int(h["paper_id"] in it.gold))
            w.append(SET_WEIGHT[it.set] / max(1, hits_in[it.set]))
    X, y, w = np.asarray(X), np.asarray(y), np.asarray(w) * len(y)
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=5000)
    model.fit((X - mean) / scale, y, sample_weight=w)
    coef = model.coef_[0] / scale
    bias = float(model.intercept_[0] - np.sum(coef * mean))
    c = LookupConstants({k: round(float(v), 5) for k, v in zip(LOOKUP_FEATURES, coef)}, round(bias, 5), 1.0, 0.0)
    choose_thresholds(train, c)
    return c


def scored(items: list[Item], c: Any) -> list[list[tuple[str, float]]]:
    """Per item, (paper id, probability) in the order shown (reordered when `rerank`)."""
    from rag.answer.lookup import probability

    out = []
    for it in items:
        rows = [(h["paper_id"], 0.0 if it.by_chance else probability(h["features"], c)) for h in it.hits]
        if c.rerank:
            rows.sort(key=lambda r: r[1], reverse=True)
        out.append(rows)
    return out


def _precision_ok(items: list[Item], probs: list[list[tuple[str, float]]], t: float) -> bool:
    for s in LABELLED:
        strong = [pid in it.gold for it, rows in zip(items, probs) if it.set == s and not it.offtopic
                  for pid, p in rows if p >= t]
        if strong and sum(strong) / len(strong) < PRECISION_GOAL + MARGIN:
            return False
    return not any(p >= t for it, rows in zip(items, probs) if it.offtopic for _, p in rows)


def _missed_ok(items: list[Item], probs: list[list[tuple[str, float]]], t: float) -> bool:
    for s in LABELLED:
        below = [pid in it.gold for it, rows in zip(items, probs) if it.set == s for pid, p in rows if p < t]
        if below and sum(below) / len(below) > MISSED_BELOW_WEAK:
            return False
    return True


def choose_thresholds(train: list[Item], c: Any) -> None:
    c.rerank = False
    before = hit_at_1(train, scored(train, c))
    c.rerank = True
    after = hit_at_1(train, scored(train, c))
    c.rerank = sum(after.values()) >= sum(before.values())
    probs = scored(train, c)
    c.strong_at = next((t for t in STRONG_GRID if _precision_ok(train, probs, t)), 1.0)
    c.weak_at = max((t for t in WEAK_GRID if t < c.strong_at and _missed_ok(train, probs, t)), default=0.0)


def hit_at_1(items: list[Item], probs: list[list[tuple[str, float]]]) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for it, rows in zip(items, probs):
        if it.set in LABELLED and not it.offtopic and rows:
            out.setdefault(it.set, []).append(float(rows[0][0] in it.gold))
    return {s: sum(v) / len(v) for s, v in out.items()}


def measure(items: list[Item], probs: list[list[tuple[str, float]]], strong: Any) -> dict[str, dict[str, Any]]:
    """Per set: precision of strong hits, share of queries with a gold paper strong, off-topic queries with a
    strong hit, hit@1. `strong(item, paper_id, prob)` says whether a hit is labelled strong."""
    out: dict[str, dict[str, Any]] = {}
    for s in SET_WEIGHT:
        group = [(it, rows) for it, rows in zip(items, probs) if it.set == s]
        if not group:
            continue
        on = [(it, rows) for it, rows in group if not it.offtopic]
        off = [(it, rows) for it, rows in group if it.offtopic]
        flags = [(pid in it.gold) for it, rows in on for pid, p in rows if strong(it, pid, p)]
        m: dict[str, Any] = {"queries": len(group)}
        if on:
            m["strong_precision"] = round(sum(flags) / len(flags), 4) if flags else None
            m["strong_hits"] = len(flags)
            m["gold_strong"] = round(sum(any(pid in it.gold and strong(it, pid, p) for pid, p in rows)
                                         for it, rows in on) / len(on), 4)
            m["hit@1"] = round(sum(bool(rows) and rows[0][0] in it.gold for it, rows in on) / len(on), 4)
        if off:
            m["offtopic_queries"] = len(off)
            m["offtopic_with_strong"] = sum(any(strong(it, pid, p) for pid, p in rows) for it, rows in off)
        out[s] = m
    return out


def before(items: list[Item]) -> dict[str, dict[str, Any]]:
    """The previous rule: strong when the best sentence's evidence probability reaches evidence.json's strong_at
    (and the query is not foreign); hits in the retriever's order."""
    from rag.answer.evidence import current_constants

    at = current_constants().strong_at
    probs = [[(h["paper_id"], h["features"]["evidence"]) for h in it.hits] for it in items]
    return measure(items, probs, lambda it, pid, p: p >= at and not it.by_chance)


def after(items: list[Item], c: Any) -> dict[str, dict[str, Any]]:
    from rag.answer.lookup import strength

    return measure(items, scored(items, c), lambda it, pid, p: strength(p, it.by_chance, c) == "strong")


def cross_validate(items: list[Item]) -> dict[str, Any]:
    folds = []
    for k in range(FOLDS):
        train = [it for it in items if it.fold != k]
        test = [it for it in items if it.fold == k]
        c = fit(train)
        m = {"strong_at": c.strong_at, "weak_at": c.weak_at, "rerank": c.rerank,
             "before": before(test), "after": after(test, c)}
        folds.append(m)
        print(f"fold {k}: {json.dumps(m)}", flush=True)
    return {"folds": folds, "pooled": pooled(items, folds)}


def pooled(items: list[Item], folds: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold figures added up over the folds (counts summed, shares weighted by their queries or hits)."""
    out: dict[str, Any] = {}
    for side in ("before", "after"):
        out[side] = {}
        for s in SET_WEIGHT:
            ms = [f[side][s] for f in folds if s in f[side]]
            if not ms:
                continue
            agg: dict[str, Any] = {"queries": sum(m["queries"] for m in ms)}
            if "hit@1" in ms[0]:
                on = [m["queries"] - m.get("offtopic_queries", 0) for m in ms]
                agg["hit@1"] = round(sum(m["hit@1"] * n for m, n in zip(ms, on)) / sum(on), 4)
                agg["gold_strong"] = round(sum(m["gold_strong"] * n for m, n in zip(ms, on)) / sum(on), 4)
                hits = sum(m["strong_hits"] for m in ms)
                agg["strong_hits"] = hits
                agg["strong_precision"] = round(sum((m["strong_precision"] or 0) * m["strong_hits"] for m in ms)
                                                / hits, 4) if hits else None
            if "offtopic_queries" in ms[0]:
                agg["offtopic_queries"] = sum(m["offtopic_queries"] for m in ms)
                agg["offtopic_with_strong"] = sum(m["offtopic_with_strong"] for m in ms)
            out[side][s] = agg
    return out


def table(cv: dict[str, Any]) -> str:
    lines = ["| set | rule | strong precision | queries with a gold paper strong | off-topic with strong | hit@1 |",
             "|---|---|---|---|---|---|"]
    for s in SET_WEIGHT:
        for side in ("before", "after"):
            m = cv["pooled"][side].get(s)
            if not m:
                continue
            off = f"{m['offtopic_with_strong']} of {m['offtopic_queries']}" if "offtopic_queries" in m else ""
            prec = "" if m.get("strong_precision") is None else f"{m['strong_precision']:.3f} ({m['strong_hits']} hits)"
            gs = f"{m['gold_strong']:.3f}" if "gold_strong" in m else ""
            h1 = f"{m['hit@1']:.3f}" if "hit@1" in m else ""
            lines.append(f"| {s} | {side} | {prec} | {gs} | {off} | {h1} |")
    return "\n".join(lines)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed-data", type=Path, required=True, help="PAPERS_DATA_DIR of an index of corpus/")
    ap.add_argument("--scifact-data", type=Path, help="PAPERS_DATA_DIR of a SciFact index (read only)")
    ap.add_argument("--scifact", type=Path, default=None, help="SciFact folder (default ../shared/scifact)")
    ap.add_argument("--limit", type=int, help="only the first N SciFact claims")
    ap.add_argument("--cache", type=Path, help="keep the asked lookups' features here (re-runs fit from it)")
    ap.add_argument("--write", action="store_true", help=f"write the constants fitted on all data to {OUT}")
    args = ap.parse_args()
    if args.scifact is None:
        from eval.scifact import default_dir

        args.scifact = default_dir()
    t0 = time.time()
    items = collect(args)
    assign_folds(items)
    print(f"{len(items)} lookups asked in {time.time() - t0:.0f} s", flush=True)
    cv = cross_validate(items)
    final = fit(items)
    final.meta = {"fitted_by": "eval/fit_lookup.py",
                  "lookups": {s: sum(it.set == s for it in items) for s in SET_WEIGHT},
                  "cross_validated": cv["pooled"], "fold_thresholds": [
                      {k: f[k] for k in ("strong_at", "weak_at", "rerank")} for f in cv["folds"]]}
    print(table(cv))
    print(json.dumps({k: v for k, v in final.to_dict().items() if k != "meta"}, indent=1))
    if args.write:
        OUT.write_text(json.dumps(final.to_dict(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
