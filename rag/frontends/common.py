"""Text every chat-like front end sends with an answer: a readable reference list, and Markdown made inert.

Clients that ignore the structured citations (a chat UI that shows only message text, an agent that reads only the
tool's text) still get the `[n]` markers resolved by the list at the end of the text.
"""

from __future__ import annotations

import re

from rag import prompts
from rag.schema import Answer
from rag.text import inert_text


def with_references(answer: Answer) -> str:
    """The answer text followed by a numbered reference list (nothing is added to an abstention)."""
    if not answer.citations:
        return answer.answer
    lines = [f"[{c.n}] {c.reference or c.label} — “{c.quote}”" for c in answer.citations]
    return f"{answer.answer}\n\n{prompts.REFERENCES_HEADING}\n" + "\n".join(lines)


_ACTIVE_MARKUP = re.compile(r"!\[|<(?=[A-Za-z/!?])")


def markdown_safe(text: str) -> str:
    """Neutralise the Markdown/HTML that a chat client would act on (an image it would fetch, a tag) in text that
    comes from abstracts or from a model that read them: `![` and `<tag` get a backslash, which Markdown renders
    as the plain character; escape sequences, control and bidi characters are made inert (rag.text.inert_text).
    Nothing else changes."""
    return _ACTIVE_MARKUP.sub(lambda m: "\\" + m.group(0), inert_text(text))


class MarkdownSafeStream:
    """`markdown_safe` over a text arriving in pieces: a trailing `!` or `<` waits for the next piece."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        if text.endswith(("!", "<")):
            text, self._held = text[:-1], text[-1]
        return markdown_safe(text)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held
