"""The reader's thresholds (fitted on QASPER paragraphs) decide only where the best read passage is a full
text's paragraph; abstracts keep the first stage's checks. A table on hand-made passages, no index."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag.answer.passages import PassageRead, best_is_full_text
from rag.answer.types.yes_no import verdict
from rag.read.model import Reading

PAPER = SimpleNamespace(paper_id="p1")


def passage(segment: int, relevance: float | None, score: float = 0.5) -> PassageRead:
    x = PassageRead(PAPER, segment, "text", "context", reading=None if relevance is None else Reading(relevance))
    x.score = score
    return x


@pytest.mark.parametrize(("passages", "full"), [
    ([passage(3, 1.0)], True),                       # a paragraph read first
    ([passage(-1, 1.0), passage(3, 0.5)], False),    # an abstract's sentence read first
    ([passage(3, None), passage(-2, 0.2)], False),   # the paragraph was not read
    ([], False),
])
def test_best_is_full_text(passages: list[PassageRead], full: bool) -> None:
    assert best_is_full_text(passages) is full


@pytest.mark.parametrize(("segment", "score", "expected"), [
    (2, 0.9, ("Yes", "the model is trained on English data only")),
    (2, 0.1, ("No", "")),
    (-1, 0.9, None),  # an abstract: no verdict from a threshold fitted on paragraphs
])
def test_the_verdict_is_given_for_full_texts_only(segment: int, score: float, expected: object) -> None:
    quote = "In all experiments, the model is trained on English data only."
    assert verdict("p1", quote, [passage(segment, 0.0, score)], yes_at=0.2) == expected


@pytest.mark.parametrize(("sentence", "shown"), [
    ("In all experiments, the model is trained on English data only.", "the model is trained on English data only"),
    ("The best results are achieved with a classifier based on a neural network implemented with a "
     "multi-layer perceptron.", ""),  # one clause: no fragment cut at a word count
])
def test_a_yes_shows_a_whole_clause_or_none(sentence: str, shown: str) -> None:
    assert verdict("p1", sentence, [passage(2, 0.0, 0.9)], yes_at=0.2) == ("Yes", shown)
