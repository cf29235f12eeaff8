"""What the readers share: reading text within the size limit, and normalising identifiers, names and the
bibliographic fields every format carries (volume, number, pages, month, ISSN, publisher)."""

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


# The bibliographic fields (beyond title, authors, venue, year and identifiers) every reader fills when the input
# has them and every export writes back: rag/corpus/records.py `Paper` carries them under these names.
BIBLIO_FIELDS = ("volume", "number", "pages", "month", "issn", "publisher")

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_URL_MACRO_RE = re.compile(r"^\\(?:url|href)\s*\{([^{}]*)\}(?:\s*\{.*\})?$", re.DOTALL)
_TEX_ESCAPE_RE = re.compile(r"\\([_%&#$~])")
_URL_RE = re.compile(r"^(?:https?|ftp)://\S+$", re.IGNORECASE)


def verbatim(value: object) -> str:
    """A DOI or URL as the link needs it: TeX escapes exporters add (`\\_`, `\\%`, `{\\_}`) and a `\\url{}`
    wrapper undone, nothing else decoded (LaTeX decoding would read `%` as a comment and `~` as a space)."""
    text = str(value or "").strip()
    m = _URL_MACRO_RE.match(text)
    if m:
        text = m.group(1)
    text = _TEX_ESCAPE_RE.sub(r"\1", text).replace("{", "").replace("}", "")
    return re.sub(r"\s+", "", text)


def url_in(value: object) -> str:
    """The URL a field holds when the whole field is one (`howpublished = {\\url{https://...}}`), else ''."""
    text = verbatim(value)
    return text if _URL_RE.match(text) else ""


def pages_of(value: object) -> str:
    """Page ranges as one hyphen ('1--29', '1–29' -> '1-29'); other page text kept as written."""
    text = clean_field(value)
    return re.sub(r"\s*(?:--+|[\u2012-\u2015])\s*", "-", text)


def month_of(value: object) -> str:
    """A month as its number ('dec', 'December', '12' -> '12'); text that names no month is kept as written."""
    text = clean_field(value)
    if text.isdigit():
        return str(int(text)) if 1 <= int(text) <= 12 else ""
    low = text.lower().rstrip(".")
    if len(low) >= 3 and low[:3] in _MONTHS and (len(low) == 3 or low.startswith(_full_month(low[:3]))):
        return str(_MONTHS.index(low[:3]) + 1)
    return text


def _full_month(abbrev: str) -> str:
    return ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
            "november", "december")[_MONTHS.index(abbrev)]


def date_parts(value: object) -> tuple[str, str]:
    """Year and month of a RIS/ISO date ('2024/05/12/', '2024-05', '2024///'); '' where absent."""
    m = re.match(r"\s*(\d{4})(?:[/\-](\d{1,2}))?", str(value or ""))
    if not m:
        return "", ""
    month = m.group(2) or ""
    return m.group(1), (str(int(month)) if month and 1 <= int(month) <= 12 else "")


def entry_name(key: str = "", title: str = "", fallback: str = "") -> str:
    """How a note names an entry: its citation key, else its title (quoted, shortened), else the fallback;
    never an item URI or attachment path, which say nothing to the reader."""
    if key and not re.match(r"^[a-z][a-z0-9+.\-]*:/", key, re.IGNORECASE) and "/" not in key:
        return key
    title = clean_field(title)
    if title:
        return f"'{title[:60]}{'…' if len(title) > 60 else ''}'"
    return fallback
