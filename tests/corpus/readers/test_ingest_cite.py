"""End to end: a researcher's library (Zotero/Scholar exports, LaTeX and Chromium PDFs) ingested, asked about,
cited with titles, authors and pages, listed and exported as BibTeX that bibtexparser reads back."""

from __future__ import annotations

import json
import re

import bibtexparser
import pytest
from typer.testing import CliRunner

from rag.frontends.cli import app
from rag.settings import Settings
from tests.conftest import make_settings

from .documents import (
    CHROMIUM_HTML,
    LATEX_SECOND,
    LATEX_TWO_COLUMN,
    SCHOLAR_BIB,
    SCHOLAR_RIS,
    ZOTERO_BIB,
    ZOTERO_CSL,
    ZOTERO_RIS,
    compile_latex,
    print_html,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, embedder) -> Settings:
    from rag.index.ingest import ingest

    folder = tmp_path_factory.mktemp("library")
    for name, text in (("My Library.bib", ZOTERO_BIB), ("scholar.bib", SCHOLAR_BIB),
                       ("Exported Items.json", ZOTERO_CSL), ("Exported Items.ris", ZOTERO_RIS),
                       ("scholar.ris", SCHOLAR_RIS)):
        (folder / name).write_text(text, encoding="utf-8")
    compile_latex(LATEX_TWO_COLUMN, folder / "pdf", "offset")
    compile_latex(LATEX_SECOND, folder / "pdf", "flows")
    print_html(CHROMIUM_HTML, folder / "pdf", "traffic")
    settings = make_settings(tmp_path_factory.mktemp("library-index"), corpus_paths=[folder])
    report = ingest(settings, embedder=embedder, progress=False)
    assert not report.problems and report.total_papers == 10, report
    assert len(report.warnings) == 4  # one entry without an abstract in each of four exports
    again = ingest(settings, embedder=embedder, progress=False)
    assert again.unchanged == 10 and not again.changed  # re-reading every format gives the same papers
    return settings


CASES = [
    ("How much does DyMoS improve motion controllability?",
     "Dynamic Motion Slider: Controllable Motion Strength for Image-to-Video Generation", "Ágnes Kovács", None),
    ("By how much does the graph neural network lower the error of tidal energy forecasts?",
     "Tidal energy forecasting with graph neural networks", "Lucía García", None),
    ("How much does the counting transformer trained on ReefCount reduce the counting error?",
     "ReefCount: counting reef fish in underwater video", "Chiamaka Okafor", None),
    ("What intersection over union does the U-Net reach on wildfire smoke plumes?",
     "Wildfire smoke plumes from geostationary satellites", "Camille Moreau", None),
    ("How much of full fine-tuning accuracy do low-rank adapters recover for protein language models?",
     "Low-rank adapters for protein language models", "Beatriz Silva", None),
    ("How many seconds per image does sampling with offset schedules take?",
     "Efficient Fine-Grained Diffusion Sampling with Offset Schedules", "Hannah Fischer", 2),
    # The question names the paper by its title's words; the figure asked is the calibration's (p. 1), not the
    # paper's other figures that share those words (p. 2).
    ("How long does the calibration of the offset schedule take?",
     "Efficient Fine-Grained Diffusion Sampling with Offset Schedules", "Rafael Ortega", 1),
    ("What normalised return does the flow-constrained agent reach on the locomotion tasks?",
     "Affine Coupling Flows for Offline Reinforcement Learning", "Tomasz Wiśniewski", 1),
    ("What latency per query does the traffic forecasting service have?",
     "Graph Transformers for Traffic Forecasting at City Scale", "Sofia Rossi", 2),
]


@pytest.mark.parametrize(("question", "title", "author", "page"), CASES,
                         ids=[c[1][:24] for c in CASES])
def test_answers_cite_title_authors_and_page(library: Settings, question: str, title: str, author: str,
                                             page: int | None) -> None:
    from rag.service import Assistant

    answer = Assistant(library).ask(question)
    assert not answer.abstained and answer.citations, answer.answer
    top = answer.citations[0]
    assert top.title == title and author in top.authors, top
    assert top.page == page, (answer.answer, top)
    # a PDF's quote carries page and section ("p. 2, §3"), in the reference line too
    assert top.reference.startswith(title) and (f"p. {page}, " in top.reference) == (page is not None)
    if page is not None:
        # The quote's section: a numbered one in the body, or the abstract when it states the fact as well (which
        # of two near-certain sentences leads can differ with the vectors, bf16 on CPUs that have it, fp32 else).
        assert top.section == "Abstract" or re.match(r"\d", top.section), top
        where = f"§{top.section.split()[0]}" if re.match(r"\d", top.section) else "abstract"
        assert f"p. {page}, {where}." in top.reference, top.reference
    d = answer.to_dict()
    assert d["citations"][0]["title"] == title and d["citations"][0]["page"] == page
    assert d["retrieved"][0]["title"] == title


