"""References out: the reference line shown with citations, and BibTeX / RIS / plain-text exports.

Works on any record with the catalog's fields (CatalogEntry, PaperHit, corpus Paper): fields a record lacks
count as missing. Only metadata the input really had is shown; a paper-list header is the list's name, never a
venue. Papers without metadata are exported as a clearly marked minimal entry (`@misc` with a note), so an
export never looks more complete than its sources.

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
    if page:
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


def to_bibtex(records: Iterable[Any]) -> str:
    """BibTeX entries (one per paper) that bibtexparser and BibTeX read back."""
    import bibtexparser
    from bibtexparser.model import Entry, Field

    records = _dedupe(records)
    entries = []
    for record, key in zip(records, _unique_keys(records)):
        fields: list[tuple[str, str]] = []
        if has_metadata(record):
            kind = _get(record, "kind") or ("inproceedings" if _get(record, "venue") else "misc")
            if kind not in ("article", "inproceedings", "incollection", "book", "phdthesis", "techreport", "misc"):
                kind = "misc"
            fields.append(("title", "{" + _tex(_get(record, "title") or _get(record, "label")) + "}"))
            if _get(record, "authors"):
                fields.append(("author", " and ".join(_tex(n) for n in author_list(_get(record, "authors")))))
            venue_field = {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle",
                           "phdthesis": "school", "techreport": "institution"}.get(kind, "howpublished")
            if _get(record, "venue"):
                fields.append((venue_field, _tex(_get(record, "venue"))))
            elif kind == "article":
                kind = "misc"  # an @article needs a journal
            for name in ("year", "doi"):
                if _get(record, name):
                    fields.append((name, _tex(_get(record, name))))
            if _get(record, "arxiv"):
                fields += [("eprint", _get(record, "arxiv")), ("archiveprefix", "arXiv")]
            if _get(record, "url"):
                fields.append(("url", _get(record, "url").replace("{", "%7B").replace("}", "%7D")))
        else:
            kind = "misc"
            fields.append(("title", "{" + _tex(_get(record, "label") or _get(record, "paper_id")) + "}"))
            fields.append(("note", _tex(_no_metadata_note(record))))
        if _abstract(record) and has_metadata(record):
            fields.append(("abstract", _tex(_abstract(record))))
        entries.append(Entry(kind, key, [Field(k, v) for k, v in fields]))
    return bibtexparser.write_string(bibtexparser.Library(entries))


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
            for src, dst in (("year", "year"), ("doi", "doi")):
                if _get(record, src):
                    ref[dst] = _get(record, src)
            if _get(record, "url"):
                ref["urls"] = [_get(record, "url")]
            if _abstract(record):
                ref["abstract"] = _abstract(record)
        else:
            ref = {"type_of_reference": "GEN", "title": _get(record, "label") or _get(record, "paper_id"), "id": key,
                   "notes": [_no_metadata_note(record)]}
        out.append(ref)
    return rispy.dumps(out, implementation=_ris_writer())


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
            "venue": _get(record, "venue"), "doi": _get(record, "doi"), "url": _link(record), "key": _get(record, "key")}


def citation_fields(record: Any, quote: str) -> dict[str, Any]:
    """The optional fields of `Citation`: metadata, the page the quote is on, and the reference with that page."""
    page, section, _segment = where_of(_get(record, "text"), _get(record, "layout"), quote)
    return paper_fields(record) | {"page": page, "section": section,
                                   "reference": reference_line(record, page, section)}
