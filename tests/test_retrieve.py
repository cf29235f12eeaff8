"""Retrieval on the real corpus: the right paper for hand-written questions, in every mode; scoping."""

from __future__ import annotations

import pytest

from eval.metrics import retrieval_scores

from .conftest import load_questions


@pytest.fixture(scope="module")
def answerable() -> list[dict]:
    return [q for q in load_questions("dev_questions.jsonl") if q["gold"]]


@pytest.mark.parametrize("mode,min_hit1,min_hit5", [("hybrid", 0.85, 0.95), ("dense", 0.65, 0.85),
                                                    ("bm25", 0.7, 0.85)])
def test_dev_questions_find_their_papers(assistant, answerable: list[dict], mode: str, min_hit1: float,
                                         min_hit5: float) -> None:
    hit1 = hit5 = 0.0
    for q in answerable:
        res = assistant.retriever.retrieve(q["question"], k=5, mode=mode)
        scores = retrieval_scores([p.paper_id for p in res.papers], set(q["gold"]))
        hit1 += scores["hit@1"]
        hit5 += scores["hit@5"]
    n = len(answerable)
    assert hit1 / n >= min_hit1 and hit5 / n >= min_hit5, (mode, hit1 / n, hit5 / n)


def test_results_are_grouped_per_paper(assistant) -> None:
    res = assistant.retriever.retrieve("Over how many test steps does RecMem stay stable?", k=5)
    ids = [p.paper_id for p in res.papers]
    assert len(ids) == len(set(ids)) == 5
    top = res.papers[0]
    assert top.label == "RecMem" and not top.complete
    best = max(top.chunks, key=lambda c: c.cosine)
    assert "1,800 test steps" in best.text and best.cosine > 0.5
    assert [p.score for p in res.papers] == sorted((p.score for p in res.papers), reverse=True)
    # complete() gives every paper all its chunks, in order, with the same cosines
    before = {c.chunk_id: c.cosine for c in top.chunks}
    assistant.retriever.complete(res)
    assert top.complete and " ".join(c.text for c in top.chunks) == top.text
    assert all(abs(c.cosine - before[c.chunk_id]) < 1e-3 for c in top.chunks if c.chunk_id in before)


def test_scope_restricts_to_given_papers(assistant) -> None:
    papers = {e.label: e.paper_id for e in assistant.papers()}
    scope = [papers["DyMoS"], papers["CoRF"]]
    for mode in ("hybrid", "dense", "bm25"):
        res = assistant.retriever.retrieve("Over how many test steps does RecMem stay stable?", k=5,
                                           paper_ids=scope, mode=mode)
        assert {p.paper_id for p in res.papers} <= set(scope)


def test_label_is_searchable(assistant) -> None:
    res = assistant.retriever.retrieve("PotARCin", k=3, mode="bm25")
    assert res.papers[0].label == "PotARCin"
