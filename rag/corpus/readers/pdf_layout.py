"""A PDF page as positioned words and lines, from PDFium (pypdfium2).

PDFium gives every character its code point, box, baseline origin, font size, font and flags, marks the spaces
and line breaks it inferred (`IsGenerated`), soft hyphens it recognised at line ends (`IsHyphen`) and glyphs
whose font has no Unicode mapping (`HasUnicodeMapError`). pypdfium2 exposes these calls but no lines or blocks
with their fonts, so grouping characters into words and lines is done here (pdftext does it on top of
pypdfium2 too, but pins an older pypdfium2 than pdfplumber's, and its lines split sub- and superscripts off
their line): words are PDFium's own (split at the spaces it reports), lines are words whose vertical extent,
taken from baseline and font size, overlaps, so a footnote mark or a subscript stays on its line.
"""

from __future__ import annotations

import ctypes
import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rag.corpus.readers.pdf_params import PARAMS as P

# Fonts TeX and word processors draw mathematics with: their glyphs are symbols, not prose.
_MATH_FONT_RE = re.compile(r"^(?:[A-Z]{6}\+)?(?:CMMI|CMSY|CMEX|CMBSY|MSAM|MSBM|EUFM|EUSM|RSFS|LMMath|Symbol|"
                           r"STIXMath|CambriaMath|Cambria-Math|TeXGyre\w*Math|\w*Math\b|txsy|txex|pxsy|pxex|"
                           r"rtxmi|ntxmi|ntxsy|zxlmi|MTMI|MTSY|MTEX|esint|wasy|stmary)", re.IGNORECASE)
# Weight and flags in font descriptors are unreliable (TeX's SFRM fonts claim weight 744), so bold and italic
# come from the font's name (TeX names: CMBX/SFBX bold extended, CMTI/SFTI text italic) and the ForceBold flag.
_BOLD_FONT_RE = re.compile(r"bold|black|heavy|semibold|demi|-Medi|Medium|[CS][FM]BX|LMRoman\d+-Bold|CMB\d|"
                           r"\bBd\b|-B$|,Bold", re.IGNORECASE)
_ITALIC_FONT_RE = re.compile(r"italic|oblique|-It\b|Ital|[CS][FM]TI\d|[CS][FM]SL\d|\bIt$|-Slant",
                             re.IGNORECASE)


@dataclass
class Word:
    """Characters PDFium reads as one word (no space between them), with their font."""

    text: str
    x0: float
    x1: float
    baseline: float  # distance from the page's top edge
    size: float
    font: str
    bold: bool
    italic: bool
    math: float  # share of its characters set in a mathematics font
    hyphen: bool = False  # ends in a hyphen PDFium marked as a soft line-end hyphen
    xs: list[float] = field(default_factory=list)  # each character's horizontal centre

    @property
    def top(self) -> float:
        return self.baseline - P.ascent * self.size

    @property
    def bottom(self) -> float:
        return self.baseline + P.descent * self.size


