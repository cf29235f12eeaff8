"""The web UI (Gradio 6): streaming cited chat with clickable citations and per-answer evidence, citation lookup,
and a paper browser with upload.

A thin client of `rag`: every answer comes from `rag.answer.conversation.Conversation` (one per browser session), and the
`/ask`, `/lookup` and `/papers` API endpoints return the same fields as `papers ask --json`.

Everything that comes from a paper (abstract, title, label, authors, quotes) is untrusted: it is written into
HTML only through `esc`, which also neutralises Markdown, so it shows as text in the chat and in the evidence
panel. The chat is rendered without Markdown; its HTML is built here.
"""

from __future__ import annotations

import html
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import gradio as gr

from rag.answer.cite import QUOTED_RE
from rag.answer.question import clean_question
from rag.corpus.references import to_bibtex
from rag.corpus.sections import abstract_of, place, where_of
from rag.errors import PapersError, QuestionError
from rag.index.store import CatalogEntry
from rag.schema import Answer, Citation, record
from rag.service import Assistant, AssistantHolder, Conversation, StreamView
from rag.settings import Settings
from rag.text import split_sentences
from ui.escape import esc, esc_plain
from ui.export import chat_markdown, write_export
from ui.login import ClientAddress, LoginGuard
from ui.strength import Strength, Strengths

log = logging.getLogger(__name__)

EXAMPLES = [
    "Over how many test steps does RecMem stay stable?",
    "Which paper proposes a training-free way to make image-to-video models less static?",
    "Which papers study test-time scaling?",
    "What speedup does CoRF report?",
]
_HERE = Path(__file__).resolve().parent
CSS = (_HERE / "app.css").read_text(encoding="utf-8")
JS = (_HERE / "app.js").read_text(encoding="utf-8")
VERSION_WAIT_S = 3.0  # after an upload, how long to wait for the retriever to load the new index version
UPLOAD_DIR = "uploads"  # under PAPERS_DATA_DIR: uploaded files are kept there and ingested like any corpus path

_CITE_RE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_MARK = "\ue000"  # placeholder for a repaired-citation mark while a line is escaped


def safe_url(url: str) -> str:
    """A paper's link if it is a plain http(s) URL, else "" (no javascript:, data: or relative links)."""
    u = (url or "").strip()
    try:
        parsed = urlparse(u)
    except ValueError:
        return ""
    return u if parsed.scheme in ("http", "https") and parsed.netloc and not re.search(r"\s", u) else ""


def upload_target(folder: Path, name: str, source: Path) -> Path:
    """Where an uploaded file is kept: its own name, unless an earlier upload of other content has it, then
    "name (2).ext", "name (3).ext", ... An upload never replaces another (whose papers would be removed); the
    same content uploaded again is found under the name it has."""
    import filecmp

    stem, suffix = Path(name).stem, Path(name).suffix
    for n in range(1, 10_000):
        target = folder / (name if n == 1 else f"{stem} ({n}){suffix}")
        if not target.exists() or filecmp.cmp(target, source, shallow=False):  # compared in blocks, bounded
            return target
    raise PapersError(f"{name}: too many uploads with this name")


FIRST_WORDS = 8  # words of the abstract that name an untitled paper in the scope picker


def first_words(text: str, n: int = FIRST_WORDS) -> str:
    """The opening words of an abstract, to tell apart papers that have no title."""
    words = (text or "").split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def choice_label(e: CatalogEntry) -> str:
    """A paper as the scope picker lists it: its label and its title, or the first words of its abstract."""
    title = getattr(e, "title", "") or ""
    if title and title != e.label:
        return f"{e.label} — {title}"
    opening = first_words(abstract_of(e.text, getattr(e, "layout", "") or ""))
    return f"{e.label} — {opening}" if opening else e.label


@dataclass
class Catalog:
    """The indexed papers of one index version, and that version's key (what a session last drew)."""

    version: str
    papers: list[CatalogEntry]

    def choices(self) -> list[tuple[str, str]]:
        return [(choice_label(e), e.paper_id) for e in self.papers]


