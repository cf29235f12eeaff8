"""The Ask tab's evidence panel: for every answer of the chat, its cited papers with the quoted sentences marked,
the papers retrieved but not cited, how strongly each carries the question, and the copy / BibTeX sources.

Abstracts, titles, quotes and references come from papers: all of it is escaped (`esc`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rag.corpus.references import to_bibtex
from rag.corpus.sections import place, where_of
from rag.index.store import CatalogEntry
from rag.schema import Answer, Citation, Retrieved
from rag.text import split_sentences
from ui.backend import Backend
from ui.cards import id_line, meta_line, paper_card, paper_link, paper_meta, shown_source, strength_badge
from ui.escape import esc
from ui.strength import Strength

log = logging.getLogger(__name__)

EMPTY_EVIDENCE = ("<p class='status-line'>Evidence for an answer appears here. Click a citation such as "
                  "[1] in any answer to see its paper and the quoted sentence.</p>")


def reference_text(c: Citation, entry: CatalogEntry | None, roots: tuple[Path, ...] = ()) -> str:
    """One plain-text reference: authors (year). Title. Venue. Link — or the project's reference line (with the
    file as users see it)."""
    meta = paper_meta(c, entry)
    if not (meta["title"] or meta["authors"]):
        where = shown_source(c.source, roots)
        return c.reference.replace(c.source, where) if c.reference and c.source else (
            c.reference or f"{c.label}. {where}#{c.position}")
    head = meta["authors"] + (f" ({meta['year']})" if meta["year"] else "")
    parts = [p for p in (head, meta["title"] or c.label, meta["venue"], paper_link(meta)) if p]
    return ". ".join(p.rstrip(".") for p in parts) + "."


def bibtex_for(entries: list[Any]) -> str | None:
    """BibTeX for some papers (None when there are none, or the export fails: the answer is shown without it)."""
    if not entries:
        return None
    try:
        out = to_bibtex(entries)
    except Exception:
        log.exception("BibTeX export failed")
        return None
    return out if isinstance(out, str) and out.strip() else None


def plain_answer(a: Answer, entries: dict[str, CatalogEntry], text: str | None = None,
                 roots: tuple[Path, ...] = ()) -> str:
    """What "Copy answer" gives: the answer as plain text, then a numbered reference list."""
    out = (a.answer if text is None else text).strip()
    if a.citations:
        out += "\n\nReferences\n" + "\n".join(f"[{c.n}] {reference_text(c, entries.get(c.paper_id), roots)}"
                                               for c in a.citations)
    return out


def _highlight(text: str, quotes: list[str]) -> str:
    """The abstract as HTML with the supporting sentences marked (all text escaped: abstracts are data)."""
    out = []
    for s in split_sentences(text):
        e = esc(s)
        out.append(f"<mark>{e}</mark>" if any(q and (q in s or s in q) for q in quotes) else e)
    return " ".join(out)


def _card(c: Citation, a: Answer, turn: int, entry: CatalogEntry | None, s: Strength | None = None,
          roots: tuple[Path, ...] = ()) -> str:
    meta = paper_meta(c, entry)
    supporting = [s for s in c.quote.split(" … ") if s]
    supporting += [ch.evidence for ch in a.checks if ch.evidence and ch.evidence_n == c.n]
    shown = entry.text if entry else ""
    place_shown = meta["page"]
    layout: str = getattr(entry, "layout", "") if entry is not None else ""
    if entry is not None and layout:
        # a full text (PDF, Markdown, HTML): the card shows the paragraph the quote is in, with its section
        page, section, segment = where_of(entry.text, entry.layout, c.quote)
        shown = segment or shown
        place_shown = place(page, section) or place_shown
    abstract = _highlight(shown, supporting) if shown else f"<mark>{esc(c.quote)}</mark>"
    title = (f" <span class='card-title'>— {esc(meta['title'])}</span>"
             if meta["title"] and meta["title"] != c.label else "")
    return (f"<div class='evidence-card' id='ev-{turn}-{c.n}' data-turn='{turn}' data-n='{c.n}' "
            f"data-paper='{esc(c.paper_id)}'><div class='card-head'><span class='card-n'>[{c.n}]</span>"
            f"{esc(c.label)}{title}{strength_badge(s)}</div>{meta_line(meta)}"
            f"{id_line(c.paper_id, c.source, c.position, place_shown, roots=roots)}"
            f"<div class='abstract'>{abstract}</div></div>")


def _also_retrieved(a: Answer, entries: dict[str, CatalogEntry], strengths: dict[str, Strength],
                    roots: tuple[Path, ...]) -> str:
    """The retrieved papers the answer does not cite, each opening its card ("" when every one is cited)."""
    cited_ids = {c.paper_id for c in a.citations}
    others = [r for r in a.retrieved if r.paper_id not in cited_ids]
    if not others:
        return ""
    head = "Closest papers" if a.abstained else "Also retrieved (not cited)"
    items = []
    for r in others:
        entry = entries.get(r.paper_id)
        title = paper_meta(r, entry)["title"]
        t = f" — {esc(title)}" if title and title != r.label else ""
        card = (paper_card(entry, roots) if entry is not None else
                f"<div class='meta'>{esc(shown_source(r.source, roots))}#{r.position}</div>")
        items.append(f"<li data-paper='{esc(r.paper_id)}'><details class='retrieved-paper'><summary>"
                     f"<b>{esc(r.label)}</b>{t} {strength_badge(strengths.get(r.paper_id))}</summary>"
                     f"{card}</details></li>")
    return f"<div class='also-retrieved'><h4>{head}</h4><ul>{''.join(items)}</ul></div>"


def turn_evidence(a: Answer, turn: int, entries: dict[str, CatalogEntry], active: bool,
                  text: str | None = None, strengths: dict[str, Strength] | None = None,
                  roots: tuple[Path, ...] = ()) -> str:
    """One answer's evidence: its cited papers, the uncited retrieved ones (each opens its card), copy and
    BibTeX buttons; each paper says how strongly it carries the question."""
    strengths = strengths or {}
    cited = [entries.get(c.paper_id) for c in a.citations]
    bib = bibtex_for([e for e in cited if e is not None]) if a.citations else None
    tools = f"<button data-action='copy-answer' data-turn='{turn}'>Copy answer</button>"
    if bib:
        tools += (f"<button data-action='copy-bibtex' data-turn='{turn}'>Copy BibTeX</button>"
                  f"<button data-action='download-bibtex' data-turn='{turn}'>Download .bib</button>")
    parts = [f"<div class='turn-evidence{' active' if active else ''}' data-turn='{turn}'>",
             (f"<div class='turn-head'><span class='turn-question'>Answer {turn + 1}: “{esc(a.question)}”</span>"
              f"{tools}</div>")]
    for u in a.unsupported:
        parts.append(f"<div class='unsupported'>⚠ Not supported by the cited sources: {esc(u['sentence'])} "
                     f"<em>({esc(u['reason'])})</em></div>")
    if a.citations:
        parts.extend(_card(c, a, turn, entries.get(c.paper_id), strengths.get(c.paper_id), roots)
                     for c in a.citations)
    else:
        parts.append("<p class='status-line'>No paper is cited for this answer.</p>")
    also = _also_retrieved(a, entries, strengths, roots)
    if also:
        parts.append(also)
    parts.append(f"<textarea class='copy-source plain' readonly>{esc(plain_answer(a, entries, text, roots))}"
                 "</textarea>")
    if bib:
        parts.append(f"<textarea class='copy-source bibtex' readonly>{esc(bib)}</textarea>")
    parts.append("</div>")
    return "".join(parts)


def _paper_ids(a: Answer) -> list[str]:
    """The papers an answer cites, then those it retrieved (repeats kept: the store reads each once)."""
    papers: list[Citation | Retrieved] = [*a.citations, *a.retrieved]
    return [x.paper_id for x in papers]


def evidence_html(turns: list[tuple[Answer, str | None]], backend: Backend, active: int | None = None,
                  note: str = "") -> str:
    """Every answer's evidence (one shown at a time: a chip shows its own answer's), plus an optional note.

    `turns` are (answer, text shown, None for the answer's own text); `active` is the answer shown (default the
    latest); with a `note` (the last question failed) no answer's evidence is shown until a chip is clicked.
    """
    if not turns and not note:
        return EMPTY_EVIDENCE
    ids = [pid for a, _ in turns for pid in _paper_ids(a)]
    entries = backend.entries(ids) if ids else {}
    active = (len(turns) - 1 if active is None else active) if not note else -1
    parts = [turn_evidence(a, i, entries, i == active, text, backend.strengths(a), backend.roots)
             for i, (a, text) in enumerate(turns)]
    if note:
        parts.append(f"<div class='turn-evidence active' data-turn='note'><p class='status-line'>{esc(note)}</p>"
                     "</div>")
    return "<div class='evidence-root'>" + "".join(parts) + "</div>"
