"""Reading every supported format, and a one-line error naming the file for every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.corpus.scan import read_file, scan
from tests.conftest import CORPUS, write_jsonl
from tests.corpus.readers import exports

LIMIT = 2**26
ABSTRACT = ("We propose FooNet, a sparse attention method for long documents that reduces memory by 40% "
            "while keeping accuracy.")


def read(path: Path):
    return read_file(path, LIMIT, 20_000)


def test_paper_lists_of_the_corpus() -> None:
    found = scan([CORPUS], LIMIT, 20_000)
    assert len(found.papers) == 38 and not found.problems and not found.duplicates
    first = found.papers[0]
    assert first.source == "corpus/neurips2026_list_000.txt" or first.source.endswith("neurips2026_list_000.txt")
    assert first.position == 1 and first.text.startswith("Causal modeling of physical temporal phenomena")
    positions = [p.position for p in found.papers if p.source.endswith("_002.txt")]
    assert positions == list(range(1, 20))


def test_jsonl_with_optional_fields(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [
        {"abstract": ABSTRACT, "title": "FooNet: Sparse Attention", "id": "arxiv:1", "url": "https://x.org/1",
         "authors": ["A. One", "B. Two"], "venue": "NeurIPS", "year": 2026, "extra": "ignored"},
        {"abstract": ABSTRACT.replace("FooNet", "BarNet")},
    ])
    rep = read(path)
    assert rep.clean and len(rep.papers) == 2
    a, b = rep.papers
    assert (a.paper_id, a.title, a.authors, a.venue, a.year, a.position) == (
        "arxiv:1", "FooNet: Sparse Attention", "A. One, B. Two", "NeurIPS", "2026", 1)
    assert a.label == "FooNet" and "arxiv:1" in a.reference and "NeurIPS 2026" in a.reference
    assert len(b.paper_id) == 12 and b.label == "BarNet" and b.position == 2


def test_single_paper_txt_and_md(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text(ABSTRACT + "\n")
    (tmp_path / "two.md").write_text("# ZebraNet: striped networks\n\n" + ABSTRACT.replace("FooNet", "ZebraNet"))
    one, two = read(tmp_path / "one.txt"), read(tmp_path / "two.md")
    assert len(one.papers) == 1 and one.papers[0].title == ""
    assert len(two.papers) == 1 and two.papers[0].title == "ZebraNet: striped networks"


def test_hard_wrapped_paragraphs_are_not_headers(tmp_path: Path) -> None:
    (tmp_path / "wrapped.txt").write_text("We propose FooNet, a sparse attention\nmethod for long documents that "
                                          "reduces\nmemory by 40% while keeping accuracy.\n")
    rep = read(tmp_path / "wrapped.txt")
    assert len(rep.papers) == 1 and rep.papers[0].text.startswith("We propose FooNet, a sparse attention method")


def test_list_without_header_is_read_with_a_warning(tmp_path: Path) -> None:
    body = "\n\n".join([ABSTRACT * 2, ABSTRACT.replace("FooNet", "BarNet") * 2])
    (tmp_path / "nohead.txt").write_text(body)
    rep = read(tmp_path / "nohead.txt")
    assert len(rep.papers) == 2 and rep.warnings and "no header line" in rep.warnings[0]


@pytest.mark.parametrize("name,content,reason", [
    ("empty.txt", b"", "empty file"),
    ("blank.txt", b"   \n\n  \n", "empty file"),
    ("binary.txt", b"\x00\x01\x02PNG\x00" * 20, "binary file"),
    ("latin1.txt", "Résumé of a paper about caf\xe9s and more words here.".encode("latin-1"), "not valid UTF-8"),
    ("header_only.txt", b"NeurIPS 2026 list\n", "only a header line"),
    ("bad.json", b"{not json", "invalid JSON"),
    ("paper.docx", b"PK\x03\x04", "unsupported file type"),
    ("paper.pdf", b"%PDF-1.4", "not a readable PDF"),  # truncated: the PDF reader says why
    ("short.txt", b"Too short.", "abstract too short"),
])
def test_bad_files_get_one_line_errors(tmp_path: Path, name: str, content: bytes, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    rep = read(path)
    assert not rep.papers and len(rep.problems) == 1
    line = rep.problems[0]
    assert name in line and reason in line and "\n" not in line


def test_jsonl_bad_lines_are_reported_and_good_lines_kept(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps({"abstract": ABSTRACT}) + "\n{broken\n" + json.dumps({"title": "no abstract"})
                    + "\n" + json.dumps([1, 2]) + "\n")
    rep = read(path)
    assert len(rep.papers) == 1 and not rep.clean
    assert any("mixed.jsonl:2" in p and "invalid JSON" in p for p in rep.problems)
    assert any("mixed.jsonl:3" in p and "missing 'abstract'" in p for p in rep.problems)
    assert any("mixed.jsonl:4" in p and "expected a JSON object" in p for p in rep.problems)


def test_size_limits(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"abstract": ABSTRACT}) + "\n" + " " * 3000)
    assert "file too large" in read_file(big, 2000, 20_000).problems[0]
    long = write_jsonl(tmp_path / "long.jsonl", [{"abstract": "word " * 5000}])
    assert "abstract too long" in read(long).problems[0]


def test_unreadable_file(tmp_path: Path) -> None:
    """A file whose read fails (EIO from /proc/self/mem, which fails even for root)."""
    path = tmp_path / "broken.txt"
    path.symlink_to("/proc/self/mem")
    problem = read(path).problems[0]
    assert "broken.txt" in problem and "unreadable" in problem


def test_duplicates_are_kept_once_and_reported(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [{"abstract": ABSTRACT}])
    write_jsonl(tmp_path / "b.jsonl", [{"abstract": "  " + ABSTRACT.replace(" ", "  ") + "\n"}])
    found = scan([tmp_path], LIMIT, 20_000)
    assert len(found.papers) == 1 and len(found.duplicates) == 1 and "b.jsonl#1" in found.duplicates[0]


def test_missing_path_is_reported(tmp_path: Path) -> None:
    found = scan([tmp_path / "nope"], LIMIT, 20_000)
    assert found.problems == [f"{tmp_path / 'nope'}: no such file or directory"]


def test_same_paper_in_two_exports_is_indexed_once_and_named(tmp_path: Path) -> None:
    """A Zotero export and a Better BibTeX export of one library: same DOI, different abstract text."""
    (tmp_path / "a_zotero.bib").write_text(exports.ZOTERO_BIB, encoding="utf-8")
    csl = [{"id": "http://zotero.org/users/1/items/ZZ", "type": "paper-conference",
            "title": "Learning scene features from street-level imagery", "DOI": "10.1007/978-3-319-10593-2_13",
            "abstract": "Scene features learned from street-level photographs recognise 205 scene categories.",
            "issued": {"date-parts": [[2014]]}}]
    (tmp_path / "b_export.json").write_text(json.dumps(csl), encoding="utf-8")
    found = scan([tmp_path], LIMIT, 20_000)
    assert [p.source.rsplit("/", 1)[-1] for p in found.papers] == ["a_zotero.bib", "a_zotero.bib"]
    (note,) = found.duplicates
    assert "b_export.json#1 ('Learning scene features from street-level imagery')" in note
    assert "same DOI (10.1007/978-3-319-10593-2_13) as" in note and "a_zotero.bib#1 (haddad_scene_2014)" in note
    assert note.endswith("skipped, the first is indexed") and "zotero.org" not in note


def test_same_title_and_first_author_is_the_same_paper_unless_year_or_doi_differ(tmp_path: Path) -> None:
    (tmp_path / "a.bib").write_text(exports.ZOTERO_BIB, encoding="utf-8")
    ris = ("TY  - JOUR\nTI  - Glacier Calving Fronts from Sentinel-1 Radar, with Uncertainty\nAU  - Silva, B.\n"
           "PY  - {year}\nAB  - A different abstract of the same glacier paper, long enough to be indexed.\nER  - \n")
    (tmp_path / "b.ris").write_text(ris.format(year=2023), encoding="utf-8")
    found = scan([tmp_path], LIMIT, 20_000)
    assert len(found.papers) == 2 and len(found.duplicates) == 1
    assert "b.ris#1" in found.duplicates[0] and "same title and first author as" in found.duplicates[0]
    (tmp_path / "b.ris").write_text(ris.format(year=2019), encoding="utf-8")  # another paper of that name
    found = scan([tmp_path], LIMIT, 20_000)
    assert len(found.papers) == 3 and "both kept" in found.duplicates[0]


def test_a_title_alone_never_makes_two_papers_one(tmp_path: Path) -> None:
    """SciFact has distinct papers titled "Summary": without another field in common, both are indexed."""
    write_jsonl(tmp_path / "a.jsonl", [{"title": "Summary", "abstract": ABSTRACT},
                                       {"title": "Summary", "abstract": "A second, different abstract about "
                                                                        "cell biology and its measurements."}])
    found = scan([tmp_path], LIMIT, 20_000)
    assert len(found.papers) == 2
    (note,) = found.duplicates
    assert "a.jsonl#2 ('Summary'): same title as" in note and note.endswith("both kept (a title alone does not "
                                                                            "make them one paper)")


def test_hostile_files_get_one_line_each_and_the_good_ones_are_read(tmp_path: Path) -> None:
    """A symlink loop, JSON nested 100,000 deep, a blank or unusable id: one clear line each, never an abort."""
    (tmp_path / "a.txt").symlink_to(tmp_path / "b.txt")
    (tmp_path / "b.txt").symlink_to(tmp_path / "a.txt")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    write_jsonl(tmp_path / "ids.jsonl", [{"id": "   ", "abstract": ABSTRACT},
                                         {"id": "bad\x1bid", "abstract": ABSTRACT + " Another one."}])
    write_jsonl(tmp_path / "good.jsonl", [{"abstract": "A good abstract that the scanner reads as usual today."}])
    found = scan([tmp_path], LIMIT, 20_000)
    assert len(found.papers) == 2  # the blank id is read as none (the text's hash); the good file
    assert all(p.paper_id.strip() for p in found.papers)
    problems = "\n".join(found.problems)
    assert "a.txt: cannot be read (Symlink loop" in problems and "deep.json: nested too deeply to read" in problems
    assert "ids.jsonl:2: id 'bad\\x1bid' is not a usable id" in problems


EDITORIALS = """@article{{wang2020a,
 title={{Editorial}}, author={{{first}}}, year={{2020}}, journal={{{venue}}},
 abstract={{This editorial introduces the special issue on soft robotics. Twelve papers cover grippers.}}
}}
@article{{wang2020b,
 title={{Editorial}}, author={{Wang, Jun}}, year={{2020}}, journal={{Journal of Chemistry}},
 abstract={{This editorial reviews the year in catalysis research. Eight papers report new zeolite catalysts.}}
}}
"""


@pytest.mark.parametrize("first,venue,same", [
    ("Wang, Wei and Li, Na", "Journal of Robotics", False),  # same surname, other first name, other journal
    ("Wang, Wei", "Journal of Chemistry", False),  # same surname and journal, other first name
    ("Wang, Jun", "Journal of Robotics", False),  # same first author, other journal
    ("WANG, Jún", "Journal of  chemistry.", True),  # case, accents, punctuation and spacing aside: one paper
    ("Wang, J.", "Journal of Chemistry", True),  # an initial for the given name, as another export writes it
])
def test_a_title_match_needs_the_same_first_author_and_venue(tmp_path: Path, first: str, venue: str,
                                                             same: bool) -> None:
    (tmp_path / "editorials.bib").write_text(EDITORIALS.format(first=first, venue=venue), encoding="utf-8")
    found = scan([tmp_path], LIMIT, 20_000)
    (note,) = found.duplicates
    assert len(found.papers) == (1 if same else 2)
    assert note.endswith("skipped, the first is indexed" if same else "both kept (a title alone does not make "
                                                                        "them one paper)")


@pytest.mark.parametrize("name,content,where", [
    ("s.jsonl", '{"abstract": "We propose SurrNet, a lone surrogate \\udfff in it. SurrNet improves recall."}\n',
     "s.jsonl:1"),
    ("s.json", '[{"abstract": "We propose SurrNet, a lone surrogate \\ud800 in it. SurrNet improves recall."}]',
     "s.json[1]"),
    ("csl.json", '[{"type": "article-journal", "title": "T \\udfff", "issued": {"date-parts": [[2020]]}, '
                 '"abstract": "We propose SurrNet, a lone surrogate \\udfff in it. SurrNet improves recall."}]',
     "csl.json[1]"),
])
def test_a_lone_surrogate_in_json_is_replaced_with_a_warning(tmp_path: Path, name: str, content: str,
                                                              where: str) -> None:
    """`\\udfff` is valid JSON but no UTF-8 text: it is read as U+FFFD, the file and record named."""
    (tmp_path / name).write_text(content, encoding="utf-8")
    write_jsonl(tmp_path / "good.jsonl", [{"abstract": ABSTRACT}])
    found = scan([tmp_path], LIMIT, 20_000)
    assert len(found.papers) == 2 and not found.problems
    surr = next(p for p in found.papers if "SurrNet" in p.text)
    assert "surrogate \ufffd in it" in surr.text and (surr.title + surr.text).encode("utf-8")
    (warning,) = found.warnings
    assert f"/{where}: " in warning and "surrogate" in warning and "U+FFFD" in warning


def test_an_emoji_written_as_a_surrogate_pair_is_kept(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "e.jsonl", [{"abstract": ABSTRACT + " \U0001F600"}])  # json.dumps writes \ud83d\ude00
    assert "\\ud83d" in (tmp_path / "e.jsonl").read_text()
    rep = read(tmp_path / "e.jsonl")
    assert rep.papers[0].text.endswith("\U0001F600") and not rep.warnings


def test_a_symlink_loop_named_as_a_path_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "selfloop").symlink_to("selfloop")
    good = write_jsonl(tmp_path / "good.jsonl", [{"abstract": ABSTRACT}])
    found = scan([good, tmp_path / "selfloop"], LIMIT, 20_000)
    assert len(found.papers) == 1
    (problem,) = found.problems
    assert problem.startswith("selfloop: cannot be read (Symlink loop") or "/selfloop: cannot be read" in problem
    assert [r.failed for r in found.files if r.path.name == "selfloop"] == [True]  # its indexed papers are kept
