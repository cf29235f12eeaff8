"""PDF papers: title, authors and abstract from the first page; the full text as sections with page numbers.

Text comes from pdfplumber (pdfminer), which gives each word its position, font size and font name. pdfminer
does not order two-column pages the way they are read, so lines are put in reading order here: a page whose
lines leave the middle of the page empty is read left column first, then right column, with full-width lines
(title block, wide figures) kept where they stand. Headings are lines set larger than the body text, or bold
and numbered ("2.1 Method"). Ligature glyphs (ﬁ, ﬄ) are unfolded by NFKC and words hyphenated at a line end
are joined.

The record's text is the abstract followed by every section but the references; `layout` maps character
offsets in that text to (page, section), so chunks and citations can name the page.
"""

from __future__ import annotations

import json
import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.corpus.records import CorpusError, FileReport
from rag.corpus.readers.common import arxiv_of, clean_field, doi_of, link_of, year_of


MAX_PAGES = 200
_ABSTRACT_RE = re.compile(r"^\s*abstract\b[\s.:—–-]*", re.IGNORECASE)
_NUMBERED_RE = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.|[IVX]+\.)\s+\S")
_END_SECTIONS_RE = re.compile(r"^(?:\d+\.?\s+)?(references|bibliography|works cited)\s*$", re.IGNORECASE)
_AUTHOR_SPLIT_RE = re.compile(r"\s*(?:,|;|\band\b|&|·|\u2022)\s*")
_NOT_NAME_RE = re.compile(r"[@\d]|universit|institut|department|school|college|laborator|inc\b|corp|"
                          r"google|microsoft|research|abstract", re.IGNORECASE)


@dataclass
class Line:
    """One line of text in reading order, with what identifies headings and title."""

    text: str
    size: float
    bold: bool
    page: int
    top: float
    words: list[str] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)  # each word's x0, x1

    @property
    def x0(self) -> float:
        return self.spans[0][0]

    @property
    def x1(self) -> float:
        return self.spans[-1][1]

    @property
    def gaps(self) -> list[float]:
        return [b[0] - a[1] for a, b in zip(self.spans, self.spans[1:])]


_PAGE_NUMBER_RE = re.compile(r"^\s*(?:page\s+)?\d{1,4}(?:\s*(?:/|of)\s*\d{1,4})?\s*$", re.IGNORECASE)
_LOOSE_ACCENT_RE = re.compile(r"\s?([\u0300-\u036f])([^\W\d_])")
_CID_RE = re.compile(r"\(cid:\d+\)")
_BOLD_RE = re.compile(r"bold|black|heavy|semibold|cmbx", re.IGNORECASE)


def _make_line(row: list[dict[str, Any]], page_no: int) -> Line:
    row = sorted(row, key=lambda w: w["x0"])
    chars = sum(len(w["text"]) for w in row)
    bold = sum(len(w["text"]) for w in row if _BOLD_RE.search(w["fontname"]))
    return Line(text=" ".join(w["text"] for w in row), size=max(w["size"] for w in row), bold=bold >= 0.6 * chars,
                page=page_no, top=min(w["top"] for w in row), words=[w["text"] for w in row],
                spans=[(w["x0"], w["x1"]) for w in row])


def _group_lines(words: list[dict[str, Any]], page_no: int) -> list[Line]:
    """Words -> lines: same baseline (within a third of the font size), sorted left to right."""
    rows: list[list[dict[str, Any]]] = []
    for w in sorted(words, key=lambda w: (round(w["bottom"], 1), w["x0"])):
        if rows and abs(rows[-1][0]["bottom"] - w["bottom"]) <= max(1.0, w["size"] / 3):
            rows[-1].append(w)
        else:
            rows.append([w])
    return [_make_line(row, page_no) for row in rows]


def _cut_at_gutter(ln: Line, mid: float, width: float) -> list[Line]:
    """A line holding text of both columns (baselines aligned) -> its left and right parts."""
    for i in range(len(ln.spans) - 1):
        if ln.spans[i][1] <= mid <= ln.spans[i + 1][0] and ln.spans[i + 1][0] - ln.spans[i][1] >= 0.01 * width:
            left = Line(" ".join(ln.words[:i + 1]), ln.size, ln.bold, ln.page, ln.top, ln.words[:i + 1],
                        ln.spans[:i + 1])
            right = Line(" ".join(ln.words[i + 1:]), ln.size, ln.bold, ln.page, ln.top, ln.words[i + 1:],
                         ln.spans[i + 1:])
            return [left, right]
    return [ln]


