"""HTML full texts: arXiv's HTML papers (LaTeXML), publishers' article pages and saved web pages.

The standard library's tolerant `html.parser` tokenises the page (no network, no scripts: nothing in the page
is fetched or run); this module builds a small tree from it and reads the paper out of that tree, because what
matters is a paper's structure, which no HTML-to-text library keeps: the title (the first level-1 heading, or
the page's `citation_title` / `og:title` metadata), the authors (`citation_author`), the abstract (an element
whose class or id says "abstract", or the paragraphs under an "Abstract" heading), then each heading's
section with its paragraphs. Navigation, headers, footers, scripts, styles, forms, figures, tables, footnotes
and the bibliography are left out; inline maths is read from its LaTeX `alttext`.

Every walk over the tree is a loop with its own stack, never recursion, so a page nested thousands of levels
deep is read like any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from rag.corpus.readers.common import arxiv_of, clean_field, doi_of, link_of, name_from_inverted, read_text, year_of
from rag.corpus.readers.fulltext import FullText, Section, is_abstract_heading, to_record
from rag.corpus.records import CorpusError, FileReport
from rag.text import clean_markup, collapse_whitespace

_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
# Elements whose content is never the paper's text.
_SKIP_TAGS = frozenset("""script style noscript template svg nav header footer aside form button figure table
    figcaption iframe object select textarea canvas video audio map head""".split())
# LaTeXML (arXiv HTML) classes of the same kind: bibliography, footnotes, page furniture, equation numbers.
_SKIP_CLASS_RE = re.compile(r"\b(?:ltx_bibliography|ltx_note|ltx_page_header|ltx_page_footer|ltx_authors|ltx_dates"
                            r"|ltx_equation|ltx_equationgroup|ltx_figure|ltx_table|ltx_TOC|ltx_role_footnote"
                            r"|ltx_acknowledgements?|references|bibliography|footnotes?|sidebar|cookie)\b", re.I)
_BLOCK = frozenset("""p div section article main body li ul ol dl dt dd blockquote pre h1 h2 h3 h4 h5 h6 td th tr
    hgroup address center details summary""".split())
_HEADING = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_ABSTRACT_MARK_RE = re.compile(r"abstract", re.I)
MAX_NODES = 2_000_000  # a page larger than this many elements is refused (64 MB of HTML stays far below it)


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[_Node | str] = field(default_factory=list)


class _TreeBuilder(HTMLParser):
    """A forgiving tree: unclosed elements are closed by their parent's end tag, stray end tags ignored."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root")
        self.stack = [self.root]
        self.nodes = 0
        self.meta: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise CorpusError(f"HTML page too large (over {MAX_NODES:,} elements)")
        values = {k.lower(): (v or "") for k, v in attrs}
        if tag == "meta":
            name = (values.get("name") or values.get("property") or "").lower()
            if name and values.get("content"):
                self.meta.setdefault(name, []).append(values["content"])
            return
        node = _Node(tag, values)
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.stack[-1].tag == tag:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def _skipped(node: _Node) -> bool:
    if node.tag in _SKIP_TAGS:
        return True
    cls = node.attrs.get("class", "") + " " + node.attrs.get("id", "")
    return bool(_SKIP_CLASS_RE.search(cls)) or node.attrs.get("aria-hidden") == "true" or "hidden" in node.attrs


def _math_text(node: _Node) -> str:
    alt = node.attrs.get("alttext", "")
    return clean_markup(f"${alt}$") if alt else ""


def _is_abstract_box(node: _Node) -> bool:
    return bool(_ABSTRACT_MARK_RE.search(node.attrs.get("class", "") + " " + node.attrs.get("id", "")))


