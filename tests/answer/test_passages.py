"""Passages: sentences grouped into what the reader reads, the best read, every sentence re-scored (a fake
reader and fake papers: no model, no index)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from rag.answer.evidence import Candidate
from rag.answer.passages import group, read
from rag.read.model import Reading
from rag.read.passages import passage_text

P1 = "We study depth. Deeper is better."
P2 = "We use PDTB 2.0 for evaluation."
P3 = "Training takes three hours on one GPU."
TEXT = " ".join([P1, P2, P3])


@dataclass
class _Paper:
    paper_id: str
    text: str
    layout: str = ""
    title: str = ""
    label: str = "X"
    chunks: list = field(default_factory=list)


def _layout() -> str:
    return json.dumps([[0, 0, "Abstract"], [len(P1) + 1, 0, "4 Data"], [len(P1) + len(P2) + 2, 0, "5 Setup"]])


def _cand(paper: _Paper, index: int, sentence: str, prob: float, segment: int = -1) -> Candidate:
    return Candidate(paper, 0, index, sentence, {}, prob, prob, segment)


class FakeReader:
    """Scores a passage by whether it holds a given word: the passages it was asked about are recorded."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.asked: list[str] = []

    def read(self, question: str, passages: list[str]) -> list[Reading]:
        self.asked += passages
        return [Reading(3.0 if self.word in p else -3.0, 0.0) for p in passages]


def test_a_full_texts_sentences_group_into_their_paragraphs_with_the_section() -> None:
    paper = _Paper("a", TEXT, _layout(), "A Paper")
    cands = [_cand(paper, 0, "We study depth.", 0.9, 0), _cand(paper, 2, "We use PDTB 2.0 for evaluation.", 0.5, 1),
             _cand(paper, 1, "Deeper is better.", 0.4, 0)]
    passages = group(cands)
    assert [(x.context, x.text, len(x.candidates)) for x in passages] == [("Abstract", P1, 2), ("4 Data", P2, 1)]


def test_an_abstracts_sentences_are_passages_of_their_own_read_with_the_title() -> None:
    paper = _Paper("b", TEXT, "", "A Title")
    passages = group([_cand(paper, 0, "We study depth.", 0.9), _cand(paper, 1, "Deeper is better.", 0.4)])
    assert [(x.context, x.text) for x in passages] == [("A Title", "We study depth."), ("A Title", "Deeper is better.")]


def test_the_reader_reorders_passages_and_sentences_and_reads_only_the_top_n() -> None:
    paper = _Paper("a", TEXT, _layout(), "A Paper")
    cands = [_cand(paper, 0, "We study depth.", 0.9, 0), _cand(paper, 2, "We use PDTB 2.0 for evaluation.", 0.5, 1),
             _cand(paper, 3, "Training takes three hours on one GPU.", 0.1, 2)]
    reader = FakeReader("PDTB")
    passages = read("Which datasets?", cands, reader, top_n=2)
    assert reader.asked == [passage_text("Abstract", P1), passage_text("4 Data", P2)]  # the first stage's best two
    assert passages[0].text == P2 and passages[-1].reading is None
    assert cands[0].sentence == "We use PDTB 2.0 for evaluation."  # sentences follow their passage's reading
    assert cands[-1].sentence == "Training takes three hours on one GPU." and cands[-1].prob < cands[1].prob
    assert cands[0].first == 0.5  # the first stage's probability is kept


@pytest.mark.parametrize("weights, best", [
    ({"reader": 1.0, "first": 0.0, "bias": 0.0}, P2),   # the reader decides
    ({"reader": 0.0, "first": 1.0, "bias": 0.0}, P1),   # the first stage decides
])
def test_passage_scores_follow_the_fitted_weights(weights: dict[str, float], best: str) -> None:
    paper = _Paper("a", TEXT, _layout(), "A Paper")
    cands = [_cand(paper, 0, "We study depth.", 0.9, 0), _cand(paper, 2, "We use PDTB 2.0 for evaluation.", 0.5, 1)]
    assert read("q", cands, FakeReader("PDTB"), top_n=5, weights=weights)[0].text == best


def test_without_a_reader_candidates_keep_the_first_stage() -> None:
    paper = _Paper("a", TEXT, _layout())
    cands = [_cand(paper, 0, "We study depth.", 0.9, 0), _cand(paper, 2, "We use PDTB 2.0 for evaluation.", 0.5, 1)]
    passages = read("q", cands, None, top_n=5)
    assert [c.prob for c in cands] == [0.9, 0.5] and all(x.reading is None for x in passages)
