r"""BibTeX (`.bib`) as Zotero and Google Scholar export it, parsed by bibtexparser 2.

LaTeX accents and braces in titles and names are decoded by bibtexparser's LatexDecodingMiddleware (pylatexenc);
math in abstracts is kept as `$...$` so the corpus cleaner treats it like every other format's math. DOIs and URLs
are read verbatim (biblatex reads them so): only the `\_` / `\%` escapes Zotero adds and a `\url{}` wrapper are
undone, so `10.1007/978-3-319-10593-2\_13` is the DOI `10.1007/978-3-319-10593-2_13`. A `howpublished` that is a
URL is the paper's link, not its venue.
Entries without an `abstract` field are reported by key: Google Scholar's exports never have one. An entry with a
field written twice (Zotero writes `doi` twice) is read with the first value and a note naming it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from rag.corpus.readers.common import (
    arxiv_of,
    clean_field,
    date_parts,
    display_name,
    doi_of,
    entry_name,
    link_of,
    month_of,
    pages_of,
    read_text,
    url_in,
    verbatim,
    year_of,
)
from rag.corpus.records import CorpusError, FileReport

if TYPE_CHECKING:  # bibtexparser itself is imported lazily, when a .bib file is read
    from bibtexparser import Library
    from bibtexparser.middlewares.middleware import BlockMiddleware
    from bibtexparser.model import Block, Entry, Field, ParsingFailedBlock

VENUE_FIELDS = ("journal", "journaltitle", "booktitle", "eventtitle", "series", "howpublished", "school",
                "institution")
# Fields biblatex reads verbatim: kept as written, never LaTeX-decoded.
VERBATIM_FIELDS = ("doi", "url", "eprint", "file", "howpublished")
_RAW_KEY = "verbatim_fields"
_DUPLICATES_KEY = "duplicate_fields"


def _middlewares() -> tuple[type[BlockMiddleware], type[BlockMiddleware]]:
    """Two parse-stack steps on bibtexparser's BlockMiddleware (imported lazily, like bibtexparser itself)."""
    from bibtexparser.middlewares.middleware import BlockMiddleware
    from bibtexparser.model import DuplicateFieldKeyBlock, Entry

    class KeepFirstOfDuplicateFields(BlockMiddleware):
        """An entry with a field written twice (bibtexparser's DuplicateFieldKeyBlock) becomes the entry with the
        first value of each; which fields were doubled, and whether their values differed, go in its metadata."""

        def transform_failed_block(self, block: ParsingFailedBlock, library: Library) -> Block:
            if not isinstance(block, DuplicateFieldKeyBlock):
                return block
            entry = block.ignore_error_block
            if not isinstance(entry, Entry):  # bibtexparser always sets the entry here
                return block
            first: dict[str, object] = {}
            fields: list[Field] = []
            differing: set[str] = set()
            for f in entry.fields:
                k = f.key.lower()
                if k in first:
                    if clean_field(first[k]).lower() != clean_field(f.value).lower():
                        differing.add(k)
                    continue
                first[k] = f.value
                fields.append(f)
            entry.fields = fields
            entry.parser_metadata[_DUPLICATES_KEY] = (sorted(k.lower() for k in block.duplicate_keys),
                                                      sorted(differing))
            return entry

    class KeepVerbatimFields(BlockMiddleware):
        """The raw text of DOI, URL and eprint fields, taken before LaTeX decoding changes it."""

        def transform_entry(self, entry: Entry, library: Library) -> Entry:
            entry.parser_metadata[_RAW_KEY] = {f.key.lower(): f.value for f in entry.fields
                                               if f.key.lower() in VERBATIM_FIELDS and isinstance(f.value, str)}
            return entry

    return KeepFirstOfDuplicateFields, KeepVerbatimFields


def _names(value: object) -> list[str]:
    """Author names from SplitNameParts' NameParts (first/von/last/jr) or plain strings."""
    from bibtexparser.middlewares.names import NameParts

    if not isinstance(value, list):
        value = [value] if value else []
    out = []
    for n in value:
        if isinstance(n, NameParts):
            family = " ".join(list(n.von) + list(n.last))
            given = " ".join(n.first)
            name = display_name(family, given)
            if n.jr:
                name += ", " + " ".join(n.jr)
            out.append(name)
        else:
            out.append(clean_field(n))
    return [n for n in out if n and n.lower() != "others"]


