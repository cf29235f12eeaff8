"""The PDF reader's layout rules on small hand-made pages: words, lines and pages built in code, no PDF.

Each rule of rag/corpus/readers/pdf.py and pdf_layout.py is checked on its own: a page of a few lines, a row of
a few words. Sizes are in points; a body size of 10 and a US Letter page (612 x 792) unless a case says
otherwise. These run in milliseconds; the PDFs themselves are read in test_pdf.py and test_real_pdfs.py.
"""

from __future__ import annotations

import pytest

from rag.corpus.readers import pdf
from rag.corpus.readers.pdf import Block
from rag.corpus.readers.pdf_layout import (
    Line,
    Page,
    Word,
    _attach,
    _combining,
    _gutter_x,
    _starts_word,
    _word_of,
    group_lines,
)
from rag.corpus.readers.pdf_params import PARAMS, PdfParams

BODY = 10.0
PROSE = "the model learns a representation of the data and we report the results here"


def word(text: str, x0: float, baseline: float = 100.0, size: float = BODY, *,  # noqa: PLR0913 - keywords of a builder
         x1: float | None = None, font: str = "Times-Roman", bold: bool = False, italic: bool = False,
         math: float = 0.0) -> Word:
    """A word half an em wide per character unless x1 is given; xs at each character's centre."""
    x1 = x0 + 0.5 * size * len(text) if x1 is None else x1
    step = (x1 - x0) / max(1, len(text))
    return Word(text=text, x0=x0, x1=x1, baseline=baseline, size=size, font=font, bold=bold, italic=italic,
                math=math, xs=[x0 + step * (i + 0.5) for i in range(len(text))])


def line(text: str, x0: float = 50.0, x1: float | None = None,  # noqa: PLR0913 - keywords of a builder
         baseline: float = 100.0, size: float = BODY, *, page: int = 1, column: int = 0, bold: bool = False,
         italic: bool = False, math: float = 0.0, font: str = "Times-Roman") -> Line:
    """A line of the text's words from x0 to x1 (by default half an em per character, spaces a quarter em)."""
    tokens = text.split()
    gap = 0.25 * size
    chars = sum(len(t) for t in tokens)
    if x1 is None:
        x1 = x0 + 0.5 * size * chars + gap * (len(tokens) - 1)
    per_char = (x1 - x0 - gap * (len(tokens) - 1)) / chars
    words, x = [], x0
    for t in tokens:
        words.append(word(t, x, baseline, size, x1=x + per_char * len(t), font=font, bold=bold, italic=italic,
                          math=math))
        x += per_char * len(t) + gap
    return Line(words, page, column=column)


def page(lines: list[Line], number: int = 1, width: float = 612.0, height: float = 792.0) -> Page:
    for ln in lines:
        ln.page = number
    return Page(number=number, width=width, height=height, lines=lines, sideways="", unmapped=0)


def two_columns(n: int = 10, top: float = 100.0, left: tuple[float, float] = (50.0, 290.0),
                right: tuple[float, float] = (310.0, 550.0)) -> list[Line]:
    """n lines of body text in each of two columns, 12pt apart."""
    return [line(PROSE, *side, baseline=top + 12 * i) for side in (left, right) for i in range(n)]


# ------------------------------------------------------------------------------------------ parameters


def test_parameters_are_one_frozen_object_the_readers_use() -> None:
    assert pdf.P is PARAMS
    with pytest.raises(AttributeError):
        PARAMS.line_gap = 2.0  # type: ignore[misc]
    assert PdfParams() == PARAMS  # the defaults are the parameters in force


# ------------------------------------------------------------------------------------- characters, words