class Backend:
    """The shared assistant (opened on first use, so the UI starts and says why even without an index) and what
    the UI's sessions share besides it."""

    def __init__(self, settings: Settings, assistant: Assistant | None = None) -> None:
        self.settings = settings
        self.holder = AssistantHolder(settings, assistant)
        self.ingest_lock = threading.Lock()  # one upload ingest at a time per process
        self._catalog_lock = threading.Lock()
        self._catalog: Catalog | None = None
        self._catalog_index: object = None  # the local index version the catalog was read from
        self._versions = 0
        self._strengths = Strengths()

    def assistant(self) -> Assistant:
        return self.holder.get()

    def catalog(self) -> Catalog:
        """The papers of the index version questions are answered from now, read once per version.

        Every session's header, scope picker and Papers table are drawn from this, so a paper uploaded in one
        browser shows in every other one (and after a reload), not only in the tab that uploaded it.
        """
        try:
            assistant = self.assistant()
            index = assistant.retriever.local_index
        except PapersError:
            return Catalog("none", [])
        with self._catalog_lock:
            if self._catalog is None or self._catalog_index is not index:
                self._versions += 1
                self._catalog = Catalog(str(self._versions), assistant.papers())
                self._catalog_index = index
            return self._catalog

    def papers(self) -> list[CatalogEntry]:
        return self.catalog().papers

    @property
    def roots(self) -> tuple[Path, ...]:
        """The folders papers are read from (the corpus paths and the upload folder), as absolute paths."""
        paths = [*self.settings.corpus_paths, Path(self.settings.data_dir) / UPLOAD_DIR]
        return tuple(Path(os.path.abspath(p)) for p in paths)

    def strengths(self, a: Answer) -> dict[str, Strength]:
        """How strongly each paper the answer retrieved carries what was searched ({} without an index)."""
        try:
            assistant = self.assistant()
        except PapersError:
            return {}
        ids = [r.paper_id for r in a.retrieved] or [c.paper_id for c in a.citations]
        return self._strengths.of(assistant, self.catalog().version, a.rewritten or a.question, ids)

    def paper_choices(self) -> list[tuple[str, str]]:
        return self.catalog().choices()

    def entries(self, paper_ids: list[str]) -> dict[str, CatalogEntry]:
        try:
            return self.assistant().retriever.store.get_papers(list(dict.fromkeys(paper_ids)))
        except Exception:  # the evidence falls back to what the answer carries
            log.exception("could not read paper records")
            return {}


# --- paper metadata (optional fields: read with getattr, so older stores and answers still render) ------------

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


# --- rendering: chat ------------------------------------------------------------------------------------

def _highlight(text: str, quotes: list[str]) -> str:
    """The abstract as HTML with the supporting sentences marked (all text escaped: abstracts are data)."""
    out = []
    for s in split_sentences(text):
        e = esc(s)
        out.append(f"<mark>{e}</mark>" if any(q and (q in s or s in q) for q in quotes) else e)
    return " ".join(out)


def _tip(c: Citation, entry: CatalogEntry | None) -> str:
    title = paper_meta(c, entry)["title"]
    quote = c.quote if len(c.quote) <= 320 else c.quote[:317].rstrip() + "…"
    title_html = f"<span class='tip-title'>{esc(title)}</span>" if title and title != c.label else ""
    return f"<span class='cite-tip'><b>[{c.n}] {esc(c.label)}</b>{title_html}<span class='tip-quote'>“{esc(quote)}”</span></span>"


def _chips(line: str, turn: int, tips: dict[int, str], marks: list[str]) -> str:
    """A line of answer text, escaped, with every known [n] turned into a chip and repair marks put back."""
    out, last = [], 0
    quoted = [q.span() for q in QUOTED_RE.finditer(line)]  # a paper's own "[32]" inside a quote is its text
    for m in _CITE_RE.finditer(line):
        nums = [int(x) for x in m.group(1).split(",")]
        if not all(n in tips for n in nums) or any(a < m.start() < b for a, b in quoted):
            continue
        out.append(esc(line[last:m.start()]))
        out.extend(f"<a class='cite-chip' href='#ev-{turn}-{n}'>[{n}]{tips[n]}</a>" for n in nums)
        last = m.end()
    out.append(esc(line[last:]))
    text = "".join(out)
    for i, how in enumerate(marks):
        text = text.replace(f"{_MARK}{i}{_MARK}", f"<span class='repaired-mark' title='citation repaired: "
                                                  f"{esc(how)}'>↺ {esc(how)}</span>")
    return text


def model_draft_rejected(a: Answer) -> bool:
    """The model wrote an answer that is not what is shown: rejected by the check, or replaced by a fallback."""
    if not a.raw_answer:
        return False
    supported = any(c.supported for c in a.checks)
    return a.abstained or a.mode != "llm" or bool(getattr(a, "fallback", None)) or not supported


