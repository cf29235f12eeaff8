"""The lead line: the figure asked for, shown so that it says what it measures."""

from __future__ import annotations

from rag.answer.lead import number_span
from rag.text import stems


def test_a_bare_figure_is_shown_from_the_asked_word_before_it() -> None:
    s = "On the noisy split, the probe raises per-token AUROC from chance to 0.812."
    assert number_span(s, stems("auroc")) == "AUROC from chance to 0.812"
    assert number_span("The decay factor is γ = 0.9.", stems("decay factor")) == "decay factor is γ = 0.9"


def test_a_figure_with_its_unit_is_kept_as_it_was() -> None:
    assert number_span("We train the tagger for 90 epochs.", stems("epochs")) == "90 epochs"


def test_a_percentage_asked_is_the_figure_with_a_percent_sign() -> None:
    from rag.answer.lead import scored_number_span

    s = "The filter cut the number of mislabelled lines from 50 to 40, a 20% reduction."
    asked = stems("number mislabelled lines")
    assert scored_number_span(s, asked, percent=True)[1].startswith("20%")
    assert not scored_number_span(s, asked)[1].startswith("20%")  # the count stands nearer the asked words


def test_the_asked_kinds_own_noun_is_not_its_name() -> None:
    from rag.answer.lead import names_span

    s = "Each batch fits on one GPU and we train on 16 Vexa-R9 GPUs."
    assert names_span(s, "Zeta", "hardware") == "16 Vexa-R9 GPUs"  # with its count and noun
    assert names_span(s, "Zeta", "GPUs") == "16 Vexa-R9 GPUs"
    assert names_span(s, "Zeta") == "GPU"


def test_names_written_one_after_the_other_are_one_name() -> None:
    from rag.answer.lead import names_span

    s = "All runs use a single ORVEX Q7000 GPU and 32 CPU cores."
    assert names_span(s, "Zeta", "hardware") == "ORVEX Q7000 GPU"
    assert names_span("The ORVEX Q7000 runs it.", "Zeta") == "ORVEX Q7000"
    assert names_span("We evaluate on KiloQA and DeepBench.", "Zeta") == "KiloQA and DeepBench"


def test_after_a_preposition_which_framework_is_no_lookup() -> None:
    from rag.answer.question import analyse

    assert not analyse("In which framework were all the baselines reimplemented?").lookup
    assert not analyse("On which benchmark was the probe tested?").lookup
    assert analyse("Which framework unifies retrieval and ranking?").lookup