@dataclass
class Line:
    """Words on one baseline (sub- and superscripts included), left to right, within one run of text: a line
    is cut where the gap between two words is wider than a column gutter could be within running text.
    Its words do not change once it is made, so what is derived from them is computed once."""

    words: list[Word]
    page: int
    kind: str = ""          # set by the reader: title, author, heading, body, caption, ...
    column: int = 0         # 0 full width / single column, 1 left, 2 right
    meta: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def x0(self) -> float:
        return min(w.x0 for w in self.words)

    @cached_property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)

    @cached_property
    def size(self) -> float:
        """The line's type size: the size most of its characters are set in (marks and subscripts are not)."""
        weight: dict[float, int] = {}
        for w in self.words:
            weight[round(w.size, 1)] = weight.get(round(w.size, 1), 0) + len(w.text)
        return max(weight, key=lambda s: (weight[s], s))

    @cached_property
    def baseline(self) -> float:
        main = [w for w in self.words if abs(w.size - self.size) < P.same_size_pt] or self.words
        return sorted(w.baseline for w in main)[len(main) // 2]

    @cached_property
    def top(self) -> float:
        return self.baseline - P.ascent * self.size

    @cached_property
    def bottom(self) -> float:
        return self.baseline + P.descent * self.size

    def main_words(self) -> list[Word]:
        """Words in the line's own size: footnote marks, sub- and superscripts left out."""
        return [w for w in self.words
                if w.size >= self.size * P.script_size or abs(w.baseline - self.baseline) < P.on_baseline * self.size]

    @cached_property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @cached_property
    def chars(self) -> int:
        return sum(len(w.text) for w in self.words)

    @cached_property
    def bold(self) -> bool:
        words = self.main_words()
        return sum(len(w.text) for w in words if w.bold) >= P.style_share * max(1, sum(len(w.text) for w in words))

    @cached_property
    def italic(self) -> bool:
        words = self.main_words()
        return sum(len(w.text) for w in words if w.italic) >= P.style_share * max(1, sum(len(w.text) for w in words))

    @cached_property
    def math(self) -> float:
        return sum(w.math * len(w.text) for w in self.words) / max(1, self.chars)

    @cached_property
    def font(self) -> str:
        weight: dict[str, int] = {}
        for w in self.main_words():
            weight[w.font] = weight.get(w.font, 0) + len(w.text)
        return max(weight, key=lambda f: weight[f]) if weight else ""


@dataclass
class Page:
    number: int
    width: float
    height: float
    lines: list[Line]
    sideways: str  # text set at an angle (arXiv's margin stamp), in reading order
    unmapped: int  # glyphs without a Unicode mapping (dropped)


# Font descriptor flags (PDF 32000-1:2008, table 123): bit 19 ForceBold, bit 7 Italic.
_FORCE_BOLD = 1 << 18
_ITALIC = 1 << 6
# A character as read_page collects it: (text, x0, x1, baseline, size, font name, bold, italic, soft hyphen).
_Char = tuple[str, float, float, float, float, str, bool, bool, bool]


def _word_of(chars: list[_Char]) -> Word:
    """The word of consecutive characters: its font is the one most of them are set in."""
    text = "".join(c[0] for c in chars)
    sizes = sorted(c[4] for c in chars)
    fonts_of: dict[str, int] = {}
    for c in chars:
        fonts_of[c[5]] = fonts_of.get(c[5], 0) + 1
    font = max(fonts_of, key=lambda f: fonts_of[f])
    main = [c for c in chars if c[5] == font]
    return Word(text=text, x0=min(c[1] for c in chars), x1=max(c[2] for c in chars),
                baseline=sorted(c[3] for c in chars)[len(chars) // 2], size=sizes[len(sizes) // 2],
                font=font, bold=main[0][6], italic=main[0][7],
                math=sum(1 for c in chars if _MATH_FONT_RE.match(c[5])) / len(chars),
                hyphen=chars[-1][8], xs=[(c[1] + c[2]) / 2 for c in chars])


def _starts_word(prev: _Char, x0: float, baseline: float, size: float) -> bool:
    """A new word where PDFium's order jumps back or to another baseline without a space, leaves a gap, or
    changes size (a footnote mark or an index)."""
    larger = max(size, prev[4])
    return x0 < prev[1] - P.word_jump_back * size or abs(baseline - prev[3]) > P.word_baseline_jump * larger \
        or x0 - prev[2] > P.word_gap * larger or abs(size - prev[4]) > P.word_size_change * larger


def _font_name(font: Any, cache: dict[int, tuple[str, bool, bool]]) -> tuple[str, bool, bool]:
    """(base font name, bold, italic) of a PDFium font handle."""
    import pypdfium2.raw as pdfium_c

    key = ctypes.cast(font, ctypes.c_void_p).value or 0
    if key in cache:
        return cache[key]
    n = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0)
    buf = ctypes.create_string_buffer(max(1, n))
    pdfium_c.FPDFFont_GetBaseFontName(font, buf, n)
    name = buf.value.decode("utf-8", "replace")
    flags = pdfium_c.FPDFFont_GetFlags(font)
    bold = bool(_BOLD_FONT_RE.search(name)) or bool(flags & _FORCE_BOLD)
    italic = bool(_ITALIC_FONT_RE.search(name)) or bool(flags & _ITALIC)
    cache[key] = (name, bold, italic)
    return cache[key]


def read_page(page: Any, number: int, fonts: dict[int, tuple[str, bool, bool]]) -> Page:
    """One page's words grouped into lines (not yet in reading order)."""
    import pypdfium2.raw as pdfium_c

    left, bottom, right, top = page.get_bbox()
    width, height = right - left, top - bottom
    textpage = page.get_textpage()
    tp = textpage.raw
    n = pdfium_c.FPDFText_CountChars(tp)
    ox, oy = ctypes.c_double(), ctypes.c_double()
    rect = pdfium_c.FS_RECTF()
    matrix = pdfium_c.FS_MATRIX()
    words: list[Word] = []
    sideways: list[tuple[float, float, str]] = []
    unmapped = 0
    accents: list[tuple[float, float, str]] = []  # (x centre, baseline, combining mark)
    cur: list[_Char] = []

    def flush() -> None:
        if cur:
            words.append(_word_of(cur))
            cur.clear()

    for i in range(n):
        code = pdfium_c.FPDFText_GetUnicode(tp, i)
        ch = chr(code) if 0 < code < 0x110000 else ""
        hyphen = pdfium_c.FPDFText_IsHyphen(tp, i) == 1  # a line-end hyphen (PDFium gives it code 2 or U+FFFE)
        if hyphen:
            ch = "-"
        elif pdfium_c.FPDFText_IsGenerated(tp, i) == 1 or ch.isspace() or not ch:
            flush()
            continue
        if pdfium_c.FPDFText_HasUnicodeMapError(tp, i) == 1 or unicodedata.category(ch) in ("Co", "Cn", "Cs", "Cc"):
            unmapped += 1  # a glyph without a Unicode value: its code point would be a wrong character
            flush()
            continue
        pdfium_c.FPDFText_GetCharOrigin(tp, i, ox, oy)
        pdfium_c.FPDFText_GetLooseCharBox(tp, i, rect)
        size = pdfium_c.FPDFText_GetFontSize(tp, i)
        pdfium_c.FPDFText_GetMatrix(tp, i, matrix)  # text drawn through a scaling matrix: the size as seen
        scale = abs(matrix.a * matrix.d - matrix.b * matrix.c)
        if scale > 0:
            size *= math.sqrt(scale)
        angle = pdfium_c.FPDFText_GetCharAngle(tp, i)
        if angle > P.sideways_angle and abs(angle - 2 * math.pi) > P.sideways_angle:
            flush()
            sideways.append((ox.value, oy.value, ch))
            continue
        obj = pdfium_c.FPDFText_GetTextObject(tp, i)
        name, bold, italic = _font_name(pdfium_c.FPDFTextObj_GetFont(obj), fonts) if obj else ("", False, False)
        baseline = top - oy.value
        x0, x1 = rect.left - left, rect.right - left
        mark = _combining(ch)
        if mark:
            # TeX draws an accent as a glyph of its own over the letter ("Trzcin´ski"): it goes back on the
            # letter it stands over once the words are known (the word goes on: the accent is no break)
            accents.append(((x0 + x1) / 2, baseline, mark))
            continue
        if cur and _starts_word(cur[-1], x0, baseline, size):
            flush()
        if size <= 0:
            size = max(1.0, rect.top - rect.bottom)
        cur.append((ch, x0, max(x1, x0), baseline, size, name, bold, italic, hyphen))
    flush()
    textpage.close()
    for x, baseline, mark in accents:
        _attach(words, x, baseline, mark)
    stamp = "".join(c for _x, _y, c in sideways)  # in the order it was written
    return Page(number=number, width=width, height=height, lines=group_lines(words, number), sideways=stamp,
                unmapped=unmapped)


def _combining(ch: str) -> str:
    """The combining mark of a spacing accent ("´" -> U+0301), or ""."""
    if unicodedata.category(ch) != "Sk":
        return ""
    parts = unicodedata.normalize("NFKD", ch)
    return parts[1] if len(parts) == 2 and parts[0] == " " and unicodedata.category(parts[1]) == "Mn" else ""


def _attach(words: list[Word], x: float, baseline: float, mark: str) -> None:
    """Put an accent drawn on its own after the letter under it (nearest character centre on that line)."""
    best: tuple[float, Word, int] | None = None
    for w in words:
        if abs(w.baseline - baseline) > P.accent_reach * w.size or not (w.x0 - w.size < x < w.x1 + w.size):
            continue
        for i, cx in enumerate(w.xs):
            d = abs(cx - x)
            if d <= P.accent_reach * w.size and (best is None or d < best[0]):
                best = (d, w, i)
    if best is None:
        return
    _, w, i = best
    w.text = unicodedata.normalize("NFC", w.text[:i + 1] + mark + w.text[i + 1:])
    w.xs = w.xs[:i + 1] + w.xs[i + 1:]  # NFC composed the pair into the letter's one character
    if len(w.xs) != len(w.text):
        w.xs = (w.xs + [w.xs[-1]] * len(w.text))[:len(w.text)]


def group_lines(words: list[Word], page: int) -> list[Line]:
    """Words -> lines: a word joins the line whose vertical extent (from baseline and size) it overlaps by half
    its own height, and that it does not overlap horizontally; lines are then cut at wide gaps."""
    rows: list[list[Word]] = []
    extents: list[tuple[float, float]] = []
    for w in sorted(words, key=lambda w: (w.baseline, w.x0)):
        h = w.bottom - w.top
        best, best_overlap = -1, 0.0
        for j in range(len(rows) - 1, max(-1, len(rows) - P.row_lookback), -1):  # only the last rows are reached
            top, bottom = extents[j]
            overlap = min(bottom, w.bottom) - max(top, w.top)
            if overlap >= P.row_overlap * min(h, bottom - top) and overlap > best_overlap \
                    and not any(min(o.x1, w.x1) - max(o.x0, w.x0)
                                > P.cell_overlap * min(o.x1 - o.x0, w.x1 - w.x0, P.cell_overlap_pt)
                                for o in rows[j]):
                best, best_overlap = j, overlap
        if best < 0:
            rows.append([w])
            extents.append((w.top, w.bottom))
        else:
            rows[best].append(w)
            if w.size >= P.script_size * max(o.size for o in rows[best]):
                extents[best] = (min(extents[best][0], w.top), max(extents[best][1], w.bottom))
    for row in rows:
        row.sort(key=lambda w: w.x0)
    gutter = _gutter_x(rows)
    lines: list[Line] = []
    for row in rows:
        run = [row[0]]
        for w in row[1:]:
            size = max(min(w.size, run[-1].size), 1.0)
            gap = w.x0 - run[-1].x1
            # wider than any word space of justified text, or a narrower strip that is empty on most rows of
            # the page: a column gutter (LaTeX's default \columnsep is 10pt, under 1.2 x a 10pt font)
            if gap > P.word_space_max * size or gutter is not None and gap > P.gutter_gap * size \
                    and run[-1].x1 <= gutter <= w.x0:
                lines.append(Line(run, page))
                run = []
            run.append(w)
        lines.append(Line(run, page))
    return lines


def _gutter_x(rows: list[list[Word]]) -> float | None:
    """The x of a vertical strip in the page's middle that no word crosses on most rows that have prose on both
    sides of it, or None. A word space falls at a given x on a few rows of a single-column page, never on most;
    a gutter is empty on every row of the two columns, crossed only by full-width titles, captions and tables."""
    if len(rows) < P.gutter_rows:
        return None
    x0 = min(w.x0 for r in rows for w in r)
    x1 = max(w.x1 for r in rows for w in r)
    best: tuple[int, float] | None = None
    run: list[float] = []
    for i in range(int(P.gutter_from * (x1 - x0)), int(P.gutter_to * (x1 - x0)) + 1):
        x = x0 + i
        empty = crossed = 0
        for r in rows:
            if r[0].x0 >= x or r[-1].x1 <= x:
                continue  # text on one side only
            if any(w.x0 < x < w.x1 for w in r):
                crossed += 1
            elif sum(w.x1 <= x for w in r) >= P.gutter_row_words and sum(w.x0 >= x for w in r) >= P.gutter_row_words:
                empty += 1  # prose on both sides, not a table's cells
        if empty >= P.gutter_rows and empty >= P.gutter_empty_ratio * crossed:
            run.append(x)
            if best is None or empty > best[0]:
                best = (empty, x)
        elif run and best is not None and best[1] in run:
            break
    if best is None:
        return None
    # the middle of the widest empty strip around the best x
    strip = [x for x in run if abs(x - best[1]) <= len(run)]
    return (min(strip) + max(strip)) / 2