def _reading_order(lines: list[Line], width: float, body_size: float) -> list[Line]:
    """Reading order for a page: left column, then right column, between full-width lines.

    A line belongs to one column when it stays on one side of the middle; when most lines do (and some are on
    the right), the page is two columns. Otherwise lines are read top to bottom.
    """
    mid = width / 2
    margin = 0.02 * width
    # only body-size lines are cut: a title-block line (authors side by side) stays whole
    split = [part for ln in lines
             for part in (_cut_at_gutter(ln, mid, width) if ln.size <= body_size * 1.05 else [ln])]

    def one_side(ln: Line) -> bool:
        return ln.x1 <= mid + margin or ln.x0 >= mid - margin

    if sum(map(one_side, split)) < 0.6 * len(split) or not any(ln.x0 >= mid - margin for ln in split):
        return sorted(lines, key=lambda ln: ln.top)
    out: list[Line] = []
    band: list[Line] = []
    for ln in sorted(split, key=lambda ln: ln.top):
        if one_side(ln):
            band.append(ln)
            continue
        out.extend(_columns_of(band, mid))
        band = []
        out.append(ln)
    out.extend(_columns_of(band, mid))
    return out


def _columns_of(band: list[Line], mid: float) -> list[Line]:
    left = [ln for ln in band if ln.x0 < mid]
    right = [ln for ln in band if ln.x0 >= mid]
    return sorted(left, key=lambda ln: ln.top) + sorted(right, key=lambda ln: ln.top)


def _lines_of_page(page: Any, page_no: int) -> list[Line]:
    # LaTeX sets justified text with interword gaps down to ~2.5 pt at 10 pt: pdfplumber's default 3 pt
    # tolerance runs words together, so the tolerance scales with the type size instead.
    words = page.extract_words(extra_attrs=["size", "fontname"], use_text_flow=False, keep_blank_chars=False,
                               x_tolerance_ratio=0.12)
    words = [w for w in words if w.get("upright", True)]  # sideways text (arXiv's margin stamp) is not prose
    lines = [ln for ln in _group_lines(words, page_no) if not _PAGE_NUMBER_RE.match(ln.text)]
    body = statistics.median(w["size"] for w in words) if words else 0.0
    return _reading_order(lines, float(page.width), body)


def sideways_text(page: Any) -> str:
    """Text set at 90° (arXiv's margin stamp "arXiv:2401.01234v1 [cs.LG] 3 Jan 2024"), read bottom to top."""
    chars = sorted((c for c in page.chars if not c.get("upright", True)), key=lambda c: (round(c["x0"]), -c["top"]))
    return "".join(c["text"] for c in chars)


def _normalise(text: str) -> str:
    """Ligature glyphs unfolded (NFKC: "ﬁ" -> "fi"); glyphs without a Unicode mapping, "(cid:27)", dropped."""
    text = unicodedata.normalize("NFKC", text)
    # TeX's OT1 fonts draw an accent as its own glyph before the letter ("Wi ́sniewski"): put it back on the
    # letter so NFC composes "ś".
    text = _LOOSE_ACCENT_RE.sub(lambda m: m.group(2) + m.group(1), text)
    return _CID_RE.sub("", unicodedata.normalize("NFC", text))


_COMPOUND_RE = re.compile(r"\b[^\W\d_]+(?:-[^\W\d_]+)+\b")


def compounds_of(lines: list[str]) -> set[str]:
    """Hyphenated words the document writes inside a line ("high-resolution"): a line-end hyphen that makes
    one of them is a real hyphen, not a break."""
    return {m.group(0).lower() for t in lines for m in _COMPOUND_RE.finditer(t)}


def _join(lines: list[str], compounds: set[str] | None = None) -> str:
    """Lines of a paragraph -> one text; a word hyphenated at a line end is joined ("hyphen-" + "ation")
    unless the document writes that hyphenated word elsewhere."""
    out = ""
    for t in lines:
        t = t.strip()
        if not t:
            continue
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[:1].islower():
            left = re.search(r"[^\W\d_]+(?:-[^\W\d_]+)*-$", out)
            right = re.match(r"[^\W\d_]+", t)
            keep = bool(compounds and left and right and f"{left.group(0)}{right.group(0)}".lower() in compounds)
            out = (out if keep else out[:-1]) + t
        else:
            out = f"{out} {t}" if out else t
    return out


