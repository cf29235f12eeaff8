"""QASPER scoring by the official definitions (eval/qasper.py), on hand-made questions: no index, no model."""

from __future__ import annotations

import pytest

from eval import qasper
from eval.qasper import Paper, Question, Reference


@pytest.mark.parametrize("prediction, truth, f1", [
    ("PDTB 2.0", "PDTB 2.0", 1.0),
    ("the PDTB 2.0 corpus", "PDTB 2.0", 0.8),          # articles dropped: 2 of 3 predicted tokens match
    ("BERT, ELMo", "ELMo and BERT", 0.8),
    ("Unanswerable", "Unanswerable", 1.0),
    ("Yes", "No", 0.0),
    ("", "anything", 0.0),
])
def test_token_f1(prediction: str, truth: str, f1: float) -> None:
    assert qasper.token_f1(prediction, truth) == pytest.approx(f1)


@pytest.mark.parametrize("predicted, gold, f1", [
    ([], [], 1.0), (["a"], [], 0.0), ([], ["a"], 0.0), (["a"], ["a", "b"], 2 / 3), (["a", "c"], ["a", "b"], 0.5),
])
def test_paragraph_f1(predicted: list[str], gold: list[str], f1: float) -> None:
    assert qasper.paragraph_f1(predicted, gold) == pytest.approx(f1)


PAPER = Paper("p1", "A Title", "We study X.", [("4 Data", ["We use PDTB 2.0 for evaluation.",
                                                             "Training takes three hours."])])


def test_score_takes_the_best_annotator_and_leaves_figure_evidence_out() -> None:
    q = Question("q1", "Which dataset?", [
        Reference("PDTB 2.0", "extractive", ["We use PDTB 2.0 for evaluation."]),
        Reference("Unanswerable", "none", []),
        Reference("PDTB", "extractive", ["FLOAT SELECTED: Table 1: data"])])
    s = qasper.score(q, "PDTB 2.0", ["We use PDTB 2.0 for evaluation."])
    assert (s.answer_f1, s.evidence_f1, s.type) == (1.0, 1.0, "extractive")
    assert qasper.score(q, "Unanswerable", []).evidence_f1 == 1.0  # the second annotator found no evidence
    assert qasper.score(q, "x", ["FLOAT SELECTED: Table 1: data"]).evidence_f1 == 0.0


def test_prediction_reads_abstentions_yes_no_leads_and_quotes() -> None:
    quote = {"quote": "We use PDTB 2.0 for evaluation."}
    assert qasper.prediction({"abstained": True}, PAPER) == ("Unanswerable", [])
    assert qasper.prediction({"lead": "No: we use PDTB 2.0", "citations": [quote]}, PAPER) == \
        ("No", ["We use PDTB 2.0 for evaluation."])
    assert qasper.prediction({"lead": "PDTB 2.0", "citations": [quote]}, PAPER)[0] == "PDTB 2.0"
    assert qasper.prediction({"lead": None, "citations": [quote]}, PAPER)[0] == quote["quote"]


def test_markdown_is_written_as_the_scoring_rule_says_and_read_back_whole(tmp_path) -> None:  # noqa: ANN001
    from rag.corpus.scan import read_file

    text = qasper.to_markdown(PAPER)
    assert text.startswith("# A Title\n\n## Abstract\n\nWe study X.\n\n## 4 Data\n\n")
    (tmp_path / "p1.md").write_text(text)
    [paper] = read_file(tmp_path / "p1.md", 2**20, 20_000).papers
    for paragraph in PAPER.paragraphs:
        assert qasper.paragraph_of(paragraph, PAPER) == paragraph and paragraph in paper.text


def test_folds_split_by_paper_and_are_stable() -> None:
    assert qasper.fold_of("1912.01214") == qasper.fold_of("1912.01214")
    assert {qasper.fold_of(f"paper-{i}") for i in range(100)} == set(range(qasper.FOLDS))