def answer_html(a: Answer, turn: int, entries: dict[str, CatalogEntry], text: str | None = None) -> str:
    """An answer as chat HTML: chips for citations, repaired sentences marked, the rejected draft expandable."""
    tips = {c.n: _tip(c, entries.get(c.paper_id)) for c in a.citations}
    body = a.answer if text is None else text
    marks: list[str] = []
    for ch in a.checks:
        how = getattr(ch, "repaired", "") or ""
        if how and ch.sentence and ch.sentence in body:
            body = body.replace(ch.sentence, f"{ch.sentence}{_MARK}{len(marks)}{_MARK}", 1)
            marks.append(how)
    lines = []
    for line in body.split("\n"):
        if line.strip():
            cls = "answer-line unsupported-line" if line.lstrip().startswith("⚠") else "answer-line"
            lines.append(f"<div class='{cls}'>{_chips(line, turn, tips, marks)}</div>")
    out = f"<div class='answer' data-turn='{turn}'><div class='answer-text'>{''.join(lines)}</div>"
    if a.raw_answer and a.raw_answer.strip() and model_draft_rejected(a):
        out += ("<details class='draft'><summary>Model's draft — unsupported by the sources</summary>"
                f"<div class='draft-text'>{esc(a.raw_answer.strip())}</div></details>")
    return out + "</div>"


def streaming_html(text: str) -> str:
    """The answer while it streams in (escaped; chips come with the checked answer)."""
    lines = "".join(f"<div class='answer-line'>{esc(x)}</div>" for x in text.split("\n") if x.strip())
    return f"<div class='answer streaming'><div class='answer-text'>{lines or '…'}</div></div>"


def plain_answer(a: Answer, entries: dict[str, CatalogEntry], text: str | None = None,
                 roots: tuple[Path, ...] = ()) -> str:
    """What "Copy answer" gives: the answer as plain text, then a numbered reference list."""
    out = (a.answer if text is None else text).strip()
    if a.citations:
        out += "\n\nReferences\n" + "\n".join(f"[{c.n}] {reference_text(c, entries.get(c.paper_id), roots)}"
                                               for c in a.citations)
    return out


# --- rendering: evidence --------------------------------------------------------------------------------

EMPTY_EVIDENCE = ("<p class='status-line'>Evidence for an answer appears here. Click a citation such as "
                  "[1] in any answer to see its paper and the quoted sentence.</p>")


def _card(c: Citation, a: Answer, turn: int, entry: CatalogEntry | None, s: Strength | None = None,
          roots: tuple[Path, ...] = ()) -> str:
    meta = paper_meta(c, entry)
    supporting = [s for s in c.quote.split(" … ") if s]
    supporting += [ch.evidence for ch in a.checks if ch.evidence and ch.evidence_n == c.n]
    shown = entry.text if entry else ""
    place_shown = meta["page"]
    if entry is not None and getattr(entry, "layout", ""):
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
    cited_ids = {c.paper_id for c in a.citations}
    others = [r for r in a.retrieved if r.paper_id not in cited_ids]
    if others:
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
        parts.append(f"<div class='also-retrieved'><h4>{head}</h4><ul>{''.join(items)}</ul></div>")
    parts.append(f"<textarea class='copy-source plain' readonly>{esc(plain_answer(a, entries, text, roots))}"
                 "</textarea>")
    if bib:
        parts.append(f"<textarea class='copy-source bibtex' readonly>{esc(bib)}</textarea>")
    parts.append("</div>")
    return "".join(parts)


def evidence_html(turns: list[tuple[Answer, str]], backend: Backend, active: int | None = None,
                  note: str = "") -> str:
    """Every answer's evidence (one shown at a time: a chip shows its own answer's), plus an optional note.

    `turns` are (answer, text shown); `active` is the answer shown (default the latest); with a `note` (the
    last question failed) no answer's evidence is shown until a chip is clicked.
    """
    if not turns and not note:
        return EMPTY_EVIDENCE
    ids = [x.paper_id for a, _ in turns for x in (*a.citations, *a.retrieved)]
    entries = backend.entries(ids) if ids else {}
    active = (len(turns) - 1 if active is None else active) if not note else -1
    parts = [turn_evidence(a, i, entries, i == active, text, backend.strengths(a), backend.roots)
             for i, (a, text) in enumerate(turns)]
    if note:
        parts.append(f"<div class='turn-evidence active' data-turn='note'><p class='status-line'>{esc(note)}</p>"
                     "</div>")
    return "<div class='evidence-root'>" + "".join(parts) + "</div>"


