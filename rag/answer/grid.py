"""The papers grid: papers as rows, questions as columns, each cell one quoted sentence with its citation.

A literature review compares papers on the same few points (what problem, which method, on what data, what
result, what limitation), so the grid answers each point for each paper with that paper's best sentence, or
"not stated". Two kinds of column:

- the default columns (`COLUMNS`): which sentence of an abstract states the problem, the method, the data, the
  result or a limitation is a sentence *role*. A small logistic model per column scores every sentence from
  features any abstract has: where it sits, learnt cue words, whether it holds figures, whether it writes a
  data noun or names the data it ran on (`data_source`), and the evidence scorer's probability
  (rag/answer/evidence.py) that it answers the column's question. The likeliest sentence fills the cell
  unless its probability is under the column's fitted threshold ("not stated"). The weights,
  cue words and thresholds were fitted by `eval/fit_grid.py` on SciFact's structured abstracts, whose
  sentences carry section labels (BACKGROUND, METHODS, RESULTS ...), and live in rag/answer/fitted/grid.json;
- any other question: the evidence scorer alone, as `papers cite` uses it, with its fitted "weak" threshold
  for "not stated".

Every cell then gets the direct-answer span of rag/answer/lead.py where one exists ("BRIGHT and BEIR") and
goes through the citation check (rag/answer/cite.py) like any answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rag.answer import fitted
from rag.answer.cite import SourceText, check_answer
from rag.answer.evidence import Constants, Vocabulary, current_constants, strength
from rag.answer.extractive import evidence_for
from rag.answer.intent import read_intent
from rag.answer.lead import lead_for
from rag.answer.retrieve import Chunk, PaperHit, Retrieval
from rag.answer.types.names import names_of_kind
from rag.answer.types.words import name_token
from rag.schema import Grid, GridCell
from rag.text import (
    COLUMN_QUESTION_STOPWORDS,
    CONTRAST_OPENERS,
    CONTRIBUTION_RE,
    CUE_WORD_RE,
    DATA_NOUNS,
    STOPWORDS,
    TOKEN_RE,
    any_word,
    one_of,
    sentences_of,
)

# The default columns and the question each asks (what the evidence feature scores, and the lead reads).
COLUMNS: dict[str, str] = {
    "problem": "What problem does the paper address?",
    "method": "What method or approach does the paper propose?",
    "data": "Which datasets or benchmarks does the paper use?",
    "result": "What is the main result of the paper?",
    "limitation": "What limitation does the paper state?",
}
COLUMN_ALIASES = {"data/benchmarks": "data", "benchmarks": "data", "headline result": "result",
                  "results": "result", "limitations": "limitation", "methods": "method"}
FEATURES = ("first", "last", "position", "position_sq", "cue", "cue_max", "evidence", "has_number", "length",
            "column_words", "contribution", "contrast", "data_noun", "names_data")
NOT_STATED = "not stated"
# Discourse markers of academic English, the same in any field; their weight per column is fitted: a
# contribution statement (rag.text.CONTRIBUTION_RE, shared with the citation lookup), and a sentence that opens by
# contrast or concession ("However, ...", "Despite ...", "Unfortunately, ...": rag.text.CONTRAST_OPENERS).
_CONTRAST_RE = re.compile(r"^\s*" + one_of(CONTRAST_OPENERS) + r"\b", re.IGNORECASE)
# A data noun (rag.text.DATA_NOUNS), and the phrases that say a study ran on some data ("experiments on",
# "evaluated on", "trained using"): a name written beside one of them names the data.
_DATA_NOUN_RE = any_word(DATA_NOUNS, ending="(?:s|es)?", ignore_case=True)
# A named task is a benchmark too ("the XSum summarization task", "the GLUE tasks"), though "task" alone is not data.
_TASK_RE = any_word(("task",), ending="s?", ignore_case=True)
_RAN_ON_RE = re.compile(r"\b(?:experiment\w*|evaluat\w*|test(?:s|ed|ing)?|results?|performance|accuracy|"
                        r"state[- ]of[- ]the[- ]art|(?:pre-?)?train(?:s|ed|ing)?|fine-?tun\w*|validat\w*|"
                        r"benchmark\w*|outperform\w*|achiev\w*)\b(?:\s+[\w-]+){0,3}?\s+(?:on|using|across|from)\s+"
                        r"((?:[^\s,;:.]+\s*){1,4})", re.IGNORECASE)


@dataclass
class ColumnModel:
    """One default column's fitted model: logistic weights over FEATURES, cue words and the threshold."""

    weights: dict[str, float]
    bias: float
    stated_at: float
    cues: dict[str, float]