def test_pdf_chunks_carry_their_page(library: Settings) -> None:
    from rag.index.store import Store

    store = Store.open(library)
    got = store.chunks.get(where={"section": "3 Experiments"}, include=["metadatas", "documents"])
    assert got["ids"] and all(m["page"] == 2 for m in got["metadatas"])
    assert any("2.3 seconds per image" in d for d in got["documents"])
    bib = store.chunks.get(where={"label": "DyMoS"}, include=["metadatas"])
    assert bib["ids"] and all("page" not in m for m in bib["metadatas"])  # no layout: no page


def _cli(settings: Settings, *args: str):
    return CliRunner().invoke(app, list(args), env={"PAPERS_DATA_DIR": str(settings.data_dir)})


def test_list_shows_metadata(library: Settings) -> None:
    r = _cli(library, "list", "--json")
    assert r.exit_code == 0, r.output
    rows = {d["title"]: d for d in map(json.loads, r.stdout.splitlines())}
    reef = rows["ReefCount: counting reef fish in underwater video"]
    assert (reef["authors"], reef["year"], reef["venue"], reef["doi"]) == (
        "Chiamaka Okafor, Erik Lindqvist", "2025", "Nature Ecology & Evolution", "10.1038/s41559-025-01234-x")
    traffic = rows["Graph Transformers for Traffic Forecasting at City Scale"]
    assert traffic["full_text"] is True and traffic["abstract"].endswith("diffusion convolutional recurrent networks.")
    text = _cli(library, "list").stdout
    assert "Tidal energy forecasting with graph neural networks · Lucía García, Tom Schröder" in text


def test_cite_bibtex_of_a_zotero_paper_reads_back(library: Settings) -> None:
    r = _cli(library, "cite", "--format", "bibtex", "--k", "3", "Dynamic Motion Slider")
    assert r.exit_code == 0, r.output
    lib = bibtexparser.parse_string(r.stdout, append_middleware=[
        bibtexparser.middlewares.LatexDecodingMiddleware()])
    assert not lib.failed_blocks and len(lib.entries) == 3
    top = lib.entries[0]
    assert top.key == "kovacs_dynamic_2026" and top.entry_type == "inproceedings"
    assert top["author"] == "Ágnes Kovács and Jürgen Müller and Pieter van der Berg"
    assert top["title"] == "Dynamic Motion Slider: Controllable Motion Strength for Image-to-Video Generation"
    ris = _cli(library, "cite", "--format", "ris", "--k", "1", "Dynamic Motion Slider").stdout
    assert ris.startswith("TY  - CPAPER") and "AU  - Kovács, Ágnes" in ris
    csl = json.loads(_cli(library, "cite", "--format", "csl-json", "--k", "1", "Dynamic Motion Slider").stdout)
    assert csl[0]["title"] == top["title"].strip("{}") and csl[0]["author"][0] == {"family": "Kovács", "given": "Ágnes"}


def test_cite_bibtex_on_the_seed_corpus(corpus_settings: Settings) -> None:
    """The seed corpus has no metadata: the entry is a marked @misc that bibtexparser reads back."""
    r = _cli(corpus_settings, "cite", "--format", "bibtex", "Dynamic Motion Slider")
    assert r.exit_code == 0, r.output
    lib = bibtexparser.parse_string(r.stdout)
    assert not lib.failed_blocks and lib.entries
    top = lib.entries[0]
    assert top.entry_type == "misc" and top["title"] == "{DyMoS}" and top.key == "dymos_4e19684f404c"
    assert top["note"].startswith("metadata not available")
    assert _cli(corpus_settings, "cite", "--format", "docx", "DyMoS").exit_code == 2


def test_old_catalog_records_read_without_the_new_fields() -> None:
    from rag.index.store import _entry

    e = _entry("p1", {"content_hash": "h", "label": "L", "source": "s.txt", "position": 1}, "text")
    assert (e.doi, e.arxiv, e.key, e.collection, e.layout) == ("", "", "", "", "")


def test_generated_answer_citations_carry_metadata_and_page(library: Settings) -> None:
    """The LLM path (citation check on a written answer) fills the same fields as the extractive one."""
    from rag.service import Assistant

    assistant = Assistant(library)
    question = "How fast is sampling with offset schedules?"
    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(question))
    n = next(i for i, p in enumerate(retrieval.papers, 1) if p.title.startswith("Efficient Fine-Grained"))
    raw = f"Sampling time falls from 9.1 to 2.3 seconds per image [{n}]."
    answer = assistant._finish_llm(question, retrieval, raw)
    assert not answer.abstained and answer.citations, answer
    (c,) = answer.citations
    assert c.title == "Efficient Fine-Grained Diffusion Sampling with Offset Schedules" and c.page == 2
    assert c.authors == "Hannah Fischer, Rafael Ortega" and "p. 2, §3." in c.reference and c.section == "3 Experiments"
