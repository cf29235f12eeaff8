"""QASPER (Dasigi et al. 2021): researchers' own questions about whole NLP papers, scored the official way.

The data is not part of the repository (CC BY 4.0, read from `../shared/qasper/`). How an answer is scored (the
same rule is used outside the project): each paper is written as Markdown (`# title`, `## Abstract`,
`## <section>`, paragraphs) and ingested like any user's file; each question is asked of its own paper only
(`paper_ids` = that paper); the prediction is "Unanswerable" for an abstention, "Yes"/"No" when the direct
answer starts so, else the direct answer (`lead`), else the first quote; the predicted evidence is the
paragraphs that hold the quoted passages.

Answer-F1 and Evidence-F1 follow the official evaluator (allenai/qasper-led-baseline `qasper_evaluator.py`,
re-implemented from its definitions): SQuAD token F1 against the best-matching annotator, that annotator's
answer type for the per-type figures, and paragraph-set F1 against the best annotator (figure and table
evidence, "FLOAT SELECTED", left out as in the published figures; an empty prediction against empty gold
scores 1).

Folds are split by paper (a stable hash of the paper id), so a question is never scored by a model that saw
its paper (eval/fit_reader.py trains on the other folds).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FOLDS = 5
FLOAT = "FLOAT SELECTED"
TYPES = ("extractive", "abstractive", "boolean", "none")


def default_file() -> Path:
    """`../shared/qasper/qasper_dev.jsonl` beside the checkout (or one level further up, for a worktree)."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "qasper" / "qasper_dev.jsonl").exists():
            return base / "shared" / "qasper" / "qasper_dev.jsonl"
    return ROOT.parent / "shared" / "qasper" / "qasper_dev.jsonl"


@dataclass
class Reference:
    """One annotator's answer: the reference string, its type and its evidence paragraphs."""

    text: str
    type: str  # extractive, abstractive, boolean, none
    evidence: list[str]


@dataclass
class Question:
    id: str
    question: str
    references: list[Reference]

    @property
    def unanswerable(self) -> bool:
        """Every annotator found no answer."""
        return all(r.type == "none" for r in self.references)


@dataclass
class Paper:
    id: str
    title: str
    abstract: str
    sections: list[tuple[str, list[str]]]
    questions: list[Question] = field(default_factory=list)

    @property
    def paragraphs(self) -> list[str]:
        return [self.abstract] + [p for _name, ps in self.sections for p in ps]


def _reference(a: dict[str, Any]) -> Reference:
    if a.get("unanswerable"):
        return Reference("Unanswerable", "none", [])
    evidence = [e for e in a.get("evidence") or [] if e]
    if a.get("extractive_spans"):
        return Reference(", ".join(a["extractive_spans"]), "extractive", evidence)
    if a.get("free_form_answer"):
        return Reference(a["free_form_answer"], "abstractive", evidence)
    return Reference("Yes" if a.get("yes_no") else "No", "boolean", evidence)


def load(path: Path | None = None) -> list[Paper]:
    out = []
    for line in (path or default_file()).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        sections = [(s.get("name") or "", [p for p in s.get("paragraphs") or [] if p and p.strip()])
                    for s in d.get("sections") or []]
        questions = [Question(q["question_id"], q["question"], [_reference(a) for a in q["answers"]])
                     for q in d.get("questions") or []]
        out.append(Paper(d["paper_id"], d.get("title") or "", d.get("abstract") or "", sections, questions))
    return out


def fold_of(paper_id: str, folds: int = FOLDS) -> int:
    """The paper's fold: a stable hash, so every script splits the same way."""
    return int(hashlib.sha1(paper_id.encode()).hexdigest(), 16) % folds


def sample(papers: list[Paper], n: int, seed: str = "gate") -> list[Paper]:
    """A fixed sample of n papers (ordered by a hash of id and seed): the same on every machine."""
    return sorted(papers, key=lambda p: hashlib.sha1(f"{seed}:{p.id}".encode()).hexdigest())[:n]


