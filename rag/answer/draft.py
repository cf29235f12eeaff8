"""An extractive answer before it is numbered and checked: the quotes chosen (`Draft`), or the abstention, and
how an abstention is worded (the closest papers it names, "gives no figure for ...", "names no ...")."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field

from rag import prompts
from rag.answer.evidence import Candidate
from rag.answer.intent import Intent
from rag.answer.passages import PassageRead
from rag.answer.retrieve import PaperHit
from rag.corpus.sections import parse_layout
from rag.text import QUESTION_WORD_RE, stems

MAX_SENTENCES = 2         # quotes per paper
CLOSEST_SHOWN = 3         # papers an abstention names
CLOSEST_CHARS = 140       # ... with this much of their best sentence


@dataclass
class Quote:
    paper: PaperHit
    sentence: str


@dataclass
class Draft:
    """An extractive answer before numbering: quotes in order, or an abstention sentence."""

    quotes: list[Quote]
    abstention: str | None = None
    summary: str | None = None
    intent: Intent | None = None  # what the question asked (the lead line reads it)
    best: Quote | None = None  # the likeliest quote, when the quotes are shown in another order
    passages: list[PassageRead] = field(default_factory=list)  # the passages read, best first (the lead reads them)


def full_text(paper: PaperHit) -> bool:
    """A paper read with its sections (a PDF), not an abstract alone: an abstract leaves kind nouns out
    ("evaluated on BEIR"), a whole paper that used a dataset or a GPU writes the word somewhere."""
    return len(parse_layout(paper.layout or "")) > 1


def closest(cands: list[Candidate]) -> str:
    """'Closest papers:' lines (label + the start of its best sentence) added to an abstention."""
    seen: dict[str, Candidate] = {}
    for c in sorted(cands, key=lambda c: c.prob, reverse=True):
        seen.setdefault(c.paper.paper_id, c)
    lines = []
    for c in list(seen.values())[:CLOSEST_SHOWN]:
        s = c.sentence if len(c.sentence) <= CLOSEST_CHARS else c.sentence[:CLOSEST_CHARS].rsplit(" ", 1)[0] + "…"
        lines.append(f"- {c.paper.label}: {s}")
    return ("\n" + prompts.ABSTAIN_CLOSEST + "\n" + "\n".join(lines)) if lines else ""


def abstain_with(text: str, cands: list[Candidate]) -> Draft:
    return Draft([], text + closest(cands))


def no_match(papers: list[PaperHit]) -> str:
    """No sentence answers: said of "the closest papers" when any of them is a full text, not an abstract."""
    return prompts.ABSTAIN_NO_MATCH_TEXTS if any(full_text(p) for p in papers) else prompts.ABSTAIN_NO_MATCH


def no_figure(paper: PaperHit, what: str) -> str:
    template = prompts.ABSTAIN_NO_FIGURE_TEXT if full_text(paper) else prompts.ABSTAIN_NO_FIGURE
    return template.format(paper=paper.label, what=what)


def no_names(paper: PaperHit) -> str:
    return (prompts.ABSTAIN_NO_NAMES_TEXT if full_text(paper) else prompts.ABSTAIN_NO_NAMES).format(paper=paper.label)


def as_written(question: str, wanted: Set[str]) -> str:
    """The question's words whose stems are `wanted`, as the user wrote them and in their order ("wall-clock
    computation" for the stems clock, comput, wall, wall-clock), each once."""
    out: list[str] = []
    for w in QUESTION_WORD_RE.findall(question):
        if stems(w) & wanted and w not in out:
            out.append(w)
    return " ".join(out) or " ".join(sorted(wanted))
