"""PDF papers, read the way a researcher reads them: title, authors, abstract, then the body by section and page.

Characters, their boxes and fonts come from PDFium (pypdfium2; chosen by measurement, see docs/pdf.md), words
and lines from rag/corpus/readers/pdf_layout.py. What no library here does is the paper's layout, so it is done in
this module from typography and geometry alone:

- columns: a page whose body-size lines leave a vertical strip near the middle empty is two columns, read left
  then right between the full-width elements that cut across both (a wide figure, a table); the first page's
  head (title, authors, affiliations, a teaser figure) is read row by row down to the abstract;
- running headers and footers are lines repeated at the same height on several pages, page numbers, and small
  type above or below the text block;
- the title is the largest type in the top part of the first page; the authors are the first rows under it in
  one style (font and size), cut at commas, "and" and footnote marks, with e-mail addresses and rows of
  another style (affiliations) left out;
- headings are short lines set larger than the body, or bold and numbered; "Abstract" and "References" are
  recognised by name (they are named the same in every paper), and the references run to the next heading;
- body text is body-size type in lines filling their column (a paragraph's last line may be short, and a
  short block is body when it ends a sentence at the column's left edge); captions ("Figure 3:"), small type
  (footnotes, figure labels), lines of figures and tables (short lines, many numbers, wide gaps) and display
  equations (mostly mathematics fonts) are kept out of the text.

Ligatures are unfolded (NFKC), accents drawn as glyphs of their own are put back on their letter, glyphs
without a Unicode mapping are dropped, footnote marks are dropped and sub/superscripts stay with their word. A
word hyphenated at a line end is joined unless the document writes it with a hyphen elsewhere, or both halves
are words of the document and the joined form is not ("mid-importance").

The record's text is the abstract followed by the body sections, the references left out; `layout` maps
character offsets in that text to (page, section), so chunks and citations name both.

Every size, distance and share these rules compare against is a field of `PdfParams`
(rag/corpus/readers/pdf_params.py, with the reason for its value), read here as `P`. `analyse` runs the passes
in order; each pass is a function of its own below it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.corpus.readers.common import arxiv_of, clean_field, doi_of, link_of, year_of
from rag.corpus.readers.fulltext import label_of
from rag.corpus.readers.pdf_bounded import parse_bounded
from rag.corpus.readers.pdf_layout import Line, Page, Word, read_page
from rag.corpus.readers.pdf_params import PARAMS as P
from rag.corpus.records import CorpusError, FileReport

_ABSTRACT_RE = re.compile(r"^\s*a\s?b\s?s\s?t\s?r\s?a\s?c\s?t\b[\s.:—–-]*", re.IGNORECASE)
_KEYWORDS_RE = re.compile(r"^\s*(?:index\s+terms|key\s?words|key\s?phrases)\s*[—–:.-]", re.IGNORECASE)
_NUMBERED_RE = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z](?:\.\d+)*\.?|[IVX]+\.)\s+\S")
_END_SECTIONS_RE = re.compile(r"^(?:\d+\.?\s+|[A-Z]\.?\s+)?(references|bibliography|works cited|literature cited)"
                              r"\s*$", re.IGNORECASE)
_CAPTION_RE = re.compile(r"^(?:figure|fig\.|table|tab\.|algorithm|listing)\s*[A-Z]?\d+(?:\.\d+)?\s*[.:|]",
                         re.IGNORECASE)
_RUN_IN_RE = re.compile(r"^[^\W\d_][\w\s-]{1,30}[:—.]")  # "Keywords:", "Index Terms—" set in their own style
_MARK_RE = re.compile(r"^[\d,*†‡§¶∗⋆♠♣♦♥♮♯•◦⋄\u2020\u2021 a-z]{1,8}$")
_AUTHOR_SPLIT_RE = re.compile(r"\s*(?:,|;|\band\b|&|·|\u2022|\|)\s*")
_NAME_MARKS = "*†‡§¶∗⋆♠♣♦♥#0123456789 ,"
_PAGE_NUMBER_RE = re.compile(r"^\s*(?:page\s+)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:/|of)\s*\d{1,4})?\s*$", re.I)
_EMAIL_RE = re.compile(r"\S+@\S+|\{[^}]*\}\s*@\S*")
_VENUE_RE = re.compile(r"\b(?:proceedings|conference|workshop|symposium|transactions|journal)\b", re.IGNORECASE)
_LOOSE_ACCENT_RE = re.compile(r"\s?([\u0300-\u036f])([^\W\d_])")
_CID_RE = re.compile(r"\(cid:\d+\)")
_THANKS_RE = re.compile(r"^(?:\d+\.?\s+)?acknowledge?ments?\b", re.IGNORECASE)
# A footnote about the authors (who to write to, who contributed equally, where the work was done) states
# nothing the paper found; the phrases are the ones author notes are written in.
_AUTHOR_NOTE_RE = re.compile(r"\b(?:correspond(?:ence|ing)|equal(?:ly)? contribut\w*|contributed equally"
                             r"|work (?:was )?(?:done|performed|conducted)|e-?mail)\b"
                             r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\}\s*@[\w-]+", re.IGNORECASE)


@dataclass
class Block:
    """Consecutive lines of one kind in reading order: title, author, heading, abstract, body, caption,
    reference, footnote (small type), figure, table, equation, furniture (running header, footer, page number)."""

    lines: list[Line]
    kind: str = ""
    section: str = ""

    @property
    def page(self) -> int:
        return self.lines[0].page


@dataclass
class Parsed:
    title: str
    authors: list[str]
    abstract: str
    stamp: str  # sideways text of the first page (arXiv's identifier and date)
    sections: list[tuple[int, str, str]]  # (page, section heading, text): abstract and body only
    pages: int
    venue: str = ""
    year: str = ""
    doi: str = ""
    arxiv: str = ""
    blocks: list[tuple[int, str, str, str]] = field(default_factory=list)  # (page, kind, section, text), all
    unmapped: int = 0  # glyphs without a Unicode mapping, dropped
    # (page, section heading, text) of each paragraph of `sections`: a block of lines, continued by the next
    # block of its section and page when it stops mid-sentence (a column break)
    paragraphs: list[tuple[int, str, str]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------- text


def _normalise(text: str) -> str:
    """Ligature glyphs unfolded (NFKC: "ﬁ" -> "fi"); glyphs without a Unicode mapping, "(cid:27)", dropped."""
    text = unicodedata.normalize("NFKC", text)
    # TeX's OT1 fonts draw an accent as its own glyph before the letter ("Wi ́sniewski"): put it back on the
    # letter so NFC composes "ś".
    text = _LOOSE_ACCENT_RE.sub(lambda m: m.group(2) + m.group(1), text)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch in "\n\t")
    return _CID_RE.sub("", unicodedata.normalize("NFC", text))


_COMPOUND_RE = re.compile(r"\b[^\W\d_]+(?:-[^\W\d_]+)+\b")
_WORD_RE = re.compile(r"[^\W\d_]+")


def compounds_of(lines: list[str]) -> set[str]:
    """Hyphenated words the document writes inside a line ("high-resolution"): a line-end hyphen that makes
    one of them is a real hyphen, not a break."""
    return {m.group(0).lower() for t in lines for m in _COMPOUND_RE.finditer(t.rstrip("-"))}


@dataclass
class Vocabulary:
    """The document's own words, to decide line-end hyphens: words written whole inside lines, hyphenated
    compounds written inside lines, and the first parts of those compounds ("mid" of "mid-level")."""

    words: set[str] = field(default_factory=set)
    compounds: set[str] = field(default_factory=set)
    prefixes: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, lines: list[str]) -> Vocabulary:
        words: set[str] = set()
        for t in lines:
            inner = t.rstrip().rstrip("-")
            tokens = inner.split()
            for tok in tokens[1:-1] if len(tokens) > 2 else tokens[:-1]:  # the line's end word may be cut
                words.update(m.group(0).lower() for m in _WORD_RE.finditer(tok) if "-" not in tok)
        compounds = compounds_of(lines)
        return cls(words, compounds, {c.split("-")[0] for c in compounds})

    def keeps_hyphen(self, left: str, right: str) -> bool:
        joined, hyphenated = (left + right).lower(), f"{left}-{right}".lower()
        if any(c == hyphenated or c.startswith(hyphenated + "-") or c.endswith("-" + hyphenated)
               for c in self.compounds):
            return True
        if joined in self.words:
            return False
        # "mid-importance": both halves are words of the document (or its compounds), the joined form is not
        return (left.lower() in self.words or left.lower() in self.prefixes) and right.lower() in self.words \
            and len(right) >= P.hyphen_min_part


_URL_RE = re.compile(r"(?:https?:/*|www\.|://)\S*$")


def _url_continues(last: str, line: str, vocab: Vocabulary) -> bool:
    """Does `line` go on with the URL that ends the text before it? URLs break anywhere in a narrow column
    ("https://gith" | "ub.com/nelson-liu"), so a line goes on with one when the URL stops at a separator, or
    when its first piece is a path or domain fragment ("/EdinburghNLP", "ub.com/x") or no word of the document
    ("lymail"), never when that piece is a word the document writes ("and", "respectively")."""
    if not _URL_RE.search(last) or last.endswith((",", ";", ")")):
        return False
    first = line.split(" ", 1)[0]
    core = first.rstrip(".,;:)")
    if _URL_RE.match(first):
        return False  # a second URL (footnotes set one under the other)
    if last.endswith(("/", ":", "-", "_")) or first.startswith("/") or "/" in core:
        return True
    if re.match(r"[A-Z]", first):
        return False
    if last.endswith(".") or re.search(r"\w\.[a-z]{2,}", core):
        return True
    if not re.fullmatch(r"[a-z0-9_]+", core) or not vocab.words:
        return False
    if core not in vocab.words:
        return True
    tail = re.search(r"[a-z]+$", last)
    # "lost-in-the-middl" + "e": the piece completes the URL's last word ("middle" is a word, "middl" is not)
    return tail is not None and tail.group(0) not in vocab.words and tail.group(0) + core in vocab.words


def _join(lines: list[str], compounds: set[str] | None = None, vocab: Vocabulary | None = None) -> str:
    """Lines of a paragraph -> one text; a word hyphenated at a line end is joined ("hyphen-" + "ation")
    unless the document writes that hyphenated word elsewhere (or both halves, but not the whole, are its
    words)."""
    vocab = vocab or Vocabulary(compounds=set(compounds or ()))
    out = ""
    for t in lines:
        t = t.strip()
        if not t:
            continue
        if out and _url_continues(out.rsplit(" ", 1)[-1], t, vocab):
            out += t  # a URL broken at the line end ("https:" + "//github.com/...", "https://hu" + "ggingface.co/")
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[:1].islower():
            left = re.search(r"([^\W\d_]+(?:-[^\W\d_]+)*)-$", out)
            right = re.match(r"[^\W\d_]+", t)
            last = left.group(1).split("-")[-1] if left else ""
            # "state-" + "of-the-art": a line that starts inside a hyphenated compound continues it
            chain = bool(re.match(r"[^\W\d_]+-[^\W\d_]", t))
            keep = chain or bool(left and right and (vocab.keeps_hyphen(left.group(1), right.group(0))
                                                     or vocab.keeps_hyphen(last, right.group(0))))
            out = (out if keep else out[:-1]) + t
        else:
            out = f"{out} {t}" if out else t
    return out


def _raised(w: Word, ln: Line) -> bool:
    """A superscript or a footnote mark: smaller than its line's type and set above its baseline."""
    return w.size < P.script_size * ln.size and ln.baseline - w.baseline > P.raised_by * ln.size


