"""RIS as Zotero and Google Scholar export it."""

from __future__ import annotations

from pathlib import Path

from rag.corpus.scan import read_file

from . import exports
from .documents import SCHOLAR_RIS, ZOTERO_RIS


def test_zotero_ris(tmp_path: Path) -> None:
    path = tmp_path / "Exported Items.ris"
    path.write_text(ZOTERO_RIS.replace("\n", "\r\n"), encoding="utf-8")  # Zotero writes CRLF line ends
    rep = read_file(path, 2**20, 20_000)
    assert rep.clean, rep.problems
    (smoke,) = rep.papers
    assert smoke.title == "Wildfire smoke plumes from geostationary satellites"
    assert smoke.authors == "Camille Moreau, Youssef Haddad" and smoke.year == "2024"
    assert smoke.venue == "Remote Sensing of Environment" and smoke.doi == "10.1016/j.rse.2024.114200"
    assert smoke.kind == "article" and smoke.url.startswith("https://www.sciencedirect.com/")
    assert "'A conference talk without abstract'" in rep.warnings[0]


def test_scholar_ris(tmp_path: Path) -> None:
    path = tmp_path / "scholar.ris"
    path.write_text(SCHOLAR_RIS, encoding="utf-8")
    rep = read_file(path, 2**20, 20_000)
    (lora,) = rep.papers
    assert lora.authors == "Beatriz Silva, Joon Kim" and lora.year == "2025" and lora.venue == "Bioinformatics"
    assert lora.text.startswith("Protein language models are costly to fine-tune.")


def test_not_ris(tmp_path: Path) -> None:
    path = tmp_path / "notes.ris"
    path.write_text("just some notes\nabout papers\n", encoding="utf-8")
    rep = read_file(path, 2**20, 20_000)
    assert not rep.papers and len(rep.problems) == 1 and rep.problems[0].startswith(f"{rep.source}: ")


def test_ris_volume_issue_pages_month_issn_publisher(tmp_path: Path) -> None:
    path = tmp_path / "Zotero.ris"
    path.write_text(exports.ZOTERO_RIS.replace("\n", "\r\n"), encoding="utf-8")
    rep = read_file(path, 2**20, 20_000)
    (smoke,) = rep.papers
    expected = exports.FIELDS[smoke.title]
    assert {f: getattr(smoke, f) for f in expected} == expected
    assert "'A conference talk without abstract'" in rep.warnings[0] and "storage" not in rep.warnings[0]


def test_ris_month_from_the_publication_year_tag(tmp_path: Path) -> None:
    path = tmp_path / "scholar.ris"
    path.write_text(SCHOLAR_RIS.replace("Y1  - 2025", "Y1  - 2025/07//"), encoding="utf-8")
    (lora,) = read_file(path, 2**20, 20_000).papers
    assert lora.year == "2025" and lora.month == "7"


def test_a_reference_without_an_end_line_is_not_merged_into_the_next(tmp_path: Path) -> None:
    from rag.corpus.readers import ris
    from rag.corpus.records import FileReport

    text = ("TY  - JOUR\nTI  - First Paper\nAB  - The first abstract, long enough to be indexed as a paper.\n"
            "TY  - JOUR\nTI  - Second Paper\nAB  - The second abstract, long enough to be indexed as well.\nER  - \n")
    (tmp_path / "two.ris").write_text(text)
    report = FileReport(tmp_path / "two.ris", "two.ris")
    records = ris.read(tmp_path / "two.ris", 2**20, report)
    assert [r["title"] for _, r in records] == ["First Paper", "Second Paper"]
    assert "1 reference without an 'ER  - ' end line" in report.warnings[0]
    assert "two.ris#1 ('First Paper')" in report.warnings[0]


def test_a_last_reference_without_an_end_line_is_kept_with_a_warning(tmp_path: Path) -> None:
    text = ("TY  - JOUR\nTI  - Tail one\nAB  - The first abstract, long enough to be indexed as a paper.\nER  - \n"
            "TY  - JOUR\nTI  - Tail two\nAB  - The second abstract, long enough to be indexed as well.\n")
    (tmp_path / "tail.ris").write_text(text)
    rep = read_file(tmp_path / "tail.ris", 2**20, 20_000)
    assert [p.title for p in rep.papers] == ["Tail one", "Tail two"] and not rep.problems
    (warning,) = rep.warnings
    assert "tail.ris#2 ('Tail two')" in warning and "end of the file" in warning


def test_a_single_reference_without_an_end_line_is_read(tmp_path: Path) -> None:
    text = "TY  - JOUR\nTI  - Only record\nAU  - Solo, Sam\nAB  - We propose SoloNet, the only record, no ER.\n\n"
    (tmp_path / "single.ris").write_text(text)
    rep = read_file(tmp_path / "single.ris", 2**20, 20_000)
    (solo,) = rep.papers
    assert solo.title == "Only record" and solo.authors == "Sam Solo" and not rep.problems
    assert "single.ris#1 ('Only record')" in rep.warnings[0]
