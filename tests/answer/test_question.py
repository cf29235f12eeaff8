"""Question shapes are read from the question's grammar, the same on any corpus."""

from __future__ import annotations

import pytest

from rag.answer.question import analyse, head_noun, question_shape


@pytest.mark.parametrize("question, shape", [
    ("What limitation of existing moderation tools does ReasoningShield point out?", "limitation"),
    ("What is wrong with synthesized reasoning traces in user modeling, according to Recon?", "limitation"),
    ("Where does standard Item Response Theory fall short for reasoning models?", "limitation"),
    ("What gap in dune surveys does Sandmark address?", "limitation"),
    ("Why are label-free pseudo-rewards unreliable for multi-step reasoning?", "limitation"),
    ("What goes wrong with existing RRMs according to GRAM?", "limitation"),
    ("What does Sandmark do?", "contribution"),
    ("What does RSPO stand for?", "definition"),
    ("Compare RSPO and RICE-PO", "comparison"),
    ("Moderate grazing increases topsoil carbon", "claim"),
    # A gap that is a measured difference, not a shortcoming: a plain question.
    ("How large is the gap between standard ARC evaluation and PotARCin scores?", "question"),
    ("Which papers use GRPO?", "question"),
])
def test_question_shape(question: str, shape: str) -> None:
    assert question_shape(question) == shape


@pytest.mark.parametrize("question, units", [
    ("What WER does the model achieve on the noisy test set?", {"wer"}),
    ("What BLEU score does the system reach on the news task?", {"bleu"}),
    ("What mAP does the detector get on the street images?", {"map"}),
])
def test_a_metric_written_as_an_acronym_asks_for_its_value(question: str, units: set[str]) -> None:
    info = analyse(question)
    assert info.wants_number and not info.wants_names
    assert info.units == units


def test_a_metric_acronym_may_be_written_out_in_the_answer() -> None:
    assert analyse("What WER does the recogniser reach?").unit_acronyms == ["WER"]


def test_a_factor_in_the_singular_asks_for_a_value_in_the_plural_for_parts() -> None:
    info = analyse("What decay factor was used in the maze runs?")
    assert info.wants_number and info.units == {"decay"} and info.quantity == {"decay", "factor"}
    assert not analyse("What factors explain the drift?").wants_number


@pytest.mark.parametrize("question, quantity", [
    ("What learning rate was used to train the tagger?", {"learn", "rate"}),
    ("What per-gene AUROC does the probe get?", {"gene", "auroc"}),
    ("What is the theoretical maximum number of slots?", {"theoret"}),  # "number" and "maximum" are not written
    ("How much wall-clock computation time does the solver need?", {"time"}),
    ("Roughly how many participants contributed to the survey?", {"particip"}),
    ("How many LMs does the study rank?", {"lms"}),
])
def test_what_a_figure_sentence_must_state(question: str, quantity: set[str]) -> None:
    assert analyse(question).quantity == quantity


def test_a_single_generic_quantity_word_needs_no_statement() -> None:
    assert analyse("What accuracy does the tagger reach?").quantity == set()
    assert analyse("How much faster is the solver?").quantity == set()


@pytest.mark.parametrize("question, kind", [
    ("What GPUs were used to train the tagger?", "GPUs"),
    ("What GPU was used to train the tagger?", "GPU"),
    ("Which dataset is used to test the tagger on real speech?", "dataset"),
    ("Which encoder network encodes the image crops?", "encoder"),
])
def test_a_names_question_knows_the_kind_it_asks_names_of(question: str, kind: str) -> None:
    info = analyse(question)
    assert info.wants_names and info.kind == kind


def test_a_possessive_acronym_is_not_the_asked_kind() -> None:
    assert analyse("what's XYZ's relative gain on the hard split?").kind == ""
    assert analyse("What does XYZ do?").kind == ""


def test_head_noun_is_the_counted_plural_or_the_measured_noun() -> None:
    assert head_noun("participants contributed to the survey") == "participants"
    assert head_noun("labeled examples are there") == "examples"
    assert head_noun("microbial genomes come from the cores") == "genomes"
    assert head_noun("data comes from the cores", counted=False) == ""
    assert head_noun("wall-clock computation time does it take", counted=False) == "time"


def test_hardware_asks_for_names_of_its_members() -> None:
    from rag.answer.question import kind_nouns

    info = analyse("What hardware was the Zeta tagger trained on?")
    assert info.wants_names and info.kind == "hardware"
    assert {"GPU", "TPU", "CPU"} <= set(kind_nouns(info.kind))
    assert kind_nouns("dataset") == ("dataset",)
    assert analyse("Which software does Zeta run in?").kind == "software"


def test_words_written_in_capitals_are_names() -> None:
    from rag.answer.question import capitals

    assert capitals("What hardware was the BASE model of Zeta pre-trained on?") == ["BASE"]
    assert capitals("How do the BASE and LARGE models of Zeta differ?") == ["BASE", "LARGE"]
    assert capitals("What GPUs were used to train the tagger of RICE-PO?") == ["GPUs"]  # a hyphenated name is not a word in capitals
    assert capitals("WHAT HARDWARE WAS THE BASE MODEL TRAINED ON?") == []  # shouted, not named


def test_the_preposition_the_asked_name_is_the_object_of() -> None:
    from rag.answer.question import asked_preposition, kind_phrase

    assert asked_preposition("In which library was the tagger implemented?") == "in"
    assert asked_preposition("What GPU was the tagger trained on?") == "on"
    assert asked_preposition("What GPU was used to train the tagger?") == ""
    assert kind_phrase("In which software framework was the tagger implemented?", "software") == \
        ["software", "framework"]
    assert kind_phrase("What GPUs were used?", "GPUs") == ["GPUs"]


@pytest.mark.parametrize("question,counts", [
    ("How many parameters does ResNet50 + CBAM have?", True),
    ("is RecMem stable over long horizons? for how many test steps did they check?", True),
    ("How much memory does CoRF save?", False),  # a measure, not a count
    ("What speedup does CoRF report?", False),
    ("how many does it use?", False),  # no counted noun written
])
def test_a_how_many_question_counts_its_noun(question: str, counts: bool) -> None:
    assert analyse(question).counts is counts
