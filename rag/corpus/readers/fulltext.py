"""What every full-text reader (PDF, Markdown, HTML, JATS/TEI XML) hands the scanner: a paper as sections of
paragraphs, turned into one record whose `layout` marks where each paragraph starts.

The paragraph is the unit of evidence in a full text: the index chunks within it (rag/index/chunking.py),
the reader scores it (rag/answer/reader.py), and a citation names the section it is in. So the layout has one
`[offset, page, section]` entry per paragraph (page 0 where the format has no pages), and the abstract's
paragraphs are the entries whose section is "Abstract".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from rag.corpus.labels import is_coined
from rag.corpus.sections import ABSTRACT
from rag.text import collapse_whitespace

# Sections that are not the paper's text, recognised by their names as every paper writes them (a reference
# list and the acknowledgements hold names, not findings); the PDF reader knows the same two by name.
_NOT_TEXT_RE = re.compile(r"^\s*(?:[\dIVX]+\.?\s+)?(?:references?|bibliography|works cited|literature cited"
                          r"|acknowledge?ments?)\s*$", re.IGNORECASE)
_ABSTRACT_RE = re.compile(r"^\s*(?:[\dIVX]+\.?\s+)?abstract\s*[.:]?\s*$", re.IGNORECASE)


def is_abstract_heading(heading: str) -> bool:
    """A heading that opens the abstract ("Abstract", "ABSTRACT", "Abstract:")."""
    return bool(_ABSTRACT_RE.match(heading))


def is_back_matter(heading: str) -> bool:
    """A heading whose section is no evidence: references, bibliography, acknowledgements."""
    return bool(_NOT_TEXT_RE.match(heading))


@dataclass
class Section:
    heading: str
    paragraphs: list[str] = field(default_factory=list)
    page: int = 0


@dataclass
class FullText:
    """A paper as a reader found it: metadata, abstract paragraphs, then the body's sections in order."""

    title: str = ""
    authors: list[str] = field(default_factory=list)
    abstract: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)  # venue, year, doi, arxiv, url, key, kind, label

    def body(self) -> list[Section]:
        """The sections that are evidence, with their empty paragraphs left out."""
        out = []
        for s in self.sections:
            paragraphs = [p for p in (collapse_whitespace(x) for x in s.paragraphs) if p]
            if paragraphs and not is_back_matter(s.heading):
                out.append(Section(s.heading, paragraphs, s.page))
        return out


def label_of(title: str) -> str:
    """The paper's short name from its title: the part before a colon ("Lookback Lens", "wav2vec 2.0"), else a
    coined token of the title ("BlendFields"), else its first words (never a word taken from the text)."""
    m = re.match(r"\s*([^:]{2,40}):", title)
    if m and len(m.group(1).split()) <= 4:
        return m.group(1).strip()
    # a coined token has a capital inside a word part ("BlendFields", "GPT-4"), not only title case
    # across a hyphen ("Population-Level")
    coined = [t.strip("(),.;") for t in title.split() if is_coined(t.strip("(),.;"))
              and not all(part[:1].isupper() and part[1:].islower() for part in t.strip("(),.;").split("-"))]
    if coined:
        return coined[0]
    words = title.split()
    return " ".join(words[:5]) + ("…" if len(words) > 5 else "")


def to_record(doc: FullText) -> dict[str, Any] | None:
    """The scanner's record for a full text: its paragraphs joined by spaces as `abstract` (the text), a layout
    entry per paragraph, and the metadata. None when the document holds no paragraph at all."""
    parts: list[str] = []
    layout: list[list[Any]] = []
    offset = 0
    abstract = [p for p in (collapse_whitespace(x) for x in doc.abstract) if p]
    body = doc.body()
    if not abstract and body:  # no abstract marked: the first paragraph stands for it (as in a PDF without one)
        first = body[0]
        abstract, body[0] = first.paragraphs[:1], Section(first.heading, first.paragraphs[1:], first.page)
    pieces = [(ABSTRACT, p, 0) for p in abstract]
    pieces += [(s.heading, p, s.page) for s in body for p in s.paragraphs]
    for heading, paragraph, page in pieces:
        layout.append([offset, page, heading])
        parts.append(paragraph)
        offset += len(paragraph) + 1
    if not parts:
        return None
    record: dict[str, Any] = {"abstract": " ".join(parts), "title": doc.title, "authors": doc.authors,
                              "layout": json.dumps(layout, ensure_ascii=False), "full_text": True, "kind": "article"}
    record.update({k: v for k, v in doc.meta.items() if v})
    if doc.title and "label" not in record:
        record["label"] = label_of(doc.title)
    return record
