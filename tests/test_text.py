"""Cleaning, sentence splitting and number extraction on the shapes abstracts really have."""

import pytest

from rag.text import clean_markup, numbers, split_sentences, split_with_spaces, stable_id


def test_latex_and_markdown_are_cleaned() -> None:
    raw = (r"We propose \textbf{Co}upled \textbf{R}eceptive \textbf{F}ields (CoRF), up to 5.9$\times$ faster, "
           r"54.7\% win rate, $\textasciitilde$750 people, **CORE** and *reasoning-trace collapse*, 12--23\%.")
    assert clean_markup(raw) == ("We propose Coupled Receptive Fields (CoRF), up to 5.9× faster, 54.7% win rate, "
                                 "~750 people, CORE and reasoning-trace collapse, 12–23%.")


def test_sentences_keep_abbreviations_decimals_and_names() -> None:
    text = ("We compare to prior work, e.g. FooNet, vs. full attention. Qwen2.5-VL-7B et al. gain 5.6x. "
            "It remains stable over 1,800 test steps. The prompt is X. This yields a bound.")
    assert split_sentences(text) == [
        "We compare to prior work, e.g. FooNet, vs. full attention.",
        "Qwen2.5-VL-7B et al. gain 5.6x.",
        "It remains stable over 1,800 test steps.",
        "The prompt is X.",
        "This yields a bound.",
    ]


def test_split_with_spaces_reassembles_exactly() -> None:
    text = "One sentence here.  Two sentences there! Three? Four (see Fig. 2) ends."
    assert "".join(split_with_spaces(text)) == text


def test_numbers_are_normalised() -> None:
    assert numbers("stable over 1,800 steps, 5.6x fewer, 88–97%, +6.2 NDCG, 3.04×, 70.0%, three phases") == {
        "1800", "5.6", "88", "97", "6.2", "3.04", "70", "3"}
    assert numbers("Qwen3 and one of the baselines") == set()


def test_ids_depend_on_text_not_whitespace() -> None:
    assert stable_id("A  paper\nabout   things.") == stable_id("A paper about things.")
    assert stable_id("A paper about things.") != stable_id("A paper about other things.")
    assert len(stable_id("x" * 50)) == 12


def test_superscript_stars_are_not_markdown_emphasis() -> None:
    """`C^\\star(x) and C^\\star(y)` once lost both stars to the italic rule ("C^(x) and C^(y)")."""
    assert clean_markup(r"we bound C^\star(x) and C^\star(y) tightly") == "we bound C^*(x) and C^*(y) tightly"
    assert clean_markup(r"$x_i^*$ and $y_i^*$") == "x_i^* and y_i^*"
    assert clean_markup("an *emphasised* word") == "an emphasised word"


def _clean_markup_unguarded(raw: str) -> str:
    """clean_markup as it was before its patterns were skipped on text lacking their characters."""
    import re
    import unicodedata

    from rag import text as t

    text = unicodedata.normalize("NFC", raw)
    text = text.replace("``", "“").replace("''", "”")
    for _ in range(3):
        text = t._LATEX_WRAPPER_RE.sub(r"\1", text)
    text = t._LATEX_SYMBOL_RE.sub(lambda m: t._LATEX_SYMBOLS[m.group(0)], text)
    text = re.sub(r"\$([^$]*)\$", t._strip_math, text)
    text = t._LATEX_CMD_RE.sub("", text)
    text = t._MD_BOLD_RE.sub(lambda m: m.group(1) or m.group(2), text)
    text = t._MD_ITALIC_RE.sub(r"\1", text)
    text = text.replace("---", "—").replace("--", "–")
    text = text.replace("\u00a0", " ").replace("\u2011", "-")
    return re.sub(r"\s+", " ", text).strip()


