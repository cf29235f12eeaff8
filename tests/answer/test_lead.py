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
