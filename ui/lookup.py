"""The UI's Citation lookup tab: the papers matching a method name, claim or topic, best first, each with its
matching sentence, how strongly it matches and its reference line; and the documented `/lookup` API endpoint.

Every text from a paper is escaped before it reaches the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from rag.errors import PapersError
from rag.frontends.common import outgoing
from ui.backend import Backend, friendly
from ui.cards import id_line, meta_line, paper_meta
from ui.escape import esc


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


@dataclass
class LookupTab:
    """The Citation lookup tab's components."""

    query: gr.Textbox
    k: gr.Slider
    button: gr.Button
    results: gr.HTML


def build_lookup_tab() -> LookupTab:
    """The tab's layout, inside the caller's gr.Tabs; the events are attached by `wire_lookup`."""
    with gr.Tab("Citation lookup"):
        query = gr.Textbox(label="Method name, claim or topic", elem_id="lookup-query",
                           placeholder="e.g. Dynamic Motion Slider")
        with gr.Row():
            lookup_k = gr.Slider(1, 20, value=5, step=1, label="Results")
            lookup_btn = gr.Button("Find papers", variant="primary", elem_id="lookup-button")
        lookup_out = gr.HTML(elem_id="lookup-results", js_on_load=None)
    return LookupTab(query=query, k=lookup_k, button=lookup_btn, results=lookup_out)


class Lookup:
    """The lookup's handlers: the tab's, and the API endpoint's."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def ui_lookup(self, query: str, k: float) -> str:
        try:
            return lookup_html(self.backend.assistant().cite(query, k=int(k)), self.backend.roots)
        except Exception as e:
            return f"<p>{esc(friendly(e))}</p>"

    # Documented API endpoint (gradio_client): each hit with the fields `papers cite --json` gives it.
    def cite(self, query: str, k: int = 5) -> list[dict]:
        """Citation lookup: papers matching a method name, claim or topic, best first."""
        try:
            return [outgoing(h) for h in self.backend.assistant().cite(query, k=int(k))]
        except PapersError as e:
            return [{"error": str(e)}]


def wire_lookup(tab: LookupTab, lookup: Lookup) -> None:
    """Enter in the query box or the button runs the lookup."""
    ui_lookup = lookup.ui_lookup  # one function object for both events (one concurrency group, as before)
    tab.query.submit(ui_lookup, [tab.query, tab.k], tab.results, api_visibility="undocumented")
    tab.button.click(ui_lookup, [tab.query, tab.k], tab.results, api_visibility="undocumented")