@pytest.mark.parametrize(("x0", "baseline", "size", "new_word"), [
    (15.5, 100.0, 10.0, False),  # the next letter, a hair after the last
    (18.0, 100.0, 10.0, True),   # a gap wider than a quarter em: a space PDFium did not report
    (4.0, 100.0, 10.0, True),    # the order jumps back (a new column or line)
    (15.5, 106.0, 10.0, True),   # another baseline
    (15.5, 100.0, 7.0, True),    # another size: a footnote mark or an index
    (15.5, 102.0, 9.0, False),   # within half a size down and 15% in size
])
def test_a_word_breaks_where_characters_jump_gap_or_change_size(x0: float, baseline: float, size: float,
                                                               new_word: bool) -> None:
    prev = ("a", 10.0, 15.0, 100.0, 10.0, "Times", False, False, False)
    assert _starts_word(prev, x0, baseline, size) is new_word


def test_a_word_takes_the_font_most_of_its_characters_are_set_in() -> None:
    chars = [("x", 0.0, 5.0, 100.0, 10.0, "CMMI10", False, True, False),
             ("y", 5.0, 10.0, 100.0, 10.0, "CMR10", False, False, False),
             ("z", 10.0, 15.0, 101.0, 10.0, "CMR10", False, False, True)]
    w = _word_of(chars)
    assert (w.text, w.x0, w.x1, w.baseline, w.size, w.font, w.italic, w.hyphen) == \
        ("xyz", 0.0, 15.0, 100.0, 10.0, "CMR10", False, True)
    assert w.math == pytest.approx(1 / 3) and w.xs == [2.5, 7.5, 12.5]


@pytest.mark.parametrize(("ch", "mark"), [("\u00b4", "\u0301"), ("\u00a8", "\u0308"), ("a", ""), ("^", ""),
                                          ("\u02c6", "")])
def test_a_spacing_accent_is_known_by_its_combining_mark(ch: str, mark: str) -> None:
    assert _combining(ch) == mark


@pytest.mark.parametrize(("x", "baseline", "text"), [
    (12.0, 100.0, "sé"),   # over the second letter
    (8.0, 100.0, "śe"),    # over the first
    (8.0, 120.0, "se"),    # another line: left alone
    (40.0, 100.0, "se"),   # far to the right of the word: left alone
])
def test_an_accent_drawn_on_its_own_goes_on_the_letter_under_it(x: float, baseline: float, text: str) -> None:
    w = word("se", 5.0, x1=15.0)  # letters centred at 7.5 and 12.5
    _attach([w], x, baseline, "\u0301")
    assert w.text == text and len(w.xs) == len(w.text)


# ------------------------------------------------------------------------------------------- lines


def _texts(lines: list[Line]) -> list[str]:
    return [ln.text for ln in lines]


@pytest.mark.parametrize(("words", "lines"), [
    # one line; a word on the next baseline is the next line
    ([word("Deep", 50), word("nets", 72), word("learn", 50, baseline=112)], ["Deep nets", "learn"]),
    # a gap wider than 1.2 x the size cuts the line (two columns, no gutter found on one row)
    ([word("left", 50), word("right", 90)], ["left", "right"]),
    # a subscript, smaller and lower, stays on its line
    ([word("x", 50), word("2", 55.5, baseline=102, size=7), word("grows", 63)], ["x 2 grows"]),
    # words overlapping across are not one line (lines set close together)
    ([word("upper", 50), word("lower", 52, baseline=106)], ["upper", "lower"]),
])
def test_words_are_grouped_into_lines(words: list[Word], lines: list[str]) -> None:
    assert _texts(group_lines(words, 1)) == lines


def _rows(n_rows: int, per_side: int) -> list[list[Word]]:
    """Rows of words 50pt wide, 10pt apart, `per_side` of them each side of an empty strip from 280 to 320."""
    rows = []
    for r in range(n_rows):
        left = [word("aaaa", 230 - 60 * k, 100 + 12 * r, x1=280 - 60 * k) for k in reversed(range(per_side))]
        right = [word("bbbb", 320 + 60 * k, 100 + 12 * r, x1=370 + 60 * k) for k in range(per_side)]
        rows.append(left + right)
    return rows


