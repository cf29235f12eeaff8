"""CSL-JSON as Zotero exports it, told apart from the corpus's own JSON paper objects."""

from __future__ import annotations

import json
from pathlib import Path

from rag.corpus.readers import is_csl_json
from rag.corpus.scan import read_file

from . import exports
from .documents import ZOTERO_CSL


def test_zotero_csl_json(tmp_path: Path) -> None:
    path = tmp_path / "Exported Items.json"
    path.write_text(ZOTERO_CSL, encoding="utf-8")
    assert is_csl_json(path)
    rep = read_file(path, 2**20, 20_000)
    assert rep.clean, rep.problems
    reef, cot = rep.papers
    assert reef.title == "ReefCount: counting reef fish in underwater video"
    assert reef.authors == "Chiamaka Okafor, Erik Lindqvist" and reef.year == "2025"
    assert reef.venue == "Nature Ecology & Evolution" and reef.doi == "10.1038/s41559-025-01234-x"
    assert reef.kind == "article" and reef.key == ""  # Zotero's item URI is not a citation key
    assert cot.authors == "Wei Zhang, The ShortCoT Consortium" and cot.arxiv == "2502.09876"
    assert cot.venue == "arXiv" and cot.kind == "misc"
    assert len(rep.warnings) == 1 and "1 item without an abstract" in rep.warnings[0]


def test_plain_json_papers_are_not_csl(tmp_path: Path) -> None:
    path = tmp_path / "papers.json"
    path.write_text(json.dumps([{"abstract": "We propose FooNet, a sparse attention method for long documents.",
                                 "title": "FooNet", "authors": ["A. One"], "venue": "ICML", "year": 2025}]))
    assert not is_csl_json(path)
    rep = read_file(path, 2**20, 20_000)
    assert rep.clean and rep.papers[0].authors == "A. One" and rep.papers[0].venue == "ICML"


def test_csl_items_must_be_objects(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    items = json.loads(ZOTERO_CSL)
    path.write_text(json.dumps([items[0], "not an item"]), encoding="utf-8")
    rep = read_file(path, 2**20, 20_000)
    assert len(rep.papers) == 1 and rep.problems == [f"{rep.source}[2]: expected a CSL item (JSON object), got str"]


def test_csl_volume_issue_pages_month_issn_publisher(tmp_path: Path) -> None:
    path = tmp_path / "Zotero.json"
    path.write_text(exports.ZOTERO_CSL, encoding="utf-8")
    rep = read_file(path, 2**20, 20_000)
    (cot,) = rep.papers
    expected = exports.FIELDS[cot.title]
    assert {f: getattr(cot, f) for f in expected} == expected
    assert cot.doi == "10.1234/tmlr_2025.0042" and cot.url == "https://openreview.net/forum?id=abc_123"


def test_csl_skip_notes_name_items_by_title_not_by_zotero_uri(tmp_path: Path) -> None:
    path = tmp_path / "Zotero.json"
    path.write_text(exports.ZOTERO_CSL, encoding="utf-8")
    rep = read_file(path, 2**20, 20_000)
    assert rep.warnings == [f"{rep.source}: 1 item without an abstract skipped: 'A blog post without an abstract'"]
    keyed = json.loads(exports.ZOTERO_CSL)
    keyed[1]["citation-key"] = "blog_2024"
    path.write_text(json.dumps(keyed), encoding="utf-8")
    assert read_file(path, 2**20, 20_000).warnings[0].endswith("skipped: blog_2024")
