"""A full text's layout: where each paragraph, page and section starts in a paper's text, and where a quote is.

A full text (read from a PDF, Markdown or HTML) carries a `layout`: JSON `[[offset, page, section], ...]`, the
character offset in the paper's text where each segment starts: a paragraph for Markdown and HTML (page 0: they
have no pages), a section's text on one page for PDFs. The chunker (rag/index/chunking.py, SectionChunks) never
crosses a segment, so each chunk has one page and one section; abstracts have no layout.
"""

from __future__ import annotations

import json
import re

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


ABSTRACT = "Abstract"


def abstract_of(text: str, layout: str) -> str:
    """A paper's abstract: its whole text, or for a full text its leading "Abstract" segments (its first segment
    when none is named so)."""
    parts = segments(text, layout)
    if not parts:
        return text
    lead = [piece for _page, section, piece in parts[:next((i for i, x in enumerate(parts) if x[1] != ABSTRACT),
                                                             len(parts))]]
    return " ".join(lead) if lead else parts[0][2]


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
    return page or None, section, text[start:end].strip()


def page_of(text: str, layout: str, quote: str) -> int | None:
    """The page a quoted passage of the paper starts on (None without a layout or when it is not found)."""
    return where_of(text, layout, quote)[0]


def section_of(text: str, layout: str, quote: str) -> str:
    """The section heading a quoted passage is in ("4.2 Datasets", "Abstract"; "" when unknown)."""
    return where_of(text, layout, quote)[1]


def place(page: int | None, section: str = "") -> str:
    """Where a quote is, as a reader cites it: "p. 5, §4.2", "p. 1, abstract", "p. 9, §Limitations"; a full
    text without pages (Markdown, HTML) by its section alone: "§4.2 Datasets", "abstract"."""
    if not page:
        if not section:
            return ""
        if section == ABSTRACT:
            return "abstract"
        return "§" + (section if len(section) <= 60 else section[:59] + "…")
    if not section:
        return f"p. {page}"
    if section == ABSTRACT:
        return f"p. {page}, abstract"
    if re.match(r"^(?:figure|fig\.|table|tab\.|algorithm|listing)\s*\S+$", section, re.IGNORECASE):
        return f"p. {page}, {section}"  # a caption: "p. 5, Figure 5"
    m = re.match(r"^((?:\d+|[A-Z])(?:\.\d+)*)\.?\s", section)
    short = m.group(1) if m else (section if len(section) <= 40 else section[:39] + "…")
    return f"p. {page}, §{short}"