def _report_failed(library: Library, report: FileReport) -> None:
    """One problem line per block bibtexparser could not read, with the file and line."""
    for block in library.failed_blocks:
        line = getattr(block, "start_line", None)
        where = f"{report.source}:{line + 1}" if isinstance(line, int) else report.source
        if type(block).__name__ == "DuplicateBlockKeyBlock":
            report.problems.append(f"{where}: duplicate BibTeX key '{getattr(block, 'key', '')}': entry skipped")
        else:
            err = getattr(block, "error", None)
            reason = str(getattr(err, "abort_reason", "") or err or "").strip()
            error = reason.splitlines()[0].strip() if reason else "syntax error"
            report.problems.append(f"{where}: unreadable BibTeX entry ({error})")


def _get(fields: dict[str, Field], name: str) -> str:
    """A field's cleaned value, or "" when the entry lacks it."""
    f = fields.get(name)
    return clean_field(f.value) if f is not None else ""


def _record(entry: Entry, fields: dict[str, Field], abstract: str) -> dict[str, object]:
    """The scanner's record of one entry with an abstract."""
    def get(name: str) -> str:
        return _get(fields, name)

    raw: dict[str, str] = entry.parser_metadata.get(_RAW_KEY, {})

    def raw_get(name: str) -> str:
        return verbatim(raw.get(name, ""))

    eprint = raw_get("eprint") if get("archiveprefix").lower() in ("", "arxiv") else ""
    published_at = url_in(raw.get("howpublished", ""))
    url = raw_get("url") or published_at
    doi = doi_of(raw_get("doi"), url)
    arxiv = arxiv_of(f"arXiv:{eprint}" if eprint else "", url, get("journal"), get("note"))
    authors = _names(fields["author"].value) if "author" in fields else []
    venues = [v for v in VENUE_FIELDS if not (v == "howpublished" and published_at)]
    date = get("date")  # biblatex: date = {2024-05-12}
    return {
        "abstract": abstract, "title": get("title"), "authors": authors,
        "venue": next((get(v) for v in venues if get(v)), ""),
        "year": year_of(get("year"), date), "doi": doi, "arxiv": arxiv,
        "url": link_of(url, doi, arxiv), "key": entry.key, "kind": entry.entry_type.lower(),
        "volume": get("volume"), "number": get("number") or get("issue"), "pages": pages_of(get("pages")),
        "month": month_of(get("month")) or date_parts(date)[1], "issn": get("issn"),
        "publisher": get("publisher"),
    }


def read(path: Path, max_bytes: int, report: FileReport) -> list[tuple[int, dict]]:
    """Entries with an abstract become records; unreadable blocks and entries without abstracts are reported."""
    import bibtexparser
    from bibtexparser import middlewares as mw
    from bibtexparser.middlewares.parsestack import default_parse_stack

    # bibtexparser logs each failed block with its raw lines on stderr: those are reported below as one line
    # each, with the file and line, and raw lines of a user's file are not printed
    logging.getLogger("bibtexparser").setLevel(logging.ERROR)
    text = read_text(path, max_bytes)
    keep_first, keep_verbatim = _middlewares()
    library = bibtexparser.parse_string(text, parse_stack=[
        keep_first(), *default_parse_stack(), mw.MonthIntMiddleware(), keep_verbatim(),
        mw.LatexDecodingMiddleware(keep_math_mode=True), mw.SeparateCoAuthors(), mw.SplitNameParts()])
    _report_failed(library, report)
    if not library.entries and not library.failed_blocks:
        raise CorpusError("no BibTeX entries found")
    records: list[tuple[int, dict]] = []
    missing = []
    for position, entry in enumerate(library.entries, 1):
        fields = {k.lower(): v for k, v in entry.fields_dict.items()}
        name = entry_name(entry.key, _get(fields, "title"), f"entry at line {(entry.start_line or 0) + 1}")
        doubled = entry.parser_metadata.get(_DUPLICATES_KEY)
        if doubled:
            keys, differing = doubled
            report.warnings.append(
                f"{report.source}: entry {name} has {', '.join(keys)} written twice; read with the first value"
                + (f" (the second {', '.join(differing)} differed)" if differing else ""))
        abstract = str(fields["abstract"].value) if "abstract" in fields else ""
        if not abstract.strip():
            missing.append(name)
            continue
        records.append((position, _record(entry, fields, abstract)))
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        report.warnings.append(f"{report.source}: {len(missing)} entr{'y' if len(missing) == 1 else 'ies'} "
                               f"without an abstract skipped: {shown}")
        if not records and not report.problems:
            raise CorpusError(f"no entry has an 'abstract' field ({len(missing)} entries; add abstracts, "
                              "e.g. export from Zotero with abstracts)")
    return records
