"""Fit the papers grid's column model (rag/answer/grid.py) on SciFact structured abstracts and the hand-labelled
abstracts of the real PDFs; report it on held-out folds and on the hand labels of the seed papers, which it is
never fitted on.

    python eval/fit_grid.py [--scifact ../shared/scifact] [--pdfs ../shared/real-pdfs] [--pdf-share S] [--write]
                            [--labels-data DATA_DIR]

Training data:
- the structured abstracts of SciFact's corpus, whose sentences open their section with its label
  ("BACKGROUND ...", "METHODS ...", "RESULTS ..."); every later sentence belongs to the same section. A section
  label maps to a grid column (`SECTIONS`); an abstract with no section of a column does not state it. The label
  words are removed from the sentence before any feature is computed (no abstract outside SciFact carries them);
- the abstracts of the real published PDFs (machine learning, speech, vision) as this project's reader reads
  them, with eval/labels/grid_labels_pdfs.jsonl saying which sentences state each column. Biomedical abstracts
  alone do not teach that "we propose X" states a method.

Per column: cue words are the smoothed log-odds of a word in the column's SciFact sentences against the others,
over words used by at least MIN_DF of those abstracts (general academic vocabulary, not one field's terms); a
logistic regression (scikit-learn) over rag.answer.grid.FEATURES scores each sentence, the PDF abstracts
together weighing a share of the SciFact ones together (PDF_SHARES, chosen per column by leave-one-paper-out on
the PDFs);
the "not stated" threshold is the value of an abstract's best sentence probability that best separates
abstracts with the column from those without (training abstracts only, weighted the same way). Reported:
FOLDS-fold cross-validation by abstract on SciFact and leave-one-paper-out on the PDFs (cell right = the
likeliest sentence states the column, over abstracts that have it; not stated right = the stated / not-stated
call matches, over all abstracts). `--write` stores the model fitted on all abstracts in
rag/answer/fitted/grid.json. With `--labels-data` (a data dir whose index holds corpus/), the fitted model is
measured on eval/labels/grid_labels.jsonl as `eval/grid_eval.py` does.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rag.answer import fitted  # noqa: E402
from rag.answer.grid import COLUMNS, FEATURES, ColumnModel, GridModel, column_evidence, sentence_features, \
    tokens  # noqa: E402

OUT = fitted.source_path(fitted.GRID)
FOLDS = 5
MIN_DF = 0.01   # a cue word is used by at least 1% of the training abstracts
SMOOTH = 1.0    # add-one smoothing of the cue log-odds
SEED = 13
PDF_LABELS = ROOT / "eval" / "labels" / "grid_labels_pdfs.jsonl"
# The share of the fit the PDF abstracts weigh, beside SciFact's as 1: chosen per column by leave-one-paper-out
# on the PDFs among these values (--pdf-share overrides). A column whose SciFact sections differ in kind from
# what a machine-learning abstract states (biomedical PARTICIPANTS against datasets and benchmarks) may need
# the PDFs to weigh more than SciFact.
PDF_SHARES = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)

# Section label words (the first word of a label) -> the grid columns they state. A label naming two parts
# ("DESIGN, SETTING, AND PARTICIPANTS") states both.
SECTIONS: dict[str, set[str]] = {
    **{w: {"problem"} for w in ("BACKGROUND", "CONTEXT", "INTRODUCTION", "OBJECTIVE", "OBJECTIVES", "AIM", "AIMS",
                                "PURPOSE", "IMPORTANCE", "RATIONALE", "MOTIVATION", "QUESTION")},
    **{w: {"method"} for w in ("METHODS", "METHOD", "DESIGN", "INTERVENTION", "INTERVENTIONS", "APPROACH",
                               "METHODOLOGY", "EXPERIMENTAL", "PROCEDURES", "PROCEDURE", "MEASUREMENTS")},
    **{w: {"data"} for w in ("PARTICIPANTS", "PATIENTS", "SUBJECTS", "SETTING", "SETTINGS", "DATA", "MATERIALS",
                             "MATERIAL", "POPULATION", "SAMPLE", "SOURCES", "SELECTION")},
    **{w: {"result"} for w in ("RESULTS", "RESULT", "FINDINGS")},
    **{w: {"limitation"} for w in ("LIMITATIONS", "LIMITATION")},
    # conclusions state no column of their own: they are negatives for every column
    **{w: set() for w in ("CONCLUSIONS", "CONCLUSION", "INTERPRETATION", "DISCUSSION", "IMPLICATIONS",
                          "SIGNIFICANCE", "SUMMARY", "MAIN", "OUTCOME", "OUTCOMES", "MEASURES", "STUDY", "TRIAL",
                          "FUNDING", "AVAILABILITY", "REGISTRATION", "CLINICAL", "RECENT", "EXPOSURES",
                          "EXPOSURE", "EVIDENCE", "SEARCH", "REVIEW", "GENERAL", "UNLABELLED", "WHAT", "KEY",
                          "PRINCIPAL", "RESEARCH", "AND")},
}
_HEADER_RE = re.compile(r"^\s*((?:[A-Z][A-Z/&-]+,?\s+(?:AND\s+|OF\s+|&\s+)?)+)(?=[A-Z]?[a-z0-9(\"'])")


@dataclass
class Abstract:
    doc_id: str
    sentences: list[str]     # label words removed
    roles: list[set[str]]    # columns each sentence states
    source: str = "scifact"  # "scifact" or "pdfs"


def header_roles(sentence: str) -> tuple[set[str], str] | None:
    """(columns, sentence without the label) when the sentence opens a section, else None."""
    m = _HEADER_RE.match(sentence)
    if not m:
        return None
    words = re.findall(r"[A-Z]+", m.group(1))
    if not words or words[0] not in SECTIONS:
        return None
    roles: set[str] = set()
    for w in words:
        roles |= SECTIONS.get(w, set())
    if words[:2] == ["MAIN", "RESULTS"] or words[:2] == ["PRINCIPAL", "FINDINGS"]:
        roles |= {"result"}
    return roles, sentence[m.end():].strip()


def load_structured(folder: Path) -> list[Abstract]:
    """SciFact's structured abstracts whose first sentence opens a known section."""
    out = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if not doc.get("structured"):
                continue
            current: set[str] | None = None
            sentences, roles = [], []
            for s in doc["abstract"]:
                found = header_roles(s)
                if found:
                    current, s = found
                if current is None:
                    break
                s = " ".join(s.split())
                if s:
                    sentences.append(s)
                    roles.append(set(current))
            if current is not None and len(sentences) >= 3:
                out.append(Abstract(str(doc["doc_id"]), sentences, roles))
    return out