def status_text(answer: Answer, settings: Settings) -> str:
    t = answer.timings_ms
    if answer.mode == "llm":
        who = f"LLM ({settings.llm_model})"
        if "first_token_ms" in t:
            who += f" · first token {t['first_token_ms'] / 1000:.1f} s"
    else:
        who = "extractive (quotes from the abstracts)"
    line = f"Answered by: {who} · {t.get('total_ms', 0) / 1000:.2f} s"
    if answer.abstained:
        line += " · abstained"
    if answer.notice:
        line += f" · {answer.notice}"
    if answer.rewritten:
        line += f" · searched for: “{answer.rewritten}”"
    return esc_plain(line)


def lookup_html(hits: list[Any], roots: tuple[Path, ...] = ()) -> str:
    """Lookup results with a match strength (strong / weak / none) when the scorer gives one; no raw RRF."""
    if not hits:
        return "<p>No matching papers.</p>"
    rows = []
    for i, h in enumerate(hits, 1):
        meta = paper_meta(h)
        strength = getattr(h, "strength", None)
        badge = f"<span class='strength strength-{esc(strength)}'>match: {esc(strength)}</span>" if strength else ""
        title = (f" <span class='card-title'>— {esc(meta['title'])}</span>"
                 if meta["title"] and meta["title"] != h.label else "")
        rows.append(
            f"<div class='evidence-card' data-paper='{esc(h.paper_id)}'>"
            f"<div class='card-head'>{i}. {esc(h.label)}{title}{badge}</div>{meta_line(meta)}"
            f"{id_line(h.paper_id, h.source, h.position, roots=roots)}<mark>{esc(h.sentence)}</mark>"
            f"<code class='lookup-ref' title='Reference line (select to copy)'>{esc(h.reference)}</code></div>")
    return "\n".join(rows)


def scope_banner(scope: list[str] | None, backend: Backend) -> str:
    """The visible sign that answers are restricted to some papers ("" when every paper is searched)."""
    if not scope:
        return ""
    entries = backend.entries(scope)
    names = "".join(f"<span class='scope-paper'>{esc(entries[p].label if p in entries else p)}</span>"
                    for p in scope)
    n = len(scope)
    return (f"<div class='scope-active' role='status'><b>Scope active:</b> answers come only from "
            f"{n} selected paper{'s' if n != 1 else ''} {names}</div>")


def search_papers(entries: list[CatalogEntry], query: str) -> list[CatalogEntry]:
    """The papers whose label, title, authors, year, venue, id or abstract hold every word of the query."""
    words = (query or "").casefold().split()
    if not words:
        return entries
    out = []
    for e in entries:
        meta = paper_meta(e)
        hay = " ".join([e.label, e.paper_id, *meta.values(), e.text]).casefold()
        if all(w in hay for w in words):
            out.append(e)
    return out


def paper_rows(entries: list[CatalogEntry]) -> list[list[Any]]:
    return [[e.label, paper_meta(e)["title"], paper_meta(e)["authors"], paper_meta(e)["year"],
             paper_meta(e)["venue"], e.paper_id] for e in entries]


PAPER_HEADERS = ["label", "title", "authors", "year", "venue", "id"]
# Fixed widths: on a phone the table scrolls sideways instead of squeezing the title to a letter per line.
PAPER_COLUMN_WIDTHS = ["130px", "260px", "170px", "60px", "120px", "120px"]


def paper_card(e: CatalogEntry, roots: tuple[Path, ...] = ()) -> str:
    meta = paper_meta(e)
    title = f" <span class='card-title'>— {esc(meta['title'])}</span>" if meta["title"] and meta["title"] != e.label else ""
    return (f"<div class='evidence-card paper-card' data-paper='{esc(e.paper_id)}'><div class='card-head'>"
            f"{esc(e.label)}{title}</div>{meta_line(meta)}{id_line(e.paper_id, e.source, e.position, roots=roots)}"
            f"<div class='abstract'>{esc(e.text)}</div></div>")


def ingest_lines(report: Any) -> list[str]:
    """The same per-file messages and summary as `papers ingest`."""
    lines = [f"skipped: {x}" for x in report.problems] + [f"note: {x}" for x in report.warnings + report.duplicates]
    lines.append(f"{report.papers_seen} papers read; {len(report.added)} added, {len(report.reembedded)} "
                 f"re-embedded, {len(report.relocated)} moved, {len(report.removed)} removed, "
                 f"{report.unchanged} unchanged; {report.chunks_embedded} chunks embedded; "
                 f"{report.total_papers} papers indexed ({report.seconds:.1f} s)")
    return lines