@pytest.mark.parametrize(("rows", "gutter"), [
    (_rows(5, 4), 300.0),  # an empty strip between 280 and 320 on every row of prose: its middle
    (_rows(3, 4), None),   # too few rows to tell a gutter from a word space
    (_rows(6, 3), None),   # three words a side: a table's cells, not prose
    ([], None),
])
def test_a_gutter_is_a_strip_in_the_middle_empty_on_most_rows_of_prose(rows: list[list[Word]],
                                                                       gutter: float | None) -> None:
    assert _gutter_x(rows) == gutter


def test_a_line_reads_its_size_baseline_style_and_main_words() -> None:
    ln = Line([word("Results", 50, bold=True), word("*", 86, baseline=96, size=6), word("are", 90, bold=True),
               word("good", 110)], 1)
    assert (ln.size, ln.baseline, ln.x0, ln.x1) == (10.0, 100.0, 50.0, 130.0)
    assert [w.text for w in ln.main_words()] == ["Results", "are", "good"]  # the mark is not
    assert ln.bold and not ln.italic  # 10 of 14 main characters are bold
    assert (ln.top, ln.bottom) == (92.5, 102.5)


# ------------------------------------------------------------------------------------------ text of a line


@pytest.mark.parametrize(("words", "text"), [
    ([word("Fischer", 50), word("1", 85.5, baseline=96, size=6)], "Fischer"),  # a footnote mark is dropped
    ([word("33", 50), word("rd", 60.2, baseline=96, size=6)], "33rd"),         # an ordinal after a number
    ([word("10", 50), word("4", 60.2, baseline=96, size=6)], "10^4"),          # a power
    ([word("β", 50), word("2", 55.5, baseline=102, size=7)], "β2"),            # a subscript joins its word
    ([word("L", 50, size=10), word("ARGE", 55.2, size=8)], "LARGE"),           # small capitals
    ([word("*", 50, baseline=96, size=6), word("Equal", 54), word("work", 82)], "Equal work"),  # opening mark
    ([word("e\ufb03cient", 50)], "efficient"),                                 # a ligature unfolded
])
def test_line_text_keeps_scripts_with_their_word_and_drops_marks(words: list[Word], text: str) -> None:
    assert pdf.line_text(Line(words, 1)) == text


def test_line_text_keeps_marks_when_asked() -> None:
    assert pdf.line_text(Line([word("Fischer", 50), word("1", 85.5, baseline=96, size=6)], 1),
                         keep_marks=True) == "Fischer 1"


# ------------------------------------------------------------------------------------------ body type


def test_the_body_size_is_the_size_of_most_characters_to_the_half_point() -> None:
    pages = [page([line(PROSE, size=9.96), line(PROSE, size=10.02), line("Title of it", size=17.2)])]
    assert pdf._body_size(pages) == 10.0
    assert pdf._body_size([page([])]) == PARAMS.default_body_size


@pytest.mark.parametrize(("ln", "bodyish"), [
    (line(PROSE), True),
    (line(PROSE, size=11.4), True),     # within 15% of the body size
    (line(PROSE, size=12.0), False),    # a heading's size
    (line("short line"), False),        # under 15 characters
    (line(PROSE, math=0.5), False),     # mostly mathematics
])
def test_a_line_of_body_type(ln: Line, bodyish: bool) -> None:
    assert pdf._bodyish(ln, BODY) is bodyish


@pytest.mark.parametrize(("text", "letters", "numeric"), [
    ("plain words", 1.0, 0.0),
    ("12.5 13.1 (4) +3%", 0.0, 1.0),
    ("Ours 71.2 65.3", 4 / 12, 2 / 3),
    ("", 0.0, 0.0),
])
def test_shares_of_letters_and_numbers(text: str, letters: float, numeric: float) -> None:
    assert pdf._letters(text) == pytest.approx(letters) and pdf._numeric(text) == pytest.approx(numeric)


