"""Fit the answer stage's decisions on the reader's outputs (rag/answer/calibration.py) on held-out folds.

    python eval/fit_answer.py --reader runs/reader-fold0 --fold 0 --data data-qasper [--write]

Each QASPER dev question of the held-out fold (papers the reader given by --reader was trained without) is
asked of its own paper through the answer stage, with nothing abstaining on the passages' scores:

1. `passage_weights`: a logistic regression (scikit-learn) of "this passage is an annotator's evidence" on the
   reader's logit and the first stage's (the evidence scorer's best sentence of the passage), over every
   passage read for every question;
2. asked again with those weights, what each decision needs is kept (the best passage's probability, the
   yes-probability, the rule-found lead, the quoted paragraphs), and every combination of the grid below is
   scored by the official QASPER figures (eval/qasper.py), without asking again:
   - `yes_at`: the best passage's probability from which a yes/no question is answered "Yes" (else "No (not
     stated in the text)"), the threshold that answers most yes/no questions right;
   - `abstain_below`: among the thresholds whose answerable questions abstaining stay at or under
     MAX_FALSE_ABSTAIN, the one maximising the mean of Answer-F1 and Evidence-F1.

The eval/questions.jsonl seed questions are asked too: a threshold that would make any answerable seed
question abstain that did not before is not chosen. The figures reported as held out are cross-fitted: the
fold's papers are split in two halves, and each half is answered with every constant fitted on the other.
`--write` stores the constants fitted on the whole fold and these figures in rag/answer/fitted/answer.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eval import qasper  # noqa: E402
from rag.answer import fitted  # noqa: E402
from rag.answer.calibration import AnswerConstants  # noqa: E402

MAX_FALSE_ABSTAIN = 0.08  # two points of margin under the issue's 10% (or the named checks' own rate, if higher)
ABSTAIN_GRID = [0.0, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.35, 0.4]
YES_GRID = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8]


@dataclass
class Observed:
    """One question answered once, with what every decision needs."""

    question: qasper.Question
    paper: qasper.Paper
    top: float                  # best passage's reader probability (0 when none was read)
    rule_abstained: bool        # abstained by a named check that does not depend on these constants
    evidence: list[str]
    quotes: list[tuple[str, str, str, str]]
    draft: Any


def _ask(assistant: Any, question: str, paper_id: str | None, loose: AnswerConstants) -> Any:
    from rag.answer.extractive import draft_answer

    retrieval = assistant.retriever.retrieve(question, k=assistant.depth(question),
                                             paper_ids=[paper_id] if paper_id else None)
    assistant.retriever.complete(retrieval)
    return draft_answer(question, retrieval, vocab=assistant.vocabulary(), named=assistant.named(question),
                        reader=assistant.reader(), answer=loose)


def observe(assistant: Any, papers: list[qasper.Paper], ids: dict[str, str], loose: AnswerConstants
            ) -> list[Observed]:
    out = []
    for p in papers:
        for q in p.questions:
            draft = _ask(assistant, q.question, ids[p.id], loose)
            read = [x for x in draft.passages if x.reading is not None]
            quotes = [(x.paper.paper_id, x.paper.label, x.paper.title, x.sentence) for x in draft.quotes]
            evidence = list(dict.fromkeys(e for s in quotes if (e := qasper.paragraph_of(s[3], p)) is not None))
            out.append(Observed(q, p, read[0].probability if read else 0.0, bool(draft.abstention), evidence,
                                quotes, draft))
    return out


def predict(o: Observed, c: AnswerConstants) -> tuple[str, list[str], bool]:
    from rag.answer.lead import lead_for

    if o.rule_abstained or o.top < c.abstain_below or not o.quotes:
        return "Unanswerable", [], True
    lead = lead_for(o.question.question, o.draft.intent, o.quotes, (), o.draft.passages, c) \
        if o.draft.intent is not None else None
    answer = {"abstained": False, "lead": lead.text if lead else None,
              "citations": [{"quote": s} for *_x, s in o.quotes]}
    pred, evidence = qasper.prediction(answer, o.paper)
    return pred, evidence, False


def figures(observed: list[Observed], c: AnswerConstants) -> dict[str, Any]:
    return qasper.summarise(records(observed, c))


def records(observed: list[Observed], c: AnswerConstants) -> list[dict[str, Any]]:
    out = []
    for o in observed:
        pred, evidence, abstained = predict(o, c)
        s = qasper.score(o.question, pred, evidence)
        out.append({"paper": o.paper.id, "answer_f1": s.answer_f1, "evidence_f1": s.evidence_f1,
                    "evidence_f1_all": qasper.score(o.question, pred, evidence, False).evidence_f1,
                    "type": s.type, "abstained": abstained, "unanswerable": o.question.unanswerable,
                    "any_unanswerable": any(r.type == "none" for r in o.question.references), "ms": 0.0})
    return out


def passage_weights(observed: list[Observed]) -> dict[str, float]:
    """Step 1 of the module docstring: the logistic of a passage being evidence on its two logits."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from rag.answer.passages import _logit

    xs, ys = [], []
    for o in observed:
        gold = {e for r in o.question.references for e in r.evidence}
        for x in o.draft.passages:
            if x.reading is not None:
                xs.append([x.reading.relevance, _logit(x.first)])
                ys.append(int(qasper.paragraph_of(x.text, o.paper) in gold))
    model = LogisticRegression(C=10.0).fit(np.asarray(xs), ys)
    (w_reader, w_first), bias = model.coef_[0], model.intercept_[0]
    return {"reader": float(w_reader), "first": float(w_first), "bias": float(bias), "passages": len(xs),
            "positives": int(sum(ys))}


