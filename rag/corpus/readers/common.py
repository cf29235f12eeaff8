"""What the readers share: reading text within the size limit, and normalising identifiers and names."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from rag.corpus import records

# a year not part of a longer number or of an arXiv id ("2012.04321"); letters may touch it ("14May2026")
_YEAR_RE = re.compile(r"(?<!\d)(?<!\d\.)(1[5-9]\d\d|20\d\d)(?!\d)(?!\.\d)")
_DOI_RE = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)
# New-style (2401.01234, optional version) and old-style (hep-th/9901001) arXiv identifiers.
_ARXIV_RE = re.compile(r"(?:arxiv[:\s/]*|arxiv\.org/(?:abs|pdf)/)\s*"
                       r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})", re.IGNORECASE)


def read_text(path: Path, max_bytes: int) -> str:
    """The file as text, with the scanner's checks (size limit, empty, binary, UTF-8) and messages."""
    return records.read_text(path, max_bytes)


def year_of(*values: object) -> str:
    """The first plausible year in any of the values ('2024', '2024-05-01', '2024///', 'May 2024')."""
    for v in values:
        if v is None:
            continue
        m = _YEAR_RE.search(str(v))
        if m:
            return m.group(1)
    return ""


def doi_of(*values: object) -> str:
    """A bare DOI ('10.1234/abc') from a DOI field or a doi.org URL; trailing punctuation dropped."""
    for v in values:
        m = _DOI_RE.search(str(v or ""))
        if m:
            return m.group(1).rstrip(".,;)")
    return ""


def arxiv_of(*values: object) -> str:
    """An arXiv identifier mentioned in a field ('arXiv:2401.01234', an arxiv.org URL), without version."""
    for v in values:
        m = _ARXIV_RE.search(str(v or ""))
        if m:
            return re.sub(r"v\d+$", "", m.group(1))
    return ""


def link_of(url: str, doi: str, arxiv: str) -> str:
    """The paper's link: the input's URL, else one made from the DOI or arXiv id."""
    if url:
        return url
    if doi:
        return f"https://doi.org/{doi}"
    if arxiv:
        return f"https://arxiv.org/abs/{arxiv}"
    return ""


def clean_field(value: object) -> str:
    """A metadata value as one line of plain text (BibTeX braces left by decoding removed)."""
    text = unicodedata.normalize("NFC", str(value or ""))
    text = text.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", text).strip()


def display_name(family: str, given: str = "") -> str:
    """'Given Family', as references and the UI show authors."""
    return " ".join(p for p in (clean_field(given), clean_field(family)) if p)


def name_from_inverted(name: str) -> str:
    """'Family, Given' (BibTeX, RIS) -> 'Given Family'; a name without a comma is kept as written."""
    name = clean_field(name)
    if "," in name:
        family, given = name.split(",", 1)
        return display_name(family, given)
    return name
