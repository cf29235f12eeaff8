"""Markdown full texts: what Marker, MinerU, docling, Nougat and pandoc make of a paper, and hand-written notes.

markdown-it-py (CommonMark, already installed with rich) parses the file; this module only decides what the
parsed blocks are in a paper: the first level-1 heading is the title, a heading named "Abstract" (or a
paragraph opening with a bold "Abstract") holds the abstract, every other heading opens a section, and the
paragraphs under it are that section's evidence. A list is one paragraph with the sentence that introduces it
("We compare against: ..."), so the list is read whole. Tables, code, raw HTML, images and display equations
are not evidence; inline links keep their text, inline maths its LaTeX cleaned (rag/text.py `clean_markup`).

A file without section headings that is no longer than an abstract is not a full text: the scanner reads it
as one abstract, as before (`parse` returns None).
"""

from __future__ import annotations

import re
from typing import Any

from rag.corpus.readers.fulltext import FullText, Section, is_abstract_heading, to_record
from rag.corpus.records import FileReport
from rag.text import clean_markup, collapse_whitespace

# Longest headingless Markdown read as one abstract; longer, it is a full text with one untitled section.
ABSTRACT_CHARS = 5_000
# Front-matter paragraphs (between the title and the first heading) shorter than this are author, affiliation
# and date lines, not an abstract.
FRONT_PROSE_WORDS = 30

_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FOOTNOTE_REF_RE = re.compile(r"\[\^[^\]\s]+\]")
_DISPLAY_MATH_RE = re.compile(r"^\s*(?:\$\$.*\$\$|\\\[.*\\\]|\\begin\{(equation|align|gather|eqnarray)\*?\}.*)\s*$",
                              re.DOTALL)
# "**Abstract.** We ...", "Abstract: We ...", "Abstract— We ...": the abstract run in to its first paragraph
_RUN_IN_ABSTRACT_RE = re.compile(r"^\s*(?:(?:\*\*|__)abstract\s*[.:—–-]?\s*(?:\*\*|__)|abstract\s*[.:—–-])\s*",
                                 re.IGNORECASE)
_SPACE_BEFORE_STOP_RE = re.compile(r"\s+([.,;:])(?=\s|$)")
_ENDS_SENTENCE_RE = re.compile(r"[.!?:;]['\"”’)\]]*$")


def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _inline(token: Any) -> str:
    """The plain text of an inline token: link text kept, images, raw HTML and footnote marks dropped."""
    out: list[str] = []
    dropped = False
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type in ("image", "html_inline"):
            dropped = True
    text = _FOOTNOTE_REF_RE.sub("", "".join(out))
    if dropped:  # "see ![plot](a.png)." -> "see." rather than "see ."
        text = _SPACE_BEFORE_STOP_RE.sub(r"\1", text)
    return clean_markup(text) if ("\\" in text or "$" in text) else collapse_whitespace(text)


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """pandoc/Jekyll YAML front matter (simple `key: value` lines) and the text after it."""
    m = _FRONT_MATTER_RE.match(text)
    if not m:
        return {}, text
    meta: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() and not key.startswith((" ", "\t", "-")):
            meta[key.strip().lower()] = value.strip().strip("'\"")
    return meta, text[m.end():]


class _Blocks:
    """Walks markdown-it's token stream into (kind, text) blocks: heading levels, paragraphs and lists."""

    def __init__(self, tokens: list[Any]) -> None:
        self.tokens = tokens

    def __iter__(self):
        skip_depth = 0  # inside a table: its cells are no paragraphs
        list_depth = 0
        items: list[str] = []
        heading_level = 0
        for tok in self.tokens:
            if tok.type == "table_open":
                skip_depth += 1
            elif tok.type == "table_close":
                skip_depth -= 1
            elif skip_depth:
                continue
            elif tok.type in ("bullet_list_open", "ordered_list_open"):
                list_depth += 1
            elif tok.type in ("bullet_list_close", "ordered_list_close"):
                list_depth -= 1
                if list_depth == 0 and items:
                    yield "list", 0, " ".join(_terminated(x, i == len(items) - 1) for i, x in enumerate(items))
                    items = []
            elif tok.type == "heading_open":
                heading_level = int(tok.tag[1:])
            elif tok.type == "inline" and heading_level:
                yield "heading", heading_level, _inline(tok)
                heading_level = 0
            elif tok.type == "inline":
                text = _inline(tok)
                if not text or _DISPLAY_MATH_RE.match(tok.content):
                    continue
                if list_depth:
                    items.append(text)
                else:
                    yield "paragraph", 0, text


def _terminated(item: str, last: bool) -> str:
    """A list item as part of one paragraph: ended by ";" (the last by ".") unless it ends a sentence itself."""
    return item if _ENDS_SENTENCE_RE.search(item) else item + ("." if last else ";")


def parse(text: str) -> FullText | None:
    """The paper in a Markdown text, or None when it is one short headingless text (an abstract)."""
    meta, body = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    blocks = list(_Blocks(_parser().parse(body)))
    doc = FullText(title=meta.get("title", ""), authors=_authors(meta))
    doc.meta = {k: meta[k] for k in ("doi", "year", "venue", "url") if meta.get(k)}
    if meta.get("date") and "year" not in doc.meta:
        doc.meta["year"] = (re.findall(r"(?:19|20)\d\d", meta["date"]) or [""])[0]
    headings = [b for b in blocks if b[0] == "heading"]
    if not doc.title and headings and blocks[0][0] == "heading":
        doc.title = blocks[0][2]
        blocks = blocks[1:]
        headings = headings[1:]
    if not headings:
        if sum(len(b[2]) for b in blocks) <= ABSTRACT_CHARS:
            return None
        doc.sections = [Section("", [b[2] for b in blocks])]
        return doc
    front: list[str] = []
    current: Section | None = None
    in_abstract = False
    for kind, _level, content in blocks:
        if kind == "heading":
            in_abstract = is_abstract_heading(content)
            current = None if in_abstract else Section(content)
            if current is not None:
                doc.sections.append(current)
            continue
        if kind == "list" and current is not None and current.paragraphs and current.paragraphs[-1].endswith(":"):
            current.paragraphs[-1] += " " + content  # the list with the sentence that introduces it
            continue
        run_in = _RUN_IN_ABSTRACT_RE.match(content) if not doc.abstract and current is None else None
        if in_abstract or (run_in and len(content) > run_in.end()):
            doc.abstract.append(content[run_in.end():] if run_in and not in_abstract else content)
        elif current is None:
            front.append(content)
        else:
            current.paragraphs.append(content)
    if not doc.abstract:
        doc.abstract = [p for p in front if len(p.split()) >= FRONT_PROSE_WORDS]
    return doc


def _authors(meta: dict[str, str]) -> list[str]:
    value = meta.get("author") or meta.get("authors") or ""
    return [a.strip() for a in re.split(r"\s*(?:;|\band\b|,(?=\s*[A-Z]))\s*", value.strip("[]")) if a.strip()]


def records(text: str, report: FileReport) -> list[tuple[int, dict]] | None:
    """The scanner's record for a Markdown full text; None for a short headingless text (read as an abstract)."""
    doc = parse(text)
    if doc is None:
        return None
    record = to_record(doc)
    if record is None:
        return None
    if not doc.abstract and not any(s.heading for s in doc.sections):
        report.warnings.append(f"{report.source}: no headings; read as one full text without sections")
    return [(1, record)]