class _Reader:
    """One pass over the tree in document order, gathering headings and paragraphs (see the module docstring)."""

    def __init__(self) -> None:
        self.doc = FullText()
        self.buffer: list[str] = []
        self.current: Section | None = None
        self.in_abstract_heading = False
        self.abstract_depth = 0  # inside an element marked "abstract"
        self.heading: tuple[int, list[str]] | None = None

    def flush(self) -> None:
        text = collapse_whitespace("".join(self.buffer))
        self.buffer = []
        if not text:
            return
        if self.heading is not None:
            self.heading[1].append(text)
            return
        if self.abstract_depth or self.in_abstract_heading:
            self.doc.abstract.append(text)
        elif self.current is not None:
            self.current.paragraphs.append(text)
        else:
            self.doc.sections.append(Section("", [text]))
            self.current = self.doc.sections[-1]

    def heading_done(self, level: int, text: str) -> None:
        text = re.sub(r"^(\d+(?:\.\d+)*)(?=[A-Z])", r"\1 ", text)  # LaTeXML's "1Introduction"
        if not text:
            return
        if level == 1 and not self.doc.title:
            self.doc.title = text
            return
        if self.abstract_depth or is_abstract_heading(text):
            self.in_abstract_heading = not self.abstract_depth
            return
        self.in_abstract_heading = False
        self.current = Section(text)
        self.doc.sections.append(self.current)

    def read(self, root: _Node) -> FullText:
        # (node, entering) pairs: a node is visited on the way in and, for its end, on the way out
        stack: list[tuple[_Node | str, bool]] = [(root, True)]
        while stack:
            item, entering = stack.pop()
            if isinstance(item, str):
                self.buffer.append(item)
                continue
            if not entering:
                self.leave(item)
                continue
            if _skipped(item):
                continue
            if item.tag == "math":
                self.buffer.append(_math_text(item))
                continue
            if item.tag == "br":
                self.buffer.append(" ")
                continue
            self.enter(item)
            stack.append((item, False))
            stack.extend((c, True) for c in reversed(item.children))
        self.flush()
        return self.doc

    def enter(self, node: _Node) -> None:
        if node.tag in _BLOCK:
            self.flush()
        if node.tag in _HEADING:
            self.heading = (_HEADING[node.tag], [])
        elif _is_abstract_box(node):
            self.abstract_depth += 1

    def leave(self, node: _Node) -> None:
        if node.tag in _BLOCK:
            self.flush()
        if node.tag in _HEADING and self.heading is not None:
            level, parts = self.heading
            self.heading = None
            self.heading_done(level, collapse_whitespace(" ".join(parts)))
        elif _is_abstract_box(node) and node.tag not in _HEADING:
            self.abstract_depth -= 1
            self.in_abstract_heading = False


def parse(text: str) -> FullText:
    """The paper in an HTML page (see the module docstring)."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    doc = _Reader().read(builder.root)
    meta = builder.meta

    def first(*names: str) -> str:
        return next((clean_field(meta[n][0]) for n in names if meta.get(n)), "")

    doc.title = first("citation_title", "dc.title") or doc.title or first("og:title")
    doc.authors = [name_from_inverted(a) for a in meta.get("citation_author", []) if clean_field(a)]
    if not doc.abstract and first("citation_abstract"):
        doc.abstract = [first("citation_abstract")]
    doi = doi_of(first("citation_doi", "dc.identifier"))
    arxiv = first("citation_arxiv_id") or arxiv_of(first("og:url"), first("citation_pdf_url"))
    doc.meta = {"doi": doi, "arxiv": arxiv, "year": year_of(first("citation_publication_date", "citation_date",
                                                                  "dc.date")),
                "venue": first("citation_journal_title", "citation_conference_title"),
                "url": link_of(first("citation_abstract_html_url", "og:url"), doi, arxiv)}
    return doc


def read(path: Path, max_bytes: int, report: FileReport) -> list[tuple[int, dict]]:
    """One record per HTML page: its sections as a full text."""
    record = to_record(parse(read_text(path, max_bytes)))
    if record is None:
        raise CorpusError("no paragraphs of text found in the HTML page")
    if not record.get("title"):
        report.warnings.append(f"{report.source}: no title found (no <h1> or citation_title)")
    return [(1, record)]