# ---------------------------------------------------------------------------------- columns and order


@pytest.mark.parametrize(("lines", "gutter"), [
    (two_columns(), 300.0),  # the empty strip 290-310, with a point of slack each side
    (two_columns() + [line(PROSE, 200, 400, baseline=300 + 12 * i) for i in range(3)], 300.0),  # a few cross
    (two_columns() + [line(PROSE, 200, 400, baseline=300 + 12 * i) for i in range(6)], None),  # too many cross
    ([line(PROSE, 50, 550, baseline=100 + 12 * i) for i in range(20)], None),  # full-width lines: one column
    (two_columns(3), None),  # too few lines to tell
    ([line(PROSE, 50, 290, baseline=100 + 12 * i) for i in range(20)], None),  # text on one side only
])
def test_a_page_has_two_columns_when_its_prose_leaves_a_strip_in_the_middle_empty(
        lines: list[Line], gutter: float | None) -> None:
    assert pdf._gutter(lines, 600.0, BODY) == gutter


@pytest.mark.parametrize(("x0", "x1", "gutter", "column"), [
    (50, 290, 300.0, 1), (310, 550, 300.0, 2), (50, 550, 300.0, 0),
    (50, 305, 300.0, 1),  # within 1% of the page width of the gutter
    (50, 290, None, 0),
])
def test_a_line_is_in_the_column_on_its_side_of_the_gutter(x0: float, x1: float, gutter: float | None,
                                                           column: int) -> None:
    p = page([line(PROSE, x0, x1)], width=600.0)
    pdf._columns(p, gutter)
    assert p.lines[0].column == column


def test_reading_order_is_left_column_then_right_between_full_width_lines() -> None:
    def ln(name: str, baseline: float, column: int) -> Line:
        x0, x1 = {0: (50, 550), 1: (50, 290), 2: (310, 550)}[column]
        return line(name, x0, x1, baseline=baseline, column=column)
    lines = [ln("R2", 110, 2), ln("wide-bottom", 200, 0), ln("L1", 100, 1), ln("R1", 100, 2), ln("wide-top", 50, 0),
             ln("L2", 110, 1)]
    assert _texts(pdf._reading_order(lines, True)) == ["wide-top", "L1", "L2", "R1", "R2", "wide-bottom"]
    assert _texts(pdf._reading_order(lines, False)) == ["wide-top", "L1", "R1", "L2", "R2", "wide-bottom"]
    head = {id(lines[3])}  # R1 is in the first page's head: read first
    assert _texts(pdf._reading_order(lines, True, head)) == ["R1", "wide-top", "L1", "L2", "R2", "wide-bottom"]


def test_a_columns_edges_are_read_past_a_few_indented_or_short_lines() -> None:
    lines = [line(PROSE, 50, 290, baseline=100 + 12 * i, column=1) for i in range(10)]
    lines[0] = line(PROSE, 62, 290, baseline=100, column=1)  # an indented first line
    lines[9] = line(PROSE, 50, 200, baseline=208, column=1)  # a paragraph's short last line
    assert pdf._column_width(lines, BODY) == {1: (50.0, pytest.approx(240.0))}
    assert pdf._column_width(lines[:2], BODY) == {}  # too few lines


# ---------------------------------------------------------------------------------------- furniture


def _paper(n_pages: int, header_size: float = BODY) -> list[Page]:
    pages = []
    for n in range(1, n_pages + 1):
        lines = [line("Journal of Examples, Vol. 3", 50, baseline=40, size=header_size)]
        lines += [line(PROSE, 50, 550, baseline=100 + 12 * i) for i in range(10)]
        lines.append(line(str(n), 300, baseline=760))
        pages.append(page(lines, n))
    return pages


