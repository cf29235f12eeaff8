"""Passages and their reading: the scored sentences of the retrieved papers grouped into what the reader reads,
the best of them read, and every sentence given its passage's reading.

A full text's passage is a paragraph (a segment of its layout, rag/corpus/sections.py) read with its section
heading; an abstract's passage is one sentence read with its paper's title (an abstract is short, and the
reader was trained on both forms: rag/read/passages.py). The first stage (the evidence scorer's sentence
probabilities, rag/answer/evidence.py) picks which passages are read: every one when they are few, else the
`top_n` best, so a question costs at most `top_n` pairs.

After reading, a sentence's `prob` is its passage's reader probability and `first` keeps the first stage's;
sentences of passages that were not read rank below every read one (their first-stage probability scaled by
the lowest reading). Sorting by (`prob`, `first`) puts the best passage first and, within it, the sentence the
first stage found likeliest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from rag.answer.evidence import Candidate
from rag.corpus.sections import segments
from rag.read.model import Reader, Reading
from rag.read.passages import passage_text

if TYPE_CHECKING:
    from rag.answer.retrieve import PaperHit


@dataclass
class PassageRead:
    """One passage of one paper, the sentence candidates in it, and the reader's verdict (None: not read)."""

    paper: PaperHit
    segment: int  # layout segment (paragraph) index; for an abstract, -1 - the sentence's index
    text: str
    context: str
    candidates: list[Candidate] = field(default_factory=list)
    reading: Reading | None = None

    @property
    def first(self) -> float:
        """The first stage's score: its best sentence's probability."""
        return max((c.first for c in self.candidates), default=0.0)

    score: float = 0.0  # the passage's probability of answering: the reader's and the first stage's, combined

    @property
    def probability(self) -> float:
        return self.score if self.reading is not None else 0.0


@lru_cache(maxsize=512)
def _segments(text: str, layout: str) -> tuple[tuple[str, str], ...]:
    """(section, text) of each layout segment of a paper (cached: a paper is read for many questions)."""
    return tuple((section, piece) for _page, section, piece in segments(text, layout))


def group(cands: Sequence[Candidate]) -> list[PassageRead]:
    """The candidates grouped into passages, in order of first appearance (candidates come sorted by the first
    stage, so the first passage holds the first stage's best sentence)."""
    out: dict[tuple[str, int], PassageRead] = {}
    for c in cands:
        p = c.paper
        if c.segment >= 0 and p.layout:
            key = (p.paper_id, c.segment)
            if key not in out:
                segs = _segments(p.text, p.layout)
                section, text = segs[c.segment] if c.segment < len(segs) else ("", c.sentence)
                out[key] = PassageRead(p, c.segment, text, section or "")
        else:
            key = (p.paper_id, -1 - c.index)
            if key not in out:
                out[key] = PassageRead(p, key[1], c.sentence, p.title or p.label)
        out[key].candidates.append(c)
    return list(out.values())


def _logit(p: float) -> float:
    p = min(1 - 1e-6, max(1e-6, p))
    return math.log(p / (1 - p))


def combined(reading: Reading, first: float, weights: dict[str, float]) -> float:
    """A read passage's probability: the fitted logistic of the reader's logit and the first stage's."""
    z = weights.get("bias", 0.0) + weights.get("reader", 1.0) * reading.relevance + \
        weights.get("first", 0.0) * _logit(first)
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def read(question: str, cands: list[Candidate], reader: Reader | None, top_n: int,
         weights: dict[str, float] | None = None) -> list[PassageRead]:
    """Group the candidates into passages, read the `top_n` best by the first stage (all when no more), and
    re-score every candidate (module docstring). Returns the passages, best reading first. Without a reader the
    candidates keep their first-stage probabilities and the passages their first-stage order."""
    passages = group(cands)
    if reader is None or not passages:
        return passages
    chosen = sorted(passages, key=lambda x: -x.first)[:top_n]
    readings = reader.read(question, [passage_text(x.context, x.text) for x in chosen])
    w = weights or {"reader": 1.0}
    for x, r in zip(chosen, readings):
        x.reading = r
        x.score = combined(r, x.first, w)
    lowest = min(x.probability for x in chosen)
    for x in passages:
        for c in x.candidates:
            c.prob = x.probability if x.reading is not None else c.first * lowest
    cands.sort(key=lambda c: (c.prob, c.first), reverse=True)
    return sorted(passages, key=lambda x: (x.reading is not None, x.probability, x.first), reverse=True)


def best_is_full_text(passages: Sequence[PassageRead]) -> bool:
    """Is the best read passage a full text's paragraph? The answer stage's reader thresholds (abstain_below,
    yes_at) were fitted on QASPER paragraphs and apply there only: an abstract's one-sentence passages score
    lower for the same evidence, and abstracts keep the first stage's checks, fitted on abstracts."""
    read = [x for x in passages if x.reading is not None]
    return bool(read) and read[0].segment >= 0


@dataclass(frozen=True)
class ReaderRun:
    """How an answer reads: the reader (None: off) and how many passages it reads per question."""

    reader: Reader | None
    top_n: int = 24


def reader_run(folder: str = "", top_n: int = 24, threads: int = 0) -> ReaderRun:
    """The configured reader (rag.settings: PAPERS_READER, PAPERS_READER_PASSAGES, PAPERS_READER_THREADS)."""
    from rag.read.model import load_reader

    return ReaderRun(load_reader(folder, threads) if top_n > 0 else None, top_n)
