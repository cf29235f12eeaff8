"""How strongly each paper an answer retrieved carries its question, in the citation lookup's words.

A raw retrieval score (a fused rank score) means nothing to a reader; the evidence scorer's fitted probability for
the paper's best sentence does, and `rag.answer.evidence.strength` already turns it into strong / weak / none on
the fitted thresholds. This applies the same scorer to an answer's retrieved papers.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from rag.answer.evidence import current_constants, strength
from rag.answer.extractive import evidence_for, foreign
from rag.service import Assistant

log = logging.getLogger(__name__)

CACHE_SIZE = 512  # (question, papers) pairs kept: evidence panels are redrawn for every turn of a chat


@dataclass(frozen=True)
class Strength:
    """A paper's evidence for a question: 'strong', 'weak' or 'none', and the scorer's probability."""

    word: str
    prob: float

    def tip(self) -> str:
        """What the word means, for a tooltip (the thresholds are the fitted ones)."""
        c = current_constants()
        weak_at = max(c.weak_at, c.abstain_below)
        meaning = {"strong": f"at least {c.strong_at:.2f}: likelier evidence than not",
                   "weak": f"between {weak_at:.2f} and {c.strong_at:.2f}: some support, check the quote",
                   "none": f"below {weak_at:.2f}: this paper's sentences do not carry the question"}[self.word]
        return (f"Evidence {self.word}: the fitted evidence scorer gives this paper's best sentence a "
                f"{self.prob:.2f} probability of answering the question ({meaning}).")


class Strengths:
    """Per-paper evidence strengths for questions, cached per index version."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple[str, str, tuple[str, ...]], dict[str, Strength]] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, assistant: Assistant, version: str, question: str, paper_ids: list[str]) -> dict[str, Strength]:
        """The strength of each paper for the question ({} when it cannot be scored: the panel shows none)."""
        ids = tuple(dict.fromkeys(p for p in paper_ids if p))
        if not ids or not question.strip():
            return {}
        key = (version, question, ids)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        try:
            out = _score(assistant, question, list(ids))
        except Exception:  # the panel is still useful without the words
            log.exception("could not score the evidence strengths")
            return {}
        with self._lock:
            self._cache[key] = out
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return out


def _score(assistant: Assistant, question: str, paper_ids: list[str]) -> dict[str, Strength]:
    """As `Assistant.cite` scores its hits: the best sentence per paper, and 'none' for a question whose words the
    index does not use (its nearest sentences are near by chance)."""
    retriever = assistant.retriever
    retrieval = retriever.complete(retriever.retrieve(question, k=len(paper_ids), paper_ids=paper_ids))
    vocab = assistant.vocabulary()
    best: dict[str, float] = {}
    for cand in evidence_for(question, retrieval, vocab):
        best[cand.paper.paper_id] = max(best.get(cand.paper.paper_id, 0.0), cand.prob)
    by_chance = foreign(question, vocab)
    return {p: Strength("none" if by_chance else strength(best.get(p, 0.0)), best.get(p, 0.0)) for p in paper_ids}