@dataclass
class GridModel:
    columns: dict[str, ColumnModel]
    meta: dict[str, Any] = field(default_factory=dict)


@lru_cache(maxsize=2)
def _load(text: str | None) -> GridModel:
    data = json.loads(text if text is not None else fitted.read(fitted.GRID))
    return GridModel({k: ColumnModel(**v) for k, v in data["columns"].items()}, data.get("meta", {}))


def load_model(text: str | None = None) -> GridModel:
    """The fitted grid model (default: the shipped rag/answer/fitted/grid.json; `text`: another file's JSON)."""
    return _load(text)


def column_key(column: str) -> str | None:
    """The default column a name means ("problem", "headline result"), or None for a typed question."""
    key = column.strip().lower()
    key = COLUMN_ALIASES.get(key, key)
    return key if key in COLUMNS else None


def tokens(sentence: str) -> list[str]:
    """Lower-cased words of a sentence, a figure as "<num>" and a percentage as "<pct>" (cue vocabulary)."""
    out = []
    for w in CUE_WORD_RE.findall(sentence.lower()):
        out.append("<pct>" if w.endswith("%") else "<num>" if w[0].isdigit() else w)
    return out


def _stem(word: str) -> str:
    return word[:5]


def column_stems(question: str) -> frozenset[str]:
    """The content words of a column's question, cut to a common stem ("datasets" -> "datas", "propose" ->
    "propo"): a sentence that uses the column's own words ("we propose", "on three benchmarks") is about it."""
    return frozenset(_stem(w) for w in CUE_WORD_RE.findall(question.lower())
                     if not w[0].isdigit() and w not in COLUMN_QUESTION_STOPWORDS)


@lru_cache(maxsize=8192)
def data_source(sentence: str) -> tuple[bool, bool]:
    """(does the sentence write a data noun, does it name the data): a name beside a data noun ("the Multiface
    dataset", "labeled data of Librispeech", "the Framingham Heart Study cohort") or within the few words after
    a study's ran-on phrase ("experiments on ImageNet-1K", "evaluated on GLUE")."""
    vocab = Vocabulary(None)
    noun = bool(_DATA_NOUN_RE.search(sentence))
    nouns = [m.group(0).lower() for m in _DATA_NOUN_RE.finditer(sentence)]
    if _TASK_RE.search(sentence):
        nouns.append("task")
    if any(names_of_kind(sentence, n, "", vocab, "") for n in dict.fromkeys(nouns)):
        return noun, True
    for m in _RAN_ON_RE.finditer(sentence):
        for w in TOKEN_RE.findall(m.group(1))[:3]:
            if name_token(w, vocab) or w[0].isupper() and w[1:].islower() and w.lower() not in STOPWORDS:
                return noun, True
    return noun, False


def sentence_features(sentences: Sequence[str], evidence: Sequence[float], cues: dict[str, float],
                      question: str = "") -> list[dict[str, float]]:
    """FEATURES of every sentence of one abstract for one column (`evidence`: the evidence scorer's probability
    of each sentence for the column's question; `question`: the column's question, whose words are matched)."""
    n = len(sentences)
    stems = column_stems(question)
    out = []
    for j, s in enumerate(sentences):
        pos = j / (n - 1) if n > 1 else 0.0
        toks = tokens(s)
        weights = [cues[t] for t in toks if t in cues]
        seen = {_stem(t) for t in toks}
        out.append({
            "first": 1.0 if j == 0 else 0.0, "last": 1.0 if j == n - 1 and n > 1 else 0.0,
            "position": pos, "position_sq": pos * pos,
            "cue": sum(weights) / len(weights) if weights else 0.0,
            "cue_max": max(weights, default=0.0),
            "evidence": evidence[j] if j < len(evidence) else 0.0,
            "has_number": 1.0 if re.search(r"\d", s) else 0.0,
            "length": min(len(s.split()), 80) / 40.0,
            "column_words": len(stems & seen) / len(stems) if stems else 0.0,
            "contribution": 1.0 if CONTRIBUTION_RE.search(s) else 0.0,
            "contrast": 1.0 if _CONTRAST_RE.search(s) else 0.0,
            "data_noun": 1.0 if data_source(s)[0] else 0.0,
            "names_data": 1.0 if data_source(s)[1] else 0.0,
        })
    return out


