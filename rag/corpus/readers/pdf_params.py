"""The PDF reader's geometry and typography thresholds, in one place (rag/corpus/readers/pdf.py, pdf_layout.py).

Sizes are multiples of a type size (the line's, the word's or the body text's) unless a name ends in `_pt`
(PDF points, 1/72 inch) or a field says it is a share of the page, a count or a share of characters. None of
these is fitted by a script (unlike rag/answer/fitted/): they are the hand-set values the reader was developed
and tested with, on the eight real papers in `../shared/real-pdfs/` and the LaTeX/Chromium documents the tests
compile; each comment gives the typographic reason for the value where there is one. Change one only with
those PDFs read before and after (`tests/corpus/readers/`, `benchmarks/real_pdfs.py`). The readers use the
module-level `PARAMS`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PdfParams:
    """Thresholds of the PDF reader, grouped by the pass that uses them (see the module's docstring for units)."""

    # ---- characters -> words (pdf_layout.read_page)
    # A character drawn at an angle larger than this (radians, either way round) is sideways text, the margin
    # stamp arXiv prints; 0.05 rad (about 3 degrees) is above the rounding of upright text's angle.
    sideways_angle: float = 0.05
    # PDFium reports the spaces it infers, but not every word break: a new word starts where the next character
    # jumps back by more than half its size, or its baseline moves by more than half the larger size (another
    # line), or it starts more than a quarter of the larger size after the previous one (a space is about a
    # quarter to a third of an em), or its size changes by more than 15% (a footnote mark or an index).
    word_jump_back: float = 0.5
    word_baseline_jump: float = 0.5
    word_gap: float = 0.25
    word_size_change: float = 0.15
    # An accent TeX draws as a glyph of its own goes on the letter whose centre is nearest, if that centre is
    # within 0.6 of the word's size across and the word's baseline within 0.6 of its size of the accent's (an
    # accent sits over its letter, less than an em away).
    accent_reach: float = 0.6

    # ---- words -> lines (pdf_layout.Word, Line, group_lines)
    # A word's box from its baseline and size: Latin type rises about 3/4 of an em above the baseline and
    # descends about 1/4 below it.
    ascent: float = 0.75
    descent: float = 0.25
    # A word set smaller than this share of its line's size is a sub- or superscript or a footnote mark (TeX
    # sets scripts at 70% of a 10pt text size).
    script_size: float = 0.85
    # ...and it is on the line (small capitals, not a script) when its baseline is within this share of the
    # line's size of the line's baseline.
    on_baseline: float = 0.1
    # Words within this many points of the line's size are its main text, the ones its baseline is read from.
    same_size_pt: float = 0.3
    # A line is bold (italic) when this share of its main characters is set in a bold (italic) font: a line
    # with one emphasised phrase is not.
    style_share: float = 0.6
    # Only the last rows reached while placing words top to bottom can take a word: a word never joins a row
    # more than this many rows above it.
    row_lookback: int = 8
    # A word joins a row its vertical extent overlaps by half the smaller height (so a subscript stays on its
    # line, and the next line, one leading below, never overlaps that much).
    row_overlap: float = 0.5
    # ...unless it overlaps a word of that row across by more than this share of the narrower one's width, or of
    # `cell_overlap_pt` if that is less: two words never overlap on one line, lines set close together do.
    cell_overlap: float = 0.3
    cell_overlap_pt: float = 3.0
    # A line is cut at a gap wider than any word space of justified text, 1.2 times the type size (LaTeX's
    # default \columnsep of 10pt is under 1.2 x a 10pt font, hence the next field)...
    word_space_max: float = 1.2
    # ...and at a gap wider than this share of the size that spans the page's gutter.
    gutter_gap: float = 0.7

    # ---- the gutter between two columns (pdf_layout._gutter_x on words, pdf._gutter on lines)
    # A gutter is searched for in the middle, from 30% to 70% of the words' extent (of the page's width, for
    # lines): columns of a two-column paper are about equal, a sidebar or a margin note is not a column.
    gutter_from: float = 0.3
    gutter_to: float = 0.7
    # Word rows with prose on both sides of a strip, and empty there, before the strip can be a gutter.
    gutter_rows: int = 4
    # Words on each side of the strip for a row to count as prose on both sides (a table's row has fewer).
    gutter_row_words: int = 4
    # Empty rows must outnumber the rows crossing the strip this many times (titles and wide captions cross).
    gutter_empty_ratio: int = 3
    # Lines of body type narrower than `prose_max_width` and wider than `prose_min_width` of the page are the
    # lines a gutter is judged on: full-width lines say nothing about a gutter, and short ones (labels) neither.
    prose_min_width: float = 0.2
    prose_max_width: float = 0.7
    # A page with fewer such lines is read as one column.
    gutter_min_lines: int = 8
    # Points of slack on each side of the strip a line may reach into without crossing it.
    gutter_slack_pt: float = 1
    # Lines crossing the strip may be at most this share of them (a teaser caption, a wide table).
    gutter_max_crossing: float = 0.2
    # Lines on each side of the gutter: at least this many, and this share of the lines.
    gutter_side_lines: int = 3
    gutter_side_share: float = 0.1
    # A line belongs to a column if it ends (starts) within this share of the page width of the gutter.
    column_tolerance: float = 0.01

    # ---- body type (pdf._body_size, _bodyish)
    # The body size when a document has no text at all (10pt, a common size of papers' text).
    default_body_size: float = 10.0
    # A line is body type when its size is within 15% of the body size (TeX's \small is 10% smaller, \large
    # 20% larger), it has at least `body_min_chars` characters and under `body_max_math` of them in maths fonts.
    body_size_tolerance: float = 0.15
    body_min_chars: int = 15
    body_max_math: float = 0.35
    # A line or block with this share of its characters in maths fonts is mathematics, not a heading or text.
    math_share: float = 0.3
    # Text of which this share of the non-space characters is letters is prose (captions and body text); less
    # is a fragment of a figure or a formula.
    prose_letters: float = 0.6

    # ---- running headers, footers and page numbers (pdf._furniture)
    # The type of the text block is at least this share of the body size (a footnote is smaller).
    text_block_size: float = 0.97
    # The top and bottom tenth of the page is where running heads, feet and page numbers are set.
    page_head: float = 0.1
    page_foot: float = 0.9
    # A line repeated on other pages within this share of the page height of the same baseline is a running
    # head or foot...
    repeat_height: float = 0.02
    # ...when the document has at least this many pages, the line is on at least `furniture_repeats` other pages,
    # and its text is shorter than `furniture_max_chars` or it is near the page's edge.
    furniture_min_pages: int = 3
    furniture_repeats: int = 2
    furniture_max_chars: int = 60
    # Points of slack between small type above (below) the text block and the block's top (bottom).
    edge_slack_pt: float = 1

    # ---- columns' text edges (pdf._column_width)
    # A column's edges are read from at least this many lines of body type...
    column_min_lines: int = 3
    # ...at the 1/n and (n-1)/n quantile of their left and right ends (so a few indented or overhanging lines
    # do not move them).
    column_edge_quantile: int = 10

    # ---- headings (pdf._heading_like, _split_run_in)
    # A heading is short: at most this many characters and words.
    heading_max_chars: int = 100
    heading_max_words: int = 14
    # Set larger than the body (x 1.1) and bold or numbered, or larger still (x 1.15) in any weight...
    heading_size: float = 1.1
    heading_big: float = 1.15
    # ...or bold at nearly body size (x 0.9) and numbered or a few capitalised words...
    heading_bold_size: float = 0.9
    heading_short_words: int = 6
    # ...or numbered and all in capitals ("1 INTRODUCTION"), with at least this many letters.
    heading_caps_letters: int = 4
    # A run-in heading is 2 to 10 bold words opening a line of body size (within 10%), before its text.
    run_in_min_words: int = 2
    run_in_max_words: int = 10
    run_in_size_tolerance: float = 0.1

    # ---- blocks (pdf._blocks; `line_gap` also chains a column's lines above the first page's head)
    # The next line of a paragraph is at most 1.75 times the larger size below the last (single spacing is about
    # 1.2 times the size, 10pt type on 12pt); a paragraph break with extra space, or a heading's, is more.
    line_gap: float = 1.75
    # It may sit up to this share of its size above the last (a line of the same row, its baseline read a little
    # higher).
    line_rise: float = 0.2
    # Lines of one block differ in size by at most 12% (body and footnote sizes differ by 20%).
    block_size_change: float = 0.12
    # Lines of one block overlap across, or leave a gap of at most half the size between them.
    block_overlap: float = 0.5

    # ---- block kinds (pdf._kind)
    # A footnote: type at most 0.92 of the body size, in the lower 40% of the page, opening with a raised mark
    # or a mark smaller than 0.9 of its line's size.
    footnote_size: float = 0.92
    footnote_below: float = 0.6
    mark_size: float = 0.9
    # A heading block has at most this many lines.
    heading_max_lines: int = 2
    # Type under this share of the body size is small type: footnotes, figure labels, tables in small type.
    small_type: float = 0.85
    # Text with under this share of letters is a table or an equation.
    table_letters: float = 0.45
    # Text of which this share of the words is numbers is a table.
    numeric_share: float = 0.35
    # A line filling this share of its column's width is a full line; body text has at least half full lines.
    full_line: float = 0.75
    full_lines_share: float = 0.5
    # A paragraph's last lines at the top of a column are body text: at most 3 lines, ending a sentence, at
    # least 3 words, 70% letters, starting within 1.5 body sizes of the column's left edge.
    tail_max_lines: int = 3
    tail_min_words: int = 3
    tail_letters: float = 0.7
    tail_indent: float = 1.5
    # The page height a block is judged against when none is given (US Letter, 11 inches).
    default_page_height: float = 792.0

    # ---- title, head and authors of the first page (pdf.analyse's passes, _authors, _names_of, _rows)
    # The title is in the top half of the first page, set at least 1.15 times the body size...
    title_zone: float = 0.5
    title_size: float = 1.15
    # ...its lines are the ones within half a point of the largest size, at most 2 sizes apart.
    title_size_tolerance_pt: float = 0.5
    title_line_gap: float = 2.0
    # The head (title, authors, affiliations) ends this share of a size above the abstract heading or the
    # first line of body text.
    head_gap: float = 0.3
    # With no abstract heading, the first line of body type with this many characters starts the body.
    head_body_chars: int = 40
    # Lines of body type with this many characters, set line after line (`line_gap`), at least
    # `column_chain_lines` of them, are a column's text above the head's end, not the head.
    column_chain_chars: int = 30
    column_chain_lines: int = 2
    # Lines within this share of their size of the same baseline are one row.
    row_tolerance: float = 0.3
    # Words within this many points of the author style's size are in that style.
    author_size_tolerance_pt: float = 0.6
    # The author rows end at a gap of more than 1.5 author sizes with no other row in between.
    author_row_gap: float = 1.5
    # Past an affiliation or e-mail row, a row with fewer names than this that does not start within half an
    # author size of a name above is an affiliation, not more authors.
    author_grid_names: int = 2
    author_grid_align: float = 0.5
    # A name has 2 to 5 words, at least 2 of them capitalised, each at most 20 characters.
    name_min_words: int = 2
    name_max_words: int = 5
    name_min_capitals: int = 2
    name_max_word_chars: int = 20
    # "Abstract—" run in: the label set larger than the text after it by more than 5%.
    abstract_label_larger: float = 1.05
    # The abstract's blocks stay within 8% of the abstract's size (a different size ends it).
    abstract_size_tolerance: float = 0.08

    # ---- text (pdf._line_text, _join) and the record
    # A word smaller than `script_size` of the line raised by more than 0.18 of its size is a superscript or a
    # footnote mark; lowered by more than 0.08, a subscript (TeX lowers subscripts less than it raises marks).
    raised_by: float = 0.18
    lowered_by: float = 0.08
    # A subscript closer than 0.3 of the line's size to its word is joined to it ("β2").
    subscript_gap: float = 0.3
    # Words closer than this share of the size are one word set in two sizes (small capitals: "L" + "ARGE").
    small_caps_gap: float = 0.06
    # A line-end hyphen is kept when both halves are the document's words and the right half has at least
    # this many letters ("mid-importance"; short tails, "-ed", "-al", are suffixes).
    hyphen_min_part: int = 3
    # Fragments left between equations or figure parts: text with fewer words than this is not prose.
    fragment_words: int = 3
    # First-page type under this share of the body size is where venues and copyright lines are printed.
    page1_small_type: float = 0.95
    # An Info-dictionary title shorter than this is no paper's title.
    meta_title_min_chars: int = 8
    # A document with fewer characters of text than this has no text layer (a scan).
    min_text_chars: int = 200
    # Pages read at most: bounds the work on a book-length file (a paper is far shorter).
    max_pages: int = 200


PARAMS = PdfParams()