def _is_heading(ln: Line, body_size: float) -> bool:
    text = ln.text.strip()
    if not text or len(text) > 90 or text.endswith((".", ",", ";")) and not _NUMBERED_RE.match(text):
        return False
    if not re.search(r"[A-Za-z]{2}", text):
        return False
    if ln.size >= body_size * 1.12:
        return True
    return ln.bold and bool(_NUMBERED_RE.match(text)) and len(text.split()) <= 10


def _pdf_error(error: BaseException) -> Exception:
    """A one-line reason for a PDF pdfminer cannot open; pdfplumber wraps pdfminer's exception in its own."""

    causes = [error, *[a for a in getattr(error, "args", ()) if isinstance(a, BaseException)]]
    if error.__cause__ is not None:
        causes.append(error.__cause__)
    if any("Password" in type(c).__name__ or "Encrypt" in type(c).__name__ for c in causes):
        return CorpusError("encrypted PDF (needs a password): save an unprotected copy and ingest that")
    inner = causes[-1]
    detail = str(inner).strip().splitlines()[0] if str(inner).strip() else ""
    return CorpusError(f"not a readable PDF ({type(inner).__name__}{': ' + detail[:120] if detail else ''})")


@dataclass
class Parsed:
    title: str
    authors: list[str]
    abstract: str
    stamp: str  # sideways text of the first page (arXiv's identifier and date)
    sections: list[tuple[int, str, str]]  # (page, section heading, text)
    pages: int


def parse_pdf(path: Path) -> Parsed:
    """Read a PDF into title, authors, abstract and sections (raises CorpusError with a user-facing reason)."""
    import pdfplumber

    try:
        pdf = pdfplumber.open(str(path))
    except Exception as e:  # pdfminer's errors (PDFSyntaxError, PDFPasswordIncorrect, ...), wrapped by pdfplumber
        raise _pdf_error(e) from None
    with pdf:
        try:
            n_pages = len(pdf.pages)
            meta = pdf.metadata or {}
            lines: list[Line] = []
            stamp = sideways_text(pdf.pages[0]) if pdf.pages else ""
            for i, page in enumerate(pdf.pages[:MAX_PAGES], 1):
                lines.extend(_lines_of_page(page, i))
        except Exception as e:
            raise _pdf_error(e) from None
    for ln in lines:
        ln.text = _normalise(ln.text)
    lines = [ln for ln in lines if ln.text.strip()]
    if sum(len(ln.text) for ln in lines) < 200:
        raise CorpusError(f"no text layer ({n_pages} page{'s' if n_pages != 1 else ''}, "
                          f"{sum(len(ln.text) for ln in lines)} characters of text): a scanned PDF? "
                          "Run OCR first (e.g. ocrmypdf) and ingest the result")
    body_size = statistics.median(ln.size for ln in lines)
    # Title: the largest type on the first page (its first run of lines in that size).
    first = [ln for ln in lines if ln.page == 1]
    top_size = max(ln.size for ln in first)
    title_at = next(i for i, ln in enumerate(first) if ln.size == top_size)
    end = title_at
    while end < len(first) and first[end].size >= top_size - 0.5:
        end += 1
    title_lines = first[title_at:end]
    meta_title = clean_field(meta.get("Title"))
    looks_generated = not meta_title or re.search(r"\.(html?|tex|dvi|docx?|pdf)$|^untitled|^microsoft word",
                                                  meta_title, re.IGNORECASE)
    title = clean_field(_join([ln.text for ln in title_lines])) if top_size > body_size * 1.12 else ""
    if not looks_generated and (not title or meta_title.lower() in title.lower() or len(title) > 250):
        title = meta_title
    elif not title and not looks_generated:
        title = meta_title
    # Abstract heading, and the author block between title and abstract.
    abstract_at = next((i for i, ln in enumerate(lines) if _ABSTRACT_RE.match(ln.text)
                        and (len(ln.text) < 12 or ln.bold or ln.size >= body_size * 1.12
                             or ln.text[8:9] in ".:—–-")), None)
    start_body = end if title_lines and title_lines[0].page == 1 and top_size > body_size * 1.12 else 0
    author_block = lines[start_body:abstract_at] if abstract_at is not None and abstract_at >= start_body \
        else lines[start_body:start_body + 3]
    authors = _authors(author_block, meta.get("Author"))
    # Sections in reading order.
    sections: list[tuple[int, str, list[str]]] = []
    current: tuple[int, str, list[str]] | None = None
    begin = abstract_at if abstract_at is not None else start_body + len(author_block)
    for ln in lines[begin:]:
        if _ABSTRACT_RE.match(ln.text) and current is None:
            rest = _ABSTRACT_RE.sub("", ln.text, count=1)
            current = (ln.page, "Abstract", [rest] if rest else [])
            sections.append(current)
            continue
        if _is_heading(ln, body_size):
            if _END_SECTIONS_RE.match(ln.text.strip()):
                break
            current = (ln.page, clean_field(ln.text), [])
            sections.append(current)
            continue
        if current is None or current[0] != ln.page and current[2]:
            # a new page continues the section: a new segment, so every segment has one page
            heading = current[1] if current else ""
            current = (ln.page, heading, [])
            sections.append(current)
        current[2].append(ln.text)
    compounds = compounds_of([ln.text for ln in lines])
    parsed = [(page, heading, _join(texts, compounds)) for page, heading, texts in sections]
    parsed = [s for s in parsed if s[2]]
    abstract = next((t for _p, h, t in parsed if h == "Abstract"), "")
    if not abstract and parsed:
        abstract = parsed[0][2]
    return Parsed(title=title, authors=authors, abstract=abstract, stamp=stamp, sections=parsed, pages=n_pages)


