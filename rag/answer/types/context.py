"""What an answer type is given: the question read (`intent`, and the parse it came from), the papers it names
(`focus`), the pool the answer is drawn from, every pool sentence scored (`cands`, best first), the passages the
reader read (best first), and the corpus statistics and fitted constants the decisions use."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rag.answer.calibration import AnswerConstants
from rag.answer.evidence import Candidate, Constants, Vocabulary
from rag.answer.intent import Intent
from rag.answer.passages import PassageRead
from rag.answer.retrieve import PaperHit


@dataclass
class Context:
    question: str
    intent: Intent
    focus: list[PaperHit]           # papers the question names, in the order named
    focus_terms: set[str]           # stems of the names it uses for them
    names: dict[str, str]           # paper id -> the name the question uses for it
    pool: list[PaperHit]            # the papers the answer is drawn from (the named ones, else all retrieved)
    cands: list[Candidate]          # every pool sentence, best first
    papers: list[PaperHit]          # every retrieved paper, in retrieval order
    vocab: Vocabulary
    c: Constants
    ac: AnswerConstants
    aspect: list[Candidate] | None = None  # named papers' sentences scored without their names (comparisons)
    passages: list[PassageRead] = field(default_factory=list)

    def narrowed(self, paper: PaperHit) -> Context:
        """The same question asked of one of its named papers alone."""
        return replace(self, focus=[paper], pool=[paper], papers=[paper],
                       cands=[x for x in self.cands if x.paper is paper],
                       passages=[x for x in self.passages if x.paper is paper])
