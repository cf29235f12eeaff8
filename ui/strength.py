"""How strongly each paper an answer retrieved carries its question, in the citation lookup's words.

A raw retrieval score (a fused rank score) means nothing to a reader; the citation lookup's fitted probability
that a paper is the one asked for does, and its thresholds turn it into strong / weak / none
(rag/answer/lookup.py). The evidence panel asks `Assistant.cite` restricted to the answer's retrieved papers, so
a paper carries the same word here as in the Lookup tab, the CLI, MCP and `/v1`.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from rag.answer.lookup import load_lookup
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
        c = load_lookup()
        meaning = {"strong": f"at least {c.strong_at:.2f}: on held-out lookups such hits were the paper asked "
                             "for at least 9 times in 10; cite it after reading the quote",
                   "weak": f"between {c.weak_at:.2f} and {c.strong_at:.2f}: worth reading, not to be cited unread",
                   "none": f"below {c.weak_at:.2f}, or the question's words are foreign to the papers: unlikely "
                           "to carry the question"}[self.word]
        return (f"Evidence {self.word}: the fitted citation-lookup model gives this paper a {self.prob:.2f} "
                f"probability of being the one the question is after ({meaning}).")


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
    """As the Lookup tab words its hits (`Assistant.cite`), over the answer's retrieved papers only."""
    hits = assistant.cite(question, k=len(paper_ids), paper_ids=paper_ids)
    return {h.paper_id: Strength(h.strength, h.match) for h in hits}
