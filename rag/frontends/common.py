"""What every integration sends with an answer: its citations as plain data, and a readable reference list.

Clients that ignore the structured citations (a chat UI that shows only message text, an agent that reads only the
tool's text) still get the `[n]` markers resolved by the list at the end of the text.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any

from rag import prompts

if TYPE_CHECKING:
    from rag.service import Assistant
    from rag.schema import Answer
    from rag.settings import Settings
    from rag.index.store import CatalogEntry


def paper_record(assistant: Assistant, paper_id: str) -> CatalogEntry | None:
    """The indexed paper with this id (from the in-memory local index; the catalog when that is not loaded)."""
    local = assistant.retriever.local_index
    if local is not None and paper_id in local.papers:
        return local.papers[paper_id]
    return assistant.retriever.store.catalog().get(paper_id)


def citation_dicts(assistant: Assistant, answer: Answer) -> list[dict[str, Any]]:
    """The answer's citations with the paper's title: the `citations` field of the MCP and OpenAI-style replies."""
    out = []
    for c in answer.citations:
        entry = paper_record(assistant, c.paper_id)
        out.append({"n": c.n, "paper_id": c.paper_id, "label": c.label, "title": entry.title if entry else "",
                    "quote": c.quote, "source": c.source, "position": c.position, "reference": c.reference,
                    "url": entry.url if entry else ""})
    return out


def with_references(answer: Answer) -> str:
    """The answer text followed by a numbered reference list (nothing is added to an abstention)."""
    if not answer.citations:
        return answer.answer
    lines = [f"[{c.n}] {c.reference or c.label} — “{c.quote}”" for c in answer.citations]
    return f"{answer.answer}\n\n{prompts.REFERENCES_HEADING}\n" + "\n".join(lines)


class Unavailable(Exception):
    """The assistant cannot answer at all (no index yet, bad configuration); the message is the CLI's."""


class AssistantHolder:
    """A server's Assistant, made on first use, so a server starts (and says why it cannot answer) before the
    first `papers ingest`; a failure is reported on each call and retried on the next."""

    def __init__(self, settings: Settings, assistant: Assistant | None = None) -> None:
        self.settings = settings
        self._assistant = assistant
        self._lock = threading.Lock()

    def get(self) -> Assistant:
        from rag.answer.llm import LLMConfigError
        from rag.service import Assistant
        from rag.index.store import StoreError

        with self._lock:
            if self._assistant is None:
                try:
                    self._assistant = Assistant(self.settings)
                except LLMConfigError as e:
                    raise Unavailable(f"configuration: {e}") from None
                except StoreError as e:
                    raise Unavailable(str(e)) from None
            return self._assistant

    def paper(self, paper_id: str) -> CatalogEntry | None:
        return paper_record(self.get(), paper_id)

    def warm_up_in_background(self) -> None:
        """Load the index and models while the server starts, so the first call does not pay for it."""

        def work() -> None:
            try:
                self.get().retriever.warm_up()
            except Unavailable:
                pass  # reported by the first call

        threading.Thread(target=work, name="warm-up", daemon=True).start()


_ACTIVE_MARKUP = re.compile(r"!\[|<(?=[A-Za-z/!?])")


def markdown_safe(text: str) -> str:
    """Neutralise the Markdown/HTML that a chat client would act on (an image it would fetch, a tag) in text that
    comes from abstracts or from a model that read them: `![` and `<tag` get a backslash, which Markdown renders
    as the plain character. Nothing else changes."""
    return _ACTIVE_MARKUP.sub(lambda m: "\\" + m.group(0), text)


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