@pytest.mark.parametrize(("n_pages", "header_size", "header", "number"), [
    (3, BODY, True, True),    # repeated at one height on every page: a running head; the last line a page number
    (2, BODY, False, True),   # two pages: a repeat says nothing, the body-size line at the top stays
    (1, 8.0, True, True),     # small type above the text block, near the top edge
    (1, BODY, False, True),
])
def test_running_heads_feet_and_page_numbers_are_furniture(n_pages: int, header_size: float, header: bool,
                                                           number: bool) -> None:
    pages = _paper(n_pages, header_size)
    found = pdf._furniture(pages, BODY)
    for p in pages:
        assert (id(p.lines[0]) in found) is header
        assert (id(p.lines[-1]) in found) is number
        assert not any(id(ln) in found for ln in p.lines[1:-1])  # the body text never is


# -------------------------------------------------------------------------------- headings and blocks


@pytest.mark.parametrize(("ln", "heading"), [
    (line("1 Introduction", size=12, bold=True), True),
    (line("Introduction", size=11.2), False),           # larger, but neither bold, numbered nor much larger
    (line("Introduction", size=12), True),              # much larger (1.15 x and more)
    (line("Introduction", size=12, bold=True), True),
    (line("Related Work", bold=True), True),             # bold, short and capitalised at body size
    (line("3.2 Datasets"), False),                       # numbered at body size, not bold nor in capitals
    (line("1 INTRODUCTION"), True),                      # numbered, in capitals (ICLR)
    (line("2.87 while using fewer", size=11.2), False),  # a number opening a line of text
    (line("This ends a sentence.", size=12, bold=True), False),
    (line("Figure 3: Overview", size=12, bold=True), False),
    (line("a, b, c,", size=12, bold=True), False),
    (line(" ".join(["Word"] * 15), size=12, bold=True), False),  # too many words
    (line("Method Overview", size=12, bold=True, math=0.5), False),
])
def test_a_heading_is_short_and_set_apart_by_size_weight_or_number(ln: Line, heading: bool) -> None:
    assert pdf._heading_like(ln, BODY) is heading


def test_a_bold_run_in_heading_is_split_from_its_paragraph() -> None:
    ln = Line([word("Ablation", 50, bold=True), word("Study", 92, bold=True), word("We", 120), word("remove", 134),
               word("layers", 168)], 1)
    assert _texts(pdf._split_run_in([ln], BODY)) == ["Ablation Study", "We remove layers"]
    theorem = Line([word("Theorem", 50, bold=True), word("1.", 92, bold=True), word("Let", 110), word("x", 128)], 1)
    assert _texts(pdf._split_run_in([theorem], BODY)) == ["Theorem 1. Let x"]  # a statement's label stays
    prev = line("a sentence that goes on", baseline=88)
    assert _texts(pdf._split_run_in([prev, ln], BODY))[1] == ln.text  # inside a sentence: not a heading


@pytest.mark.parametrize(("second", "blocks"), [
    (line(PROSE, baseline=112), 1),                      # the next line of the paragraph
    (line(PROSE, baseline=140), 2),                      # a gap of more than 1.75 x the size
    (line(PROSE, baseline=112, size=8), 2),              # another size
    (line(PROSE, baseline=112, column=2), 2),            # another column
    (line("2 Method", baseline=112, size=12, bold=True), 2),  # a heading
    (line("Figure 2: the model", baseline=112), 2),      # a caption
    (line(PROSE, 400, 700, baseline=112), 2),            # far to the right, not overlapping across
])
def test_lines_make_one_block_while_they_follow_closely_in_one_style(second: Line, blocks: int) -> None:
    assert len(pdf._blocks([line(PROSE, 50, 290), second], BODY)) == blocks


# ------------------------------------------------------------------------------------------ block kinds


def _block(*lines: Line) -> Block:
    return Block(list(lines))


WIDTHS = {(1, 0): (50.0, 240.0)}
FULL = [line(PROSE, 50, 290, baseline=100 + 12 * i) for i in range(3)]