def _lowered(w: Word, ln: Line) -> bool:
    """A subscript: smaller than its line's type and set below its baseline."""
    return w.size < P.script_size * ln.size and w.baseline - ln.baseline > P.lowered_by * ln.size


def line_text(ln: Line, keep_marks: bool = False) -> str:
    """A line as text: footnote marks dropped, superscripts after a number kept ("33rd", "10^4"), subscripts
    joined to their word ("β2"), letters set in two sizes (small capitals) joined."""
    key = "text_marks" if keep_marks else "text"
    if key not in ln.meta:
        ln.meta[key] = _line_text(ln, keep_marks)
    return ln.meta[key]


def _line_text(ln: Line, keep_marks: bool) -> str:
    out = ""
    prev: Word | None = None
    for w in ln.words:
        text = w.text
        if prev is not None:
            gap = w.x0 - prev.x1
            if _raised(w, ln):
                if re.search(r"\d$", prev.text) and not _raised(prev, ln):
                    text = text if re.fullmatch(r"[a-z]{1,2}", text) else "^" + text
                    out += text
                    prev = w
                    continue
                if _MARK_RE.match(text) and not keep_marks:
                    prev = w
                    continue
            elif _lowered(w, ln) and gap < P.subscript_gap * ln.size:
                out += text
                prev = w
                continue
            elif gap < P.small_caps_gap * ln.size and not _raised(prev, ln) and not _lowered(prev, ln):
                out += text  # one word in two sizes (small capitals: "L" + "ARGE")
                prev = w
                continue
        elif _raised(w, ln) and _MARK_RE.match(text) and not keep_marks and len(ln.words) > 1:
            prev = w  # a footnote mark opening a footnote or an affiliation line
            continue
        out = f"{out} {text}" if out else text
        prev = w
    return _normalise(out)


