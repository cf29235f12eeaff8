"""Text every chat-like front end sends with an answer: a readable reference list, and Markdown made inert.

Clients that ignore the structured citations (a chat UI that shows only message text, an agent that reads only the
tool's text) still get the `[n]` markers resolved by the list at the end of the text.
"""

from __future__ import annotations

import re
from dataclasses import is_dataclass
from typing import Any

from rag import prompts
from rag.schema import Answer, record
from rag.text import inert_data, inert_text


def with_references(answer: Answer) -> str:
    """The answer text followed by a numbered reference list (nothing is added to an abstention)."""
    if not answer.citations:
        return answer.answer
    lines = [f"[{c.n}] {c.reference or c.label} — “{c.quote}”" for c in answer.citations]
    return f"{answer.answer}\n\n{prompts.REFERENCES_HEADING}\n" + "\n".join(lines)


def outgoing(obj: Any) -> Any:
    """What leaves through `--json`, /v1 and MCP, made from one serialiser: a schema object's record
    (rag.schema.record), a pydantic model's JSON dump, or JSON-ready data, with every string in it made inert
    (rag.text.inert_data): escape sequences, control and bidi characters from paper text never reach a client."""
    if callable(getattr(obj, "model_dump", None)):  # a pydantic model (not imported here: `papers --help` is instant)
        obj = obj.model_dump(mode="json")
    elif is_dataclass(obj) and not isinstance(obj, type):
        obj = record(obj)
    return inert_data(obj)


# What a Markdown renderer acts on, each given a backslash (which it renders as the plain character):
# - a backslash: escaping it first is what keeps every other escape ours (`\<img` from an abstract would
#   otherwise come out as `\\<img`, an escaped backslash followed by a real tag);
# - `![` (an image, fetched with no click) and `<` before a tag, autolink, comment or directive;
# - `]` right before `(`, which closes the text of an inline link or image, and before `:`, which ends a link
#   definition (a definition would turn `[x]`, `[x][r]` or `![x][r]` into a link or an image elsewhere).
# With no inline link and no definition, no link or image can form. Nothing else changes, so plain text stays
# readable in clients that show it raw; in particular the answers' "RecMem [1]: “…”" keeps its `]:`: a definition
# starts a line (after any `>`, `-`, `*`, `+` or `1.` markers), so `]:` closing a citation marker that follows a
# word on its line cannot end one (`_citation_before`).
_ACTIVE_MARKUP = re.compile(r"\\|!\[|<(?=[A-Za-z/!?])|\](?=[(:])")
_CITATION_TAIL = re.compile(r"[^\s>*+.)\-\d\\] \[\d+(?:[,;] ?\d+)*\Z")
LOOKBEHIND = 40  # the most text before a `]` that deciding it reads (`_CITATION_TAIL`); the stream keeps as much


def _citation_before(text: str, at: int) -> bool:
    """Whether the `]` at `at` closes a citation marker after a word ("RecMem [1]", "as shown [2, 3]")."""
    return _CITATION_TAIL.search(text, max(0, at - LOOKBEHIND), at) is not None


def _escape(m: re.Match[str]) -> str:
    if m.group(0) == "]" and m.string[m.end():m.end() + 1] == ":" and _citation_before(m.string, m.start()):
        return "]"
    return "\\" + m.group(0)


def _escaped(text: str) -> str:
    """`_ACTIVE_MARKUP` escaped in text already made inert (one pass, so no escape is escaped again)."""
    return _ACTIVE_MARKUP.sub(_escape, text)


def markdown_safe(text: str) -> str:
    """Neutralise the Markdown/HTML that a chat client would act on (an image it would fetch, a tag, a link) in
    text that comes from abstracts or from a model that read them (`_ACTIVE_MARKUP`); escape sequences, control
    and bidi characters are made inert (rag.text.inert_text). Nothing else changes."""
    return _escaped(inert_text(text))


class MarkdownSafeStream:
    """`markdown_safe` over a text arriving in pieces. A trailing run of `!`, `<` and `]` waits for the next piece,
    which decides whether they are escaped (the whole run: in `<!` the `<` waits on the `!`); the last LOOKBEHIND
    characters already sent are kept, as the context a `]` in the next piece is decided in. Each piece is made
    inert on its own (an escape sequence split between pieces is then shown as U+FFFD, not removed)."""

    def __init__(self) -> None:
        self._held = ""
        self._sent = ""  # the end of the text already sent, unescaped

    def feed(self, piece: str) -> str:
        text = self._held + inert_text(piece)
        decided = text.rstrip("!<]")
        self._held = text[len(decided):]
        return self._send(decided)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self._send(held)

    def _send(self, text: str) -> str:
        # The context never ends in a held character, so its escaping is a prefix of the escaping with the text.
        context = self._sent
        self._sent = (context + text)[-LOOKBEHIND:]
        return _escaped(context + text)[len(_escaped(context)):]