@pytest.mark.parametrize(("block", "kind"), [
    (_block(line("Figure 3: The model at a glance.", 50, 290)), "caption"),
    (_block(Line([word("1", 50, baseline=696, size=5), word("Code", 54, baseline=700, size=8),
                  word("is", 74, baseline=700, size=8), word("public", 84, baseline=700, size=8)], 1)), "footnote"),
    (_block(line("1 Introduction", size=12, bold=True)), "heading"),
    (_block(line("labels in small type here", size=8)), "small"),
    (_block(line("x = y + z over all the things", math=0.5)), "equation"),
    (_block(line("12.5 13.1 14.2 15.0 71.2")), "table"),
    (_block(line("Ours wins 71.2 65.3 60.1 55.0 54.0", 50, 290)), "table"),
    (_block(*FULL), "body"),
    (_block(line("and so the sentence ends here.", 50, 150)), "body"),  # a paragraph's last line, column top
    (_block(line("input image", 150, 200), line("output", 150, 180, baseline=112)), "figure"),
])
def test_a_block_is_told_by_its_type_and_shape(block: Block, kind: str) -> None:
    assert pdf._kind(block, BODY, WIDTHS) == kind


# ----------------------------------------------------------------------------------- the first page


@pytest.mark.parametrize(("name", "like"), [
    ("Hannah Fischer", True), ("Juan Carlos de la Cruz", True), ("Ana Maria Juan Carlos de la Cruz", False),
    ("Hannah", False), ("University of Somewhere 2", False), ("hannah fischer", False),
    ("Hannah Fischer@example", False), ("Ada Supercalifragilisticexpialidocious", False),
])
def test_a_name_is_a_few_capitalised_words(name: str, like: bool) -> None:
    assert pdf._name_like(name) is like


def test_names_are_cut_at_commas_and_marks_and_emails_dropped() -> None:
    ln = Line([word("Ana", 50), word("Silva", 70), word("1", 96, baseline=96, size=6), word("Bruno", 104),
               word("Costa,", 134), word("Chen", 170), word("Wei", 196), word("and", 216), word("Li", 236),
               word("Na", 250), word("ana@x.org", 270)], 1)
    assert pdf._names_of(ln, ("Times-Roman", 10.0)) == ["Ana Silva", "Bruno Costa", "Chen Wei", "Li Na"]


def test_authors_are_the_rows_in_one_style_under_the_title() -> None:
    names = [line("Ana Silva, Bruno Costa", 100, baseline=150, size=11, font="Sans"),
             line("Chen Wei", 100, baseline=164, size=11, font="Sans")]
    affiliation = [line("University of Example", 100, baseline=178, size=9, font="Serif-Italic"),
                   line("Sofia Rossi", 400, baseline=192, size=11, font="Sans")]  # an affiliation's head, in style
    rows = pdf._rows(names + affiliation)
    assert [len(r) for r in rows] == [1, 1, 1, 1]
    assert pdf._authors(rows) == ["Ana Silva", "Bruno Costa", "Chen Wei"]
    far = [line("Dan Brown", 100, baseline=200, size=11, font="Sans")]  # after a gap, with nothing between
    assert pdf._authors(pdf._rows(names + far)) == ["Ana Silva", "Bruno Costa", "Chen Wei"]


def test_lines_on_one_baseline_are_one_row() -> None:
    rows = pdf._rows([line("b", 300, baseline=101), line("a", 50, baseline=100), line("c", 50, baseline=112)])
    assert [[ln.text for ln in r] for r in rows] == [["a", "b"], ["c"]]


