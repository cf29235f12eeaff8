"""Reference lines and BibTeX / RIS / text exports, read back by bibtexparser and rispy."""

from __future__ import annotations

import json
from pathlib import Path

import bibtexparser
import pytest
import rispy

from rag.corpus.references import bibtex_key, citation_fields, reference_line, to_bibtex, to_csl_json, to_ris, to_text
from rag.corpus.scan import read_file
from rag.index.store import CatalogEntry
from tests.corpus.readers import exports


def entry(pid: str = "e407fa377133", **fields: object) -> CatalogEntry:
    base = dict(content_hash="h", label="DyMoS", source="refs.bib", source_key="/x/refs.bib", position=1,
                n_chunks=3, chunking="c", text="We present the Dynamic Motion Slider (DyMoS), 23% & more.")
    return CatalogEntry(paper_id=pid, **(base | fields))  # type: ignore[arg-type]


DYMOS = dict(title="Dynamic Motion Slider: Controllable Motion Strength",
             authors="Ágnes Kovács, Pieter van der Berg",
             year="2026", venue="Advances in Neural Information Processing Systems", kind="inproceedings",
             doi="10.48550/arXiv.2605.01234", arxiv="2605.01234", url="https://arxiv.org/abs/2605.01234")
LISTED = dict(label="DyMoS", source="corpus/neurips2026_list_000.txt", position=5, collection="NeurIPS 2026 论文列表")


def test_reference_line_uses_only_real_metadata() -> None:
    line = reference_line(entry(**DYMOS))
    assert line == ("Dynamic Motion Slider: Controllable Motion Strength. Ágnes Kovács, Pieter van der Berg. "
                    "Advances in Neural Information Processing Systems 2026. "
                    "https://doi.org/10.48550/arXiv.2605.01234. refs.bib#1. id e407fa377133")
    listed = reference_line(entry("4e19684f404c", **LISTED))
    assert listed == "DyMoS. corpus/neurips2026_list_000.txt#5 (list “NeurIPS 2026 论文列表”). id 4e19684f404c"
    assert "arXiv.2605.01234. p. 3. refs.bib#1. id" in reference_line(entry(**DYMOS), page=3)


def test_bibtex_keys_are_stable_and_unique() -> None:
    assert bibtex_key(entry(**DYMOS)) == "kovacs2026dynamic"
    assert bibtex_key(entry(**DYMOS, key="kovacs_dynamic_2026")) == "kovacs_dynamic_2026"
    assert bibtex_key(entry("4e19684f404c", **LISTED)) == "dymos_4e19684f404c"
    twins = [entry("a1", **DYMOS), entry("b2", **DYMOS)]
    lib = bibtexparser.parse_string(to_bibtex(twins))
    assert [e.key for e in lib.entries] == ["kovacs2026dynamica", "kovacs2026dynamicb"]
    assert to_bibtex(twins) == to_bibtex(twins)


def test_bibtex_reads_back_with_metadata_and_minimal_entries() -> None:
    text = to_bibtex([entry(**DYMOS), entry("4e19684f404c", **LISTED)])
    lib = bibtexparser.parse_string(text, append_middleware=[bibtexparser.middlewares.LatexDecodingMiddleware()])
    assert not lib.failed_blocks
    full, minimal = lib.entries
    assert full.entry_type == "inproceedings" and full["title"] == DYMOS["title"]
    assert full["author"] == "Ágnes Kovács and Pieter van der Berg" and full["year"] == "2026"
    assert full["doi"] == "10.48550/arXiv.2605.01234" and full["eprint"] == "2605.01234"
    assert "23% & more" in full["abstract"]  # escaped as \% and \& in the file, decoded back
    assert minimal.entry_type == "misc" and minimal["title"] == "DyMoS"
    assert minimal["note"].startswith("metadata not available") and "4e19684f404c" in minimal["note"]


def test_ris_reads_back() -> None:
    refs = rispy.loads(to_ris([entry(**DYMOS), entry("4e19684f404c", **LISTED)]))
    assert refs[0]["type_of_reference"] == "CPAPER"
    assert refs[0]["authors"] == ["Kovács, Ágnes", "van der Berg, Pieter"]
    assert refs[0]["doi"] == "10.48550/arXiv.2605.01234" and refs[0]["year"] == "2026"
    assert refs[1]["type_of_reference"] == "GEN" and refs[1]["notes"][0].startswith("metadata not available")