def load_pdf_labels(folder: Path, labels: Path = PDF_LABELS) -> list[Abstract]:
    """The abstracts of the real published PDFs in `folder` as this project's reader reads them, with the hand
    labels of which sentences state each column (matched by text, so a reader change that alters a labelled
    sentence is an error here rather than a silent mislabel)."""
    from rag.answer.grid import paper_sentences
    from rag.corpus.readers.pdf import parse_pdf

    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for file in dict.fromkeys(r["file"] for r in rows):
        sentences = paper_sentences(parse_pdf(folder / file).abstract)
        roles: list[set[str]] = [set() for _ in sentences]
        for r in (x for x in rows if x["file"] == file):
            for text in r["texts"]:
                if text not in sentences:
                    raise SystemExit(f"{labels}: {file}: labelled sentence not in the abstract as read: {text[:80]!r}")
                roles[sentences.index(text)].add(r["column"])
        out.append(Abstract(file, sentences, roles, "pdfs"))
    return out


def _weights(abstracts: list[Abstract], pdf_share: float) -> list[float]:
    """Per-abstract weights: the PDF abstracts together weigh `pdf_share` of the SciFact ones together."""
    n = {s: sum(a.source == s for a in abstracts) for s in ("scifact", "pdfs")}
    return [(pdf_share / n["pdfs"]) if a.source == "pdfs" else (1.0 / n["scifact"]) for a in abstracts]


def learn_cues(train: list[Abstract], column: str) -> dict[str, float]:
    """Smoothed log-odds of each common word in the column's sentences against all other sentences."""
    df: Counter[str] = Counter()
    pos: Counter[str] = Counter()
    neg: Counter[str] = Counter()
    for a in train:
        df.update({t for s in a.sentences for t in tokens(s)})
        for s, r in zip(a.sentences, a.roles):
            (pos if column in r else neg).update(tokens(s))
    vocab = [w for w, n in df.items() if n >= MIN_DF * len(train)]
    npos, nneg = sum(pos[w] for w in vocab), sum(neg[w] for w in vocab)
    v = len(vocab) or 1
    return {w: round(math.log((pos[w] + SMOOTH) / (npos + SMOOTH * v)) - math.log((neg[w] + SMOOTH) / (nneg + SMOOTH * v)),
                     4) for w in sorted(vocab)}


_EVIDENCE: dict[tuple[str, str], list[float]] = {}


def evidence(a: Abstract, column: str) -> list[float]:
    key = (a.doc_id, column)
    if key not in _EVIDENCE:
        _EVIDENCE[key] = column_evidence(COLUMNS[column], a.doc_id, a.sentences)
    return _EVIDENCE[key]


