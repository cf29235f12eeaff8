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