@pytest.mark.parametrize(("ln", "heading"), [
    (line("Abstract"), True),
    (line("ABSTRACT We propose a method"), True),
    (line("Abstract. We propose a method"), True),
    (Line([word("Abstract", 50, bold=True), word("We", 100), word("propose", 116)], 1), True),
    (Line([word("Abstract", 50, size=11), word("We", 100), word("propose", 116)], 1), True),  # larger
    (line("abstract reasoning is hard"), False),
    (line("Abstractions are useful"), False),
])
def test_the_abstract_heading_alone_or_run_in(ln: Line, heading: bool) -> None:
    assert pdf._is_abstract_heading(ln, BODY) is heading


def test_the_title_is_the_largest_type_at_the_top_of_the_first_page() -> None:
    lines = [line("A Long Title on", 100, baseline=80, size=17), line("Two Lines", 100, baseline=100, size=17.3),
             line("Ana Silva", 100, baseline=130, size=11), line("Not the Title Either", 100, baseline=150, size=17)]
    first = page(lines)
    assert _texts(pdf._title_lines(first, set(), BODY)) == ["A Long Title on", "Two Lines"]
    assert pdf._title_lines(first, {id(lines[0]), id(lines[1]), id(lines[3])}, BODY) == []  # furniture
    small = page([line("Only Body Size Here", 100, baseline=80, size=11)])
    assert pdf._title_lines(small, set(), BODY) == []  # under 1.15 x the body size: no title


def test_the_head_ends_above_the_abstract_heading_or_the_first_body_line() -> None:
    with_heading = page([line("Title", baseline=80, size=17), line("Abstract", baseline=200, size=12, bold=True),
                         line(PROSE, 50, 550, baseline=215)])
    assert pdf._head_end(with_heading, set(), BODY, 80.0) == 200 - PARAMS.head_gap * 12
    without = page([line("Title", baseline=80, size=17), line(PROSE + " and more", 50, 550, baseline=215)])
    assert pdf._head_end(without, set(), BODY, 80.0) == 215 - PARAMS.head_gap * BODY


def test_column_text_above_the_head_end_is_not_the_head() -> None:
    author = line("Ana Silva", 250, baseline=120, size=11)
    right = [line(PROSE, 310, 550, baseline=150 + 12 * i, column=2) for i in range(3)]
    alone = line(PROSE, 50, 290, baseline=150, column=1)  # one line is no column's text
    first = page([author, alone, *right])
    assert pdf._head_ids(first, set(), BODY, 190.0) == {id(author), id(alone)}


# ------------------------------------------------------------------------------ sections and their text


def test_blocks_read_in_order_get_their_kind_and_section() -> None:
    def body_block(top: float) -> Block:
        return _block(*[line(PROSE, 50, 290, baseline=top + 12 * i) for i in range(3)])
    blocks = [_block(line("Abstract", size=12, bold=True)), body_block(120),
              _block(line("1 Introduction", size=12, bold=True, baseline=200)), body_block(220),
              _block(line("References", size=12, bold=True, baseline=300)), body_block(320)]
    reader = pdf._SectionReader(BODY, WIDTHS, {1: 792.0})
    for b in blocks:
        reader.read(b)
    assert [(b.kind, b.section) for b in blocks] == [
        ("heading", "Abstract"), ("abstract", "Abstract"), ("heading", "1 Introduction"),
        ("body", "1 Introduction"), ("heading", "References"), ("reference", "References")]
    assert reader.run_in_label is None


def test_a_run_in_abstract_label_and_keywords() -> None:
    run_in = Line([word("Abstract—We", 50, bold=True), word("study", 110), word("speech", 140),
                   word("enhancement", 176), word("here", 236)], 1)
    keywords = line("Index Terms—speech, attention", baseline=140)
    blocks = [_block(run_in, line(PROSE, 50, 290, baseline=112)), _block(keywords),
              _block(line("I. INTRODUCTION", baseline=170, bold=True))]
    reader = pdf._SectionReader(BODY, WIDTHS, {1: 792.0})
    for b in blocks:
        reader.read(b)
    assert [(b.kind, b.section) for b in blocks] == [("abstract", "Abstract"), ("keywords", ""),
                                                     ("heading", "I. INTRODUCTION")]
    assert reader.run_in_label is blocks[0]
    texts = pdf._block_texts(blocks, pdf.Vocabulary(), reader.run_in_label)
    assert texts[0].startswith("We study speech")