def choose(observed: list[Observed], seed_tops: list[float], base: AnswerConstants
           ) -> tuple[AnswerConstants, dict[str, Any]]:
    """Step 2 of the module docstring: yes_at, then abstain_below."""
    c = max((replace(base, yes_at=y) for y in YES_GRID),
            key=lambda x: (figures(observed, x)["answer_f1_boolean"] or 0, -abs(x.yes_at - 0.5)))
    floor = min(seed_tops, default=1.0)
    # the named checks abstain on some answerable questions at any threshold: the cap is over that base
    cap = max(MAX_FALSE_ABSTAIN, figures(observed, replace(c, abstain_below=0.0))["answerable_abstained"] or 0.0)
    best = None
    for a in ABSTAIN_GRID:
        trial = replace(c, abstain_below=a)
        f = figures(observed, trial)
        if a and (a > floor or (f["answerable_abstained"] or 0) > cap):
            continue
        key = ((f["answer_f1"] or 0) + (f["evidence_f1"] or 0)) / 2
        if best is None or key > best[0] + 1e-9 or abs(key - best[0]) <= 1e-9:
            best = (key, trial, f)
    assert best is not None
    return best[1], best[2]


def seed_tops(assistant: Any, questions: Path, loose: AnswerConstants) -> list[float]:
    """The best passage probability of every answerable seed question (a threshold above one abstains on it)."""
    out = []
    for line in questions.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        if q["type"] == "unanswerable" or not q.get("gold"):
            continue
        draft = _ask(assistant, q["question"], None, loose)
        read = [x for x in draft.passages if x.reading is not None]
        if read and not draft.abstention:
            out.append(read[0].probability)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qasper", type=Path, default=qasper.default_file())
    ap.add_argument("--fold", type=int, required=True, help="the held-out fold (the reader was trained without it)")
    ap.add_argument("--reader", type=Path, required=True, help="the reader trained without --fold")
    ap.add_argument("--data", type=Path, default=Path("data-qasper"), help="QASPER data dir (papers ingested)")
    ap.add_argument("--seed-data", type=Path, default=Path("data"), help="the seed corpus data dir")
    ap.add_argument("--questions", type=Path, default=ROOT / "eval" / "questions.jsonl")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    from rag.service import open_assistant
    from rag.settings import load_settings

    t = time.perf_counter()
    papers = [p for p in qasper.load(args.qasper) if qasper.fold_of(p.id) == args.fold]
    settings = load_settings(data_dir=args.data, reader=args.reader)
    ids = qasper.ensure_ingested(settings, papers, args.data.parent / f"{args.data.name}-markdown")
    assistant = open_assistant(settings)
    seeds = open_assistant(load_settings(data_dir=args.seed_data, reader=args.reader))
    asked = [p for p in papers if p.id in ids]
    first = observe(assistant, asked, ids, AnswerConstants())
    weights = passage_weights(first)
    print("passage weights:", weights, flush=True)
    loose = AnswerConstants(passage_weights=weights)
    observed = observe(assistant, asked, ids, loose)
    tops = seed_tops(seeds, args.questions, loose)
    chosen, fitted_on_fold = choose(observed, tops, loose)
    # Held out: each half of the fold's papers answered with every constant fitted on the other half.
    half = {p.id: i % 2 for i, p in enumerate(qasper.sample(asked, len(asked), seed="halves"))}
    crossed: list[dict[str, Any]] = []
    for part in (0, 1):
        fit_obs = [o for o in first if half[o.paper.id] != part]
        w = passage_weights(fit_obs)
        trial = AnswerConstants(passage_weights=w)
        fit_papers = [p for p in asked if half[p.id] != part]
        test_papers = [p for p in asked if half[p.id] == part]
        c, _ = choose(observe(assistant, fit_papers, ids, trial), seed_tops(seeds, args.questions, trial), trial)
        crossed += records(observe(assistant, test_papers, ids, trial), c)
    held = qasper.summarise(crossed)
    before = figures(first, AnswerConstants())
    print(json.dumps({"chosen": {k: v for k, v in chosen.__dict__.items() if k != "meta"}, "held_out": held,
                      "fitted_on_the_whole_fold": fitted_on_fold, "defaults": before}, indent=1, default=str))
    if args.write:
        meta = {"fold": args.fold, "reader": str(args.reader), "questions": len(observed),
                "held_out_figures": held, "fitted_on_the_whole_fold": fitted_on_fold, "before_figures": before,
                "seed_min_top": min(tops, default=None),
                "command": "python eval/fit_answer.py " + " ".join(argv or sys.argv[1:]),
                "seconds": round(time.perf_counter() - t), "written": time.strftime("%Y-%m-%d")}
        out = {k: v for k, v in chosen.__dict__.items() if k != "meta"} | {"meta": meta}
        fitted.source_path(fitted.ANSWER).write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
