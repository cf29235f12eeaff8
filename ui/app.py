"""The web UI (Gradio 6): streaming cited chat with clickable citations and per-answer evidence, citation lookup,
a grid of papers by questions, and a paper browser with upload.

A thin client of `rag`: every answer comes from `rag.answer.conversation.Conversation` (one per browser
session), and the `/ask` and `/lookup` API endpoints return the same fields as `papers ask --json` and
`papers cite --json`.

This module lays the tabs out and attaches what spans them (the header, scope choices and Papers table redrawn
when the index version changes); each tab is its own module: `ui/ask.py` (the chat and its evidence panel,
`ui/evidence.py`), `ui/lookup.py`, `ui/grid.py` and `ui/papers.py`, on what they share in `ui/backend.py` (the
assistant, the catalog) and `ui/cards.py` (a paper's card and metadata line).

Everything that comes from a paper (abstract, title, label, authors, quotes) is untrusted: it is written into
HTML only through `esc`, which also neutralises Markdown, so it shows as text in the chat and in the evidence
panel. The chat is rendered without Markdown; its HTML is built in `ui/ask.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import gradio as gr

from rag.service import Assistant
from rag.settings import Settings
from ui.ask import EXAMPLES, Chat, answer_html, build_ask_tab, wire_controls, wire_questions
from ui.backend import Backend, Listener
from ui.cards import meta_line, paper_card, paper_meta, safe_url, shown_source
from ui.escape import esc
from ui.evidence import EMPTY_EVIDENCE, evidence_html, plain_answer
from ui.login import ClientAddress, LoginGuard
from ui.lookup import Lookup, build_lookup_tab, lookup_html, wire_lookup
from ui.papers import Shelf, build_papers_tab, paper_rows, search_papers, upload_target, wire_papers

# Names other code imports from here (tests, `papers ui`), wherever they are defined now.
__all__ = ["CSS", "EMPTY_EVIDENCE", "EXAMPLES", "JS", "Backend", "answer_html", "build_app", "esc", "evidence_html",
           "launch", "lookup_html", "meta_line", "paper_card", "paper_meta", "plain_answer", "safe_url",
           "shown_source", "upload_target"]

# Sessions whose state (a chat, what it shows) the server keeps, least recently used dropped first. Gradio keeps
# 10,000 by default: every API client and every page load is a session, and the UI's memory grew without bound
# with them (294 -> 1,638 MB over ~5,800 calls). Set by hand: a resource bound, not a fitted value.
SESSIONS_KEPT = 300

_HERE = Path(__file__).resolve().parent
CSS = (_HERE / "app.css").read_text(encoding="utf-8")
JS = (_HERE / "app.js").read_text(encoding="utf-8")


def header_text(count: int) -> str:
    return (f"## Paper Q&A\n{count} papers indexed. Every answer cites its papers (click a citation to see "
            "its evidence); sentences the citation check cannot trace to a cited paper are marked ⚠.")


def enclosing_tab(block: gr.components.Component) -> gr.Tab:
    """The tab a component was laid out in (its tab's select event redraws what the tab shows)."""
    parent = getattr(block, "parent", None)
    while parent is not None and not isinstance(parent, gr.Tab):
        parent = getattr(parent, "parent", None)
    if parent is None:
        raise ValueError("the component is not inside a tab")
    return parent


def index_sync(backend: Backend) -> Callable[[str, str], tuple[Any, ...]]:
    """The handler that redraws what depends on the index (header, scope choices, Papers table)."""

    def sync(seen: str, query: str) -> tuple[Any, ...]:
        """Redraw what depends on the index (header, scope choices, Papers table) when its version changed
        since this session last drew it: on page load, on tab changes, after each question and upload."""
        cat = backend.catalog()
        if cat.version == seen:
            return gr.skip(), gr.skip(), gr.skip(), seen
        return (header_text(len(cat.papers)), gr.update(choices=cat.choices()),
                gr.update(value=paper_rows(search_papers(cat.papers, query))), cat.version)

    return sync


def build_app(settings: Settings, assistant: Assistant | None = None) -> gr.Blocks:
    """The whole UI; `assistant` may be given (tests) or is created on first use."""
    backend = Backend(settings, assistant)
    chat, lookup, shelf = Chat(settings, backend), Lookup(backend), Shelf(settings, backend)
    with gr.Blocks(title="Paper Q&A") as demo:
        papers = backend.papers()
        header = gr.Markdown(header_text(len(papers)))
        conversation = gr.State(None)
        shown = gr.State([])
        seen = gr.State("")  # the index version this session's header, scope and Papers table show
        # On a phone the four tab names do not fit one row: they wrap, none hides in an overflow menu.
        with gr.Tabs(overflow_behavior="wrap"):
            ask = build_ask_tab(settings, backend, conversation, shown)
            lookup_tab = build_lookup_tab()
            from ui.grid import build_grid_tab
            build_grid_tab(backend.holder, backend.paper_choices)
            papers_tab = build_papers_tab(papers)

        scope, paper_query, table = ask.scope, papers_tab.paper_query, papers_tab.table
        filter_papers = shelf.filter_papers  # one function object for both its events (one concurrency group)
        synced: Listener = {"fn": index_sync(backend), "inputs": [seen, paper_query],
                            "outputs": [header, scope, table, seen], "api_visibility": "undocumented"}
        # The events in the order they have always been attached: Gradio numbers them in this order, and names a
        # handler's repeats fn_1, fn_2, ... (tests/ui/test_load.py calls the chat as "respond").
        wire_questions(ask, chat, synced)
        ask.tab.select(**synced)
        # The search may be typed while the sync runs: filter again after it, from the box as it is then.
        enclosing_tab(table).select(**synced).then(filter_papers, paper_query, table, api_visibility="undocumented")
        demo.load(**synced)
        paper_query.change(filter_papers, paper_query, table, api_visibility="undocumented")
        wire_controls(ask, chat)
        wire_lookup(lookup_tab, lookup)
        wire_papers(papers_tab, shelf, synced)
        demo.load(None, None, None, js=JS)
        gr.api(chat.ask, api_name="ask")
        gr.api(lookup.cite, api_name="lookup")
    demo.queue(default_concurrency_limit=8)
    return demo


def launch(settings: Settings, prevent_thread_lock: bool = False) -> gr.Blocks:
    """Start the UI on the configured host and port (127.0.0.1 unless configured), with login if set."""
    demo = build_app(settings)
    from starlette.middleware import Middleware

    auth: Callable[[str, str], bool] | None = None
    if settings.ui_auth:  # validated as user:password by the settings; failed logins are slowed down per source
        user, _, password = settings.ui_auth.get_secret_value().partition(":")
        # A coroutine function: gradio awaits it (gradio/routes.py, `inspect.iscoroutinefunction(app.auth)`),
        # though its `auth` annotation names only plain functions.
        auth = cast("Callable[[str, str], bool]", LoginGuard(user, password).check)
    from rag.frontends.memory import start_idle_release

    start_idle_release()  # the sessions' freed memory goes back to the system when no one is asking
    demo.launch(server_name=settings.ui_host, server_port=settings.ui_port, auth=auth, css=CSS,
                prevent_thread_lock=prevent_thread_lock, footer_links=["api"], quiet=True,
                state_session_capacity=SESSIONS_KEPT,
                app_kwargs={"middleware": [Middleware(ClientAddress)]})
    return demo