def test_a_word_hyphenated_across_blocks_is_completed_in_the_first() -> None:
    blocks = [Block([line("the represen-")], "body"), Block([line("Figure 1: x y z")], "caption"),
              Block([line("tation is learned")], "body")]
    assert pdf._block_texts(blocks, pdf.Vocabulary(), None) == ["the representation", "Figure 1: x y z",
                                                               "is learned"]


def test_captions_and_footnotes_come_after_their_pages_text() -> None:
    blocks = [Block([line("body one", page=1)], "body"), Block([line("Figure 2: A plot.", page=1)], "caption"),
              Block([line("body two", page=1)], "body"), Block([line("body three", page=2)], "body")]
    ordered, texts = pdf._asides_last(blocks, ["body one", "Figure 2: A plot.", "body two", "body three"])
    assert texts == ["body one", "body two", "Figure 2: A plot.", "body three"]
    assert ordered[2].section == "Figure 2"


def test_sections_and_paragraphs_of_the_quoted_blocks() -> None:
    def b(kind: str, section: str, pg: int = 1) -> Block:
        return Block([line("x", page=pg)], kind, section)
    blocks = [b("abstract", "Abstract"), b("body", "1 Intro"), b("body", "1 Intro"), b("body", "1 Intro", 2),
              b("body", "1 Intro", 2), b("footnote", "1 Intro", 2), b("body", "Acknowledgements", 2),
              b("heading", "2 Method", 2)]
    texts = ["We study it.", "It starts here and goes", "on to the end.", "Next page text.", "(a) (b)",
             "Correspondence to ana@example.org.", "We thank the funders.", "2 Method"]
    sections, paragraphs = pdf._sections(blocks, texts)
    assert sections == [(1, "Abstract", "We study it."),
                        (1, "1 Intro", "It starts here and goes on to the end."),
                        (2, "1 Intro", "Next page text.")]
    assert paragraphs == sections  # the second block goes on with the sentence the first left open
    assert [x.kind for x in blocks[4:7]] == ["figure", "author note", "acknowledgements"]


@pytest.mark.parametrize(("title", "sound"), [
    ("Attention Is All You Need", True), ("paper.pdf", False), ("Microsoft Word - draft3", False),
    ("untitled", False), ("Short", False), ("main.tex", False),
])
def test_an_info_title_names_the_paper_not_its_file(title: str, sound: bool) -> None:
    assert pdf._sound_title(title) is sound


def test_the_info_dictionary_fills_in_title_and_authors_the_page_lacks() -> None:
    meta = {"Title": "Learning Robust Representations", "Author": "Ana Silva; Bruno Costa and x"}
    assert pdf._with_info("", [], meta) == ("Learning Robust Representations", ["Ana Silva", "Bruno Costa"])
    assert pdf._with_info("Printed Title", ["Chen Wei"], meta) == ("Printed Title", ["Chen Wei"])


def test_venue_year_and_identifiers_printed_on_the_first_page() -> None:
    venue = line("Proceedings of the 40th Conference on Examples, 2023, pages 1-9", baseline=760, size=8)
    first = page([line(PROSE, 50, 550, baseline=100 + 12 * i) for i in range(3)] + [venue])
    first.sideways = "arXiv:2605.04321v2 [cs.CV] 14 May 2026"
    printed = pdf._printed(first, set(), BODY, {"Subject": "doi:10.1234/abc.5"})
    assert (printed.venue, printed.year, printed.arxiv, printed.doi) == (
        "Proceedings of the 40th Conference on Examples, 2023", "2026", "2605.04321", "10.1234/abc.5")