def abstract_hit(paper_id: str, sentences: Sequence[str]) -> PaperHit:
    """A paper as the evidence scorer reads it, one chunk per sentence and no label or title: the grid's
    evidence feature sees only the abstract, the same for a SciFact abstract (fitting) as for an indexed one."""
    chunks = [Chunk(f"{paper_id}:{j}", s, 0.0) for j, s in enumerate(sentences)]
    return PaperHit(paper_id, "", "", 0, 1.0, " ".join(sentences), chunks=chunks, complete=True)


def column_evidence(question: str, paper_id: str, sentences: Sequence[str],
                    constants: Constants | None = None) -> list[float]:
    """The evidence scorer's probability of each sentence for a column's question, from the words alone
    (no corpus statistics, no vectors: the same features at fitting time and at answer time)."""
    if not sentences:
        return []
    retrieval = Retrieval(question, [abstract_hit(paper_id, sentences)], None, {}, "grid")
    cands = evidence_for(question, retrieval, Vocabulary(None), constants)
    return [c.prob for c in sorted(cands, key=lambda c: c.index)]


def _sigmoid_sum(f: dict[str, float], m: ColumnModel) -> float:
    import math

    z = m.bias + sum(m.weights.get(k, 0.0) * v for k, v in f.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def role_probabilities(column: str, paper_id: str, sentences: Sequence[str], model: GridModel | None = None,
                       constants: Constants | None = None) -> list[float]:
    """Probability that each sentence states the default column (problem, method, ...)."""
    m = (model or load_model()).columns[column]
    ev = column_evidence(COLUMNS[column], paper_id, sentences, constants)
    return [_sigmoid_sum(f, m) for f in sentence_features(sentences, ev, m.cues, COLUMNS[column])]


@dataclass
class Choice:
    """A cell before rendering: the chosen sentence (index into the abstract) and its probability."""

    index: int | None
    prob: float


def choose_role(column: str, paper_id: str, sentences: Sequence[str], model: GridModel | None = None,
                constants: Constants | None = None) -> Choice:
    """The likeliest sentence for a default column, or none when under the column's fitted threshold."""
    m = model or load_model()
    probs = role_probabilities(column, paper_id, sentences, m, constants)
    if not probs:
        return Choice(None, 0.0)
    best = max(range(len(probs)), key=lambda j: (probs[j], -j))
    return Choice(best if probs[best] >= m.columns[column].stated_at else None, probs[best])


def choose_evidence(question: str, retrieval: Retrieval, vocab: Vocabulary,
                    embed: Callable[[list[str]], list[list[float]]] | None = None,
                    constants: Constants | None = None) -> dict[str, tuple[str, float]]:
    """A typed column: per retrieved paper, its likeliest evidence sentence for the question and the probability
    (the citation lookup's scorer)."""
    best: dict[str, tuple[str, float]] = {}
    for c in evidence_for(question, retrieval, vocab, constants, embed):
        if c.prob > best.get(c.paper.paper_id, ("", -1.0))[1]:
            best[c.paper.paper_id] = (c.sentence, c.prob)
    return best


def stated(prob: float, constants: Constants | None = None) -> bool:
    """A typed column's cell is filled when its sentence is at least a 'weak' match (the lookup's threshold)."""
    return strength(prob, constants or current_constants()) != "none"


@dataclass
class Cell:
    """A checked cell: the sentence, its direct-answer span, and the citation check's verdict."""

    text: str
    lead: str | None
    supported: bool
    reason: str


def check_cell(question: str, sentence: str, label: str, title: str, paper_id: str, sentences: Sequence[str],
               policy: str = "mark") -> Cell:
    """The lead span of a cell's sentence (when lead.py gives one) and the citation check of both against the
    paper's own sentences, as any answer is checked."""
    found = lead_for(question, read_intent(question), [(paper_id, label, title, sentence)])
    lead = found.span if found and found.span and found.span != sentence and found.span in sentence else None
    source = [SourceText(1, label, list(sentences))]
    text = f"{sentence} [1]" + (f"\n{lead} [1]" if lead else "")
    checked = check_answer(text, source, policy)
    bad = [c for c in checked.checks if not c.supported]
    return Cell(sentence, lead, not bad, bad[0].reason if bad else "")


def paper_sentences(text: str) -> list[str]:
    """An abstract's sentences, as the citation check and the grid labels index them."""
    return list(sentences_of(text))


@dataclass
class GridPaper:
    """A row to fill: the paper's id, label, title and abstract sentences."""

    paper_id: str
    label: str
    title: str
    sentences: list[str]


def default_cell(column: str, paper: GridPaper, policy: str = "mark", model: GridModel | None = None) -> GridCell:
    """A default column's cell for one paper."""
    choice = choose_role(column, paper.paper_id, paper.sentences, model)
    if choice.index is None:
        return GridCell(column, paper.paper_id, NOT_STATED, True, probability=choice.prob)
    sentence = paper.sentences[choice.index]
    cell = check_cell(COLUMNS[column], sentence, paper.label, paper.title, paper.paper_id, paper.sentences, policy)
    return GridCell(column, paper.paper_id, cell.text, False, cell.lead, choice.index, choice.prob, cell.supported,
                    cell.reason)


def typed_cells(question: str, papers: Sequence[GridPaper], retrieval: Retrieval, vocab: Vocabulary,
                embed: Callable[[list[str]], list[list[float]]] | None = None, policy: str = "mark",
                constants: Constants | None = None) -> list[GridCell]:
    """A typed column's cells: each paper scored on its own (the evidence features are relative to the papers
    scored together), its likeliest sentence kept when at least a weak match."""
    hits = {p.paper_id: p for p in retrieval.papers}
    out = []
    for paper in papers:
        hit = hits.get(paper.paper_id)
        one = Retrieval(question, [hit], retrieval.query_vector, {}, retrieval.mode) if hit else None
        found = choose_evidence(question, one, vocab, embed, constants).get(paper.paper_id) if one else None
        if found is None or not stated(found[1], constants):
            out.append(GridCell(question, paper.paper_id, NOT_STATED, True, probability=found[1] if found else 0.0))
            continue
        sentence, prob = found
        index = paper.sentences.index(sentence) if sentence in paper.sentences else None
        cell = check_cell(question, sentence, paper.label, paper.title, paper.paper_id, paper.sentences, policy)
        out.append(GridCell(question, paper.paper_id, cell.text, False, cell.lead, index, prob, cell.supported,
                            cell.reason))
    return out


# --- rendering -------------------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def markdown_cell(text: str) -> str:
    """Paper text made inert inside a Markdown table cell: every Markdown/HTML metacharacter backslash-escaped
    (a `|` would split the cell, `<img>` or `![]()` would be rendered), line breaks folded to spaces."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def cell_text(cell: GridCell) -> str:
    """What a table shows in a cell: the quote, the lead first when there is one, a mark when the check failed."""
    if cell.not_stated:
        return NOT_STATED
    shown = f"{cell.lead} — “{cell.text}”" if cell.lead else cell.text
    return shown if cell.supported else f"⚠ {shown}"


def grid_markdown(grid: Grid) -> str:
    """A rag.schema.Grid as a Markdown table: one row per paper (label and id), one column per question."""
    head = ["paper", *grid.columns]
    lines = ["| " + " | ".join(markdown_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    for row in grid.rows:
        cells = [f"{markdown_cell(row.label)} ({markdown_cell(row.paper_id)})",
                 *(markdown_cell(cell_text(c)) for c in row.cells)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def grid_csv(grid: Grid) -> str:
    """A rag.schema.Grid as CSV (the csv module quotes): paper id, label, then one column per question."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["paper_id", "label", *grid.columns])
    for row in grid.rows:
        w.writerow([row.paper_id, row.label, *(cell_text(c) for c in row.cells)])
    return buf.getvalue()
