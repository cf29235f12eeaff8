"""References out: the reference line shown with citations, and BibTeX / RIS / CSL-JSON / plain-text exports.

Works on any record with the catalog's fields (CatalogEntry, PaperHit, corpus Paper): fields a record lacks
count as missing. Only metadata the input really had is shown; a paper-list header is the list's name, never a
venue. Papers without metadata are exported as a clearly marked minimal entry (`@misc` with a note), so an
export never looks more complete than its sources.

Every export writes the bibliographic fields the input had (volume, issue number, pages, month, ISSN, publisher)
besides title, authors, venue, year, DOI and URL. DOIs and URLs are written verbatim, as biblatex reads them: a
`\\_` in a DOI would break its link.

BibTeX is written by bibtexparser and RIS by rispy; keys are the input's own citation key when it had one,
else family name of the first author + year + first title word (`kovacs2026dynamic`), else the label and
paper id, so a paper keeps its key across exports.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from rag import prompts
from rag.corpus.sections import abstract_of, place, where_of

MAX_AUTHORS_SHOWN = 5
_KEY_STOPWORDS = {"a", "an", "the", "on", "of", "for", "in", "to", "and", "with", "towards", "toward", "from",
                  "via", "is", "are", "do", "does", "how", "what", "why", "when", "can", "by", "at"}
_BIBTEX_SPECIAL_RE = re.compile(r"([&%#_$])")


def _get(record: Any, name: str) -> str:
    value = getattr(record, name, "")
    return "" if value is None else str(value)


def has_metadata(record: Any) -> bool:
    """True when the input gave the paper a title or authors (a generated label alone is not metadata)."""
    return bool(_get(record, "title") or _get(record, "authors"))


def author_list(authors: str) -> list[str]:
    """Display names from the stored authors string ('A. One, B. Two' or BibTeX-style 'One and Two')."""
    authors = authors.strip()
    if not authors:
        return []
    parts = re.split(r"\s+and\s+", authors) if " and " in authors and "," not in authors else authors.split(", ")
    return [p.strip() for p in parts if p.strip()]


def _authors_shown(authors: str) -> str:
    names = author_list(authors)
    if len(names) > MAX_AUTHORS_SHOWN:
        return ", ".join(names[:3]) + " et al."
    return ", ".join(names)


def _link(record: Any) -> str:
    doi = _get(record, "doi")
    return f"https://doi.org/{doi}" if doi else _get(record, "url")


def _where(record: Any) -> str:
    where = f"{_get(record, 'source')}#{_get(record, 'position')}"
    if _get(record, "collection"):
        where = prompts.REFERENCE_FROM_LIST.format(where=where, collection=_get(record, "collection"))
    return where


def reference_line(record: Any, page: int | None = None, section: str = "") -> str:
    """One line to paste: title (or label), authors, venue and year when the input had them, link, page,
    then where the paper was read from and its id."""
    parts = [_get(record, "title") or _get(record, "label")]
    if _get(record, "authors"):
        parts.append(_authors_shown(_get(record, "authors")))
    venue_year = " ".join(p for p in (_get(record, "venue"), _get(record, "year")) if p)
    if venue_year:
        parts.append(venue_year)
    if _link(record):
        parts.append(_link(record))
    parts.append(place(page, section))
    parts.append(_where(record))
    parts.append(f"id {_get(record, 'paper_id')}")
    line = ""
    for p in filter(None, parts):
        line += (p if not line else (" " if line.endswith((".", "?", "!")) else ". ") + p)
    return line


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _family(name: str) -> str:
    """The family name of a 'Given Family' display name (particles like 'van der' are dropped for the key)."""
    words = name.replace(",", " ").split()
    return words[-1] if words else ""


def bibtex_key(record: Any) -> str:
    """A stable key: the input's key, else firstauthor+year+titleword, else label + paper id."""
    if _get(record, "key") and re.fullmatch(r"[A-Za-z0-9_:\-.+]+", _get(record, "key")):
        return _get(record, "key")
    names = author_list(_get(record, "authors"))
    words = [w for w in re.findall(r"[a-z0-9]+", _ascii(_get(record, "title")).lower()) if w not in _KEY_STOPWORDS]
    if names or words:
        family = re.sub(r"[^a-z]", "", _ascii(_family(names[0])).lower()) if names else ""
        key = f"{family or 'anon'}{_get(record, 'year')}{words[0] if words else ''}"
        if key != "anon":
            return key
    label = re.sub(r"[^a-z0-9]+", "", _ascii(_get(record, "label")).lower())[:24]
    return f"{label or 'paper'}_{_get(record, 'paper_id')[:12]}"


def _unique_keys(records: Sequence[Any]) -> list[str]:
    """Keys for an export; a key shared by different papers gets a, b, c, ... appended."""
    keys = [bibtex_key(r) for r in records]
    seen: dict[str, int] = {}
    out = []
    for k in keys:
        if keys.count(k) > 1:
            seen[k] = seen.get(k, 0) + 1
            k = f"{k}{chr(ord('a') + seen[k] - 1)}" if seen[k] <= 26 else f"{k}_{seen[k]}"
        out.append(k)
    return out


