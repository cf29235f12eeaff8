"""BibTeX files as Zotero and Google Scholar export them."""

from __future__ import annotations

from pathlib import Path

from rag.corpus.scan import FileReport, read_file, scan

from .documents import SCHOLAR_BIB, ZOTERO_BIB


def read(path: Path) -> FileReport:
    return read_file(path, 2**20, 20_000)


def test_zotero_bib_titles_authors_and_identifiers(tmp_path: Path) -> None:
    path = tmp_path / "My Library.bib"
    path.write_text(ZOTERO_BIB, encoding="utf-8")
    rep = read(path)
    assert rep.clean, rep.problems
    dymos, routers = rep.papers
    assert dymos.title == "Dynamic Motion Slider: Controllable Motion Strength for Image-to-Video Generation"
    assert dymos.authors == "Ágnes Kovács, Jürgen Müller, Pieter van der Berg"  # LaTeX accents decoded
    assert (dymos.venue, dymos.year, dymos.key, dymos.kind) == (
        "Advances in Neural Information Processing Systems", "2026", "kovacs_dynamic_2026", "inproceedings")
    assert dymos.doi == "10.48550/arXiv.2605.01234" and dymos.arxiv == "2605.01234"
    assert dymos.url == "https://arxiv.org/abs/2605.01234"
    assert "by 23%" in dymos.text and "\\" not in dymos.text
    assert routers.authors == "Thi Mai Ngo, Søren Østergaard"
    assert routers.venue == "Journal of Machine Learning Research"
    assert "λ = 0.01" in routers.text  # math in an abstract is cleaned like every other format's
    assert rep.warnings == [f"{rep.source}: 1 entry without an abstract skipped: lee_untitled_2024"]
    assert "Dynamic Motion Slider" in dymos.reference and "Kovács" in dymos.reference
    assert "Advances in Neural Information Processing Systems 2026" in dymos.reference


def test_scholar_bib_entries_without_abstract_are_reported_by_key(tmp_path: Path) -> None:
    path = tmp_path / "scholar.bib"
    path.write_text(SCHOLAR_BIB, encoding="utf-8")
    rep = read(path)
    assert rep.clean and [p.key for p in rep.papers] == ["garcia2024tidal"]
    (tidal,) = rep.papers
    assert tidal.authors == "Lucía García, Tom Schröder" and tidal.year == "2024"
    assert tidal.arxiv == "2403.04567" and tidal.url == "https://arxiv.org/abs/2403.04567"
    assert "vaswani2017attention" in rep.warnings[0]


def test_bib_without_any_abstract_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "none.bib"
    path.write_text(SCHOLAR_BIB.split("@article")[0], encoding="utf-8")
    rep = read(path)
    assert not rep.papers and len(rep.problems) == 1
    assert rep.problems[0].startswith(f"{rep.source}: no entry has an 'abstract' field")


def test_broken_entry_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "broken.bib"
    path.write_text("@article{broken,\n  title = {Unclosed,\n  year = 2020\n\n" + ZOTERO_BIB, encoding="utf-8")
    rep = read(path)
    assert rep.problems and "unreadable BibTeX entry" in rep.problems[0] and rep.problems[0].startswith(rep.source)
    assert not rep.clean  # papers indexed from this file earlier are kept by ingest


def test_bib_is_discovered_in_folders(tmp_path: Path) -> None:
    (tmp_path / "refs.bib").write_text(ZOTERO_BIB, encoding="utf-8")
    found = scan([tmp_path], 2**20, 20_000)
    assert len(found.papers) == 2 and not found.problems


def test_changed_metadata_is_rewritten_without_reembedding(tmp_path: Path, embedder) -> None:  # noqa: ANN001
    """A DOI removed from the .bib disappears from the store too (Chroma merges metadata on upsert)."""
    from rag.index.ingest import ingest
    from rag.index.store import Store

    from tests.conftest import make_settings

    folder = tmp_path / "lib"
    folder.mkdir()
    bib = folder / "refs.bib"
    bib.write_text(ZOTERO_BIB, encoding="utf-8")
    settings = make_settings(tmp_path / "data", corpus_paths=[folder])
    first = ingest(settings, embedder=embedder, progress=False)
    assert len(first.added) == 2
    bib.write_text(ZOTERO_BIB.replace("\tdoi = {10.48550/arXiv.2605.01234},\n", ""), encoding="utf-8")
    second = ingest(settings, embedder=embedder, progress=False)
    assert len(second.relocated) == 1 and second.chunks_embedded == 0
    dymos = next(e for e in Store.open(settings).catalog().values() if e.key == "kovacs_dynamic_2026")
    assert dymos.doi == "" and dymos.arxiv == "2605.01234"