def _authors(block: list[Line], meta_author: object) -> list[str]:
    """Author names from the first line of the author block (names are split at commas, 'and', or wide gaps)."""
    from_meta = [n for n in _AUTHOR_SPLIT_RE.split(clean_field(meta_author)) if n]
    for ln in block:
        if _NOT_NAME_RE.search(ln.text):
            continue
        parts: list[list[str]] = [[]]
        for word, gap in zip(ln.words, [0.0, *ln.gaps]):
            if gap > ln.size * 1.5 and parts[-1]:
                parts.append([])
            parts[-1].append(word)
        names = [n.strip("*†‡§¶0123456789 ") for p in parts for n in _AUTHOR_SPLIT_RE.split(" ".join(p))]
        names = [_normalise(n) for n in names if n and len(n.split()) <= 5 and re.search(r"[A-Za-z]", n)]
        if names:
            return names
    return from_meta


def read(path: Path, max_bytes: int, report: FileReport) -> list[tuple[int, dict]]:
    """One record per PDF: the abstract and sections as text, with the page/section layout of that text."""

    try:
        size = path.stat().st_size
    except OSError as e:
        raise CorpusError(f"unreadable ({e.strerror or e})") from None
    if size > max_bytes:
        raise CorpusError(f"file too large ({size / 2**20:.1f} MB; limit {max_bytes / 2**20:.0f} MB)")
    with path.open("rb") as f:
        if not f.read(1024).lstrip().startswith(b"%PDF"):
            raise CorpusError("not a PDF file (no %PDF header)")
    parsed = parse_pdf(path)
    if not parsed.abstract:
        raise CorpusError("no abstract or body text found in the PDF")
    text_parts: list[str] = []
    layout: list[list[Any]] = []
    offset = 0
    for page, heading, body in parsed.sections:
        cleaned = re.sub(r"\s+", " ", body).strip()  # PDF text is plain: '$' or '\\' in it are not markup
        if not cleaned:
            continue
        layout.append([offset, page, heading])
        text_parts.append(cleaned)
        offset += len(cleaned) + 1
    text = " ".join(text_parts)
    first_page_text = " ".join(s[2] for s in parsed.sections if s[0] == 1)
    doi = doi_of(first_page_text)
    arxiv = arxiv_of(parsed.stamp, first_page_text)
    if len(parsed.sections) > 0 and not any(h == "Abstract" for _p, h, _t in parsed.sections):
        report.warnings.append(f"{report.source}: no 'Abstract' heading found; the text starts with the first "
                               "paragraph")
    return [(1, {"abstract": text, "title": parsed.title, "authors": parsed.authors, "venue": "",
                 "year": year_of(parsed.stamp if arxiv_of(parsed.stamp) else "",
                                 *re.findall(r"(?:©|\(c\)|copyright)\s*(\d{4})", first_page_text, re.I)[:1]),
                 "doi": doi, "arxiv": arxiv, "url": link_of("", doi, arxiv), "key": "", "kind": "article",
                 "layout": json.dumps(layout, ensure_ascii=False), "full_text": True})]
