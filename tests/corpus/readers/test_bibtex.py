"""BibTeX files as Zotero and Google Scholar export them."""

from __future__ import annotations

from pathlib import Path

from rag.corpus.scan import FileReport, read_file, scan

from . import exports
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


def test_changed_metadata_is_rewritten_without_reembedding(tmp_path: Path, embedder) -> None:
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


def test_zotero_doi_escapes_are_undone_and_urls_kept_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "Zotero.bib"
    path.write_text(exports.ZOTERO_BIB, encoding="utf-8")
    rep = read(path)
    scene, glacier = rep.papers
    assert scene.doi == "10.1007/978-3-319-10593-2_13"  # written `10.1007/978-3-319-10593-2\_13` by Zotero
    assert scene.url == "http://link.springer.com/10.1007/978-3-319-10593-2_13"
    assert glacier.url == "https://tc.copernicus.org/articles/17/2023/tc_17_2023.html"
    raw = path.with_name("raw.bib")
    raw.write_text("@misc{pct,\n  title = {Percent},\n  url = {https://example.org/a%20b~c},\n"
                   "  abstract = {An abstract long enough to be read as one paper by the BibTeX reader.},\n}\n",
                   encoding="utf-8")
    assert read(raw).papers[0].url == "https://example.org/a%20b~c"  # not a LaTeX comment or a space


def test_volume_number_pages_month_issn_publisher_are_read(tmp_path: Path) -> None:
    for name in ("Zotero.bib", "BetterBibLaTeX.bib"):
        path = tmp_path / name
        path.write_text(exports.FILES[name][0], encoding="utf-8")
        for paper in read(path).papers:
            expected = exports.FIELDS[paper.title]
            assert {f: getattr(paper, f) for f in expected} == expected, name


def test_howpublished_url_is_the_link_not_the_venue(tmp_path: Path) -> None:
    path = tmp_path / "BetterBibTeX.bib"
    path.write_text(exports.BBT_BIBTEX_WEBPAGE, encoding="utf-8")
    (page,) = read(path).papers
    assert page.url == "https://example.org/tidal/forecast_2024?lang=en" and page.venue == ""
    venue = tmp_path / "venue.bib"
    venue.write_text(exports.BBT_BIBTEX_WEBPAGE.replace(r"\url{https://example.org/tidal/forecast_2024?lang=en}",
                                                        "Workshop on Ocean Energy"), encoding="utf-8")
    assert read(venue).papers[0].venue == "Workshop on Ocean Energy"


def test_field_written_twice_is_read_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "Zotero.bib"
    path.write_text(exports.ZOTERO_BIB, encoding="utf-8")
    rep = read(path)
    assert rep.clean and len(rep.papers) == 2  # before: the entry was a failed block and dropped
    assert f"{rep.source}: entry haddad_scene_2014 has doi written twice; read with the first value" in rep.warnings
    differing = tmp_path / "differing.bib"
    differing.write_text(exports.ZOTERO_BIB.replace("\tdoi = {10.1007/978-3-319-10593-2\\_13},\n\tnote",
                                                    "\tdoi = {10.9999/other},\n\tnote"), encoding="utf-8")
    rep = read(differing)
    assert rep.papers[0].doi == "10.1007/978-3-319-10593-2_13"
    assert any("haddad_scene_2014" in w and "the second doi differed" in w for w in rep.warnings)


def test_skip_notes_name_entries_by_key_never_by_attachment_path(tmp_path: Path) -> None:
    path = tmp_path / "Zotero.bib"
    path.write_text(exports.ZOTERO_BIB, encoding="utf-8")
    rep = read(path)
    assert f"{rep.source}: 1 entry without an abstract skipped: novak_keynote_2023" in rep.warnings
    assert not any("storage" in line or "zotero.org" in line for line in rep.warnings + rep.problems)


def test_ingested_papers_export_their_bibliographic_fields(tmp_path: Path, embedder) -> None:
    """What `papers cite --format bibtex` writes comes from the store's catalog: the fields must survive it."""
    import bibtexparser

    from rag.corpus.references import catalog_records, to_bibtex
    from rag.index.ingest import ingest
    from rag.index.store import Store
    from tests.conftest import make_settings

    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "Zotero.bib").write_text(exports.ZOTERO_BIB, encoding="utf-8")
    settings = make_settings(tmp_path / "data", corpus_paths=[folder])
    ingest(settings, embedder=embedder, progress=False)
    store = Store.open(settings)
    text = to_bibtex(catalog_records(store, sorted(store.catalog())))
    assert "doi = {10.1007/978-3-319-10593-2_13}" in text
    got = exports.fields_of_bibtex(text)
    for title in exports.FILES["Zotero.bib"][1]:
        assert got[title] == exports.FIELDS[title]
    assert not bibtexparser.parse_string(text).failed_blocks


def test_a_broken_entry_is_one_line_and_its_raw_lines_are_not_printed(tmp_path: Path, capfd) -> None:
    (tmp_path / "b.bib").write_text("@article{a,\n title={T},\n abstract={An abstract long enough to be read as a "
                                    "paper by the reader.}\n}\n@article{broken title={X}\nSECRET-LOOKING RAW LINE\n")
    report = read_file(tmp_path / "b.bib", 2**20, 20_000)
    assert len(report.papers) == 1 and len(report.problems) == 1 and "unreadable BibTeX entry" in report.problems[0]
    assert "RAW LINE" not in capfd.readouterr().err
