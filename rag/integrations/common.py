"""What every integration sends with an answer: its citations as plain data, and a readable reference list.

Clients that ignore the structured citations (a chat UI that shows only message text, an agent that reads only the
tool's text) still get the `[n]` markers resolved by the list at the end of the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rag import prompts

if TYPE_CHECKING:
    from rag.qa import Assistant
    from rag.schema import Answer
    from rag.store import CatalogEntry


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
