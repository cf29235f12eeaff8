"""RIS (`.ris`) as Zotero and Google Scholar export it, parsed by rispy.

Volume (VL), issue (IS), pages (SP/EP), month (from DA or PY `2024/05//`), ISSN (SN) and publisher (PB) are kept
for the exports; DOIs (DO) and URLs (UR) are kept as written.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag.corpus.readers.common import (
    arxiv_of,
    clean_field,
    date_parts,
    doi_of,
    entry_name,
    link_of,
    name_from_inverted,
    pages_of,
    read_text,
    verbatim,
    year_of,
)
from rag.corpus.records import CorpusError, FileReport

KINDS = {"JOUR": "article", "JFULL": "article", "EJOUR": "article", "CONF": "inproceedings",
         "CPAPER": "inproceedings", "CHAP": "incollection", "BOOK": "book", "THES": "phdthesis", "RPRT": "techreport"}


def _first(entry: dict, *keys: str) -> str:
    for k in keys:
        v = entry.get(k)
        if isinstance(v, list):
            v = next((x for x in v if x), "")
        if v:
            return clean_field(v)
    return ""


def _pages(entry: dict) -> str:
    start, end = _first(entry, "start_page"), _first(entry, "end_page")
    return pages_of(f"{start}-{end}" if start and end and start != end else start or end)


def _month(entry: dict) -> str:
    """The month of DA (`2024/05/12/`) or PY/Y1 (`2024/05//`); RIS has no month tag of its own."""
    for key in ("date", "year", "publication_year"):
        month = date_parts(_first(entry, key))[1]
        if month:
            return month
    return ""


_TAG_RE = re.compile(r"^([A-Z][A-Z0-9])  -")


def close_records(text: str) -> tuple[str, list[int], int]:
    """The text with an `ER  - ` line ending each reference that has none: before a `TY  - ` that opens the next
    one (rispy would merge the two, the second's abstract lost) and at the end of the file (rispy would drop the
    last reference unread). Also the references (numbered from 1) ended before the next, and the one ended at the
    end of the file (0 if none)."""
    out: list[str] = []
    open_record, count, before_next = False, 0, []
    for line in text.split("\n"):
        m = _TAG_RE.match(line)
        tag = m.group(1) if m else ""
        if tag == "TY":
            if open_record:
                out.append("ER  - ")
                before_next.append(count)
            open_record, count = True, count + 1
        elif tag == "ER":
            open_record = False
        out.append(line)
    if open_record:
        out.append("ER  - ")
    return "\n".join(out), before_next, count if open_record else 0


def _warn_unended(report: FileReport, entries: list[dict], before_next: list[int], at_end: int) -> None:
    """One warning for references ended where the next begins, one for the last ended at the end of the file."""
    def named(i: int) -> str:
        ref = entries[i - 1] if i <= len(entries) else {}
        name = entry_name(clean_field(ref.get("id")), _first(ref, "title", "primary_title", "translated_title"))
        return f"{report.source}#{i}" + (f" ({name})" if name else "")

    n = len(before_next)
    if n:
        report.warnings.append(f"{report.source}: {n} reference{'s' * (n != 1)} without an 'ER  - ' end line; each "
                               f"was ended where the next reference begins: {', '.join(map(named, before_next))}")
    if at_end:
        report.warnings.append(f"{named(at_end)}: the last reference has no 'ER  - ' end line; it was read up to "
                               "the end of the file")


def read(path: Path, max_bytes: int, report: FileReport) -> list[tuple[int, dict]]:
    """References with an abstract (AB/N2) become records; others are reported by title."""
    import rispy

    text, before_next, at_end = close_records(read_text(path, max_bytes).replace("\r\n", "\n"))
    try:
        entries = rispy.loads(text)
    except Exception as e:  # rispy raises IOError/ValueError/KeyError with its own wording
        raise CorpusError(f"not a readable RIS file ({type(e).__name__}: {e})") from None
    if not entries:
        raise CorpusError("no RIS references found (each starts with 'TY  - ')")
    _warn_unended(report, entries, before_next, at_end)
    records = []
    missing = []
    for i, ref in enumerate(entries, 1):
        abstract = ref.get("abstract") or ref.get("notes_abstract") or ""
        title = _first(ref, "title", "primary_title", "translated_title")
        if not str(abstract).strip():
            missing.append(entry_name(clean_field(ref.get("id")), title, f"#{i}"))
            continue
        authors = [name_from_inverted(a) for key in ("authors", "first_authors") for a in ref.get(key) or []]
        urls = ref.get("urls") or []
        url = next((verbatim(u) for u in urls if u and "doi.org" not in u), "")
        doi = doi_of(verbatim(ref.get("doi")), *map(verbatim, urls))
        arxiv = arxiv_of(*urls, ref.get("notes"), ref.get("journal_name"), ref.get("secondary_title"))
        records.append((i, {
            "abstract": str(abstract), "title": title, "authors": list(dict.fromkeys(a for a in authors if a)),
            "venue": _first(ref, "secondary_title", "journal_name", "alternate_title3", "alternate_title1",
                            "tertiary_title", "publisher") if ref.get("type_of_reference") != "BOOK" else "",
            "year": year_of(ref.get("year"), ref.get("publication_year"), ref.get("date")), "doi": doi, "arxiv": arxiv,
            "url": link_of(clean_field(url), doi, arxiv), "key": clean_field(ref.get("id")),
            "kind": KINDS.get(str(ref.get("type_of_reference") or ""), "misc"),
            "volume": _first(ref, "volume"), "number": _first(ref, "number"), "pages": _pages(ref),
            "month": _month(ref), "issn": _first(ref, "issn"), "publisher": _first(ref, "publisher"),
        }))
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        report.warnings.append(f"{report.source}: {len(missing)} reference{'' if len(missing) == 1 else 's'} "
                               f"without an abstract skipped: {shown}")
        if not records:
            raise CorpusError(f"no reference has an abstract (AB field; {len(missing)} references)")
    return records
