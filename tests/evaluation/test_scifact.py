"""The SciFact benchmark's reading, anchors and scoring (eval/scifact.py) on a tiny SciFact-shaped corpus made
here, not the real one: files in the release's format, BM25 and dense anchors, RRF, rationale matching, answer
figures, and retrieval figures against ranx."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eval.scifact import (AnswerOutcome, answer_figures, answer_outcome, bm25_rankings, dense_rankings, is_rationale,
                          load_claims, load_corpus, load_qrels, naive_answer, retrieval_figures, rrf_rankings,
                          write_jsonl)

DOCS = [
    (11, "Glacier retreat in the Andes", ["Andean glaciers lost a third of their area since 1980.",
                                          "Retreat was fastest below 5000 metres.", "Snowfall did not change."]),
    (22, "Coffee and sleep latency", ["Caffeine taken six hours before bed delayed sleep onset.",
                                      "Total sleep time fell by one hour.", "Young adults were studied."]),
    (33, "Soil microbes in vineyards", ["Vineyard soils held more fungal species than forest soils.",
                                        "Copper sprays reduced bacterial diversity."]),
    (44, "Sleep in teenagers", ["Teenagers slept less on school nights.", "Screen use predicted shorter sleep."]),
]
CLAIMS = [
    {"id": 1, "claim": "Caffeine delays sleep onset.", "cited_doc_ids": [22],
     "evidence": {"22": [{"sentences": [0], "label": "SUPPORT"}]}},
    {"id": 2, "claim": "Andean glaciers have grown since 1980.", "cited_doc_ids": [11],
     "evidence": {"11": [{"sentences": [0], "label": "CONTRADICT"}]}},
    {"id": 3, "claim": "Screens shorten sleep of teenagers and caffeine too.", "cited_doc_ids": [44, 22],
     "evidence": {}},
]


@pytest.fixture()
def scifact(tmp_path: Path) -> Path:
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps({"doc_id": i, "title": t, "abstract": s,
                                                                 "structured": False}) for i, t, s in DOCS))
    (tmp_path / "claims_train.jsonl").write_text("\n".join(json.dumps(c) for c in CLAIMS))
    rows = [f"{c['id']}\t{d}\t1" for c in CLAIMS for d in c["cited_doc_ids"]]
    (tmp_path / "qrels_train.tsv").write_text("query-id\tcorpus-id\tscore\r\n" + "\r\n".join(rows) + "\r\n")
    return tmp_path


def test_release_files_are_read_and_converted(scifact: Path) -> None:
    claims = load_claims(scifact)
    assert [c.gold for c in claims] == [{"22"}, {"11"}, {"44", "22"}]
    assert claims[0].rationales == {"22": {0}} and claims[1].labels == {"11": "CONTRADICT"}
    assert not claims[2].rationales
    assert load_qrels(scifact) == {c.id: c.gold for c in claims}
    out = write_jsonl(scifact, scifact / "out" / "scifact.jsonl")
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[1] == {"id": "22", "title": "Coffee and sleep latency",
                       "abstract": " ".join(DOCS[1][2])}


def test_anchors_rank_the_matching_abstract_first(scifact: Path) -> None:
    corpus = load_corpus(scifact)
    claims = load_claims(scifact)
    bm25 = bm25_rankings(corpus, [c.claim for c in claims], 10)
    assert bm25[0][0] == "22" and bm25[1][0] == "11" and set(bm25[2][:2]) == {"44", "22"}
    # Dense anchor on hand-made unit vectors: each claim points at one document.
    ids = list(corpus)
    docs = np.eye(4, dtype=np.float32)
    queries = np.array([[0, 0.9, 0.1, 0], [1, 0, 0, 0], [0, 0.3, 0, 0.95]], dtype=np.float32)
    dense = dense_rankings(ids, docs, queries, 3)
    assert [r[0] for r in dense] == ["22", "11", "44"] and len(dense[0]) == 3
    fused = rrf_rankings(bm25, dense, 10)
    assert [r[0] for r in fused[:2]] == ["22", "11"] and set(fused[2][:2]) == {"44", "22"}
    figures = retrieval_figures(claims, fused, 10)
    assert figures["hit@1"] == 1.0 and figures["recall@10"] == 1.0


def test_retrieval_figures_agree_with_ranx(scifact: Path) -> None:
    from ranx import Qrels, Run, evaluate

    claims = load_claims(scifact)
    rankings = [["33", "44", "22"], ["22", "33", "44", "11"], ["44", "11", "33"]]  # misses, late hits, partial
    ours = retrieval_figures(claims, rankings, 10)
    qrels = Qrels({c.id: {g: 1 for g in c.gold} for c in claims})
    run = Run({c.id: {p: float(len(r) - i) for i, p in enumerate(r)} for c, r in zip(claims, rankings)})
    theirs = evaluate(qrels, run, ["ndcg@10", "recall@10", "hit_rate@1", "mrr"])
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@10"], abs=1e-9)
    assert ours["recall@10"] == pytest.approx(theirs["recall@10"], abs=1e-9)
    assert ours["hit@1"] == pytest.approx(theirs["hit_rate@1"], abs=1e-9)
    assert ours["mrr"] == pytest.approx(theirs["mrr"], abs=1e-9)
    assert 0 < ours["ndcg@10"] < 1 and ours["hit@1"] == pytest.approx(1 / 3)


def test_quotes_are_matched_to_rationale_sentences(scifact: Path) -> None:
    corpus, claims = load_corpus(scifact), load_claims(scifact)
    caffeine = claims[0]
    assert is_rationale("Caffeine taken six hours before bed delayed sleep onset.", "22", caffeine, corpus)
    # another splitter may cut the sentence or join it to the next: containment either way still counts
    assert is_rationale("Caffeine taken six hours before bed delayed sleep onset. Total sleep time fell by one hour.",
                        "22", caffeine, corpus)
    assert not is_rationale("Total sleep time fell by one hour.", "22", caffeine, corpus)  # not a rationale
    assert not is_rationale("Caffeine taken six hours before bed delayed sleep onset.", "44", caffeine, corpus)
    assert not is_rationale("sleep", "22", caffeine, corpus)  # a fragment is no quote

    outcomes = [answer_outcome(caffeine, [("22", corpus["22"]["sentences"][0])], False, corpus),
                answer_outcome(claims[1], [], True, corpus),  # abstained on a claim with evidence: wrong
                answer_outcome(claims[2], [("44", corpus["44"]["sentences"][1])], False, corpus)]
    assert outcomes[0] == AnswerOutcome(True, True, False) and outcomes[2] == AnswerOutcome(True, False, False)
    figures = answer_figures(claims, outcomes)
    assert figures["cites_relevant"] == pytest.approx(2 / 3)
    assert figures["rationale_quote"] == 0.5 and figures["claims_with_evidence"] == 2
    assert figures["wrong_abstentions"] == 1 and figures["wrong_abstentions_pct"] == 50.0


def test_naive_answer_quotes_the_top_papers_closest_sentence() -> None:
    vectors = {"a": np.array([[1, 0], [0.6, 0.8]], dtype=np.float32)}
    assert naive_answer(["a", "b"], [0.0, 1.0], vectors.__getitem__) == ("a", 1)
    assert naive_answer([], [0.0, 1.0], vectors.__getitem__) == ("", -1)
