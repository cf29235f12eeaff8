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
    ("c1 \x9b31mcsi and \x85 nel", False, "c1 csi and \ufffd nel"),  # a C1 CSI sequence removed, C1 shown
    ("osc8 \x1b]8;;http://e.x\x1b\\link\x1b]8;;\x1b\\ end", False, "osc8 link end"),  # a hyperlink's target gone
    ("isolate \u2067x\u2069 and rlm\u200f", False, "isolate \ufffdx\ufffd and rlm\ufffd"),
    ("del\x7f cr\r", False, "del\ufffd cr\ufffd"),
])
def test_inert_text(text: str, one_line: bool, shown: str) -> None:
    from rag.text import inert_text

    assert inert_text(text, one_line) == shown


def test_inert_data_reaches_every_string() -> None:
    """A record leaves whole: strings at any depth, keys included, are made inert; other values are kept."""
    from rag.text import inert_data

    record = {"title": "T\u202eXE", "n": 1, "score": 0.5, "ok": None, "citations": [{"quote": "q\x1b[31m", "page": 2}],
              "pair": ("a\x9b2J", True), "k\x07": "v"}
    assert inert_data(record) == {"title": "T\ufffdXE", "n": 1, "score": 0.5, "ok": None,
                                  "citations": [{"quote": "q", "page": 2}], "pair": ["a", True], "k\ufffd": "v"}


# --- the lexicon: one definition of each word list and word pattern (rag/text.py) ------------------------------

@pytest.mark.parametrize("text, key", [
    ("GPT-4o", "gpt4o"), ("Realtime-VLA FLASH", "realtimevlaflash"), ("“Quoted”, 1,800 steps.", "quoted1800steps"),
    ("", ""), ("—", ""), ("Über", "ber"),  # letters a to z only: an accented letter is dropped, not folded
])
def test_alnum(text: str, key: str) -> None:
    from rag.text import alnum

    assert alnum(text) == key


@pytest.mark.parametrize("word, text, ignore_case, found", [
    ("RL", "an RL objective", False, True),
    ("RL", "RLHF and RL-based tuning", False, False),  # inside a word, or joined by a hyphen: not the word
    ("RL", "an rl objective", False, False),
    ("RL", "an rl objective", True, True),
    ("C++", "written in C++.", False, True),            # escaped, and a word however it ends
    ("GPT-4", "GPT-4o and GPT-4.", False, True),
    ("GPT-4", "GPT-4o only", False, False),
])
def test_whole_word(word: str, text: str, ignore_case: bool, found: bool) -> None:
    from rag.text import whole_word

    assert bool(whole_word(word, ignore_case).search(text)) is found


@pytest.mark.parametrize("words, ending, text, found", [
    (("dataset", "data set"), "(?:s|es)?", "two data sets and a corpus", ["data sets"]),
    (("GPU", "TPU"), "(?:s|es)?", "64 GPUs, 8 TPUs, a GPU-hour", ["GPUs", "TPUs"]),
    (("task",), "s?", "the GLUE tasks; multitask", ["tasks"]),
])
def test_any_word(words: tuple[str, ...], ending: str, text: str, found: list[str]) -> None:
    from rag.text import any_word

    assert any_word(words, ending).findall(text) == found


@pytest.mark.parametrize("text, markers, parts", [
    ("A [1].", ["1"], [["1"]]),
    ("A [1, 3] and B [ 2 ; 4 ].", ["1, 3", " 2 ; 4 "], [["1", "3"], ["2", "4"]]),
    ("No marker [a] or [1,] here.", [], []),
])
def test_citation_markers(text: str, markers: list[str], parts: list[list[str]]) -> None:
    from rag.text import CITATION_RE, citation_parts

    assert [m.group(1) for m in CITATION_RE.finditer(text)] == markers
    assert [citation_parts(m) for m in markers] == parts