def to_markdown(paper: Paper) -> str:
    """The paper as the scoring rule writes it: `# title`, `## Abstract`, `## <section>`, paragraphs."""
    parts = [f"# {paper.title}", "## Abstract", paper.abstract]
    for name, paragraphs in paper.sections:
        parts.append(f"## {name}" if name else "## Body")
        parts.extend(paragraphs)
    return "\n\n".join(p.strip() for p in parts if p.strip()) + "\n"


def write_corpus(papers: Iterable[Paper], folder: Path) -> dict[str, str]:
    """Each paper as `<id>.md` in `folder`; returns file name -> QASPER paper id."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for p in papers:
        name = f"{p.id}.md"
        path = folder / name
        text = to_markdown(p)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        out[name] = p.id
    return out


# --- the official metrics ------------------------------------------------------------------------------------

def normalize_answer(s: str) -> str:
    """SQuAD normalisation: lower case, punctuation and articles removed, spaces collapsed."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def token_f1(prediction: str, truth: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def paragraph_f1(predicted: list[str], gold: list[str]) -> float:
    """F1 of two sets of paragraph strings; both empty scores 1, one empty 0."""
    pred, true = set(predicted), set(gold)
    if not pred and not true:
        return 1.0
    same = len(pred & true)
    if not same:
        return 0.0
    precision, recall = same / len(pred), same / len(true)
    return 2 * precision * recall / (precision + recall)


@dataclass
class Score:
    answer_f1: float
    evidence_f1: float
    type: str  # the best-matching reference's type


def score(question: Question, prediction: str, evidence: list[str], text_evidence_only: bool = True) -> Score:
    best, best_type = -1.0, "none"
    for r in question.references:
        f = token_f1(prediction, r.text)
        if f > best:
            best, best_type = f, r.type
    ev = 0.0
    for r in question.references:
        gold = [e for e in r.evidence if not (text_evidence_only and FLOAT in e)]
        ev = max(ev, paragraph_f1(evidence, gold))
    return Score(max(best, 0.0), ev, best_type)


# --- predictions from answers ----------------------------------------------------------------------------------

_ALNUM_RE = re.compile(r"[^a-z0-9]+")


def _key(text: str) -> str:
    return _ALNUM_RE.sub(" ", text.lower()).strip()


def paragraph_of(quote: str, paper: Paper) -> str | None:
    """The paper's paragraph (as QASPER writes it) that holds a quoted passage: the one containing the quote's
    text, else the one sharing most of its words (the reader may have normalised spacing or markup)."""
    q = _key(quote.split(" … ")[0])
    if not q:
        return None
    paragraphs = paper.paragraphs
    keys = [_key(p) for p in paragraphs]
    for p, k in zip(paragraphs, keys):
        if q in k:
            return p
    words = set(q.split())
    best = max(range(len(paragraphs)), key=lambda i: len(words & set(keys[i].split())), default=None)
    if best is None or len(words & set(keys[best].split())) < 0.6 * len(words):
        return None
    return paragraphs[best]


_YES_NO_RE = re.compile(r"^\W*(yes|no)\b", re.I)


def prediction(answer: dict[str, Any], paper: Paper) -> tuple[str, list[str]]:
    """(predicted answer string, predicted evidence paragraphs) from an answer record (rag.schema.record)."""
    if answer.get("abstained"):
        return "Unanswerable", []
    evidence: list[str] = []
    for c in answer.get("citations") or []:
        para = paragraph_of(c.get("quote") or "", paper)
        if para is not None and para not in evidence:
            evidence.append(para)
    lead = (answer.get("lead") or "").strip()
    m = _YES_NO_RE.match(lead)
    if m:
        return m.group(1).capitalize(), evidence
    if lead:
        return lead, evidence
    quotes = [c.get("quote") or "" for c in answer.get("citations") or []]
    return (quotes[0] if quotes else answer.get("answer") or ""), evidence


# --- running and summarising ---------------------------------------------------------------------------------

Ask = Callable[[str, str], dict[str, Any]]  # (question, paper id in the index) -> answer record