def _tex(value: str) -> str:
    """Plain text as a BibTeX field value: LaTeX specials escaped, braces and backslashes removed."""
    value = value.replace("\\", "").replace("{", "").replace("}", "")
    return _BIBTEX_SPECIAL_RE.sub(r"\\\1", value).replace("~", r"\textasciitilde{}")


def _verbatim(value: str) -> str:
    """A DOI or URL as a verbatim BibTeX field: written as is, only braces (which would end the field)
    percent-encoded, as they are in a URL."""
    return value.replace("{", "%7B").replace("}", "%7D")


def _abstract(record: Any) -> str:
    return abstract_of(_get(record, "text"), _get(record, "layout"))


def _no_metadata_note(record: Any) -> str:
    return prompts.REFERENCE_NO_METADATA.format(where=_where(record), paper_id=_get(record, "paper_id"))


def _dedupe(records: Iterable[Any]) -> list[Any]:
    out, seen = [], set()
    for r in records:
        pid = _get(r, "paper_id")
        if pid not in seen:
            seen.add(pid)
            out.append(r)
    return out


def _bibtex_metadata(record: Any) -> tuple[str, list[tuple[str, str]]]:
    """The entry type and fields (before the abstract) of a paper the input gave metadata."""
    kind = _get(record, "kind") or ("inproceedings" if _get(record, "venue") else "misc")
    if kind not in ("article", "inproceedings", "incollection", "book", "phdthesis", "techreport", "misc"):
        kind = "misc"
    fields = [("title", "{" + _tex(_get(record, "title") or _get(record, "label")) + "}")]
    if _get(record, "authors"):
        fields.append(("author", " and ".join(_tex(n) for n in author_list(_get(record, "authors")))))
    venue_field = {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle",
                   "phdthesis": "school", "techreport": "institution"}.get(kind, "howpublished")
    if _get(record, "venue"):
        fields.append((venue_field, _tex(_get(record, "venue"))))
    elif kind == "article":
        kind = "misc"  # an @article needs a journal
    for name in ("volume", "number"):
        if _get(record, name):
            fields.append((name, _tex(_get(record, name))))
    if _get(record, "pages"):
        fields.append(("pages", _tex(_get(record, "pages")).replace("-", "--")))
    if _get(record, "month"):
        fields.append(("month", _get(record, "month") if _get(record, "month").isdigit()
                       else _tex(_get(record, "month"))))
    for name in ("year", "publisher", "issn"):
        if _get(record, name):
            fields.append((name, _tex(_get(record, name))))
    if _get(record, "doi"):
        fields.append(("doi", _verbatim(_get(record, "doi"))))
    if _get(record, "arxiv"):
        fields += [("eprint", _get(record, "arxiv")), ("archiveprefix", "arXiv")]
    if _get(record, "url"):
        fields.append(("url", _verbatim(_get(record, "url"))))
    return kind, fields


def to_bibtex(records: Iterable[Any]) -> str:
    """BibTeX entries (one per paper) that bibtexparser and BibTeX read back."""
    import bibtexparser
    from bibtexparser.model import Block, Entry, Field

    records = _dedupe(records)
    entries: list[Block] = []
    for record, key in zip(records, _unique_keys(records)):
        fields: list[tuple[str, str]]
        if has_metadata(record):
            kind, fields = _bibtex_metadata(record)
        else:
            kind = "misc"
            fields = [("title", "{" + _tex(_get(record, "label") or _get(record, "paper_id")) + "}"),
                      ("note", _tex(_no_metadata_note(record)))]
        if _abstract(record) and has_metadata(record):
            fields.append(("abstract", _tex(_abstract(record))))
        entries.append(Entry(kind, key, [Field(k, v) for k, v in fields]))
    # month numbers become the month macros (sep) every BibTeX style prints as a name
    return bibtexparser.write_string(bibtexparser.Library(entries),
                                     prepend_middleware=[bibtexparser.middlewares.MonthAbbreviationMiddleware()])


def _split_name(name: str) -> tuple[str, str]:
    """'Pieter van der Berg' -> ('Pieter', 'van der Berg'): a lowercase particle starts the family name."""
    words = name.split()
    if len(words) < 2:
        return "", name
    at = next((i for i, w in enumerate(words[1:-1], 1) if w[:1].islower()), len(words) - 1)
    return " ".join(words[:at]), " ".join(words[at:])


def _inverted(name: str) -> str:
    given, family = _split_name(name)
    return f"{family}, {given}" if given else family


def _ris_writer() -> type:
    import rispy

    class RisWriter(rispy.RisWriter):
        """rispy numbers references ("1.") before each TY line; Zotero and Scholar write no numbers."""

        def set_header(self, count: int) -> str:
            return ""

    return RisWriter


