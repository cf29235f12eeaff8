"""The PDF reader's text repairs that need no PDF: line-end hyphenation, ligatures, loose accents."""

from __future__ import annotations

from rag.corpus.readers.pdf import _join, _normalise, compounds_of


def test_line_end_hyphens_are_joined_unless_the_document_hyphenates_the_word() -> None:
    lines = ["Sampling is expen-", "sive for high-", "resolution images.", "We study high-resolution data."]
    assert _join(lines[:3], compounds_of(lines)) == "Sampling is expensive for high-resolution images."
    assert _join(lines[:3], set()) == "Sampling is expensive for highresolution images."
    assert _join(["state of the art in 2024-", "2025 results"]) == "state of the art in 2024- 2025 results"


def test_ligatures_and_loose_accents() -> None:
    assert _normalise("e\ufb03cient \ufb01ne o\ufb00set") == "efficient fine offset"
    assert _normalise("Wi\u00b4sniewski") == "Wiśniewski"  # OT1 draws the accent before the letter
    assert _normalise("a(cid:27)b") == "ab"


def test_place_names_page_and_section() -> None:
    from rag.corpus.sections import place, section_of

    assert place(5, "4.2 Datasets") == "p. 5, §4.2"
    assert place(1, "Abstract") == "p. 1, abstract"
    assert place(9, "Limitations") == "p. 9, §Limitations"
    assert place(None, "4.2 Datasets") == "§4.2 Datasets" and place(3) == "p. 3"  # a Markdown or HTML full text
    text = "First part. Second part here."
    assert section_of(text, '[[0, 1, "Abstract"], [12, 2, "2 Method"]]', "Second part here.") == "2 Method"


def test_hyphen_kept_when_both_halves_are_words_and_the_joined_form_is_not() -> None:
    from rag.corpus.readers.pdf import Vocabulary

    vocab = Vocabulary.of(["the mid range and the importance of tokens is", "weighted by the mid layer today"])
    assert _join(["tokens of mid-", "importance are"], vocab=vocab) == "tokens of mid-importance are"
    assert _join(["an inaccu-", "rate answer"], vocab=vocab) == "an inaccurate answer"
    assert _join(["the state-", "of-the-art method"]) == "the state-of-the-art method"
    assert _join(["see https:", "//example.org/x now"]) == "see https://example.org/x now"


def test_a_url_broken_anywhere_in_a_narrow_column_is_joined_but_not_the_words_after_it() -> None:
    from rag.corpus.readers.pdf import Vocabulary

    vocab = Vocabulary.of(["the middle of the data we release and we share the code here",
                           "results respectively and more with all the data"])
    assert _join(["code at https://gith", "ub.com/alice/repo and the"], vocab=vocab) == \
        "code at https://github.com/alice/repo and the"
    assert _join(["data: https://example.org", "/sets/news_dai", "lymail here"], vocab=vocab) == \
        "data: https://example.org/sets/news_dailymail here"
    assert _join(["see https://example.org/lost-in-the-middl", "e. Then"], vocab=vocab) == \
        "see https://example.org/lost-in-the-middle. Then"
    assert _join(["from https://example.org/x", "and more"], vocab=vocab) == "from https://example.org/x and more"
    assert _join(["https://example.org/a", "https://example.net/b"], vocab=vocab) == \
        "https://example.org/a https://example.net/b"
    assert _join(["at https://example.org/x,", "respectively"], vocab=vocab) == "at https://example.org/x, respectively"