def run(papers: list[Paper], index_id: dict[str, str], ask: Ask,
        progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Ask every question of its own paper; one record per question with its scores."""
    records = []
    total = sum(len(p.questions) for p in papers)
    for p in papers:
        for q in p.questions:
            t = time.perf_counter()
            answer = ask(q.question, index_id[p.id])
            ms = (time.perf_counter() - t) * 1000
            pred, evidence = prediction(answer, p)
            s = score(q, pred, evidence)
            s_all = score(q, pred, evidence, text_evidence_only=False)
            records.append({"paper": p.id, "fold": fold_of(p.id), "question_id": q.id, "question": q.question,
                            "prediction": pred, "evidence": evidence, "answer_f1": s.answer_f1,
                            "evidence_f1": s.evidence_f1, "evidence_f1_all": s_all.evidence_f1, "type": s.type,
                            "unanswerable": q.unanswerable,
                            "any_unanswerable": any(r.type == "none" for r in q.references),
                            "abstained": bool(answer.get("abstained")), "lead": answer.get("lead"),
                            "references": [r.text for r in q.references], "ms": ms})
            if progress:
                progress(len(records), total)
    return records


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer-F1 (overall and by type), Evidence-F1, and the abstention figures the issue sets goals for."""
    answerable = [r for r in records if not r["any_unanswerable"]]
    abstained = [r for r in records if r["abstained"]]
    unanswerable = [r for r in records if r["unanswerable"]]
    ms = sorted(r["ms"] for r in records)
    out: dict[str, Any] = {
        "questions": len(records), "papers": len({r["paper"] for r in records}),
        "answer_f1": _mean([r["answer_f1"] for r in records]),
        "evidence_f1": _mean([r["evidence_f1"] for r in records]),
        "evidence_f1_with_floats": _mean([r["evidence_f1_all"] for r in records]),
        "answerable_abstained": _mean([float(r["abstained"]) for r in answerable]),
        "unanswerable_abstained": _mean([float(r["abstained"]) for r in unanswerable]),
        "abstentions_right": _mean([float(r["any_unanswerable"]) for r in abstained]),
        "abstentions": len(abstained), "p50_ms": ms[len(ms) // 2] if ms else None,
    }
    for t in TYPES:
        rows = [r for r in records if r["type"] == t]
        out[f"answer_f1_{t}"] = _mean([r["answer_f1"] for r in rows])
        out[f"n_{t}"] = len(rows)
    return out


def table(summary: dict[str, Any]) -> str:
    def f(x: Any) -> str:
        return "–" if x is None else f"{x:.3f}"

    rows = [("Answer-F1", f(summary["answer_f1"])), ("  extractive", f(summary["answer_f1_extractive"])),
            ("  abstractive", f(summary["answer_f1_abstractive"])), ("  yes/no", f(summary["answer_f1_boolean"])),
            ("  unanswerable", f(summary["answer_f1_none"])), ("Evidence-F1", f(summary["evidence_f1"])),
            ("Evidence-F1 (figure/table evidence kept)", f(summary["evidence_f1_with_floats"])),
            ("answerable questions that abstain", f(summary["answerable_abstained"])),
            ("unanswerable (every annotator) abstained", f(summary["unanswerable_abstained"])),
            ("abstentions right", f(summary["abstentions_right"]))]
    head = f"QASPER: {summary['questions']} questions on {summary['papers']} papers"
    return head + "\n" + "\n".join(f"  {name:<44} {value}" for name, value in rows)


def ensure_ingested(settings: Any, papers: list[Paper], folder: Path, progress: bool = False) -> dict[str, str]:
    """Write the papers as Markdown under `folder`, ingest them into settings.data_dir (only what changed is
    embedded) and return QASPER paper id -> index paper id."""
    from rag.index.ingest import ingest
    from rag.index.store import Store

    names = write_corpus(papers, folder)
    report = ingest(settings, [folder], progress=progress)
    if report.problems:
        raise RuntimeError("QASPER ingest had problems: " + "; ".join(report.problems[:3]))
    out: dict[str, str] = {}
    for entry in Store.open(settings).catalog(with_text=False).values():
        name = Path(entry.source).name
        if name in names:
            out[names[name]] = entry.paper_id
    return out
