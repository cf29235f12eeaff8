"""What the reader reads: a passage as text with its context, the same way in training and at answer time.

A full text's passage is a paragraph with its section heading ("4.2 Datasets: We use ..."); an abstract's
passage is one sentence with its paper's title. The model was trained on exactly this form
(eval/fit_reader.py imports `passage_text`), so the two never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTEXT_CHARS = 120  # a context longer than this is cut: it is a heading or a title, never the evidence


def passage_text(context: str, text: str) -> str:
    """The reader's input for one passage: "<context>: <text>" (the text alone without a context)."""
    context = " ".join(context.split())[:CONTEXT_CHARS]
    return f"{context}: {text}" if context else text


def text_offset(context: str) -> int:
    """Where the passage's own text starts in `passage_text(context, text)` (spans are found in the text)."""
    context = " ".join(context.split())[:CONTEXT_CHARS]
    return len(context) + 2 if context else 0


@dataclass(frozen=True)
class Passage:
    """A passage of one paper: its text (a paragraph or a sentence), its context, and where it is."""

    paper_id: str
    text: str
    context: str = ""
    segment: int = -1  # the paragraph's index in its paper's layout (-1: an abstract without one)

    @property
    def reader_text(self) -> str:
        return passage_text(self.context, self.text)