def test_leading_citations_quotes_and_repair_marks() -> None:
    from rag.text import LEADING_CITATIONS_RE, QUOTED_RE, SINGLE_CITATION_RE

    m = LEADING_CITATIONS_RE.match(" [1] [2, 3] It folds history.")
    assert m is not None and m.group(1) == " [1] [2, 3]" and m.group(2) == " It folds history."
    assert LEADING_CITATIONS_RE.match("It folds [1].") is None
    assert QUOTED_RE.findall("A [1]: “the Adam optimizer [32]” and “B”") == ["“the Adam optimizer [32]”", "“B”"]
    assert SINGLE_CITATION_RE.findall("from [2] to [1], not [1, 2]") == ["2", "1"]


def test_one_of_keeps_the_order_and_fragments() -> None:
    from rag.text import one_of

    assert one_of(("speed-?up", "win rate")) == "(?:speed-?up|win rate)"
    assert one_of([]) == "(?:)"


@pytest.mark.parametrize("name, text, tokens", [
    ("WORD_RE", "decoder-side GPT-4o's 3x model", ["decoder-side", "GPT-4o", "s", "x", "model"]),
    ("WORD_APOS_RE", "the model's 3x", ["the", "model's", "x"]),
    ("WORD_CURLY_RE", "the model’s", ["the", "model’s"]),
    ("WORD_AT_RE", "Recall@10 of 0.5", ["Recall@10", "of"]),
    ("NAME_TOKEN_RE", "GPT-4o, C++ and v2.1.", ["GPT-4o", "C++", "and", "v2.1"]),
    ("TOKEN_RE", "64 V100 GPUs, ResNet-v2-101.", ["64", "V100", "GPUs", "ResNet-v2-101"]),
    ("TOKEN_OR_LETTER_RE", "a V100", ["a", "V100"]),
    ("LETTER_TOKEN_RE", "64 V100 a b2", ["V100", "b2"]),
    ("SPECIFIC_TOKEN_RE", "the 7B model, GPT-4o+ and x", ["the", "7B", "model", "GPT-4o+", "and", "x"]),
    ("FRAGMENT_WORD_RE", "and R@1 on C++?", ["and", "R@1", "on", "C++"]),
    ("QUESTION_WORD_RE", "wall-clock time’s 2", ["wall-clock", "time’s", "2"]),
    ("PHRASE_WORD_RE", "genomes come from, x", ["genomes", "come", "from", ",", "x"]),
    ("NUMBER_OR_WORD_RE", "-3.5 and 1,800 steps LlamaGuard-4", ["-3.5", "and", "1,800", "steps", "LlamaGuard-4"]),
    ("WH_PHRASE_WORD_RE", "3D F1 score's", ["3D", "F1", "score's"]),
    ("LABEL_WORD_RE", "Realtime-VLA FLASH", ["Realtime-VLA", "FLASH"]),
    ("LOWER_WORD_RE", "it doesn't fail", ["it", "doesn't", "fail"]),
    ("CUE_WORD_RE", "we gain 5.2% on 3 sets", ["we", "gain", "5.2%", "on", "3", "sets"]),
    ("ALNUM2_RE", "DNA damage x", ["DNA", "damage"]),
    ("LETTERS2_RE", "GPT4 a", ["GPT"]),
    ("LETTER_WORDS_RE", "R to q 2 Über", ["to", "Über"]),
    ("LONG_LETTER_WORDS_RE", "los modelos de lenguaje", ["modelos", "lenguaje"]),
    ("NONSPACE_RE", " a, b. ", ["a,", "b."]),
])
def test_word_shapes(name: str, text: str, tokens: list[str]) -> None:
    from rag import text as lexicon

    assert getattr(lexicon, name).findall(text) == tokens


def test_word_stems_keep_hyphenated_words_whole() -> None:
    from rag.text import stem, stems, word_stems

    assert word_stems("Decoder-side Memory of the 2 models") == {stem("decoder-side"), stem("memory"), stem("models")}
    assert stem("decoder") in stems("Decoder-side Memory")  # `stems` also splits a hyphenated word


