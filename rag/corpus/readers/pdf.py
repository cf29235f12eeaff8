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
from rag.corpus.readers.pdf_layout import Line, Page, Word, read_page
from rag.corpus.records import CorpusError, FileReport

MAX_PAGES = 200
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
            and len(right) >= 3


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
    tail = re.search(r"[a-z]+$", last)
    # "lost-in-the-middl" + "e": the piece completes the URL's last word ("middle" is a word, "middl" is not)
    return core not in vocab.words or bool(tail) and tail.group(0) not in vocab.words \
        and tail.group(0) + core in vocab.words


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
    return w.size < 0.85 * ln.size and ln.baseline - w.baseline > 0.18 * ln.size


def _lowered(w: Word, ln: Line) -> bool:
    return w.size < 0.85 * ln.size and w.baseline - ln.baseline > 0.08 * ln.size


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
            elif _lowered(w, ln) and gap < 0.3 * ln.size:
                out += text
                prev = w
                continue
            elif gap < 0.06 * ln.size and not _raised(prev, ln) and not _lowered(prev, ln):
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


def _body_size(pages: list[Page]) -> float:
    weight: Counter[float] = Counter()
    for p in pages:
        for ln in p.lines:
            weight[round(ln.size * 2) / 2] += ln.chars
    return max(weight, key=lambda s: weight[s]) if weight else 10.0


def _bodyish(ln: Line, body: float) -> bool:
    return abs(ln.size - body) <= 0.15 * body and ln.chars >= 15 and ln.math < 0.35


def _gutter(lines: list[Line], width: float, body: float) -> float | None:
    """The x of the empty strip between two columns, or None for a single-column page."""
    # lines of body type wider than a fifth of the page; full-width ones (a caption under a teaser figure, a
    # single-column page) say nothing about a gutter elsewhere on the page
    prose = [ln for ln in lines if _bodyish(ln, body) and 0.2 * width < ln.x1 - ln.x0 < 0.7 * width]
    if len(prose) < 8:
        return None
    best: list[tuple[int, int]] = []
    for x in range(int(0.3 * width), int(0.7 * width) + 1):
        cross = sum(1 for ln in prose if ln.x0 < x - 1 and ln.x1 > x + 1)
        # full-width lines (a teaser caption, a wide table) may cross it: they stand between the columns' bands
        if cross > 0.2 * len(prose):
            continue
        left = sum(1 for ln in prose if ln.x1 <= x + 1)
        right = sum(1 for ln in prose if ln.x0 >= x - 1)
        if min(left, right) >= max(3, 0.1 * len(prose)):
            best.append((cross, x))
    if not best:
        return None
    low = min(c for c, _ in best)
    xs = [x for c, x in best if c == low]
    return (min(xs) + max(xs)) / 2


def _columns(page: Page, gutter: float | None) -> None:
    tol = 0.01 * page.width
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
    head = head or set()
    rest = [ln for ln in rows if id(ln) not in head]
    head = [ln for ln in rows if id(ln) in head]
    if not two_columns:
        return head + rest
    out: list[Line] = list(head)
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
    for p in pages:
        text_lines = [ln for ln in p.lines if _bodyish(ln, body) and ln.size >= 0.97 * body]
        top = min((ln.top for ln in text_lines), default=0.0)
        bottom = max((ln.bottom for ln in text_lines), default=p.height)
        lowest = max((ln.baseline for ln in p.lines), default=0.0)
        highest = min((ln.baseline for ln in p.lines), default=0.0)
        for ln in p.lines:
            key = re.sub(r"\d+", "#", ln.text.lower()).strip()
            near_edge = ln.baseline < 0.1 * p.height or ln.baseline > 0.9 * p.height
            others = {n for n, b in seen.get(key, []) if n != p.number and abs(b - ln.baseline) < 0.02 * p.height}
            if len(pages) >= 3 and len(others) >= min(2, len(pages) - 1) and (near_edge or len(key) < 60):
                out.add(id(ln))
            elif _PAGE_NUMBER_RE.match(ln.text) and (near_edge or ln.baseline >= lowest or ln.baseline <= highest):
                out.add(id(ln))  # a page number: the page's first or last line
            elif near_edge and ln.size < 0.97 * body and (ln.bottom <= top + 1 or ln.top >= bottom - 1):
                out.add(id(ln))
    return out


