"""PDFs compiled by pdflatex and printed by Chromium during the test, read into title, authors and pages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rag.corpus.scan import FileReport, read_file
from rag.corpus.sections import page_of, segments

from .documents import CHROMIUM_HTML, LATEX_IEEE, LATEX_SECOND, LATEX_TWO_COLUMN, compile_latex, print_html

pytestmark = pytest.mark.slow


def read(path: Path) -> FileReport:
    return read_file(path, 64 * 2**20, 20_000)


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pdfs")
    return {"offset": compile_latex(LATEX_TWO_COLUMN, folder, "offset"),
            "flows": compile_latex(LATEX_SECOND, folder, "flows"),
            "ieee": compile_latex(LATEX_IEEE, folder, "ieee"),
            "traffic": print_html(CHROMIUM_HTML, folder, "traffic")}


def _prose_words(latex: str) -> list[str]:
    """The words of the LaTeX source's running text (math, commands and the bibliography left out)."""
    body = latex.split(r"\begin{abstract}")[1].split(r"\begin{thebibliography}")[0].split(r"\end{document}")[0]
    body = re.sub(r"\\begin\{equation\}.*?\\end\{equation\}|\$[^$]*\$", " ", body, flags=re.S)
    body = re.sub(r"\\[a-z]+\*?(\{[^}]*\})?", " ", body).replace("~", " ")
    return re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)*", body.replace(r"\'e", "é"))


def test_latex_two_column_paper(pdfs: dict[str, Path]) -> None:
    rep = read(pdfs["offset"])
    assert rep.clean, rep.problems
    (paper,) = rep.papers
    assert paper.title == "Efficient Fine-Grained Diffusion Sampling with Offset Schedules"
    assert paper.authors == "Hannah Fischer, Rafael Ortega"
    assert (paper.arxiv, paper.year) == ("2605.04321", "2026")  # from the sideways arXiv stamp
    assert paper.url == "https://arxiv.org/abs/2605.04321"
    assert paper.text.startswith("We propose offset schedules, an efficient way to sample fine-grained images")
    # ligatures (fi, ff, ffi) unfolded, nothing left as unmapped glyphs or ligature code points
    assert "(cid:" not in paper.text and not re.search("[\ufb00-\ufb06]", paper.text)
    assert all(w in paper.text for w in ("efficient", "fifty-step", "Off-the-shelf", "differentiable", "Fréchet"))
    # every word of the running text is there in order-insensitive terms: columns and hyphenation survived
    words = set(re.findall(r"[A-Za-zé]+", paper.text))
    prose = [w for part in _prose_words(LATEX_TWO_COLUMN) for w in part.split("-")]
    missing = [w for w in prose if w not in words]
    assert len(missing) <= 0.02 * len(prose), missing
    assert "Denoising diffusion probabilistic" not in paper.text  # the bibliography is not indexed
    sections = segments(paper.text, paper.layout)
    assert [(page, name) for page, name, _ in sections] == [
        (1, "Abstract"), (1, "1 Introduction"), (1, "2 Method"), (2, "3 Experiments"), (2, "4 Conclusion")]
    assert page_of(paper.text, paper.layout, "Sampling time falls from 9.1 to 2.3 seconds per image.") == 2
    assert page_of(paper.text, paper.layout, "The calibration takes four minutes on a single accelerator") == 1


def test_latex_one_page_paper_with_three_authors(pdfs: dict[str, Path]) -> None:
    (paper,) = read(pdfs["flows"]).papers
    assert paper.title == "Affine Coupling Flows for Offline Reinforcement Learning"
    assert paper.authors == "Priya Raman, Tomasz Wiśniewski, Li Na"  # an accent drawn as its own glyph
    assert paper.text.startswith("Offline reinforcement learning must avoid actions")
    assert {page for _, page, _ in json.loads(paper.layout)} == {1}


def test_ieee_style_paper_with_a_narrow_gutter_and_a_bold_run_in_abstract(pdfs: dict[str, Path]) -> None:
    """LaTeX's default 10pt gutter is narrower than the widest word space of justified text: the columns are
    still read one after the other; the bold abstract's line that opens with a figure ("2.87 while ...") is not
    a heading, the run-in label "Abstract—" is not its text, and "Index Terms—" is not a section."""
    (paper,) = read(pdfs["ieee"]).papers
    assert paper.title == "Multi-Scale Residual Attention for Robust Speech Enhancement in Reverberant Rooms"
    assert paper.authors == "Marta Kowalczyk, Daniel Okafor, Yuki Tanaka"
    sections = segments(paper.text, paper.layout)
    abstract = next(text for _, name, text in sections if name == "Abstract")
    assert abstract.startswith("Speech enhancement in reverberant rooms remains difficult because late reflections")
    assert abstract.rstrip().endswith("using 40 percent fewer parameters than the strongest baseline.")
    assert list(dict.fromkeys(name for _, name, _ in sections)) == ["Abstract", "I. INTRODUCTION", "II. METHOD",
                                                                     "III. EXPERIMENTS"]
    assert "Index Terms" not in paper.text
    # each sentence of the running text is read whole: no line of one column is followed by the other's
    for sentence in ("Earlier networks operate at one temporal resolution and therefore either miss the long tails "
                     "of late reflections or blur the onsets of phonemes.",
                     "This behaviour emerges without supervision of the gate, which we verified on recordings from "
                     "five rooms.",
                     "We train all models for 60 epochs on a single NVIDIA RTX 3090 GPU with a batch size of 16."):
        assert sentence in paper.text


def test_chromium_printed_paper(pdfs: dict[str, Path]) -> None:
    (paper,) = read(pdfs["traffic"]).papers
    assert paper.title == "Graph Transformers for Traffic Forecasting at City Scale"
    assert paper.authors == "Amara Nwosu, Kenji Watanabe, Sofia Rossi"
    assert paper.text.startswith("We forecast traffic speed on every road segment")
    assert [(p, name) for p, name, _ in segments(paper.text, paper.layout)][-1] == (2, "3 Deployment")


def test_encrypted_pdf_has_a_clear_message(pdfs: dict[str, Path], tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(pdfs["flows"]))
    writer.encrypt(user_password="secret", owner_password="owner")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as f:
        writer.write(f)
    rep = read(locked)
    assert not rep.papers and rep.problems == [
        f"{rep.source}: encrypted PDF (needs a password): save an unprotected copy and ingest that"]


def test_scanned_pdf_without_text_layer(pdfs: dict[str, Path], tmp_path: Path) -> None:
    import pypdfium2

    page = pypdfium2.PdfDocument(str(pdfs["flows"]))[0]
    image = page.render(scale=1.5).to_pil().convert("RGB")  # what a scanner produces: pixels, no text
    scanned = tmp_path / "scanned.pdf"
    image.save(scanned, "PDF", resolution=108)
    rep = read(scanned)
    assert not rep.papers and len(rep.problems) == 1
    assert "no text layer" in rep.problems[0] and "OCR" in rep.problems[0]


def test_not_a_pdf(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    path.write_text("<html>a download error page</html>")
    assert read(path).problems == [f"{read(path).source}: not a PDF file (no %PDF header)"]
