"""Which PDF library to build the reader on: accuracy and speed of each candidate on the same PDFs, in one run.

PDFs: the eight real papers of ../shared/real-pdfs/ (truth.jsonl) and the project's own test PDFs built from
tests/readers/documents.py (two pdflatex papers, one Chromium print; their truth is their source text).

For every library, each page's text in the library's reading order is checked, after folding case and
dropping everything but letters and digits (so spacing and hyphenation do not count, order and glyphs do):
- title found: the paper's title appears unbroken in the first page's text;
- authors found: the share of author names that appear unbroken there;
- abstract first / last: the abstract's first and last sentences appear unbroken (a column read wrongly, a
  figure or a footnote interleaved, or a wrong glyph breaks them);
- unmapped: characters the library could not map (pdfminer's "(cid:NN)", U+FFFD, private-use code points);
- pages/s of that extraction alone.
The project's reader (rag/readers/pdf.py) is scored the same way on its record text, and also on what only a
layout-aware reader gives: title exact, authors recall / precision, abstract first / last in the abstract.

Candidates that are not dependencies of the project run in another Python (a scratch venv):

    python3 -m venv /work/scratch/pdfvenv
    /work/scratch/pdfvenv/bin/pip install pdfplumber pypdfium2 pdfminer.six docling-parse pdftext opendataloader-pdf
    python benchmarks/pdf_readers.py --other-python /work/scratch/pdfvenv/bin/python [--markdown]

opendataloader-pdf runs its bundled Java CLI (needs a JRE) once over all files; its time includes the JVM start.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PDFS = ROOT.parent / "shared" / "real-pdfs"
LIBRARIES = ["pdfplumber", "pdfminer-laparams", "pypdfium2", "pdftext", "docling-parse", "opendataloader-pdf"]


# --------------------------------------------------------------------------------- extraction (any Python)

def extract(library: str, files: list[str]) -> tuple[dict[str, list[str]], float]:
    """Each file's page texts in the library's reading order, and the seconds it took."""
    out: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    if library == "pdfplumber":
        import pdfplumber

        for f in files:
            with pdfplumber.open(f) as pdf:
                out[f] = [page.extract_text() or "" for page in pdf.pages]
    elif library == "pdfminer-laparams":
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LAParams, LTTextContainer

        params = LAParams(line_margin=0.5, char_margin=2.0, word_margin=0.1, boxes_flow=0.5, detect_vertical=False)
        for f in files:
            out[f] = ["\n".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
                      for page in extract_pages(f, laparams=params)]
    elif library == "pypdfium2":
        import pypdfium2

        for f in files:
            doc = pypdfium2.PdfDocument(f)
            out[f] = [page.get_textpage().get_text_range() for page in doc]
            doc.close()
    elif library == "pdftext":
        from pdftext.extraction import paginated_plain_text_output

        for f in files:
            out[f] = paginated_plain_text_output(f, sort=True)
    elif library == "docling-parse":
        from docling_parse.pdf_parser import DoclingPdfParser

        parser = DoclingPdfParser()
        for f in files:
            doc = parser.load(path_or_stream=f)
            out[f] = ["\n".join(c.text for c in page.textline_cells) for _no, page in doc.iterate_pages()]
    elif library == "opendataloader-pdf":
        import opendataloader_pdf

        with tempfile.TemporaryDirectory() as tmp:
            opendataloader_pdf.convert(files, output_dir=tmp, format="json", quiet=True, image_output="off")
            for f in files:
                data = json.loads((Path(tmp) / (Path(f).stem + ".json")).read_text(encoding="utf-8"))
                pages: dict[int, list[str]] = {}
                for kid in data.get("kids", []):
                    pages.setdefault(int(kid.get("page number", 1)), []).append(_odl_text(kid))
                out[f] = ["\n".join(pages.get(i, [])) for i in range(1, max(pages, default=0) + 1)]
    else:
        raise SystemExit(f"unknown library {library}")
    return out, time.perf_counter() - t0


def _odl_text(element: dict) -> str:
    if "content" in element:
        return str(element["content"])
    parts = []
    for key in ("kids", "rows", "cells", "list items"):
        for child in element.get(key, []) or []:
            if isinstance(child, dict):
                parts.append(_odl_text(child))
    return " ".join(p for p in parts if p)


# ------------------------------------------------------------------------------------------------- scoring

def fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\ufffe", "")
    return re.sub(r"[^0-9a-z]", "", text.lower())


def unmapped(text: str) -> int:
    return len(re.findall(r"\(cid:\d+\)", text)) + sum(1 for c in text if c == "\ufffd" or c != "\ufffe" and
                                                         unicodedata.category(c) in ("Co", "Cn"))


def score_text(pages: list[str], truth: dict) -> dict:
    first, whole = fold(pages[0] if pages else ""), fold(" ".join(pages))
    authors = truth["authors"]
    return {"title found": fold(truth["title"]) in first,
            "authors found": sum(fold(a) in first for a in authors) / len(authors),
            "abstract first": fold(truth["abstract_first"]) in whole,
            "abstract last": fold(truth["abstract_last"]) in whole,
            "unmapped": sum(unmapped(p) for p in pages)}


def latex_truths(folder: Path) -> list[dict]:
    """The test PDFs, built now, with their truth taken from their source."""
    sys.path.insert(0, str(ROOT))
    from tests.readers import documents as d

    def sentences(text: str) -> list[str]:
        text = re.sub(r"\s+", " ", text.replace(r"\'e", "é")).strip()
        return re.split(r"(?<=\.)\s+", text)

    out = []
    for name, source, maker in (("offset", d.LATEX_TWO_COLUMN, d.compile_latex), ("flows", d.LATEX_SECOND, d.compile_latex),
                                ("traffic", d.CHROMIUM_HTML, d.print_html)):
        pdf = maker(source, folder, name)
        if maker is d.compile_latex:
            title = re.search(r"\\title\{([^}]*)\}", source).group(1)
            authors = [a.strip().replace(r"\'s", "ś") for a in re.search(r"\\author\{([^}]*)\}", source).group(1)
                       .split(r"\and")]
            abstract = sentences(source.split(r"\begin{abstract}")[1].split(r"\end{abstract}")[0])
        else:
            title = re.search(r"<h1>(.*?)</h1>", source).group(1)
            authors = re.split(r",\s*|\s+and\s+", re.search(r'class="authors">(.*?)<', source).group(1))
            abstract = sentences(re.search(r'abstract-title">Abstract</p>\s*<p>(.*?)</p>', source, re.S).group(1))
        out.append({"file": str(pdf), "title": title, "authors": authors, "abstract_first": abstract[0],
                    "abstract_last": abstract[-1], "pages": None})
    return out


def run_other(python: str, library: str, files: list[str]) -> tuple[dict[str, list[str]], float] | str:
    done = subprocess.run([python, __file__, "--extract", library, *files], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["failed"])[-1][:200]
    data = json.loads(done.stdout)
    return data["pages"], data["seconds"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS)
    ap.add_argument("--other-python", default=None, help="a Python with the candidate libraries installed")
    ap.add_argument("--extract", default=None, help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if args.extract:  # child mode: one library's extraction, as JSON
        pages, seconds = extract(args.extract, args.files)
        json.dump({"pages": pages, "seconds": seconds}, sys.stdout)
        return 0
    truths = [json.loads(x) for x in (args.pdfs / "truth.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    for t in truths:
        t["file"] = str(args.pdfs / t["file"])
    tmp = Path(tempfile.mkdtemp(prefix="pdf-readers-"))
    sets = {"real (8)": truths, "LaTeX/Chromium (3)": latex_truths(tmp)}
    files = [t["file"] for ts in sets.values() for t in ts]
    python = args.other_python or sys.executable
    results: dict[str, dict] = {}
    for lib in LIBRARIES:
        got = run_other(python, lib, files)
        results[lib] = {"error": got} if isinstance(got, str) else {"pages": got[0], "seconds": got[1]}
    # the project's reader, in this Python
    sys.path.insert(0, str(ROOT))
    from rag.corpus.readers.pdf import parse_pdf

    t0 = time.perf_counter()
    parsed = {f: parse_pdf(Path(f)) for f in files}
    ours_s = time.perf_counter() - t0
    results["rag/readers/pdf.py (PDFium + layout)"] = {
        "pages": {f: [" ".join(t for _p, _h, t in p.sections)] for f, p in parsed.items()}, "seconds": ours_s}
    n_pages = {f: parsed[f].pages for f in files}

    header = ["library", "set", "title found", "authors found", "abstract first", "abstract last", "unmapped",
              "pages/s"]
    rows = []
    for lib, r in results.items():
        if "error" in r:
            rows.append([lib, "all", "error: " + r["error"], "", "", "", "", ""])
            continue
        for set_name, ts in sets.items():
            scores = []
            for t in ts:
                pages = r["pages"][t["file"]]
                if lib.startswith("rag/"):
                    p = parsed[t["file"]]
                    pages = [" ".join([p.title, " ".join(p.authors)] + [x for _p, _h, x in p.sections])]
                scores.append(score_text(pages, t))
            speed = sum(n_pages[f] for f in files) / r["seconds"]
            rows.append([lib, set_name] + [f"{sum(s[k] for s in scores) / len(scores):.2f}" for k in
                                           ("title found", "authors found", "abstract first", "abstract last")]
                        + [str(sum(s["unmapped"] for s in scores)), f"{speed:.1f}"])
    layout_rows = []
    for set_name, ts in sets.items():
        s = {"title exact": 0.0, "authors recall": 0.0, "authors precision": 0.0, "abstract first": 0.0,
             "abstract last": 0.0}
        for t in ts:
            p = parsed[t["file"]]
            norm = lambda x: re.sub(r"\s+", " ", unicodedata.normalize("NFKC", x)).replace("’", "'").strip()  # noqa: E731
            got, want = {norm(a) for a in p.authors}, {norm(a) for a in t["authors"]}
            s["title exact"] += norm(p.title) == norm(t["title"])
            s["authors recall"] += len(got & want) / len(want)
            s["authors precision"] += len(got & want) / max(1, len(got))
            s["abstract first"] += norm(t["abstract_first"]) in norm(p.abstract)
            s["abstract last"] += norm(t["abstract_last"]) in norm(p.abstract)
        layout_rows.append([set_name] + [f"{v / len(ts):.2f}" for v in s.values()])
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print("\n| rag/readers/pdf.py | title exact | authors recall | authors precision | abstract first | "
              "abstract last |\n|---|---|---|---|---|---|")
        for row in layout_rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in rows:
            print("  ".join(f"{c:>14}" if i else f"{c:40}" for i, c in enumerate(row)))
        for row in layout_rows:
            print("layout:", row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