def test_skipping_patterns_and_splitting_on_whitespace_change_no_text_and_no_id() -> None:
    """The cleaned text (what users quote) and the ids (which decide what is re-embedded) are what the
    pattern-by-pattern regex code gave, on markup-dense random text and on every kind of whitespace."""
    import random
    import re
    import sys
    import unicodedata

    from rag.text import collapse_whitespace, normalize_for_id

    # every code point the regex `\s` matches is one str.split() splits on, and no other
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert {c for c in every if re.fullmatch(r"\s", c)} == {c for c in every if c.isspace()}
    for s in ["", "  ", " a ", "a\u2003\u2003b\x1cc\u00a0d\n\te ", "\u200bx\u3000y\u200b"]:
        assert collapse_whitespace(s) == re.sub(r"\s+", " ", s).strip(), repr(s)
    rng = random.Random(3)
    parts = [r"\emph{", r"\textbf{", "}", "{", "$", "**", "__", "*", "_", r"\times", r"\star", r"\alpha", r"\%",
             r"\cite", "^", "word", "Net", " ", "  ", "\n", "\u00a0", "\u2011", "--", "---", "``", "''", "x", "2.5"]
    for _ in range(3000):
        raw = "".join(rng.choice(parts) for _ in range(rng.randint(0, 25)))
        assert clean_markup(raw) == _clean_markup_unguarded(raw), repr(raw)
        assert normalize_for_id(raw) == re.sub(r"\s+", " ", unicodedata.normalize("NFC", raw)).strip(), repr(raw)


def test_term_stems_equal_terms_then_stem() -> None:
    """The per-word table must give exactly what tokenising then stemming gives, punctuation and all."""
    from rag.text import stem, stems, term_stems, terms

    texts = ["State-of-the-Art models (e.g. GPT-4o) don’t cut 1,800 steps; it's 3.5x faster.",
             "k-NN, X-ray and e-mail: a-b-c, ’tis «quoted» words—dashes… and TNF-α levels rose 2-fold.",
             "The the THE of: 12.5 % of cells (n = 3) were CD4+ T-cells.", "", "   "]
    for t in texts:
        assert term_stems(t) == tuple(map(stem, terms(t)))
        assert stems(t) == {stem(w) for w in terms(t)}


def test_a_primed_word_table_gives_the_same_stems_without_stemming(monkeypatch) -> None:  # noqa: ANN001
    """The table saved with an index (`word_stem_table`), loaded into `term_stems`' own (`prime_word_stems`),
    must give what tokenising then stemming gives; a table grown from a known one keeps its words."""
    from rag import text

    texts = ["State-of-the-Art models (e.g. GPT-4o) don’t cut 1,800 steps; it's 3.5x faster.",
             "k-NN, X-ray and e-mail: a-b-c, ’tis «quoted» words—dashes… and TNF-α levels rose 2-fold.",
             "The the THE of: 12.5 % of cells (n = 3) were CD4+ T-cells."]
    want = [tuple(map(text.stem, text.terms(t))) for t in texts]
    table = text.word_stem_table(texts[:2])
    grown = text.word_stem_table(texts[2:], known=table)
    assert table.items() <= grown.items() and "cd4+" in grown and "cd4+" not in table
    monkeypatch.setattr(text, "_WORD_STEMS", text._WordStems())
    monkeypatch.setattr(text, "_stems_of_word", lambda w: pytest.fail(f"{w!r} stemmed"))
    text.prime_word_stems(grown)
    assert [text.term_stems(t) for t in texts] == want


@pytest.mark.parametrize("text, one_line, shown", [
    ("plain text", False, "plain text"),
    ("a\x1b[31mred\x1b[0m", False, "ared"),                      # a colour sequence removed
    ("title\x1b]0;pwned\x07 x", False, "title x"),               # a window-title sequence removed
    ("exe\u202etxt.exe", False, "exe\ufffdtxt.exe"),              # a bidi override shown, not obeyed
    ("two\nlines\tand tab", False, "two\nlines\tand tab"),
    ("file\nname.txt", True, "file\ufffdname.txt"),               # one row: a newline never splits it
    ("bell\x07 and nul\x00", False, "bell\ufffd and nul\ufffd"),
])
def test_inert_text(text: str, one_line: bool, shown: str) -> None:
    from rag.text import inert_text

    assert inert_text(text, one_line) == shown