def to_ris(records: Iterable[Any]) -> str:
    """RIS references (rispy), as Zotero and reference managers import them."""
    import rispy

    records = _dedupe(records)
    out = []
    kinds = {"article": "JOUR", "inproceedings": "CPAPER", "incollection": "CHAP", "book": "BOOK",
             "phdthesis": "THES", "techreport": "RPRT"}
    for record, key in zip(records, _unique_keys(records)):
        if has_metadata(record):
            ref: dict[str, Any] = {"type_of_reference": kinds.get(_get(record, "kind"), "GEN"),
                                   "title": _get(record, "title") or _get(record, "label"), "id": key}
            if _get(record, "authors"):
                ref["authors"] = [_inverted(n) for n in author_list(_get(record, "authors"))]
            if _get(record, "venue"):
                ref["secondary_title"] = _get(record, "venue")
            for src, dst in (("year", "year"), ("doi", "doi"), ("volume", "volume"), ("number", "number"),
                             ("issn", "issn"), ("publisher", "publisher")):
                if _get(record, src):
                    ref[dst] = _get(record, src)
            if _get(record, "pages"):
                start, _, end = _get(record, "pages").partition("-")
                ref["start_page"] = start
                if end:
                    ref["end_page"] = end
            if _get(record, "month").isdigit() and _get(record, "year"):
                ref["date"] = f"{_get(record, 'year')}/{int(_get(record, 'month')):02d}//"
            if _get(record, "url"):
                ref["urls"] = [_get(record, "url")]
            if _abstract(record):
                ref["abstract"] = _abstract(record)
        else:
            ref = {"type_of_reference": "GEN", "title": _get(record, "label") or _get(record, "paper_id"), "id": key,
                   "notes": [_no_metadata_note(record)]}
        out.append(ref)
    return rispy.dumps(out, implementation=_ris_writer())


_CSL_TYPES = {"article": "article-journal", "inproceedings": "paper-conference", "incollection": "chapter",
              "book": "book", "phdthesis": "thesis", "techreport": "report"}


def to_csl_json(records: Iterable[Any]) -> str:
    """CSL-JSON items, as Zotero, Pandoc and citeproc read them."""
    import json

    records = _dedupe(records)
    items = []
    for record, key in zip(records, _unique_keys(records)):
        if not has_metadata(record):
            items.append({"id": key, "type": "document", "title": _get(record, "label") or _get(record, "paper_id"),
                          "note": _no_metadata_note(record)})
            continue
        kind = _get(record, "kind")
        item: dict[str, Any] = {
            "id": key, "citation-key": key,
            "type": _CSL_TYPES.get(kind, "article" if _get(record, "arxiv") else "document"),
            "title": _get(record, "title") or _get(record, "label")}
        if _get(record, "authors"):
            item["author"] = [{"family": family, "given": given} if given else {"literal": family}
                              for given, family in map(_split_name, author_list(_get(record, "authors")))]
        if _get(record, "venue"):
            item["container-title"] = _get(record, "venue")
        for src, dst in (("volume", "volume"), ("number", "issue"), ("pages", "page"), ("issn", "ISSN"),
                         ("publisher", "publisher"), ("doi", "DOI"), ("url", "URL")):
            if _get(record, src):
                item[dst] = _get(record, src)
        if _get(record, "year").isdigit():
            parts = [int(_get(record, "year"))]
            if _get(record, "month").isdigit():
                parts.append(int(_get(record, "month")))
            item["issued"] = {"date-parts": [parts]}
        if _abstract(record):
            item["abstract"] = _abstract(record)
        items.append(item)
    return json.dumps(items, ensure_ascii=False, indent=2) + "\n"


def to_text(records: Iterable[Any]) -> str:
    """A numbered plain-text reference list, one reference line per paper."""
    return "".join(f"[{i}] {reference_line(r)}\n" for i, r in enumerate(_dedupe(records), 1))


def catalog_records(store: Any, paper_ids: Sequence[str]) -> list[Any]:
    """The catalog entries of some papers, in the given order, for the exports above.

    Lookup hits (`LookupHit`) carry no bibliographic fields: export their papers' catalog entries instead.
    """
    entries = store.get_papers(list(paper_ids))
    return [entries[pid] for pid in dict.fromkeys(paper_ids) if pid in entries]


def paper_fields(record: Any) -> dict[str, str]:
    """The optional metadata fields of `Retrieved` (rag/schema.py) for a retrieved paper."""
    return {"title": _get(record, "title"), "authors": _get(record, "authors"), "year": _get(record, "year"),
            "venue": _get(record, "venue"), "doi": _get(record, "doi"), "url": _link(record),
            "key": _get(record, "key")}


def citation_fields(record: Any, quote: str) -> dict[str, Any]:
    """The optional fields of `Citation`: metadata, the page and section the quote is in, the paragraph that holds
    it (a full text's), and the reference with that page."""
    page, section, segment = where_of(_get(record, "text"), _get(record, "layout"), quote)
    return paper_fields(record) | {"page": page, "section": section, "passage": segment,
                                   "reference": reference_line(record, page, section)}