# ---------------------------------------------------------------------------------------------- geometry


def _half_points(size: float) -> float:
    """A type size rounded to the half point (sizes of one style differ in the last digits)."""
    return round(size * 2) / 2


def _body_size(pages: list[Page]) -> float:
    """The size most characters of the document are set in, to the half point."""
    weight: Counter[float] = Counter()
    for p in pages:
        for ln in p.lines:
            weight[_half_points(ln.size)] += ln.chars
    return max(weight, key=lambda s: weight[s]) if weight else P.default_body_size


def _bodyish(ln: Line, body: float) -> bool:
    """A line of body type: about the body size, a phrase long, mostly not mathematics."""
    return abs(ln.size - body) <= P.body_size_tolerance * body and ln.chars >= P.body_min_chars \
        and ln.math < P.body_max_math


def _gutter(lines: list[Line], width: float, body: float) -> float | None:
    """The x of the empty strip between two columns, or None for a single-column page."""
    # lines of body type wider than a fifth of the page; full-width ones (a caption under a teaser figure, a
    # single-column page) say nothing about a gutter elsewhere on the page
    prose = [ln for ln in lines
             if _bodyish(ln, body) and P.prose_min_width * width < ln.x1 - ln.x0 < P.prose_max_width * width]
    if len(prose) < P.gutter_min_lines:
        return None
    slack = P.gutter_slack_pt
    best: list[tuple[int, int]] = []
    for x in range(int(P.gutter_from * width), int(P.gutter_to * width) + 1):
        cross = sum(1 for ln in prose if ln.x0 < x - slack and ln.x1 > x + slack)
        # full-width lines (a teaser caption, a wide table) may cross it: they stand between the columns' bands
        if cross > P.gutter_max_crossing * len(prose):
            continue
        left = sum(1 for ln in prose if ln.x1 <= x + slack)
        right = sum(1 for ln in prose if ln.x0 >= x - slack)
        if min(left, right) >= max(P.gutter_side_lines, P.gutter_side_share * len(prose)):
            best.append((cross, x))
    if not best:
        return None
    low = min(c for c, _ in best)
    xs = [x for c, x in best if c == low]
    return (min(xs) + max(xs)) / 2


def _columns(page: Page, gutter: float | None) -> None:
    """Each line's column: 1 left of the gutter, 2 right of it, 0 across it (or on a single-column page)."""
    tol = P.column_tolerance * page.width
    for ln in page.lines:
        if gutter is None:
            ln.column = 0
        elif ln.x1 <= gutter + tol:
            ln.column = 1
        elif ln.x0 >= gutter - tol:
            ln.column = 2
        else:
            ln.column = 0


def _reading_order(lines: list[Line], two_columns: bool, head: set[int] | None = None) -> list[Line]:
    """Left column, then right, between the full-width lines; the lines in `head` first, row by row."""
    rows = sorted(lines, key=lambda ln: (ln.baseline, ln.x0))
    head_ids = head or set()
    rest = [ln for ln in rows if id(ln) not in head_ids]
    first = [ln for ln in rows if id(ln) in head_ids]
    if not two_columns:
        return first + rest
    out: list[Line] = list(first)
    band: list[Line] = []

    def close() -> None:
        out.extend(sorted((ln for ln in band if ln.column == 1), key=lambda ln: (ln.baseline, ln.x0)))
        out.extend(sorted((ln for ln in band if ln.column == 2), key=lambda ln: (ln.baseline, ln.x0)))
        band.clear()

    for ln in rest:
        if ln.column == 0:
            close()
            out.append(ln)
        else:
            band.append(ln)
    close()
    return out


def _furniture(pages: list[Page], body: float) -> set[int]:
    """ids of lines that are running headers, footers or page numbers."""
    out: set[int] = set()
    seen: dict[str, list[tuple[int, float]]] = {}
    for p in pages:
        for ln in p.lines:
            key = re.sub(r"\d+", "#", ln.text.lower()).strip()
            seen.setdefault(key, []).append((p.number, ln.baseline))
    repeated = len(pages) >= P.furniture_min_pages
    for p in pages:
        text_lines = [ln for ln in p.lines if _bodyish(ln, body) and ln.size >= P.text_block_size * body]
        top = min((ln.top for ln in text_lines), default=0.0)
        bottom = max((ln.bottom for ln in text_lines), default=p.height)
        lowest = max((ln.baseline for ln in p.lines), default=0.0)
        highest = min((ln.baseline for ln in p.lines), default=0.0)
        for ln in p.lines:
            key = re.sub(r"\d+", "#", ln.text.lower()).strip()
            near_edge = ln.baseline < P.page_head * p.height or ln.baseline > P.page_foot * p.height
            others = {n for n, b in seen.get(key, [])
                      if n != p.number and abs(b - ln.baseline) < P.repeat_height * p.height}
            if repeated and len(others) >= min(P.furniture_repeats, len(pages) - 1) \
                    and (near_edge or len(key) < P.furniture_max_chars):
                out.add(id(ln))
            elif _PAGE_NUMBER_RE.match(ln.text) and (near_edge or ln.baseline >= lowest or ln.baseline <= highest):
                out.add(id(ln))  # a page number: the page's first or last line
            elif near_edge and ln.size < P.text_block_size * body \
                    and (ln.bottom <= top + P.edge_slack_pt or ln.top >= bottom - P.edge_slack_pt):
                out.add(id(ln))
    return out