def test_text_list_is_numbered_and_deduplicated() -> None:
    text = to_text([entry(**DYMOS), entry(**DYMOS), entry("4e19684f404c", **LISTED)])
    lines = text.splitlines()
    assert len(lines) == 2 and lines[0].startswith("[1] Dynamic Motion Slider") and lines[1].startswith("[2] DyMoS.")


def test_citation_fields_name_the_page_of_the_quote() -> None:
    text = "Abstract text here. Method text here. Results: 2.3 seconds per image."
    layout = '[[0, 1, "Abstract"], [20, 1, "2 Method"], [38, 2, "3 Results"]]'
    paper = entry(**DYMOS, text=text, layout=layout)
    fields = citation_fields(paper, "Results: 2.3 seconds per image.")
    assert fields["page"] == 2 and fields["title"] == DYMOS["title"] and "p. 2" in fields["reference"]
    assert citation_fields(entry(**DYMOS), "anything")["page"] is None  # no layout: no page


def test_bibtex_writes_dois_and_urls_verbatim() -> None:
    paper = entry(**DYMOS | {"doi": "10.1007/978-3-319-10593-2_13", "kind": "incollection",
                             "url": "https://example.org/a_b%20c?x=1&y=2"})
    text = to_bibtex([paper])
    assert "doi = {10.1007/978-3-319-10593-2_13}" in text  # biblatex reads doi verbatim: `\_` breaks the link
    assert "url = {https://example.org/a_b%20c?x=1&y=2}" in text
    assert "23\\% \\& more" in text  # other fields stay escaped


def test_bibliographic_fields_are_written_in_every_format() -> None:
    paper = entry(**DYMOS | {"kind": "article", "venue": "The Cryosphere", "volume": "17", "number": "5",
                             "pages": "2023-2041", "month": "5", "issn": "1994-0416", "publisher": "Copernicus GmbH"})
    text = to_bibtex([paper])
    for line in ("volume = {17}", "number = {5}", "pages = {2023--2041}", "month = may", "issn = {1994-0416}",
                 "publisher = {Copernicus GmbH}"):
        assert line in text
    (ref,) = rispy.loads(to_ris([paper]))
    assert (ref["volume"], ref["number"], ref["start_page"], ref["end_page"], ref["issn"], ref["publisher"],
            ref["date"]) == ("17", "5", "2023", "2041", "1994-0416", "Copernicus GmbH", "2026/05//")
    (item,) = json.loads(to_csl_json([paper]))
    assert (item["type"], item["volume"], item["issue"], item["page"], item["ISSN"], item["publisher"],
            item["issued"]) == ("article-journal", "17", "5", "2023-2041", "1994-0416", "Copernicus GmbH",
                                {"date-parts": [[2026, 5]]})
    assert item["author"][1] == {"family": "van der Berg", "given": "Pieter"} and item["DOI"] == DYMOS["doi"]


def test_csl_json_marks_papers_without_metadata() -> None:
    (item,) = json.loads(to_csl_json([entry("4e19684f404c", **LISTED)]))
    assert item["type"] == "document" and item["note"].startswith("metadata not available")


@pytest.mark.parametrize("name", list(exports.FILES))
@pytest.mark.parametrize("fmt", ["bibtex", "ris", "csl"])
def test_zotero_and_better_bibtex_exports_round_trip(tmp_path: Path, name: str, fmt: str) -> None:
    """Every field of the input (title, authors, venue, year, month, volume, number, pages, ISSN, publisher,
    DOI, URL) is read and written back with the same value."""
    text, titles = exports.FILES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    papers = read_file(path, 2**20, 20_000).papers
    write, read_back = {"bibtex": (to_bibtex, exports.fields_of_bibtex), "ris": (to_ris, exports.fields_of_ris),
                        "csl": (to_csl_json, exports.fields_of_csl)}[fmt]
    got = read_back(write(papers))
    assert sorted(got) == sorted(titles)
    for title in titles:
        assert got[title] == exports.FIELDS[title]