def _matrix(abstracts: list[Abstract], column: str, cues: dict[str, float], weights: list[float]
            ) -> tuple[list[list[float]], list[int], list[float]]:
    X, y, w = [], [], []
    for a, wa in zip(abstracts, weights):
        for f, r in zip(sentence_features(a.sentences, evidence(a, column), cues, COLUMNS[column]), a.roles):
            X.append([f[k] for k in FEATURES])
            y.append(1 if column in r else 0)
            w.append(wa)
    return X, y, w


def _probs(a: Abstract, column: str, m: ColumnModel) -> list[float]:
    out = []
    for f in sentence_features(a.sentences, evidence(a, column), m.cues, COLUMNS[column]):
        z = m.bias + sum(m.weights[k] * f[k] for k in FEATURES)
        out.append(1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))))
    return out


def fit_column(train: list[Abstract], column: str, pdf_share: float = 0.0) -> ColumnModel:
    """Cue words, logistic weights and the not-stated threshold for one column, from training abstracts only."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    cues = learn_cues([a for a in train if a.source == "scifact"], column)
    weights = _weights(train, pdf_share)
    X, y, sw = _matrix(train, column, cues, weights)
    X, y, sw = np.asarray(X), np.asarray(y), np.asarray(sw)
    if y.sum() == 0:
        return ColumnModel({k: 0.0 for k in FEATURES}, -30.0, 1.0, cues)
    scaler = StandardScaler().fit(X)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    # balanced classes within the weighted sample (what class_weight="balanced" does without sample weights)
    sw = sw * np.where(y == 1, sw.sum() / (2 * sw[y == 1].sum()), sw.sum() / (2 * sw[y == 0].sum()))
    clf = LogisticRegression(C=1.0, max_iter=2000).fit((X - scaler.mean_) / scale, y, sample_weight=sw / sw.mean())
    w = clf.coef_[0] / scale
    bias = float(clf.intercept_[0] - (w * scaler.mean_).sum())
    m = ColumnModel({k: round(float(v), 5) for k, v in zip(FEATURES, w)}, round(bias, 5), 1.0, cues)
    # Threshold: the abstract's best probability that best separates abstracts stating the column from the rest.
    best = [(max(_probs(a, column, m)), any(column in r for r in a.roles), wa) for a, wa in zip(train, weights)]
    grid = sorted({round(b, 3) for b, _, _ in best} | {1.01})
    m.stated_at = max(grid, key=lambda t: (round(sum(wa for b, s, wa in best if (b >= t) == s), 9), -abs(t - 0.5)))
    return m


def measure_column(test: list[Abstract], column: str, m: ColumnModel) -> dict[str, float]:
    right = have = ns_right = 0
    for a in test:
        probs = _probs(a, column, m)
        j = max(range(len(probs)), key=lambda i: (probs[i], -i))
        states = any(column in r for r in a.roles)
        if states:
            have += 1
            right += column in a.roles[j]
        ns_right += (probs[j] >= m.stated_at) == states
    return {"cell_right": right / have if have else float("nan"), "stated_share": have / len(test),
            "not_stated_right": ns_right / len(test), "abstracts": len(test)}


def fit(abstracts: list[Abstract], pdf_share: dict[str, float] | float = 0.0) -> GridModel:
    """Every column's model (`pdf_share`: one share for all columns, or each column's own)."""
    shares = pdf_share if isinstance(pdf_share, dict) else dict.fromkeys(COLUMNS, pdf_share)
    return GridModel({c: fit_column(abstracts, c, shares[c]) for c in COLUMNS})


def cross_validate(abstracts: list[Abstract], pdfs: list[Abstract], pdf_share: float
                   ) -> dict[str, dict[str, dict[str, float]]]:
    """SciFact: FOLDS folds by abstract (each fitted with every PDF abstract); PDFs: leave one paper out (each
    fitted with every SciFact abstract). Cell right is averaged over folds, pooled over the PDF papers."""
    order = abstracts[:]
    random.Random(SEED).shuffle(order)
    folds = [order[i::FOLDS] for i in range(FOLDS)]
    out: dict[str, dict[str, dict[str, float]]] = {"scifact": {}, "pdfs": {}}
    for c in COLUMNS:
        sums: dict[str, list[float]] = {}
        for i, test in enumerate(folds):
            train = [a for j, f in enumerate(folds) if j != i for a in f] + pdfs
            for k, v in measure_column(test, c, fit_column(train, c, pdf_share)).items():
                sums.setdefault(k, []).append(v)
        out["scifact"][c] = {k: round(sum(kept) / max(1, len(kept)), 4)
                             for k, vs in sums.items() for kept in [[v for v in vs if not math.isnan(v)]]}
        if pdfs:
            right = have = ns_right = 0
            for i, test in enumerate(pdfs):
                r = measure_column([test], c, fit_column(abstracts + pdfs[:i] + pdfs[i + 1:], c, pdf_share))
                if not math.isnan(r["cell_right"]):
                    have += 1
                    right += r["cell_right"]
                ns_right += r["not_stated_right"]
            out["pdfs"][c] = {"cell_right": round(right / have, 4) if have else float("nan"),
                              "not_stated_right": round(ns_right / len(pdfs), 4), "stated_share": have / len(pdfs),
                              "abstracts": len(pdfs)}
    return out


def to_json(model: GridModel, meta: dict[str, Any]) -> str:
    return json.dumps({"columns": {c: m.__dict__ for c, m in model.columns.items()}, "meta": meta},
                      indent=1, ensure_ascii=False) + "\n"


def _print_cv(cv: dict[str, dict[str, dict[str, float]]]) -> None:
    for source, cols in cv.items():
        for c, m in cols.items():
            print(f"  {source:<8} {c:<11} cell right {m['cell_right']:.3f}  not stated right "
                  f"{m['not_stated_right']:.3f}  (share stating it {m['stated_share']:.3f})")


def _mean_pdf(cv: dict[str, dict[str, dict[str, float]]], column: str) -> float:
    """A column's mean of cell right and not stated right on the PDF folds (what its PDF share is chosen by)."""
    m = cv["pdfs"].get(column, {})
    vals = [m[k] for k in ("cell_right", "not_stated_right") if k in m and not math.isnan(m[k])]
    return sum(vals) / len(vals) if vals else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "scifact")
    ap.add_argument("--pdfs", type=Path, default=ROOT.parent / "shared" / "real-pdfs",
                    help="the real PDFs whose abstracts eval/labels/grid_labels_pdfs.jsonl labels")
    ap.add_argument("--pdf-share", type=float, help="the PDF abstracts' share of the fit (default: chosen)")
    ap.add_argument("--write", action="store_true", help="store the model fitted on all abstracts")
    ap.add_argument("--labels-data", type=Path, help="a data dir indexing corpus/: measure on the seed labels")
    args = ap.parse_args()
    abstracts = load_structured(args.scifact)
    pdfs = load_pdf_labels(args.pdfs) if args.pdfs.is_dir() else []
    print(f"SciFact structured abstracts used: {len(abstracts)}; labelled PDF abstracts: {len(pdfs)}")
    shares = [args.pdf_share] if args.pdf_share is not None else list(PDF_SHARES if pdfs else (0.0,))
    runs = {}
    for share in shares:
        cv = cross_validate(abstracts, pdfs, share)
        print(f"PDF share {share}: {FOLDS}-fold cross-validation on SciFact, leave one paper out on the PDFs:")
        _print_cv(cv)
        runs[share] = cv
    # one share for all columns, as the PDF folds of all columns together choose it; a column takes a share of
    # its own only where its own PDF folds are strictly better with it
    common = max(runs, key=lambda s: (round(sum(_mean_pdf(runs[s], c) for c in COLUMNS), 6), -s))
    share = {c: max(runs, key=lambda s: (round(_mean_pdf(runs[s], c), 6), s == common, -s)) for c in COLUMNS}
    print("PDF share chosen per column: " + ", ".join(f"{c} {s}" for c, s in share.items()))
    model = fit(abstracts + pdfs, share)
    for c, m in model.columns.items():
        print(f"  {c:<11} stated_at {m.stated_at:.3f}  weights " +
              ", ".join(f"{k}={v:+.2f}" for k, v in m.weights.items()))
    meta = {"fitted_on": f"SciFact structured abstracts ({len(abstracts)}) and the labelled abstracts of "
                         f"{len(pdfs)} real PDFs (share per column {share})",
            "folds": FOLDS, "pdf_share": share,
            "cross_validation": {src: {c: runs[share[c]][src][c] for c in COLUMNS if c in runs[share[c]][src]}
                                 for src in ("scifact", "pdfs")},
            "script": "eval/fit_grid.py"}
    if args.write:
        OUT.write_text(to_json(model, meta), encoding="utf-8")
        print(f"wrote {OUT}")
    if args.labels_data:
        from eval.grid_eval import evaluate, print_figures

        print_figures(evaluate(args.labels_data, model_text=to_json(model, meta)))


if __name__ == "__main__":
    main()
