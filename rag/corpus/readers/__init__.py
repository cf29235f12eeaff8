"""Readers for the formats researchers keep papers in: BibTeX, CSL-JSON (Zotero), RIS, and full texts as PDF,
HTML (rag/corpus/readers/html.py) and Markdown (markdown.py, called by the scanner, which also reads short
Markdown files as abstracts).

Each reader turns one file into records of the shape the scanner (rag/corpus/scan.py) builds papers from (`abstract`,
`title`, `authors`, `venue`, `year`, `url`, plus `doi`, `arxiv`, `key` and, for PDFs, `layout`), so every format
shares the scanner's checks (abstract length, duplicates, labels) and its one-line-per-problem reporting.

The registry picks a reader by extension, and for `.json` by sniffing: a Zotero CSL-JSON export is a JSON array
whose items carry CSL fields (`container-title`, `issued`, `author` with `family`/`given`); any other `.json`
stays with the scanner's own paper-object format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from rag.corpus.readers import bibtex, csljson, html, pdf, ris
from rag.corpus.records import FileReport

Records = list[tuple[int, dict]]
Reader = Callable[[Path, int, "FileReport"], Records]

SUFFIXES = (".bib", ".bibtex", ".ris", ".pdf", ".html", ".htm", ".xhtml")
SNIFF_BYTES = 64 * 1024
# Keys only CSL items have (the scanner's own JSON paper objects use `authors`, `venue`, `year`).
_CSL_KEYS_RE = re.compile(rb'"(container-title|issued|family|given|citation-key|DOI|URL)"\s*:')


BY_SUFFIX: dict[str, Reader] = {".bib": bibtex.read, ".bibtex": bibtex.read, ".ris": ris.read, ".pdf": pdf.read,
                                 ".html": html.read, ".htm": html.read, ".xhtml": html.read}


def is_csl_json(path: Path) -> bool:
    """A `.json` file whose start looks like CSL items (a bounded read: the file may be large)."""
    try:
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and bool(_CSL_KEYS_RE.search(head))


def reader_for(path: Path) -> Reader | None:
    """The reader for a file in one of these formats, or None for the formats the scanner reads itself."""
    suffix = path.suffix.lower()
    if suffix in BY_SUFFIX:
        return BY_SUFFIX[suffix]
    if suffix == ".json" and path.is_file() and is_csl_json(path):
        return csljson.read
    return None
