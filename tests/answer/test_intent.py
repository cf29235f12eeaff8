"""What a question asks: one typed value per question, read from its grammar (no index, milliseconds)."""

from __future__ import annotations

import pytest

from rag.answer.intent import Asks, is_polar, read_intent

COMMON = {"llm", "llms", "model", "models"}  # a fake collection's common vocabulary


def common(token: str) -> bool:
    return token.lower() in COMMON


@pytest.mark.parametrize("question, asks", [
    ("How many GPUs were used to train the model?", Asks.NUMBER),
    ("What speedup does FLASH reach on LIBERO?", Asks.NUMBER),
    ("Which datasets are used?", Asks.NAMES),
    ("What GPUs was it trained on?", Asks.NAMES),
    ("What does DyMoS stand for?", Asks.DEFINITION),
    ("Compare RecMem and CIB.", Asks.COMPARISON),
    ("What does RecMem propose?", Asks.CONTRIBUTION),
    ("What limitation of reward models does PerturbRM point out?", Asks.LIMITATION),
    ("Do they report results only on English data?", Asks.YES_NO),
    ("Is Arabic one of the 11 languages in CoVost?", Asks.YES_NO),
    ("Are the annotations automatic or manually created?", Asks.DESCRIPTION),  # alternatives: not yes/no
    ("Which paper proposes ReLoop?", Asks.LOOKUP),
    ("Is there work on watermarking LLM-generated text?", Asks.LOOKUP),  # polar, but a paper is the answer
    ("Which papers use GRPO?", Asks.PAPERS),
    ("Activated Cdk5 regulates neuronal death in mice", Asks.CLAIM),
    ("How is the data annotated?", Asks.DESCRIPTION),
])
def test_each_question_asks_one_kind(question: str, asks: Asks) -> None:
    assert read_intent(question, common).asks is asks


def test_a_number_question_carries_what_is_counted() -> None:
    intent = read_intent("How many GPUs were used to train the model?", common)
    assert intent.number is not None and intent.names is None
    assert intent.number.counts
    assert intent.number.units == {"gpus"} and intent.number.acronyms == ("GPU",)


def test_a_names_question_carries_its_kind() -> None:
    intent = read_intent("Which datasets are used?", common)
    assert intent.names is not None and intent.number is None
    assert intent.names.kind == "datasets"
    assert intent.names.strict


@pytest.mark.parametrize("question, polar", [
    ("Does the model need retraining?", True), ("Is it open source or proprietary?", False),
    ("What is used?", False), ("Have they evaluated on Chinese?", True), ("Is it good or not?", True),
])
def test_polar_questions(question: str, polar: bool) -> None:
    assert is_polar(question) is polar