def _column_width(lines: list[Line], body: float) -> dict[int, tuple[float, float]]:
    """Per column, the left edge and width of its body text (from the lines of body type)."""
    out: dict[int, tuple[float, float]] = {}
    q = P.column_edge_quantile
    for col in (0, 1, 2):
        xs = [ln for ln in lines if ln.column == col and _bodyish(ln, body)]
        if len(xs) >= P.column_min_lines:
            x0 = sorted(ln.x0 for ln in xs)[len(xs) // q]
            x1 = sorted(ln.x1 for ln in xs)[(len(xs) * (q - 1)) // q]
            out[col] = (x0, max(1.0, x1 - x0))
    return out


# -------------------------------------------------------------------------------------------- line kinds


def _heading_like(ln: Line, body: float) -> bool:
    """A line set as a section heading: short, larger than the body or bold, or numbered in capitals."""
    text = line_text(ln).strip()
    if not text or len(text) > P.heading_max_chars or len(text.split()) > P.heading_max_words \
            or text.endswith((",", ";")):
        return False
    if not re.search(r"[^\W\d_]{2}", text) or _CAPTION_RE.match(text) or ln.math >= P.math_share:
        return False
    if text.endswith(".") and not re.match(r"^(?:\d+|[A-Z])\.\s", text):
        return False
    # a section title opens with a capital: "2.87 while using ..." is a line of text that starts with a figure
    numbered = bool(_NUMBERED_RE.match(text)) and not re.match(r"\S+\s+[a-z]", text)
    if ln.size >= body * P.heading_size and (ln.bold or ln.size >= body * P.heading_big or numbered):
        return True
    if ln.bold and ln.size >= body * P.heading_bold_size \
            and (numbered or len(text.split()) <= P.heading_short_words and text[:1].isupper()):
        return True
    letters = [c for c in text if c.isalpha()]
    # "1 INTRODUCTION": numbered, in capitals, at body size (ICLR and others)
    return numbered and len(letters) >= P.heading_caps_letters and all(c.isupper() for c in letters) \
        and ln.size >= body * P.heading_bold_size


def _split_run_in(lines: list[Line], body: float) -> list[Line]:
    """A paragraph that opens with a run-in heading in bold ("Reducing Number of Layers We experiment with ..."):
    its first line is split into the heading and the body text after it, so the heading is not read with the
    paragraph's first words, and the paragraph does not open mid-sentence."""
    out: list[Line] = []
    for i, ln in enumerate(lines):
        words = ln.words
        n = next((k for k, w in enumerate(words) if not w.bold), len(words))
        prev = lines[i - 1] if i else None
        opens = prev is None or prev.page != ln.page or prev.column != ln.column or \
            line_text(prev).rstrip().endswith((".", ":", "?", "!")) or prev.bold
        if not (P.run_in_min_words <= n <= P.run_in_max_words and n < len(words) and opens
                and abs(ln.size - body) <= P.run_in_size_tolerance * body
                and words[0].text[:1].isupper() and not any(w.bold for w in words[n:])
                and not _CAPTION_RE.match(ln.text) and ln.math < P.math_share
                # "Theorem 1", "Definition 2": a numbered label opens a statement, not a part of the section
                and not re.fullmatch(r"[A-Z][a-z]+\.? [\dIVX]+(?:\.\d+)*[.:]?", " ".join(w.text for w in words[:n]))):
            out.append(ln)
            continue
        meta = {k: v for k, v in ln.meta.items() if not k.startswith("text")}  # the text is the words'
        out += [Line(words[:n], ln.page, ln.kind, ln.column, dict(meta)),
                Line(words[n:], ln.page, ln.kind, ln.column, dict(meta))]
    return out


def _letters(text: str) -> float:
    """The share of letters among the text's non-space characters."""
    chars = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in chars) / max(1, len(chars))


def _numeric(text: str) -> float:
    """The share of the text's words that are numbers ("12.5", "(3)", "+4%", "2x")."""
    tokens = text.split()
    return sum(1 for t in tokens if re.fullmatch(r"[-+±~≈<>(]*[\d.,]+[%x×)*]*", t)) / max(1, len(tokens))


def _blocks(lines: list[Line], body: float) -> list[Block]:
    """Lines in reading order -> blocks: a block goes on while lines follow one another closely in one column
    and size, overlapping across, with no heading or caption between."""
    blocks: list[Block] = []
    cur: list[Line] = []
    for ln in lines:
        if cur:
            prev = cur[-1]
            same = (ln.page == prev.page and ln.column == prev.column
                    and -P.line_rise * ln.size <= ln.baseline - prev.baseline <= P.line_gap * max(ln.size, prev.size)
                    and abs(ln.size - prev.size) <= P.block_size_change * max(ln.size, prev.size)
                    and min(ln.x1, prev.x1) - max(ln.x0, prev.x0) > -P.block_overlap * ln.size
                    and not _heading_like(ln, body) and not _heading_like(prev, body)
                    and not _CAPTION_RE.match(line_text(ln)))
            if not same:
                blocks.append(Block(cur))
                cur = []
        cur.append(ln)
    if cur:
        blocks.append(Block(cur))
    return blocks


def _kind(block: Block, body: float, widths: dict[tuple[int, int], tuple[float, float]],
          height: float = P.default_page_height) -> str:
    """What a block in the body of the paper is (title, authors and abstract are found before)."""
    lines = block.lines
    first = line_text(lines[0])
    if _CAPTION_RE.match(first):
        return "caption"
    size = sorted(ln.size for ln in lines)[len(lines) // 2]
    opens_with_mark = _raised(lines[0].words[0], lines[0]) or bool(re.match(r"^[\d*†‡§¶∗⋆]\s?\S", first)) \
        and lines[0].words[0].size < lines[0].size * P.mark_size
    if size <= P.footnote_size * body and lines[-1].baseline > P.footnote_below * height \
            and (opens_with_mark or _raised(lines[0].words[0], lines[0])):
        return "footnote"
    if len(lines) <= P.heading_max_lines and all(_heading_like(ln, body) for ln in lines):
        return "heading"
    if size < P.small_type * body:
        return "small"  # footnotes, figure labels, tables in small type
    return _text_kind(block, body, widths)


def _text_kind(block: Block, body: float, widths: dict[tuple[int, int], tuple[float, float]]) -> str:
    """A block of body-size type: equation, table, body text or figure (labels, short lines, numbers)."""
    lines = block.lines
    text = " ".join(line_text(ln) for ln in lines)
    if sum(ln.math for ln in lines) / len(lines) >= P.math_share or _letters(text) < P.table_letters:
        return "equation" if "=" in text or sum(ln.math for ln in lines) / len(lines) >= P.math_share else "table"
    if _numeric(text) >= P.numeric_share:
        return "table"
    x0, width = widths.get((block.page, lines[0].column), (lines[0].x0, max(ln.x1 - ln.x0 for ln in lines)))
    full = [ln for ln in lines if ln.x1 - ln.x0 >= P.full_line * width]
    if len(full) >= max(1, P.full_lines_share * len(lines)) and _letters(text) >= P.prose_letters:
        return "body"
    # a paragraph's last lines at the top of a column: a sentence's end, starting at the column's left edge
    if len(lines) <= P.tail_max_lines and re.search(r"[.?!:;)]$", text) and _letters(text) >= P.tail_letters \
            and abs(lines[0].x0 - x0) <= P.tail_indent * body and len(text.split()) >= P.tail_min_words:
        return "body"
    return "figure"


# ----------------------------------------------------------------------------------------- first page




def _names_of(ln: Line, style: tuple[str, float]) -> list[str]:
    """Author names in one row segment: words of the author style, cut at marks, commas and "and"."""
    pieces: list[list[str]] = [[]]
    for w in ln.words:
        in_style = w.font == style[0] and abs(w.size - style[1]) <= P.author_size_tolerance_pt
        mark = _raised(w, ln) or w.size < P.script_size * ln.size or not in_style or _MARK_RE.match(w.text) and \
            not w.text[:1].isalpha()
        if mark or _EMAIL_RE.search(w.text):
            if pieces[-1]:
                pieces.append([])
            continue
        text = w.text.rstrip("*†‡§¶∗⋆")
        pieces[-1].append(text)
        if text != w.text:
            pieces.append([])
    names: list[str] = []
    for piece in pieces:
        for name in _AUTHOR_SPLIT_RE.split(_normalise(" ".join(piece))):
            name = name.strip(_NAME_MARKS + ".")
            if name.lower().startswith("and "):
                name = name[len("and "):]
            if _name_like(name):
                names.append(name)
    return names


def _name_like(name: str) -> bool:
    """A person's name: a few words, capitalised (the last one too), no digits, e-mail or punctuation."""
    tokens = name.split()
    if not P.name_min_words <= len(tokens) <= P.name_max_words or re.search(r"[\d@()/:]", name):
        return False
    caps = [t for t in tokens if t[:1].isupper()]
    return len(caps) >= P.name_min_capitals and tokens[-1][:1].isupper() \
        and all(len(t) <= P.name_max_word_chars for t in tokens)


def _authors(rows: list[list[Line]]) -> list[str]:
    """Names from the rows under the title: the first row holding a name sets the author style; rows in that
    style follow until a row of it comes after an empty gap with no other row between (a new block in the
    same style: affiliations)."""
    style: tuple[str, float] | None = None
    names: list[str] = []
    last: float | None = None
    other_between = False
    starts: list[float] = []
    for row in rows:
        if style is None:
            for seg in row:
                main = max(seg.main_words(), key=lambda w: len(w.text), default=None)
                if main is None:
                    continue
                candidate = (main.font, _half_points(main.size))
                if _names_of(seg, candidate):
                    style = candidate
                    break
            if style is None:
                continue
        in_style = [seg for seg in row
                    if any(w.font == style[0] and abs(w.size - style[1]) <= P.author_size_tolerance_pt
                           for w in seg.words)]
        if not in_style:
            other_between = True
            continue
        baseline = in_style[0].baseline
        if last is not None and baseline - last > P.author_row_gap * style[1] and not other_between:
            break
        found = [n for seg in in_style for n in _names_of(seg, style)]
        if not found and names:
            break
        if other_between and names and len(found) < P.author_grid_names and not any(
                abs(seg.x0 - x) < P.author_grid_align * style[1] for seg in in_style for x in starts):
            break  # one more "name" under the e-mails or affiliations, not in the authors' grid: an affiliation
        names.extend(found)
        starts.extend(seg.x0 for seg in in_style)
        last, other_between = baseline, False
    return list(dict.fromkeys(names))


def _rows(lines: list[Line]) -> list[list[Line]]:
    """Lines grouped into rows on one baseline, top to bottom."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: (ln.baseline, ln.x0)):
        if rows and abs(rows[-1][0].baseline - ln.baseline) <= P.row_tolerance * ln.size:
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return rows


def _is_abstract_heading(ln: Line, body: float) -> bool:
    """"Abstract" alone on its line, or run in ("Abstract—", "ABSTRACT.") before the abstract's text."""
    text = line_text(ln)
    if not _ABSTRACT_RE.match(text):
        return False
    rest = _ABSTRACT_RE.sub("", text, count=1)
    if not rest:
        return True  # "Abstract" alone on its line
    first = ln.words[0]
    # run in: "Abstract." / "Abstract—" set bold, italic, in capitals or larger than the text after it
    label = len("Abstract")
    return first.bold or first.italic or text[:label].isupper() \
        or first.size > P.abstract_label_larger * ln.words[-1].size or text[label:label + 1] in ".:—–-"


# ------------------------------------------------------------------------------------------------- parse


def _pdf_error(error: BaseException) -> Exception:
    """A one-line reason for a PDF PDFium cannot open."""

    message = str(error)
    if "password" in message.lower():
        return CorpusError("encrypted PDF (needs a password): save an unprotected copy and ingest that")
    detail = message.strip().splitlines()[0] if message.strip() else ""
    return CorpusError(f"not a readable PDF ({type(error).__name__}{': ' + detail[:120] if detail else ''})")


def read_pages(path: Path) -> tuple[list[Page], dict[str, str], int]:
    """Every page's lines (up to `P.max_pages`), the document's Info metadata and its page count."""
    import pypdfium2

    try:
        doc = pypdfium2.PdfDocument(str(path))
    except Exception as e:  # PdfiumError: damaged, encrypted, not a PDF
        raise _pdf_error(e) from None
    try:
        n_pages = len(doc)
        try:
            meta = {k: str(v) for k, v in doc.get_metadata_dict().items() if v}
        except Exception:  # a damaged Info dictionary is no metadata
            meta = {}
        fonts: dict[int, tuple[str, bool, bool]] = {}
        pages = []
        for i in range(min(n_pages, P.max_pages)):
            page = doc[i]
            try:
                pages.append(read_page(page, i + 1, fonts))
            finally:
                page.close()
    except Exception as e:
        raise _pdf_error(e) from None
    finally:
        doc.close()
    return pages, meta, n_pages


def parse_pdf(path: Path) -> Parsed:
    """Read a PDF into title, authors, abstract and sections (raises CorpusError with a user-facing reason)."""

    pages, meta, n_pages = read_pages(path)
    chars = sum(ln.chars for p in pages for ln in p.lines)
    if chars < P.min_text_chars:
        raise CorpusError(f"no text layer ({n_pages} page{'s' if n_pages != 1 else ''}, {chars} characters of "
                          "text): a scanned PDF? Run OCR first (e.g. ocrmypdf) and ingest the result")
    return analyse(pages, meta, n_pages)


def analyse(pages: list[Page], meta: dict[str, str], n_pages: int) -> Parsed:
    """The paper in its pages' lines, in passes: body size and running furniture; columns; the first page's
    title and head (authors, affiliations) down to the abstract; reading order; blocks of lines and their kinds
    and sections; each block's text; sections and paragraphs; what the first page and the Info dictionary say
    of the paper."""
    body = _body_size(pages)
    furniture = _furniture(pages, body)
    two_columns = _layout(pages, body, furniture)
    first = pages[0]
    title_lines = _title_lines(first, furniture, body)
    title_end = max((ln.baseline for ln in title_lines), default=-1.0)
    head_ids = _head_ids(first, furniture, body, _head_end(first, furniture, body, title_end))
    ordered: list[Line] = []
    for p in pages:
        lines = [ln for ln in p.lines if id(ln) not in furniture]
        ordered += _reading_order(lines, two_columns[p.number], head_ids if p.number == 1 else None)
    head = [ln for ln in ordered if id(ln) in head_ids and ln not in title_lines and ln.baseline > title_end]
    authors = _authors(_rows(head))
    title = clean_field(_join([line_text(ln) for ln in title_lines]))
    # Body.
    vocab = Vocabulary.of([line_text(ln) for ln in ordered])
    rest = [ln for ln in ordered if id(ln) not in head_ids]
    widths = _widths(pages, furniture, body)
    blocks = _blocks(_split_run_in(rest, body), body)
    reader = _SectionReader(body, widths, {p.number: p.height for p in pages})
    for b in blocks:
        reader.read(b)
    texts = _block_texts(blocks, vocab, reader.run_in_label)
    blocks, texts = _asides_last(blocks, texts)
    sections, paragraphs = _sections(blocks, texts)
    abstract = " ".join(t for _p, h, t in sections if h == "Abstract")
    if not abstract:
        abstract = next((t for _p, h, t in sections if t), "")
    title, authors = _with_info(title, authors, meta)
    printed = _printed(first, furniture, body, meta)
    return Parsed(title=title, authors=authors, abstract=abstract, stamp=printed.stamp, sections=sections,
                  paragraphs=paragraphs, pages=n_pages,
                  venue=printed.venue, year=printed.year, doi=printed.doi,
                  arxiv=printed.arxiv, unmapped=sum(p.unmapped for p in pages),
                  blocks=[(b.page, b.kind, b.section, t) for b, t in zip(blocks, texts)])


# ------------------------------------------------------------------------------------- analyse's passes


def _layout(pages: list[Page], body: float, furniture: set[int]) -> dict[int, bool]:
    """Empty lines dropped, each page's gutter found and each line's column set; page number -> two columns."""
    two_columns: dict[int, bool] = {}
    for p in pages:
        p.lines = [ln for ln in p.lines if ln.text.strip()]
        g = _gutter([ln for ln in p.lines if id(ln) not in furniture], p.width, body)
        _columns(p, g)
        two_columns[p.number] = g is not None
    return two_columns


def _title_lines(first: Page, furniture: set[int], body: float) -> list[Line]:
    """The title: the largest type in the top part of the first page, if it is larger than the body, in lines
    of that size one under the other."""
    top_lines = [ln for ln in first.lines if id(ln) not in furniture and ln.baseline < P.title_zone * first.height
                 and re.search(r"[^\W\d_]{2}", ln.text)]
    title_lines: list[Line] = []
    if top_lines:
        big = max(ln.size for ln in top_lines)
        if big >= P.title_size * body:
            for ln in sorted(top_lines, key=lambda ln: ln.baseline):
                if ln.size >= big - P.title_size_tolerance_pt:
                    if title_lines and ln.baseline - title_lines[-1].baseline > P.title_line_gap * big:
                        break
                    title_lines.append(ln)
                elif title_lines and ln.size < big - P.title_size_tolerance_pt:
                    break
    return title_lines


def _head_end(first: Page, furniture: set[int], body: float, title_end: float) -> float:
    """Where the head of the first page ends: above the abstract heading (or the first line of body text)."""
    abstract_heading = next((ln for ln in sorted(first.lines, key=lambda ln: ln.baseline)
                             if ln.baseline > title_end and _is_abstract_heading(ln, body)), None)
    if abstract_heading is not None:
        return abstract_heading.baseline - P.head_gap * abstract_heading.size
    body_lines = [ln for ln in first.lines if ln.baseline > title_end and _bodyish(ln, body)
                  and ln.chars >= P.head_body_chars and id(ln) not in furniture]
    return min((ln.baseline for ln in body_lines), default=title_end) - P.head_gap * body


def _head_ids(first: Page, furniture: set[int], body: float, head_end: float) -> set[int]:
    """ids of the head's lines: the first page's lines above the head's end, less a two-column page's column
    text there (the right column may start above the abstract heading of the left one)."""
    above = [ln for ln in first.lines if ln.baseline < head_end and id(ln) not in furniture]
    head_ids = {id(ln) for ln in above}

    def prose(ln: Line | None) -> bool:
        return ln is not None and _bodyish(ln, body) and ln.chars >= P.column_chain_chars

    for col in (1, 2):
        # a column's text: two or more lines of body type, set line after line, each holding a phrase
        chain: list[Line] = []
        for ln in [*sorted((ln for ln in above if ln.column == col), key=lambda ln: ln.baseline), None]:
            if ln is not None and prose(ln) and (
                    not chain or ln.baseline - chain[-1].baseline <= P.line_gap * max(ln.size, chain[-1].size)):
                chain.append(ln)
                continue
            if len(chain) >= P.column_chain_lines:
                head_ids.difference_update(id(x) for x in chain)
            chain = [ln] if ln is not None and prose(ln) else []
    return head_ids


def _widths(pages: list[Page], furniture: set[int], body: float) -> dict[tuple[int, int], tuple[float, float]]:
    """(page, column) -> the left edge and width of that column's body text."""
    widths: dict[tuple[int, int], tuple[float, float]] = {}
    for p in pages:
        for col, w in _column_width([ln for ln in p.lines if id(ln) not in furniture], body).items():
            widths[(p.number, col)] = w
    return widths


@dataclass
class _SectionReader:
    """Gives each block of the body, read in order, its kind and section: the abstract runs from its heading
    (or run-in label) while its blocks keep its size, headings open sections, the references run from their
    heading to the next one, and keywords end the abstract."""

    body: float
    widths: dict[tuple[int, int], tuple[float, float]]
    heights: dict[int, float]
    section: str = ""
    in_abstract: bool = False
    in_references: bool = False
    run_in_label: Block | None = None  # "Abstract—Speech enhancement ...": the label is not the abstract's text
    abstract_style: tuple[float, float] | None = None
    last_body: Block | None = None  # the last body block (and so its section)
    label_heading: bool = False  # an unnumbered heading was read since the last body block

    def read(self, b: Block) -> None:
        first_text = line_text(b.lines[0])
        if not self.in_abstract and self.section == "" and _is_abstract_heading(b.lines[0], self.body) \
                and self.abstract_style is None:
            self._abstract_heading(b, first_text)
            return
        kind = _kind(b, self.body, self.widths, self.heights[b.page])
        if _KEYWORDS_RE.match(first_text) and not self.in_references:
            # "Index Terms—speech enhancement, ..." set bold throughout (IEEE) reads like a heading: it is not one
            self.in_abstract, b.kind, b.section, self.section = False, "keywords", "", ""
        elif kind == "heading":
            self._heading(b)
        elif self.in_abstract:
            self._abstract_block(b, kind, first_text)
        else:
            self._body_block(b, kind, first_text)

    def _abstract_heading(self, b: Block, first_text: str) -> None:
        self.in_abstract, self.section = True, "Abstract"
        rest_text = _ABSTRACT_RE.sub("", first_text, count=1)
        if rest_text or len(b.lines) > 1:
            b.kind = "abstract"
            self.run_in_label = b
            self.abstract_style = (b.lines[-1].size, b.lines[-1].x1 - b.lines[-1].x0)
        else:
            b.kind = "heading"
        b.section = self.section

    def _heading(self, b: Block) -> None:
        heading = clean_field(" ".join(line_text(ln) for ln in b.lines))
        self.in_abstract = False
        if _END_SECTIONS_RE.match(heading):
            self.in_references = True
        elif self.in_references and not (_NUMBERED_RE.match(heading) or b.lines[0].size >= P.heading_size * self.body):
            b.kind, b.section = "reference", self.section  # a bold line inside the reference list
            return
        else:
            self.in_references = False
        self.section = heading
        self.label_heading = not _NUMBERED_RE.match(heading)
        b.kind, b.section = "heading", self.section

    def _abstract_block(self, b: Block, kind: str, first_text: str) -> None:
        if kind in ("footnote", "small", "figure", "caption", "table", "equation"):
            b.kind, b.section = kind, ""  # a footnote or figure beside the abstract does not end it
            return
        size = sorted(ln.size for ln in b.lines)[len(b.lines) // 2]
        run_in = _RUN_IN_RE.match(first_text) and (b.lines[0].words[0].bold or b.lines[0].words[0].italic)
        if self.abstract_style is None:
            self.abstract_style = (size, 0.0)
        if run_in:
            self.in_abstract, b.kind, b.section = False, "keywords", ""  # "Keywords:", "Index Terms—"
            self.section = ""
            return
        style = self.abstract_style[0]
        if abs(size - style) > P.abstract_size_tolerance * style or kind not in ("body",):
            self.in_abstract = kind == "body" and abs(size - style) <= P.abstract_size_tolerance * size
            if not self.in_abstract:
                self.section = self.section if self.section != "Abstract" else ""
                b.kind, b.section = ("body" if kind == "body" else kind), self.section
                return
        b.kind, b.section = "abstract", "Abstract"

    def _body_block(self, b: Block, kind: str, first_text: str) -> None:
        if kind == "body" and not self.in_references and self.label_heading and self.last_body is not None \
                and first_text[:1].islower() \
                and not line_text(self.last_body.lines[-1]).rstrip().endswith((".", "?", "!", ":")):
            # A section never opens mid-sentence: the unnumbered bold lines since the last body block were the
            # column heads of a table or figure ("Negative samples from"), and this block goes on with the
            # sentence the last one left open, in its section.
            self.section = self.last_body.section
        b.kind = "reference" if self.in_references and kind in ("body", "figure", "small", "footnote") else kind
        b.section = self.section
        if kind == "body" and not self.in_references:
            self.last_body, self.label_heading = b, False


def _block_texts(blocks: list[Block], vocab: Vocabulary, run_in_label: Block | None) -> list[str]:
    """Text of each block; a word hyphenated across two blocks (column or page break) is completed in the
    first."""
    texts = [_join([line_text(ln) for ln in b.lines], vocab=vocab) for b in blocks]
    if run_in_label is not None:
        i = next(j for j, b in enumerate(blocks) if b is run_in_label)
        texts[i] = _ABSTRACT_RE.sub("", texts[i], count=1)
    prose = ("abstract", "body")
    for i, b in enumerate(blocks):
        if b.kind not in prose or not texts[i].endswith("-"):
            continue
        nxt = next((j for j in range(i + 1, len(blocks)) if blocks[j].kind in prose), None)
        if nxt is None or not texts[nxt][:1].islower():
            continue
        joined = _join([texts[i], texts[nxt]], vocab=vocab)
        head_part = texts[i][:-1] if not joined.startswith(texts[i]) else texts[i]
        first_word = re.match(r"\S+", texts[nxt])
        if first_word is None:  # never: the text opens with a letter
            continue
        word = first_word.group(0)
        texts[i] = (joined[:len(head_part)] + word) if joined.startswith(head_part) else texts[i]
        texts[nxt] = texts[nxt][len(word):].lstrip()
    return texts


def _asides_last(blocks: list[Block], texts: list[str]) -> tuple[list[Block], list[str]]:
    """Captions and footnotes are prose, quoted as printed: each page's come after its body text (so they never
    cut a sentence running from one column into the next), a caption as its own section ("Figure 5")."""
    for b, text in zip(blocks, texts):
        if b.kind == "caption":
            m = _CAPTION_RE.match(text)
            b.section = re.sub(r"\s+", " ", m.group(0)).rstrip(".:| ") if m else "Caption"
    aside = ("caption", "footnote")
    order = sorted(range(len(blocks)), key=lambda i: (blocks[i].page, blocks[i].kind in aside, i))
    return [blocks[i] for i in order], [texts[i] for i in order]


def _sections(blocks: list[Block], texts: list[str]) -> tuple[list[tuple[int, str, str]], list[tuple[int, str, str]]]:
    """(page, section, text) of the quoted blocks, joined per page and section, and per paragraph (a block,
    continued by the next of its section and page when it stops mid-sentence). Fragments, author notes and
    acknowledgements are set aside (their kind is changed)."""
    quoted = ("abstract", "body", "caption", "footnote")
    sections: list[tuple[int, str, str]] = []
    paragraphs: list[tuple[int, str, str]] = []
    for b, text in zip(blocks, texts):
        if b.kind not in quoted or not text.strip():
            continue
        if b.kind in ("body", "footnote", "caption") \
                and (len(text.split()) < P.fragment_words or _letters(text) < P.prose_letters):
            b.kind = "figure"  # a fragment ("2)", "(a) (b)") left between equations or figure parts
            continue
        if b.kind == "footnote" and _AUTHOR_NOTE_RE.search(text):
            b.kind = "author note"
            continue
        if b.kind in ("body", "footnote") and _THANKS_RE.match(b.section):
            b.kind = "acknowledgements"  # funding and thanks state no finding of the paper
            continue
        name = "Abstract" if b.kind == "abstract" else b.section
        if sections and sections[-1][0] == b.page and sections[-1][1] == name:
            sections[-1] = (b.page, name, sections[-1][2] + " " + text)
        else:
            sections.append((b.page, name, text))
        if paragraphs and paragraphs[-1][:2] == (b.page, name) and not _SENTENCE_END_RE.search(paragraphs[-1][2]):
            paragraphs[-1] = (b.page, name, paragraphs[-1][2] + " " + text)
        else:
            paragraphs.append((b.page, name, text))
    return sections, paragraphs


def _with_info(title: str, authors: list[str], meta: dict[str, str]) -> tuple[str, list[str]]:
    """The title and authors, from the PDF's Info dictionary where the page gave none and it is sound."""
    meta_title = clean_field(meta.get("Title"))
    if not title and _sound_title(meta_title):
        title = meta_title
    if not authors and meta.get("Author"):
        authors = [n for n in (s.strip() for s in re.split(r"\s*(?:;|,|\band\b)\s*", clean_field(meta["Author"])))
                   if _name_like(n)]
    return title, authors


@dataclass
class _Printed:
    """What the first page prints about the paper besides title and authors."""

    venue: str
    year: str
    doi: str
    arxiv: str
    stamp: str  # sideways text (arXiv's identifier and date)


def _printed(first: Page, furniture: set[int], body: float, meta: dict[str, str]) -> _Printed:
    """Venue, year, DOI and arXiv identifier printed on the first page (small type, the margin stamp, the
    copyright line), and the DOI where the Info dictionary's subject or keywords hold one."""
    first_text = " ".join(line_text(ln) for ln in first.lines)
    page1_small = [line_text(ln) for ln in first.lines if id(ln) in furniture or ln.size < P.page1_small_type * body]
    venue_line = next((t for t in page1_small if _VENUE_RE.search(t) and year_of(t)), "")
    venue = re.split(r",\s*pages?\s+\d|\s*©", venue_line)[0].strip() if venue_line else ""
    stamp = first.sideways
    year = year_of(stamp if arxiv_of(stamp) else "", venue_line,
                   *re.findall(r"(?:©|\(c\)|copyright)\s*(\d{4})", first_text, re.I)[:1])
    return _Printed(venue=venue, year=year, doi=doi_of(first_text, meta.get("Subject", ""), meta.get("Keywords", "")),
                    arxiv=arxiv_of(stamp, first_text), stamp=stamp)


_SENTENCE_END_RE = re.compile(r"[.!?:][\"”’)\]]*\s*$")


def _sound_title(title: str) -> bool:
    """An Info title that names the paper, not the file it was made from."""
    return bool(title) and len(title) >= P.meta_title_min_chars and not re.search(
        r"\.(html?|tex|dvi|docx?|pdf|ps)$|^untitled|^microsoft word|^slide|^\s*$|^[\w-]+\.\w{2,4}$", title, re.I)


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
    parsed = parse_bounded(parse_pdf, path)  # in a worker with a memory and time budget (a decompression bomb)
    if not parsed.abstract:
        raise CorpusError("no abstract or body text found in the PDF")
    text_parts: list[str] = []
    layout: list[list[Any]] = []
    offset = 0
    for page, heading, body in parsed.paragraphs or parsed.sections:
        cleaned = re.sub(r"\s+", " ", body).strip()  # PDF text is plain: '$' or '\\' in it are not markup
        if not cleaned:
            continue
        layout.append([offset, page, heading])
        text_parts.append(cleaned)
        offset += len(cleaned) + 1
    text = " ".join(text_parts)
    if not any(h == "Abstract" for _p, h, _t in parsed.sections):
        report.warnings.append(f"{report.source}: no 'Abstract' heading found; the text starts with the first "
                               "paragraph")
    record = {"abstract": text, "title": parsed.title, "authors": parsed.authors, "venue": parsed.venue,
              "year": parsed.year, "doi": parsed.doi, "arxiv": parsed.arxiv,
              "url": link_of("", parsed.doi, parsed.arxiv), "key": "", "kind": "article",
              "layout": json.dumps(layout, ensure_ascii=False), "full_text": True}
    if parsed.title:
        record["label"] = label_of(parsed.title)
    return [(1, record)]
