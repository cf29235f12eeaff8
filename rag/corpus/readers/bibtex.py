"""BibTeX (`.bib`) as Zotero and Google Scholar export it, parsed by bibtexparser 2.

LaTeX accents and braces in titles and names are decoded by bibtexparser's LatexDecodingMiddleware (pylatexenc);
math in abstracts is kept as `$...$` so the corpus cleaner treats it like every other format's math.
Entries without an `abstract` field are reported by key: Google Scholar's exports never have one.
"""

from __future__ import annotations

from pathlib import Path

from rag.corpus.records import CorpusError, FileReport
from rag.corpus.readers.common import arxiv_of, clean_field, display_name, doi_of, link_of, read_text, year_of


VENUE_FIELDS = ("journal", "journaltitle", "booktitle", "eventtitle", "series", "howpublished", "school",
                "institution")


def _names(value: object) -> list[str]:
    """Author names from SplitNameParts' NameParts (first/von/last/jr) or plain strings."""
    if not isinstance(value, list):
        value = [value] if value else []
    out = []
    for n in value:
        if hasattr(n, "last"):
            family = " ".join(list(n.von) + list(n.last))
            given = " ".join(n.first)
            name = display_name(family, given)
            if n.jr:
                name += ", " + " ".join(n.jr)
            out.append(name)
        else:
            out.append(clean_field(n))
    return [n for n in out if n and n.lower() != "others"]


def read(path: Path, max_bytes: int, report: FileReport) -> list[tuple[int, dict]]:
    """Entries with an abstract become records; unreadable blocks and entries without abstracts are reported."""
    import bibtexparser
    from bibtexparser import middlewares as mw

    text = read_text(path, max_bytes)
    library = bibtexparser.parse_string(text, append_middleware=[
        mw.LatexDecodingMiddleware(keep_math_mode=True), mw.SeparateCoAuthors(), mw.SplitNameParts()])
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
    if not library.entries and not library.failed_blocks:
        raise CorpusError("no BibTeX entries found")
    records = []
    missing = []
    for position, entry in enumerate(library.entries, 1):
        fields = {k.lower(): v for k, v in entry.fields_dict.items()}

        def get(name: str) -> str:
            f = fields.get(name)
            return clean_field(f.value) if f is not None else ""

        abstract = str(fields["abstract"].value) if "abstract" in fields else ""
        if not abstract.strip():
            missing.append(entry.key)
            continue
        eprint = get("eprint") if get("archiveprefix").lower() in ("", "arxiv") else ""
        doi = doi_of(get("doi"), get("url"))
        arxiv = arxiv_of(f"arXiv:{eprint}" if eprint else "", get("url"), get("journal"), get("note"))
        authors = _names(fields["author"].value) if "author" in fields else []
        records.append((position, {
            "abstract": abstract, "title": get("title"), "authors": authors,
            "venue": next((get(v) for v in VENUE_FIELDS if get(v)), ""),
            "year": year_of(get("year"), get("date")), "doi": doi, "arxiv": arxiv,
            "url": link_of(get("url"), doi, arxiv), "key": entry.key, "kind": entry.entry_type.lower(),
        }))
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        report.warnings.append(f"{report.source}: {len(missing)} entr{'y' if len(missing) == 1 else 'ies'} "
                               f"without an abstract skipped: {shown}")
        if not records and not report.problems:
            raise CorpusError(f"no entry has an 'abstract' field ({len(missing)} entries; add abstracts, "
                              "e.g. export from Zotero with abstracts)")
    return records
