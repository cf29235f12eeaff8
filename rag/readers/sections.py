"""Full texts chunked by section, with the page of every chunk; and the page a quoted sentence is on.

A paper read from a PDF carries a `layout`: JSON `[[offset, page, section], ...]`, the character offset in the
paper's text where each (page, section) segment starts. Chunks never cross a segment, so each chunk has one
page and one section, stored in its metadata (`page`, `section`); papers without a layout are chunked as
before and their chunks have no `page` (older stores: a missing `page` means none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, TextNode, TransformComponent
from pydantic import Field

PAGE_KEYS = ["page", "section"]


def parse_layout(layout: str) -> list[tuple[int, int, str]]:
    """(offset, page, section) triples, sorted by offset; an empty or damaged layout is no layout."""
    if not layout:
        return []
    try:
        data = json.loads(layout)
        return sorted((int(o), int(p), str(s)) for o, p, s in data)
    except (ValueError, TypeError):
        return []


def segments(text: str, layout: str) -> list[tuple[int, str, str]]:
    """The paper's text cut at its layout: (page, section, segment text)."""
    marks = parse_layout(layout)
    out = []
    for i, (start, page, section) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        piece = text[start:end].strip()
        if piece:
            out.append((page, section, piece))
    return out


def abstract_of(text: str, layout: str) -> str:
    """A paper's abstract: its whole text, or for a full text read from a PDF its first (Abstract) segment."""
    parts = segments(text, layout)
    return parts[0][2] if parts else text


def where_of(text: str, layout: str, quote: str) -> tuple[int | None, str, str]:
    """(page, section, that segment's text) where a quoted passage of the paper starts; (None, "", "")
    without a layout or when the quote is not found."""
    marks = parse_layout(layout)
    if not marks or not quote:
        return None, "", ""
    first = quote.split(" … ")[0].strip().strip("“”\"")
    at = text.find(first)
    if at < 0:
        at = text.find(first[:60])
    if at < 0:
        return None, "", ""
    index = 0
    for i, (offset, _p, _section) in enumerate(marks):
        if offset > at:
            break
        index = i
    start, page, section = marks[index]
    end = marks[index + 1][0] if index + 1 < len(marks) else len(text)
    return page, section, text[start:end].strip()


def page_of(text: str, layout: str, quote: str) -> int | None:
    """The page a quoted passage of the paper starts on (None without a layout or when it is not found)."""
    return where_of(text, layout, quote)[0]


def section_of(text: str, layout: str, quote: str) -> str:
    """The section heading a quoted passage is in ("4.2 Datasets", "Abstract"; "" when unknown)."""
    return where_of(text, layout, quote)[1]


def place(page: int | None, section: str = "") -> str:
    """Where a quote is, as a reader cites it: "p. 5, §4.2", "p. 1, abstract", "p. 9, §Limitations"."""
    if not page:
        return ""
    if not section:
        return f"p. {page}"
    if section == "Abstract":
        return f"p. {page}, abstract"
    if re.match(r"^(?:figure|fig\.|table|tab\.|algorithm|listing)\s*\S+$", section, re.IGNORECASE):
        return f"p. {page}, {section}"  # a caption: "p. 5, Figure 5"
    m = re.match(r"^((?:\d+|[A-Z])(?:\.\d+)*)\.?\s", section)
    short = m.group(1) if m else (section if len(section) <= 40 else section[:39] + "…")
    return f"p. {page}, §{short}"


class SectionChunks(TransformComponent):
    """Re-chunks papers that have a layout so chunks stay within one page and section, tagging each chunk.

    Runs right after the ingest splitter: the splitter's nodes of such a paper lend their settings (metadata,
    templates, source relationship) to the new nodes, whose ids follow the same '<paper id>:<n>' scheme.
    """

    layouts: dict[str, tuple[str, str]] = Field(default_factory=dict,
                                                description="paper id -> (text, layout) for papers read with pages")
    chunk_tokens: int = Field(default=32, description="Token budget per chunk, as for every other paper.")

    @classmethod
    def for_papers(cls, papers: Sequence[Any], chunk_tokens: int) -> SectionChunks:
        return cls(layouts={p.paper_id: (p.text, p.layout) for p in papers if getattr(p, "layout", "")},
                   chunk_tokens=chunk_tokens)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        from rag.chunking import group_sentences
        from rag.text import split_sentences

        if not self.layouts:
            return list(nodes)
        out: list[BaseNode] = []
        done: set[str] = set()
        for node in nodes:
            pid = str(node.metadata.get("paper_id", ""))
            if pid not in self.layouts:
                out.append(node)
                continue
            if pid in done:
                continue
            done.add(pid)
            text, layout = self.layouts[pid]
            n = 0
            for page, section, piece in segments(text, layout) or [(0, "", text)]:
                for chunk in group_sentences(split_sentences(piece), self.chunk_tokens):
                    meta = dict(node.metadata)
                    if page:
                        meta.update(page=page, section=section)
                    out.append(TextNode(
                        id_=f"{pid}:{n}", text=chunk, metadata=meta,
                        excluded_embed_metadata_keys=list(dict.fromkeys(node.excluded_embed_metadata_keys
                                                                        + PAGE_KEYS)),
                        excluded_llm_metadata_keys=list(dict.fromkeys(node.excluded_llm_metadata_keys + PAGE_KEYS)),
                        metadata_template=node.metadata_template, metadata_separator=node.metadata_separator,
                        text_template=node.text_template, relationships=dict(node.relationships)))
                    n += 1
        return out