def _friendly(error: Exception) -> str:
    if isinstance(error, QuestionError):
        return f"⚠ {error}"
    if isinstance(error, PapersError):
        return f"⚠ The paper index is not available: {error}"
    log.exception("unexpected error in the UI")
    return f"⚠ Something went wrong ({type(error).__name__}). Please try again."


def _notice_html(text: str) -> str:
    return f"<div class='answer notice'><div class='answer-text'>{esc(text)}</div></div>"


def enclosing_tab(block: gr.components.Component) -> gr.Tab:
    """The tab a component was laid out in (its tab's select event redraws what the tab shows)."""
    parent = getattr(block, "parent", None)
    while parent is not None and not isinstance(parent, gr.Tab):
        parent = getattr(parent, "parent", None)
    if parent is None:
        raise ValueError("the component is not inside a tab")
    return parent


def build_app(settings: Settings, assistant: Assistant | None = None) -> gr.Blocks:
    """The whole UI; `assistant` may be given (tests) or is created on first use."""
    backend = Backend(settings, assistant)
    modes = ["extractive", "llm"] if settings.llm_configured else ["extractive"]
    default_mode = settings.effective_answer_mode

    def _turns(conversation: Conversation | None, shown: list[str | None]) -> list[tuple[Answer, str | None]]:
        turns = conversation.turns if conversation is not None else []
        shown = list(shown) + [None] * (len(turns) - len(shown))
        return [(t.answer, s) for t, s in zip(turns, shown)]

    def respond(message: str, history: list[dict], conversation: Conversation | None, shown: list[str | None],
                mode: str, k: float, scope: list[str] | None) -> Iterator[tuple[Any, ...]]:
        history = list(history or [])
        shown = list(shown or [])
        if not (message or "").strip():  # nothing asked: no bubble, the status line says why
            yield history, gr.skip(), "Type a question first.", conversation, shown, gr.skip()
            return
        try:
            clean_question(message, settings.max_question_chars)
        except QuestionError as e:  # refused: said in the chat, and the text stays in the box to be shortened
            history.append({"role": "assistant", "content": _notice_html(f"⚠ {e}")})
            yield (history, evidence_html(_turns(conversation, shown), backend, note=f"Not answered: {e}"),
                   "Not answered.", conversation, shown, gr.skip())
            return
        # The user's own words: only HTML needs escaping (the chat renders no Markdown).
        history.append({"role": "user", "content": html.escape(message, quote=False)})
        history.append({"role": "assistant", "content": streaming_html("")})
        try:
            yield history, gr.skip(), "Searching the abstracts…", conversation, shown, ""
            if conversation is None:
                conversation = backend.assistant().conversation()
            stream = StreamView()
            for event in conversation.stream(message, k=int(k), paper_ids=scope or None, mode=mode):
                stream.feed(event)
                if event.kind in ("token", "reset"):
                    history[-1] = {"role": "assistant", "content": streaming_html(stream.text)}
                    yield history, gr.skip(), "Answering…", conversation, shown, gr.skip()
                elif event.kind == "final" and stream.answer is not None:
                    a = stream.answer
                    view = None
                    shown = (shown + [None] * len(conversation.turns))[:len(conversation.turns) - 1] + [view]
                    turn = len(conversation.turns) - 1
                    entries = backend.entries([c.paper_id for c in a.citations])
                    history[-1] = {"role": "assistant", "content": answer_html(a, turn, entries, view)}
                    yield (history, evidence_html(_turns(conversation, shown), backend), status_text(a, settings),
                           conversation, shown, gr.skip())
        except Exception as e:  # every failure becomes a message in the chat, never a traceback
            if history and history[-1]["role"] == "assistant":
                history.pop()
            message_text = _friendly(e)
            history.append({"role": "assistant", "content": _notice_html(message_text)})
            yield (history, evidence_html(_turns(conversation, shown), backend, note=f"Not answered: {message_text}"),
                   "Not answered.", conversation, shown, gr.skip())

    def pick_example(evt: gr.SelectData) -> str:
        return evt.value["text"]

    def reset() -> tuple[Any, ...]:
        """New chat: the messages, the conversation memory, every answer's evidence and the scope."""
        return [], EMPTY_EVIDENCE, "", None, [], "", gr.update(value=[]), gr.update(value=None, interactive=False)

    def export_chat(conversation: Conversation | None, shown: list[str | None]) -> Any:
        """The chat so far as a Markdown file with each answer's references, for the download button."""
        turns = _turns(conversation, shown)
        if not turns:
            return gr.update(value=None, interactive=False)
        entries = backend.entries([c.paper_id for a, _ in turns for c in a.citations])
        text = chat_markdown(turns, lambda c: reference_text(c, entries.get(c.paper_id), backend.roots))
        return gr.update(value=write_export(text), interactive=True)

    def scope_changed(scope: list[str] | None) -> tuple[str, Any]:
        return scope_banner(scope, backend), gr.update(visible=bool(scope))

    def ui_lookup(query: str, k: float) -> str:
        try:
            return lookup_html(backend.assistant().cite(query, k=int(k)), backend.roots)
        except Exception as e:
            return f"<p>{esc(_friendly(e))}</p>"

    def show_paper(evt: gr.SelectData) -> tuple[Any, ...]:
        try:
            pid = str(evt.row_value[-1])
            e = backend.entries([pid])[pid]
        except Exception as err:
            return f"<p>{esc(_friendly(err))}</p>", "", gr.update(visible=False)
        return paper_card(e, backend.roots), pid, gr.update(visible=True, value=f"Remove {e.label} from the index")

    def remove_paper(pid: str) -> tuple[Any, ...]:
        """`papers remove` for the paper shown: the files are left as they are, later ingests keep it out."""
        if not pid:
            return gr.skip(), gr.skip(), "", gr.update(visible=False)
        from rag.index.ingest import remove

        with backend.ingest_lock:
            before = backend.catalog().version
            try:
                report = remove(settings, [pid], progress=False)
            except PapersError as e:
                return (f"<div class='upload-report'><div>error: {esc(e)}</div></div>", gr.skip(), "",
                        gr.update(visible=False))
            deadline = time.monotonic() + VERSION_WAIT_S  # the retriever loads the new version
            while report.removed and backend.catalog().version == before and time.monotonic() < deadline:
                time.sleep(0.2)
        lines = ingest_lines(report) + [f"`papers remove --undo {pid}` brings it back."]
        html = "<div class='upload-report'>" + "".join(f"<div>{esc(x)}</div>" for x in lines) + "</div>"
        return html, "", "", gr.update(visible=False)

    def upload(files: list[str] | None, progress: gr.Progress = gr.Progress()) -> Any:
        """Copy the dropped files under the data dir and ingest them one by one, so the one progress bar moves
        a step per file; new papers are answerable at once (the retriever follows the store version)."""
        if not files:
            return gr.skip()
        from rag.index.ingest import ingest

        dest = Path(settings.data_dir) / UPLOAD_DIR
        lines: list[str] = []
        with backend.ingest_lock:
            progress(0.0, desc="Copying files")
            dest.mkdir(parents=True, exist_ok=True)
            copied: list[Path] = []
            for f in files:
                name = Path(str(f)).name
                if not name or name.startswith("."):
                    lines.append(f"skipped: {name or '(no name)'}: hidden or unnamed file")
                    continue
                target = upload_target(dest, name, Path(str(f)))
                if target.exists():  # the same file uploaded before: ingesting it again changes nothing
                    lines.append(f"{name}: already uploaded as {target.name}")
                else:
                    shutil.copyfile(str(f), target)
                copied.append(target)
            before = backend.catalog().version
            changed = False
            for i, path in enumerate(copied):
                progress(i / max(1, len(copied)), desc=f"File {i + 1} of {len(copied)}: reading and embedding "
                                                        f"{path.name}")
                try:
                    report = ingest(settings, [path], progress=False)
                except PapersError as e:
                    lines.append(f"error: {path.name}: {e}")
                    continue
                told = ingest_lines(report)
                lines += told[:-1] + [f"{path.name}: {told[-1]}"]
                changed = changed or bool(report.added or report.reembedded or report.relocated or report.removed)
            progress(1.0, desc="Loading the new index version")
            if changed:  # wait for the retriever to load the new version (it checks every few seconds)
                deadline = time.monotonic() + VERSION_WAIT_S
                while backend.catalog().version == before and time.monotonic() < deadline:
                    time.sleep(0.2)
        return "<div class='upload-report'>" + "".join(f"<div>{esc(x)}</div>" for x in lines) + "</div>"

    def sync(seen: str, query: str) -> tuple[Any, ...]:
        """Redraw what depends on the index (header, scope choices, Papers table) when its version changed
        since this session last drew it: on page load, on tab changes, after each question and upload."""
        cat = backend.catalog()
        if cat.version == seen:
            return gr.skip(), gr.skip(), gr.skip(), seen
        return (header_text(len(cat.papers)), gr.update(choices=cat.choices()),
                gr.update(value=paper_rows(search_papers(cat.papers, query))), cat.version)

    def filter_papers(query: str) -> Any:
        return gr.update(value=paper_rows(search_papers(backend.papers(), query)))

    def header_text(count: int) -> str:
        return (f"## Paper Q&A\n{count} papers indexed. Every answer cites its papers (click a citation to see "
                "its evidence); sentences the citation check cannot trace to a cited paper are marked ⚠.")

    # Documented API endpoints (gradio_client): the same fields as `papers ask --json`.
    def ask(question: str, mode: str = "auto", k: int = 5, paper_ids: list[str] | None = None) -> dict:
        """Answer a question from the indexed abstracts; returns the `papers ask --json` object."""
        try:
            return record(backend.assistant().conversation().ask(question, k=int(k), paper_ids=paper_ids or None,
                                                                  mode=mode or "auto"))
        except PapersError as e:
            return {"question": question, "error": str(e)}

    def cite(query: str, k: int = 5) -> list[dict]:
        """Citation lookup: papers matching a method name, claim or topic, best first."""
        try:
            return [record(h) for h in backend.assistant().cite(query, k=int(k))]
        except PapersError as e:
            return [{"error": str(e)}]

    with gr.Blocks(title="Paper Q&A") as demo:
        papers = backend.papers()
        header = gr.Markdown(header_text(len(papers)))
        conversation = gr.State(None)
        shown = gr.State([])
        seen = gr.State("")  # the index version this session's header, scope and Papers table show
        # On a phone the four tab names do not fit one row: they wrap, none hides in an overflow menu.
        with gr.Tabs(overflow_behavior="wrap"):
            with gr.Tab("Ask") as ask_tab:
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3):
                        with gr.Row(equal_height=False):
                            scope = gr.Dropdown(backend.paper_choices(), multiselect=True, label="Restrict to papers",
                                                info="Leave empty to search all papers.", elem_id="scope", scale=5)
                            reset_btn = gr.Button("New chat", elem_id="reset-button", scale=0, min_width=110,
                                                  size="sm", icon=None)
                        with gr.Row(equal_height=True):
                            banner = gr.HTML("", elem_id="scope-banner", js_on_load=None)
                            scope_clear = gr.Button("Search all papers", visible=False, elem_id="scope-clear",
                                                    size="sm", scale=0, min_width=150)
                        chatbot = gr.Chatbot(label="Chat", height=480, examples=[{"text": x} for x in EXAMPLES],
                                             placeholder="Ask a question about the papers, or pick an example.",
                                             buttons=[], render_markdown=False, latex_delimiters=[],
                                             elem_id="chat")
                        with gr.Row():
                            box = gr.Textbox(placeholder="Ask about the papers…", show_label=False, scale=8,
                                             elem_id="question", max_lines=4, container=False)
                            send = gr.Button("Ask", variant="primary", scale=1, min_width=80, elem_id="ask-button")
                        status = gr.HTML("", elem_classes=["status-line"], elem_id="status", js_on_load=None)
                        export_btn = gr.DownloadButton("Export chat (.md)", value=None, elem_id="export-chat",
                                                       size="sm", variant="secondary", interactive=False)
                    with gr.Column(scale=2, elem_id="evidence-col"):
                        gr.Markdown("### Evidence")
                        evidence = gr.HTML(EMPTY_EVIDENCE, elem_id="evidence", js_on_load=None)
                gr.HTML("<button id='evidence-toggle' data-action='toggle-evidence'>Evidence</button>",
                        js_on_load=None)
                with gr.Accordion("Options", open=False), gr.Row():
                    mode = gr.Radio(modes, value=default_mode, label="Answer mode",
                                    info=None if settings.llm_configured else
                                    "LLM mode appears when OPENAI_BASE_URL or OPENAI_API_KEY is set.")
                    k = gr.Slider(1, 10, value=settings.top_k, step=1, label="Papers retrieved")
            with gr.Tab("Citation lookup"):
                query = gr.Textbox(label="Method name, claim or topic", elem_id="lookup-query",
                                   placeholder="e.g. Dynamic Motion Slider")
                with gr.Row():
                    lookup_k = gr.Slider(1, 20, value=5, step=1, label="Results")
                    lookup_btn = gr.Button("Find papers", variant="primary", elem_id="lookup-button")
                lookup_out = gr.HTML(elem_id="lookup-results", js_on_load=None)
            from ui.grid import build_grid_tab
            build_grid_tab(backend.holder, backend.paper_choices)
            with gr.Tab("Papers"):
                upload_box = gr.File(label="Add papers: drop files here (JSONL, JSON, text, BibTeX, CSL-JSON, RIS, "
                                     "PDF)", file_count="multiple", type="filepath", elem_id="upload")
                upload_log = gr.HTML(elem_id="upload-log", js_on_load=None)
                paper_query = gr.Textbox(label="Search papers", placeholder="Words from a title, author or abstract",
                                         elem_id="paper-search", max_lines=1)
                table = gr.Dataframe(paper_rows(papers), headers=PAPER_HEADERS, interactive=False, wrap=True,
                                     column_widths=PAPER_COLUMN_WIDTHS, elem_id="paper-table")
                paper_view = gr.HTML(elem_id="paper-view", js_on_load=None)
                shown_paper = gr.State("")  # the id of the paper whose card is shown
                remove_btn = gr.Button("Remove this paper from the index", variant="stop", visible=False,
                                       elem_id="remove-paper")

        inputs = [box, chatbot, conversation, shown, mode, k, scope]
        outputs = [chatbot, evidence, status, conversation, shown, box]
        synced = {"fn": sync, "inputs": [seen, paper_query], "outputs": [header, scope, table, seen],
                  "api_visibility": "undocumented"}
        exported = {"fn": export_chat, "inputs": [conversation, shown], "outputs": export_btn,
                    "api_visibility": "undocumented"}
        for answered in (box.submit(respond, inputs, outputs, api_visibility="undocumented"),
                         send.click(respond, inputs, outputs, api_visibility="undocumented"),
                         chatbot.example_select(pick_example, None, box, api_visibility="undocumented").then(
                             respond, inputs, outputs, api_visibility="undocumented")):
            answered.then(**synced)
            answered.then(**exported)
        ask_tab.select(**synced)
        # The search may be typed while the sync runs: filter again after it, from the box as it is then.
        enclosing_tab(table).select(**synced).then(filter_papers, paper_query, table, api_visibility="undocumented")
        demo.load(**synced)
        paper_query.change(filter_papers, paper_query, table, api_visibility="undocumented")
        reset_outputs = [chatbot, evidence, status, conversation, shown, box, scope, export_btn]
        reset_btn.click(reset, None, reset_outputs, api_visibility="undocumented")
        chatbot.clear(reset, None, reset_outputs, api_visibility="undocumented")
        scope.change(scope_changed, scope, [banner, scope_clear], api_visibility="undocumented")
        scope_clear.click(lambda: gr.update(value=[]), None, scope, api_visibility="undocumented")
        query.submit(ui_lookup, [query, lookup_k], lookup_out, api_visibility="undocumented")
        lookup_btn.click(ui_lookup, [query, lookup_k], lookup_out, api_visibility="undocumented")
        table.select(show_paper, None, [paper_view, shown_paper, remove_btn], api_visibility="undocumented")
        remove_btn.click(remove_paper, shown_paper, [upload_log, paper_view, shown_paper, remove_btn],
                         api_visibility="undocumented").then(**synced)
        upload_box.upload(upload, upload_box, upload_log, api_visibility="undocumented").then(**synced)
        demo.load(None, None, None, js=JS)
        gr.api(ask, api_name="ask")
        gr.api(cite, api_name="lookup")
    demo.queue(default_concurrency_limit=8)
    return demo


def launch(settings: Settings, prevent_thread_lock: bool = False) -> gr.Blocks:
    """Start the UI on the configured host and port (127.0.0.1 unless configured), with login if set."""
    demo = build_app(settings)
    from starlette.middleware import Middleware

    auth = None
    if settings.ui_auth:  # validated as user:password by the settings; failed logins are slowed down per source
        user, _, password = settings.ui_auth.get_secret_value().partition(":")
        auth = LoginGuard(user, password).check
    demo.launch(server_name=settings.ui_host, server_port=settings.ui_port, auth=auth, css=CSS,
                prevent_thread_lock=prevent_thread_lock, footer_links=["api"], quiet=True,
                app_kwargs={"middleware": [Middleware(ClientAddress)]})
    return demo