@pytest.mark.parametrize("question, strict, cue", [
    ("Compare RSPO and RICE-PO", True, True),
    ("How does RSPO differ from GRAM?", True, True),
    ("How do RSPO and GRAM relate?", True, False),
    ("Which of them is faster?", False, True),     # in a chat, "which of" compares the papers just discussed
    ("Are both trained with RL?", False, True),
    ("What do they have in common?", False, True),
    ("What dataset do they use?", False, False),
])
def test_two_readings_of_a_comparison(question: str, strict: bool, cue: bool) -> None:
    from rag.text import COMPARISON_CUE_RE, COMPARISON_RE

    assert bool(COMPARISON_RE.search(question)) is strict
    assert bool(COMPARISON_CUE_RE.search(question)) is cue


@pytest.mark.parametrize("question, lookup, opening", [
    ("Which paper proposes ReLoop?", True, True),
    ("Is there a paper on glaciers?", True, True),
    ("Which two studies measure dune height?", False, True),  # a chat turn's opening, read loosely
    ("Who studied glaciers?", False, True),
    ("Who proposes ReLoop?", True, True),
    ("In which framework were the networks reproduced?", False, False),
    ("What is the name of the benchmark it uses?", True, False),  # asked inside a follow-up: not a new topic
])
def test_two_readings_of_a_lookup(question: str, lookup: bool, opening: bool) -> None:
    from rag.text import LOOKUP_OPENING_RE, LOOKUP_RE

    assert bool(LOOKUP_RE.search(question)) is lookup
    assert bool(LOOKUP_OPENING_RE.match(question)) is opening


@pytest.mark.parametrize("sentence, pivot", [
    ("RecMem uses fewer tokens than full attention.", "than"),
    ("Our model outperforms the baseline.", "outperforms"),
    ("It surpassed every system.", "surpassed"),
    ("The thank-you note.", None),
])
def test_comparative_pivot(sentence: str, pivot: str | None) -> None:
    from rag.text import COMPARATIVE_PIVOT_RE

    m = COMPARATIVE_PIVOT_RE.search(sentence)
    assert (m.group(0) if m else None) == pivot


@pytest.mark.parametrize("quantity, sentence, states", [
    ("time", "Training takes 3 hours on one GPU.", True),
    ("time", "It appeared in the 1990s.", False),  # a decade is no time
    ("memory", "The index needs 27GB.", True),
    ("size", "a datastore of 2.7M samples", False),
])
def test_measure_units(quantity: str, sentence: str, states: bool) -> None:
    from rag.text import MEASURE_UNITS, stem

    assert bool(MEASURE_UNITS[stem(quantity)].search(sentence)) is states


def test_closed_class_lists_nest_as_documented() -> None:
    from rag import text as lexicon

    aux = set(lexicon.AUXILIARIES)
    assert aux - {"should", "may", "might"} == lexicon.VERB_AUX
    assert set(lexicon.LITERAL_YES_NO_AUXILIARIES) == aux - {"had", "should", "may", "might"}
    assert aux < lexicon.AUX_WORDS
    assert lexicon.STRICT_NAME_NOUNS < lexicon.NAME_NOUNS
    assert set(lexicon.SMALL_NUMBER_WORDS) < lexicon.COUNT_WORDS
    assert set(lexicon.PLAIN_NEGATIONS) < lexicon.NEGATIONS
    assert set(lexicon.CONTRAST_CONJUNCTIONS) < set(lexicon.CONTRAST_OPENERS)
    assert lexicon.NUMBER_CONTEXT_STOPWORDS == lexicon.STOPWORDS | lexicon.VAGUE_WORDS
    # the stopword-like sets keep words STOPWORDS drops: that is why they are sets of their own
    assert {"method", "propose"} & lexicon.STOPWORDS and not {"method", "propose"} & lexicon.COLUMN_QUESTION_STOPWORDS
    assert "compared" in lexicon.FRAGMENT_FUNCTION_WORDS and "new" not in lexicon.FRAGMENT_FUNCTION_WORDS
    assert "fewer" not in lexicon.UNIT_STOP_WORDS


def test_pasted_escapes_are_colour_codes_only() -> None:
    from rag.text import PASTED_ESCAPES_RE

    assert PASTED_ESCAPES_RE.sub(" ", "\x1b[31mred\x1b[0m?") == " red ?"
    assert PASTED_ESCAPES_RE.sub(" ", "\x1b]0;t\x07x") == " 0;t\x07x"  # the rest is the question cleaner's
