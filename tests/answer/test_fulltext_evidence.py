"""Evidence from full texts: sentences of a PDF's sections are scored in their section, not in the whole
paper, and the fragments a PDF's extraction leaves between sentences are never evidence."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rag.answer.evidence import Vocabulary, candidates, chunk_sections, prose, question_terms
from rag.answer.types.number import figures
from rag.answer.types.words import names_something as _names_something


@dataclass
class _Chunk:
    chunk_id: str
    text: str
    cosine: float = 0.5


@dataclass
class _Paper:
    paper_id: str
    text: str
    layout: str = ""
    label: str = "Paper"
    title: str = ""
    score: float = 1.0
    complete: bool = True
    chunks: list = field(default_factory=list)


ABSTRACT = "We study sorting networks. Our method sorts lists quickly."
METHOD = "We train the sorter for 90 epochs. The learning rate is 0.1 and decays."
APPENDIX = "Proofs follow. The bound holds for every input."


def _paper(layout: bool = True) -> _Paper:
    text = " ".join([ABSTRACT, METHOD, APPENDIX])
    marks = [[0, 1, "Abstract"], [len(ABSTRACT) + 1, 2, "3 Method"], [len(ABSTRACT) + len(METHOD) + 2, 9, "A Proofs"]]
    parts = [ABSTRACT, METHOD, APPENDIX]
    chunks = [_Chunk(f"p:{i}", s) for i, s in enumerate(s for part in parts for s in part.split(". "))]
    return _Paper("p", text, json.dumps(marks) if layout else "", chunks=chunks)


def test_fragments_and_formulas_are_not_statements() -> None:
    for fragment in ("1).", "2.", "R to obtain q 2 R .", "The CTRs are: ρ = {0.15, 0.11, 0.1, 0.05, 0.01}."):
        assert not prose(fragment), fragment
    for sentence in ("We train the networks for 90 epochs.", "This results in a 7x7x1024 tensor.",
                     "Results are averaged over 2,000 experiments."):
        assert prose(sentence), sentence


def test_each_chunk_knows_its_section_and_a_page_break_does_not_start_one() -> None:
    paper = _paper()
    assert chunk_sections(paper) == [0, 0, 1, 1, 2, 2]
    paper.layout = json.dumps([[0, 1, "Abstract"], [len(ABSTRACT) + 1, 2, "3 Method"],
                               [len(ABSTRACT) + 20, 3, "3 Method"]])
    assert chunk_sections(paper)[2:] == [1, 1, 1, 1]  # the method runs over a page break: one section
    assert chunk_sections(_paper(layout=False)) == [0] * 6  # an abstract is one section


def test_position_and_rare_terms_are_read_per_section() -> None:
    vocab = Vocabulary(None)
    q = "How many epochs is the sorter trained for?"
    by_section = {c.sentence: c.features for c in
                  candidates(q, [_paper()], vocab, question_terms(q, [_paper()], vocab, False, {}))}
    whole = {c.sentence: c.features for c in
             candidates(q, [_paper(False)], vocab, question_terms(q, [_paper(False)], vocab, False, {}))}
    first_of_method = "We train the sorter for 90 epochs"
    assert by_section[first_of_method]["first"] == 1.0 and whole[first_of_method]["first"] == 0.0
    # the rare question terms are in the method section, not in the appendix's
    assert by_section[first_of_method]["paper_rare"] > by_section["The bound holds for every input."]["paper_rare"]
    assert whole["The bound holds for every input."]["paper_rare"] == whole[first_of_method]["paper_rare"]


def test_citations_list_markers_and_pointers_are_not_figures() -> None:
    assert figures("We use code from The Stack (Kocetkov et al., 2022).") == frozenset()
    assert figures("1) Predefined Spans: we train the classifier on spans.") == frozenset()
    assert figures("We reproduced the networks [5,6,7] as in Section 4 and Table 2.") == frozenset()
    assert figures("The datastore has a size of 27GB (Smith 2020).") == {"27"}
    assert figures("We map LLaMA-2-13B heads with GPT-4 prompts.") == frozenset()  # a name's number


def test_device_numbers_are_names_however_common() -> None:
    vocab = Vocabulary(None)
    assert _names_something("We ran it on our NVIDIA 2080Ti GPU.", "", vocab)
    assert _names_something("All models ran on A6000 and V100 GPUs.", "", vocab)
    assert not _names_something("We trained for 48GB of data at 16KHz.", "", vocab)
