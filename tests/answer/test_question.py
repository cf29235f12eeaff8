"""Question shapes are read from the question's grammar, the same on any corpus."""

from __future__ import annotations

import pytest

from rag.answer.question import question_shape


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
