"""CSL-JSON, the format Zotero's "Export Library… → CSL JSON" writes: an array of CSL items.

Volume, issue, page, the month of `issued`, ISSN and publisher are kept for the exports. Zotero's item ids are
URIs (`http://zotero.org/users/…/items/…`): notes name an item by its citation key or title instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

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
    verbatim,
    year_of,
)
from rag.corpus.records import CorpusError, FileReport, load_json

# CSL item types -> the BibTeX entry types references are exported as.
KINDS = {"article-journal": "article", "paper-conference": "inproceedings", "chapter": "incollection",
         "book": "book", "thesis": "phdthesis", "report": "techreport", "article": "misc", "manuscript": "misc",
         "webpage": "misc", "post-weblog": "misc"}


def _names(value: object) -> list[str]:
    out = []
    for a in value if isinstance(value, list) else []:
        if isinstance(a, dict):
            name = clean_field(a.get("literal")) or display_name(str(a.get("family") or ""),
                                                                 " ".join(str(a.get(k) or "") for k in
                                                                          ("given", "non-dropping-particle")))
            if name:
                out.append(name)
        elif isinstance(a, str) and a.strip():
            out.append(clean_field(a))
    return out


def _year(issued: object) -> str:
    if isinstance(issued, dict):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            return year_of(parts[0][0])
        return year_of(issued.get("raw"), issued.get("literal"))
    return year_of(issued)


def _month(issued: object) -> str:
    if isinstance(issued, dict):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and len(parts[0]) > 1:
            return month_of(parts[0][1])
        return date_parts(issued.get("raw") or issued.get("literal"))[1]
    return ""


def read(path: Path, max_bytes: int, report: FileReport) -> list[tuple[int, dict]]:
    """Items with an abstract become records; items without one are reported by id."""

    text = read_text(path, max_bytes)
    try:
        data = load_json(text, report, report.source)
    except json.JSONDecodeError as e:
        raise CorpusError(f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(data, list):
        raise CorpusError("expected a CSL-JSON array of items")
    records = []
    missing = []
    for i, item in enumerate(data, 1):
        where = f"{report.source}[{i}]"
        if not isinstance(item, dict):
            report.problems.append(f"{where}: expected a CSL item (JSON object), got {type(item).__name__}")
            continue
        # Zotero's CSL ids are item URIs, not citation keys: only a key-like id is kept as the key
        item_id = str(item.get("id") or "")
        key = str(item.get("citation-key") or (item_id if re.fullmatch(r"[\w:.+\-]+", item_id) else ""))
        abstract = item.get("abstract")
        if not isinstance(abstract, str) or not abstract.strip():
            missing.append(entry_name(key, str(item.get("title") or ""), f"#{i}"))
            continue
        url = verbatim(item.get("URL"))
        doi = doi_of(verbatim(item.get("DOI")), url)
        arxiv = arxiv_of(url, item.get("number"), item.get("note"), item.get("container-title"),
                         item.get("publisher"))
        records.append((i, {
            "abstract": abstract, "title": clean_field(item.get("title")), "authors": _names(item.get("author")),
            "venue": clean_field(item.get("container-title") or item.get("event-title") or item.get("event")
                                 or (item.get("publisher") if item.get("type") in ("article", "report") else "")),
            "year": _year(item.get("issued")), "doi": doi, "arxiv": arxiv,
            "url": link_of(url, doi, arxiv), "key": key,
            "kind": KINDS.get(str(item.get("type") or ""), "misc"),
            "volume": clean_field(item.get("volume")), "number": clean_field(item.get("issue")),
            "pages": pages_of(item.get("page")), "month": _month(item.get("issued")),
            "issn": clean_field(item.get("ISSN")), "publisher": clean_field(item.get("publisher")),
        }))
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        report.warnings.append(f"{report.source}: {len(missing)} item{'' if len(missing) == 1 else 's'} "
                               f"without an abstract skipped: {shown}")
    if not records and not report.problems:
        raise CorpusError("no CSL item has an 'abstract'" if missing else "no CSL items found")
    return records
