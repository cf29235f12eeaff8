"""A paper as every tab shows it: its metadata line, its id · file line, its card, and only safe links.

Metadata fields are optional (read with getattr, so older stores and answers still render), and everything that
comes from a paper is written into HTML through `esc`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from rag.index.store import CatalogEntry
from ui.escape import esc
from ui.strength import Strength


def safe_url(url: str) -> str:
    """A paper's link if it is a plain http(s) URL, else "" (no javascript:, data: or relative links)."""
    u = (url or "").strip()
    try:
        parsed = urlparse(u)
    except ValueError:
        return ""
    return u if parsed.scheme in ("http", "https") and parsed.netloc and not re.search(r"\s", u) else ""


def paper_meta(*objs: Any) -> dict[str, str]:
    """title/authors/year/venue/doi/url/page of a paper, from the first object that has each field."""
    out = {}
    for name in ("title", "authors", "year", "venue", "doi", "url", "page"):
        value = next((v for o in objs if o is not None and (v := getattr(o, name, None)) not in
                      (None, "", 0, [], ())), "")
        out[name] = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return out


def paper_link(meta: dict[str, str]) -> str:
    """The paper's URL, or its DOI as a doi.org link ("" when neither is a safe http(s) address)."""
    if meta.get("url") and safe_url(meta["url"]):
        return safe_url(meta["url"])
    doi = meta.get("doi", "").strip()
    if doi:
        doi = re.sub(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", "", doi, flags=re.I)
        return safe_url(f"https://doi.org/{doi}")
    return ""


def meta_line(meta: dict[str, str]) -> str:
    """authors · year · venue · link, escaped; "" when the input had none of them."""
    parts = [esc(meta[k]) for k in ("authors", "year", "venue") if meta.get(k)]
    link = paper_link(meta)
    if link:
        shown = esc(meta["doi"]) if meta.get("doi") and not meta.get("url") else esc(urlparse(link).netloc)
        parts.append(f"<a href='{esc(link)}' target='_blank' rel='noopener noreferrer nofollow'>{shown} ↗</a>")
    return f"<div class='meta paper-meta'>{' · '.join(parts)}</div>" if parts else ""


def shown_source(source: str, roots: tuple[Path, ...] = ()) -> str:
    """A paper's file as users see it: under the corpus (or upload) folder it was read from, never the server's
    absolute path (a file outside every folder shows by its name)."""
    path = Path(os.path.abspath(source or "."))
    for root in roots:
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        return root.name if rel == Path(".") else f"{root.name}/{rel.as_posix()}"
    return path.name


def id_line(paper_id: str, source: str, position: int, page: str = "", extra: str = "",
            roots: tuple[Path, ...] = ()) -> str:
    """The id · source#position line of a paper card (ids and paths come from user files: escaped)."""
    # `page` is a place ("p. 5, §4.2", "§4.2 Datasets", "abstract") or a bare page number from the metadata
    shown = esc(page) if page.startswith(("p.", "§", "abstract")) else "page " + esc(page)
    tail = (f" · {shown}" if page else "") + (f" · {extra}" if extra else "")
    return f"<div class='meta'>id {esc(paper_id)} · {esc(shown_source(source, roots))}#{position}{tail}</div>"


def strength_badge(s: Strength | None) -> str:
    """'evidence: strong' with a tooltip saying what it means ("" when the paper was not scored)."""
    if s is None:
        return ""
    return (f"<span class='strength strength-{esc(s.word)}' title='{esc(s.tip())}' tabindex='0'>"
            f"evidence: {esc(s.word)}</span>")


def paper_card(e: CatalogEntry, roots: tuple[Path, ...] = ()) -> str:
    """A paper with its metadata, id · file line and whole abstract (the Papers tab, uncited evidence)."""
    meta = paper_meta(e)
    title = (f" <span class='card-title'>— {esc(meta['title'])}</span>"
             if meta["title"] and meta["title"] != e.label else "")
    return (f"<div class='evidence-card paper-card' data-paper='{esc(e.paper_id)}'><div class='card-head'>"
            f"{esc(e.label)}{title}</div>{meta_line(meta)}{id_line(e.paper_id, e.source, e.position, roots=roots)}"
            f"<div class='abstract'>{esc(e.text)}</div></div>")