def _column_width(lines: list[Line], body: float) -> dict[int, tuple[float, float]]:
    """Per column, the left edge and width of its body text (from the lines of body type)."""
    out: dict[int, tuple[float, float]] = {}
    for col in (0, 1, 2):
        xs = [ln for ln in lines if ln.column == col and _bodyish(ln, body)]
        if len(xs) >= 3:
            x0 = sorted(ln.x0 for ln in xs)[len(xs) // 10]
            x1 = sorted(ln.x1 for ln in xs)[(len(xs) * 9) // 10]
            out[col] = (x0, max(1.0, x1 - x0))
    return out


# -------------------------------------------------------------------------------------------- line kinds


def _heading_like(ln: Line, body: float) -> bool:
    text = line_text(ln).strip()
    if not text or len(text) > 100 or len(text.split()) > 14 or text.endswith((",", ";")):
        return False
    if not re.search(r"[^\W\d_]{2}", text) or _CAPTION_RE.match(text) or ln.math >= 0.3:
        return False
    if text.endswith(".") and not re.match(r"^(?:\d+|[A-Z])\.\s", text):
        return False
    # a section title opens with a capital: "2.87 while using ..." is a line of text that starts with a figure
    numbered = bool(_NUMBERED_RE.match(text)) and not re.match(r"\S+\s+[a-z]", text)
    if ln.size >= body * 1.1 and (ln.bold or ln.size >= body * 1.15 or numbered):
        return True
    if ln.bold and ln.size >= body * 0.9 and (numbered or len(text.split()) <= 6 and text[:1].isupper()):
        return True
    letters = [c for c in text if c.isalpha()]
    # "1 INTRODUCTION": numbered, in capitals, at body size (ICLR and others)
    return numbered and len(letters) >= 4 and all(c.isupper() for c in letters) and ln.size >= body * 0.9


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
        if not (2 <= n <= 10 and n < len(words) and opens and abs(ln.size - body) <= 0.1 * body
                and words[0].text[:1].isupper() and not any(w.bold for w in words[n:])
                and not _CAPTION_RE.match(ln.text) and ln.math < 0.3
                # "Theorem 1", "Definition 2": a numbered label opens a statement, not a part of the section
                and not re.fullmatch(r"[A-Z][a-z]+\.? [\dIVX]+(?:\.\d+)*[.:]?", " ".join(w.text for w in words[:n]))):
            out.append(ln)
            continue
        meta = {k: v for k, v in ln.meta.items() if not k.startswith("text")}  # the text is the words'
        out += [Line(words[:n], ln.page, ln.kind, ln.column, dict(meta)),
                Line(words[n:], ln.page, ln.kind, ln.column, dict(meta))]
    return out


def _letters(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in chars) / max(1, len(chars))


def _numeric(text: str) -> float:
    tokens = text.split()
    return sum(1 for t in tokens if re.fullmatch(r"[-+±~≈<>(]*[\d.,]+[%x×)*]*", t)) / max(1, len(tokens))


def _blocks(lines: list[Line], body: float) -> list[Block]:
    blocks: list[Block] = []
    cur: list[Line] = []
    for ln in lines:
        if cur:
            prev = cur[-1]
            same = (ln.page == prev.page and ln.column == prev.column
                    and -0.2 * ln.size <= ln.baseline - prev.baseline <= 1.75 * max(ln.size, prev.size)
                    and abs(ln.size - prev.size) <= 0.12 * max(ln.size, prev.size)
                    and min(ln.x1, prev.x1) - max(ln.x0, prev.x0) > -0.5 * ln.size
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
          height: float = 792.0) -> str:
    """What a block in the body of the paper is (title, authors and abstract are found before)."""
    lines = block.lines
    first = line_text(lines[0])
    if _CAPTION_RE.match(first):
        return "caption"
    size = sorted(ln.size for ln in lines)[len(lines) // 2]
    opens_with_mark = _raised(lines[0].words[0], lines[0]) or bool(re.match(r"^[\d*†‡§¶∗⋆]\s?\S", first)) \
        and lines[0].words[0].size < lines[0].size * 0.9
    if size <= 0.92 * body and lines[-1].baseline > 0.6 * height and (opens_with_mark or _raised(
            lines[0].words[0], lines[0])):
        return "footnote"
    if len(lines) <= 2 and all(_heading_like(ln, body) for ln in lines):
        return "heading"
    if size < 0.85 * body:
        return "small"  # footnotes, figure labels, tables in small type
    text = " ".join(line_text(ln) for ln in lines)
    if sum(ln.math for ln in lines) / len(lines) >= 0.3 or _letters(text) < 0.45:
        return "equation" if "=" in text or sum(ln.math for ln in lines) / len(lines) >= 0.3 else "table"
    if _numeric(text) >= 0.35:
        return "table"
    x0, width = widths.get((block.page, lines[0].column), (lines[0].x0, max(ln.x1 - ln.x0 for ln in lines)))
    full = [ln for ln in lines if ln.x1 - ln.x0 >= 0.75 * width]
    if len(full) >= max(1, 0.5 * len(lines)) and _letters(text) >= 0.6:
        return "body"
    # a paragraph's last lines at the top of a column: a sentence's end, starting at the column's left edge
    if len(lines) <= 3 and re.search(r"[.?!:;)]$", text) and _letters(text) >= 0.7 \
            and abs(lines[0].x0 - x0) <= 1.5 * body and len(text.split()) >= 3:
        return "body"
    return "figure"


# ----------------------------------------------------------------------------------------- first page


def _style(ln: Line) -> tuple[str, float]:
    return ln.font, round(ln.size * 2) / 2


def _names_of(ln: Line, style: tuple[str, float]) -> list[str]:
    """Author names in one row segment: words of the author style, cut at marks, commas and "and"."""
    pieces: list[list[str]] = [[]]
    for w in ln.words:
        in_style = w.font == style[0] and abs(w.size - style[1]) <= 0.6
        mark = _raised(w, ln) or w.size < 0.85 * ln.size or not in_style or _MARK_RE.match(w.text) and \
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
                name = name[4:]
            if _name_like(name):
                names.append(name)
    return names


def _name_like(name: str) -> bool:
    tokens = name.split()
    if not 2 <= len(tokens) <= 5 or re.search(r"[\d@()/:]", name):
        return False
    caps = [t for t in tokens if t[:1].isupper()]
    return len(caps) >= 2 and tokens[-1][:1].isupper() and all(len(t) <= 20 for t in tokens)


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
                candidate = (main.font, round(main.size * 2) / 2)
                if _names_of(seg, candidate):
                    style = candidate
                    break
            if style is None:
                continue
        in_style = [seg for seg in row if any(w.font == style[0] and abs(w.size - style[1]) <= 0.6
                                              for w in seg.words)]
        if not in_style:
            other_between = True
            continue
        baseline = in_style[0].baseline
        if last is not None and baseline - last > 1.5 * style[1] and not other_between:
            break
        found = [n for seg in in_style for n in _names_of(seg, style)]
        if not found and names:
            break
        if other_between and names and len(found) < 2 and not any(
                abs(seg.x0 - x) < 0.5 * style[1] for seg in in_style for x in starts):
            break  # one more "name" under the e-mails or affiliations, not in the authors' grid: an affiliation
        names.extend(found)
        starts.extend(seg.x0 for seg in in_style)
        last, other_between = baseline, False
    return list(dict.fromkeys(names))


def _rows(lines: list[Line]) -> list[list[Line]]:
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: (ln.baseline, ln.x0)):
        if rows and abs(rows[-1][0].baseline - ln.baseline) <= 0.3 * ln.size:
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return rows


def _is_abstract_heading(ln: Line, body: float) -> bool:
    text = line_text(ln)
    if not _ABSTRACT_RE.match(text):
        return False
    rest = _ABSTRACT_RE.sub("", text, count=1)
    if not rest:
        return True  # "Abstract" alone on its line
    first = ln.words[0]
    # run in: "Abstract." / "Abstract—" set bold, italic, in capitals or larger than the text after it
    return first.bold or first.italic or text[:8].isupper() or first.size > 1.05 * ln.words[-1].size \
        or text[8:9] in ".:—–-"


# ------------------------------------------------------------------------------------------------- parse


def _pdf_error(error: BaseException) -> Exception:
    """A one-line reason for a PDF PDFium cannot open."""

    message = str(error)
    if "password" in message.lower():
        return CorpusError("encrypted PDF (needs a password): save an unprotected copy and ingest that")
    detail = message.strip().splitlines()[0] if message.strip() else ""
    return CorpusError(f"not a readable PDF ({type(error).__name__}{': ' + detail[:120] if detail else ''})")


def read_pages(path: Path) -> tuple[list[Page], dict[str, str], int]:
    """Every page's lines (up to MAX_PAGES), the document's Info metadata and its page count."""
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
        for i in range(min(n_pages, MAX_PAGES)):
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
    if chars < 200:
        raise CorpusError(f"no text layer ({n_pages} page{'s' if n_pages != 1 else ''}, {chars} characters of "
                          "text): a scanned PDF? Run OCR first (e.g. ocrmypdf) and ingest the result")
    return analyse(pages, meta, n_pages)


def analyse(pages: list[Page], meta: dict[str, str], n_pages: int) -> Parsed:
    body = _body_size(pages)
    furniture = _furniture(pages, body)
    two_columns: dict[int, bool] = {}
    for p in pages:
        p.lines = [ln for ln in p.lines if ln.text.strip()]
        g = _gutter([ln for ln in p.lines if id(ln) not in furniture], p.width, body)
        _columns(p, g)
        two_columns[p.number] = g is not None
    first = pages[0]
    # The title: the largest type in the top part of the first page.
    top_lines = [ln for ln in first.lines if id(ln) not in furniture and ln.baseline < 0.5 * first.height
                 and re.search(r"[^\W\d_]{2}", ln.text)]
    title_lines: list[Line] = []
    if top_lines:
        big = max(ln.size for ln in top_lines)
        if big >= 1.15 * body:
            for ln in sorted(top_lines, key=lambda ln: ln.baseline):
                if ln.size >= big - 0.5:
                    if title_lines and ln.baseline - title_lines[-1].baseline > 2.0 * big:
                        break
                    title_lines.append(ln)
                elif title_lines and ln.size < big - 0.5:
                    break
    title_end = max((ln.baseline for ln in title_lines), default=-1.0)
    # The head of the first page runs down to the abstract heading (or the first line of body text).
    abstract_heading = next((ln for ln in sorted(first.lines, key=lambda ln: ln.baseline)
                             if ln.baseline > title_end and _is_abstract_heading(ln, body)), None)
    if abstract_heading is not None:
        head_end = abstract_heading.baseline - 0.3 * abstract_heading.size
    else:
        body_lines = [ln for ln in first.lines if ln.baseline > title_end and _bodyish(ln, body)
                      and ln.chars >= 40 and id(ln) not in furniture]
        head_end = min((ln.baseline for ln in body_lines), default=title_end) - 0.3 * body
    # Above the abstract, a two-column page's column text below the last full-width line of the head is the
    # columns' (the right column may start above the abstract heading of the left one).
    above = [ln for ln in first.lines if ln.baseline < head_end and id(ln) not in furniture]
    head_ids = {id(ln) for ln in above}
    for col in (1, 2):
        # a column's text above the head's end (the right column may start above the left one's abstract
        # heading): two or more lines of body type, set line after line, each holding a phrase
        chain: list[Line] = []
        for ln in sorted((ln for ln in above if ln.column == col), key=lambda ln: ln.baseline) + [None]:
            if ln is not None and _bodyish(ln, body) and ln.chars >= 30 and (
                    not chain or ln.baseline - chain[-1].baseline <= 1.75 * max(ln.size, chain[-1].size)):
                chain.append(ln)
                continue
            if len(chain) >= 2:
                head_ids.difference_update(id(x) for x in chain)
            chain = [ln] if ln is not None and _bodyish(ln, body) and ln.chars >= 30 else []
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
    widths: dict[tuple[int, int], tuple[float, float]] = {}
    for p in pages:
        for col, w in _column_width([ln for ln in p.lines if id(ln) not in furniture], body).items():
            widths[(p.number, col)] = w
    blocks = _blocks(_split_run_in(rest, body), body)
    heights = {p.number: p.height for p in pages}
    section = ""
    in_abstract = False
    in_references = False
    run_in_label: Block | None = None
    abstract_style: tuple[float, float] | None = None
    # The last body block and its section, and the unnumbered heading seen since (see below).
    last_body: Block | None = None
    label_heading = False
    for b in blocks:
        first_text = line_text(b.lines[0])
        if not in_abstract and section == "" and _is_abstract_heading(b.lines[0], body) and abstract_style is None:
            in_abstract, section = True, "Abstract"
            rest_text = _ABSTRACT_RE.sub("", first_text, count=1)
            if rest_text or len(b.lines) > 1:
                b.kind = "abstract"
                run_in_label = b  # "Abstract—Speech enhancement ...": the label is not the abstract's text
                abstract_style = (b.lines[-1].size, b.lines[-1].x1 - b.lines[-1].x0)
            else:
                b.kind = "heading"
            b.section = section
            continue
        kind = _kind(b, body, widths, heights[b.page])
        if _KEYWORDS_RE.match(first_text) and not in_references:
            # "Index Terms—speech enhancement, ..." set bold throughout (IEEE) reads like a heading: it is not one
            in_abstract, b.kind, b.section, section = False, "keywords", "", ""
            continue
        if kind == "heading":
            heading = clean_field(" ".join(line_text(ln) for ln in b.lines))
            in_abstract = False
            if _END_SECTIONS_RE.match(heading):
                in_references = True
            elif in_references and not (_NUMBERED_RE.match(heading) or b.lines[0].size >= 1.1 * body):
                b.kind, b.section = "reference", section  # a bold line inside the reference list
                continue
            else:
                in_references = False
            section = heading
            label_heading = not _NUMBERED_RE.match(heading)
            b.kind, b.section = "heading", section
            continue
        if in_abstract and kind in ("footnote", "small", "figure", "caption", "table", "equation"):
            b.kind, b.section = kind, ""  # a footnote or figure beside the abstract does not end it
            continue
        if in_abstract:
            size = sorted(ln.size for ln in b.lines)[len(b.lines) // 2]
            run_in = _RUN_IN_RE.match(first_text) and (b.lines[0].words[0].bold or b.lines[0].words[0].italic)
            if abstract_style is None:
                abstract_style = (size, 0.0)
            if run_in:
                in_abstract, b.kind, b.section = False, "keywords", ""  # "Keywords:", "Index Terms—"
                section = ""
                continue
            if abs(size - abstract_style[0]) > 0.08 * abstract_style[0] or kind not in ("body",):
                in_abstract = kind == "body" and not run_in and abs(size - abstract_style[0]) <= 0.08 * size
                if not in_abstract:
                    section = section if section != "Abstract" else ""
                    b.kind, b.section = ("body" if kind == "body" else kind), section
                    continue
            b.kind, b.section = "abstract", "Abstract"
            continue
        if kind == "body" and not in_references and label_heading and last_body is not None \
                and first_text[:1].islower() and not line_text(last_body.lines[-1]).rstrip().endswith((".", "?", "!", ":")):
            # A section never opens mid-sentence: the unnumbered bold lines since the last body block were the
            # column heads of a table or figure ("Negative samples from"), and this block goes on with the
            # sentence the last one left open, in its section.
            section = last_body.section
        b.kind = "reference" if in_references and kind in ("body", "figure", "small", "footnote") else kind
        b.section = section
        if kind == "body" and not in_references:
            last_body, label_heading = b, False
    # Text of each block; a word hyphenated across two blocks (column or page break) is completed in the first.
    texts = [_join([line_text(ln) for ln in b.lines], vocab=vocab) for b in blocks]
    if run_in_label is not None:
        i = next(j for j, b in enumerate(blocks) if b is run_in_label)
        texts[i] = _ABSTRACT_RE.sub("", texts[i], count=1)
    keep = ("abstract", "body")
    for i, b in enumerate(blocks):
        if b.kind not in keep or not texts[i].endswith("-"):
            continue
        nxt = next((j for j in range(i + 1, len(blocks)) if blocks[j].kind in keep), None)
        if nxt is None or not texts[nxt][:1].islower():
            continue
        joined = _join([texts[i], texts[nxt]], vocab=vocab)
        head_part = texts[i][:-1] if not joined.startswith(texts[i]) else texts[i]
        word = re.match(r"\S+", texts[nxt]).group(0)
        texts[i] = (joined[:len(head_part)] + word) if joined.startswith(head_part) else texts[i]
        texts[nxt] = texts[nxt][len(word):].lstrip()
    # Captions and footnotes are prose, quoted as printed: each page's come after its body text (so they never
    # cut a sentence running from one column into the next), a caption as its own section ("Figure 5").
    for b, text in zip(blocks, texts):
        if b.kind == "caption":
            m = _CAPTION_RE.match(text)
            b.section = re.sub(r"\s+", " ", m.group(0)).rstrip(".:| ") if m else "Caption"
    aside = ("caption", "footnote")
    order = sorted(range(len(blocks)), key=lambda i: (blocks[i].page, blocks[i].kind in aside, i))
    blocks, texts = [blocks[i] for i in order], [texts[i] for i in order]
    keep = ("abstract", "body", "caption", "footnote")
    sections: list[tuple[int, str, str]] = []
    paragraphs: list[tuple[int, str, str]] = []
    for b, text in zip(blocks, texts):
        if b.kind not in keep or not text.strip():
            continue
        if b.kind in ("body", "footnote", "caption") and (len(text.split()) < 3 or _letters(text) < 0.6):
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
    abstract = " ".join(t for _p, h, t in sections if h == "Abstract")
    if not abstract:
        abstract = next((t for _p, h, t in sections if t), "")
    # Metadata printed on the first page, and what the PDF's Info dictionary says where it is sound.
    first_text = " ".join(line_text(ln) for ln in first.lines)
    page1_small = [line_text(ln) for ln in first.lines if id(ln) in furniture or ln.size < 0.95 * body]
    venue_line = next((t for t in page1_small if _VENUE_RE.search(t) and year_of(t)), "")
    venue = re.split(r",\s*pages?\s+\d|\s*©", venue_line)[0].strip() if venue_line else ""
    stamp = first.sideways
    arxiv = arxiv_of(stamp, first_text)
    meta_title = clean_field(meta.get("Title"))
    if not title and _sound_title(meta_title):
        title = meta_title
    if not authors and meta.get("Author"):
        authors = [n for n in (s.strip() for s in re.split(r"\s*(?:;|,|\band\b)\s*", clean_field(meta["Author"])))
                   if _name_like(n)]
    year = year_of(stamp if arxiv_of(stamp) else "", venue_line,
                   *re.findall(r"(?:©|\(c\)|copyright)\s*(\d{4})", first_text, re.I)[:1])
    return Parsed(title=title, authors=authors, abstract=abstract, stamp=stamp, sections=sections,
                  paragraphs=paragraphs, pages=n_pages,
                  venue=venue, year=year, doi=doi_of(first_text, meta.get("Subject", ""), meta.get("Keywords", "")),
                  arxiv=arxiv, unmapped=sum(p.unmapped for p in pages),
                  blocks=[(b.page, b.kind, b.section, t) for b, t in zip(blocks, texts)])


_SENTENCE_END_RE = re.compile(r"[.!?:][\"”’)\]]*\s*$")


def _sound_title(title: str) -> bool:
    """An Info title that names the paper, not the file it was made from."""
    return bool(title) and len(title) >= 8 and not re.search(
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
    parsed = parse_pdf(path)
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
