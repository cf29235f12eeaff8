"""The web UI (Gradio 6): streaming cited chat with an evidence panel, citation lookup and a paper browser.

A thin client of `rag`: every answer comes from `rag.chat.Conversation` (one per browser session), and the
`/ask`, `/lookup` and `/papers` API endpoints return the same fields as `papers ask --json`.
"""

from __future__ import annotations

import html
import logging
import threading
from collections.abc import Iterator
from typing import Any

import gradio as gr

from rag.chat import Conversation
from rag.qa import Assistant, QuestionError
from rag.schema import Answer
from rag.settings import Settings
from rag.store import StoreError
from rag.text import split_sentences

log = logging.getLogger(__name__)

EXAMPLES = [
    "Over how many test steps does RecMem stay stable?",
    "Which paper proposes a training-free way to make image-to-video models less static?",
    "Which papers study test-time scaling?",
    "What speedup does CoRF report?",
]
CSS = """
.evidence-card {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px;
  margin-bottom: 10px; background: var(--background-fill-secondary);}
.evidence-card summary {cursor: pointer; font-weight: 600;}
.evidence-card .meta {color: var(--body-text-color-subdued); font-size: 0.85em; margin: 2px 0 6px;}
.evidence-card mark {background: #fde68a; color: #111; padding: 0 2px; border-radius: 3px;}
.evidence-card .abstract {margin-top: 6px; line-height: 1.5;}
.unsupported {border-left: 3px solid #dc2626; padding-left: 8px; margin: 6px 0; color: #b91c1c;}
.lookup-ref {font-family: var(--font-mono); font-size: 0.85em; user-select: all; background:
  var(--background-fill-primary); padding: 4px 6px; border-radius: 4px; display: block; margin-top: 4px;}
.status-line {font-size: 0.9em; color: var(--body-text-color-subdued);}
"""


class Backend:
    """The shared assistant, created on first use so the UI starts (and says why) even without an index."""

    def __init__(self, settings: Settings, assistant: Assistant | None = None) -> None:
        self.settings = settings
        self._assistant = assistant
        self._lock = threading.Lock()

    def assistant(self) -> Assistant:
        with self._lock:
            if self._assistant is None:
                self._assistant = Assistant(self.settings)
            return self._assistant

    def paper_choices(self) -> list[tuple[str, str]]:
        try:
            return [(f"{e.label} — {e.source.rsplit('/', 1)[-1]}#{e.position}", e.paper_id)
                    for e in self.assistant().papers()]
        except StoreError:
            return []


# --- rendering ------------------------------------------------------------------------------------------

def _highlight(text: str, quotes: list[str]) -> str:
    """The abstract as HTML with the supporting sentences marked (all text escaped: abstracts are data)."""
    out = []
    for s in split_sentences(text):
        esc = html.escape(s)
        out.append(f"<mark>{esc}</mark>" if any(q and (q in s or s in q) for q in quotes) else esc)
    return " ".join(out)


def _meta(paper_id: str, source: str, position: int, extra: str = "") -> str:
    """The id · source#position line of a paper card (escaped: ids and paths come from user files)."""
    tail = f" · {html.escape(extra)}" if extra else ""
    return f"<div class='meta'>id {html.escape(paper_id)} · {html.escape(source)}#{position}{tail}</div>"


def evidence_html(answer: Answer | None, backend: Backend) -> str:
    """Evidence panel: a card per cited paper with its abstract and the supporting sentences highlighted."""
    if answer is None:
        return "<p class='status-line'>Evidence for the latest answer appears here.</p>"
    parts = []
    for u in answer.unsupported:
        parts.append(f"<div class='unsupported'>⚠ Not supported by the cited sources: "
                     f"{html.escape(u['sentence'])} <em>({html.escape(u['reason'])})</em></div>")
    if not answer.citations:
        parts.append("<p class='status-line'>No paper is cited for this answer.</p>")
        return "\n".join(parts)
    entries = backend.assistant().retriever.store.get_papers([c.paper_id for c in answer.citations])
    for c in answer.citations:
        e = entries.get(c.paper_id)
        supporting = [s for s in c.quote.split(" … ") if s]
        supporting += [ch.evidence for ch in answer.checks if ch.evidence and ch.evidence_n == c.n]
        abstract = _highlight(e.text, supporting) if e else html.escape(c.quote)
        first = html.escape(supporting[0]) if supporting else ""
        parts.append(
            f"<details class='evidence-card' data-paper='{html.escape(c.paper_id)}' open>"
            f"<summary>[{c.n}] {html.escape(c.label)}</summary>{_meta(c.paper_id, c.source, c.position)}"
            f"<div class='supporting'><mark>{first}</mark></div>"
            f"<details><summary>Whole abstract</summary><div class='abstract'>{abstract}</div></details>"
            f"</details>")
    return "\n".join(parts)


def sources_markdown(answer: Answer) -> str:
    return "\n".join(f"**[{c.n}] {c.label}** — `{c.paper_id}` — {c.source}#{c.position}  \n“{c.quote}”"
                     for c in answer.citations)


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
    return line


def lookup_html(hits: list[Any]) -> str:
    if not hits:
        return "<p>No matching papers.</p>"
    rows = []
    for i, h in enumerate(hits, 1):
        rows.append(
            f"<div class='evidence-card' data-paper='{html.escape(h.paper_id)}'>"
            f"<b>{i}. {html.escape(h.label)}</b>{_meta(h.paper_id, h.source, h.position, f'score {h.score:.3f}')}"
            f"<mark>{html.escape(h.sentence)}</mark>"
            f"<code class='lookup-ref' title='Reference line (select to copy)'>{html.escape(h.reference)}</code>"
            f"</div>")
    return "\n".join(rows)


# --- handlers -------------------------------------------------------------------------------------------

def _friendly(error: Exception) -> str:
    if isinstance(error, QuestionError):
        return f"⚠ {error}"
    if isinstance(error, StoreError):
        return f"⚠ The paper index is not available: {error}"
    log.exception("unexpected error in the UI")
    return f"⚠ Something went wrong ({type(error).__name__}). Please try again."


def build_app(settings: Settings, assistant: Assistant | None = None) -> gr.Blocks:
    """The whole UI; `assistant` may be given (tests) or is created on first use."""
    backend = Backend(settings, assistant)
    modes = ["extractive", "llm"] if settings.llm_configured else ["extractive"]
    default_mode = settings.effective_answer_mode

    def respond(message: str, history: list[dict], conversation: Conversation | None, mode: str, k: float,
                scope: list[str] | None) -> Iterator[tuple[list[dict], str, str, Conversation | None, str]]:
        history = list(history or [])
        history.append({"role": "user", "content": message or ""})
        try:
            if conversation is None:
                conversation = Conversation(backend.assistant())
            history.append({"role": "assistant", "content": "…"})
            yield history, gr.skip(), "Searching the abstracts…", conversation, ""
            text = ""
            for event in conversation.stream(message, k=int(k), paper_ids=scope or None, mode=mode):
                if event.kind == "token":
                    text += event.text
                    history[-1] = {"role": "assistant", "content": text}
                    yield history, gr.skip(), "Answering…", conversation, ""
                elif event.kind == "reset":
                    text = ""
                elif event.kind == "final" and event.answer is not None:
                    a = event.answer
                    history[-1] = {"role": "assistant", "content": a.answer}
                    if a.citations:
                        history.append({"role": "assistant", "content": sources_markdown(a),
                                        "metadata": {"title": f"Sources ({len(a.citations)})"}})
                    yield history, evidence_html(a, backend), status_text(a, settings), conversation, ""
        except Exception as e:  # every failure becomes a message in the chat, never a traceback
            if history and history[-1]["role"] == "assistant":
                history.pop()
            history.append({"role": "assistant", "content": _friendly(e)})
            yield history, gr.skip(), "Not answered.", conversation, ""

    def pick_example(evt: gr.SelectData) -> str:
        return evt.value["text"]

    def clear() -> tuple[list, str, str, None, str]:
        return [], evidence_html(None, backend), "", None, ""

    def ui_lookup(query: str, k: float) -> str:
        try:
            return lookup_html(backend.assistant().cite(query, k=int(k)))
        except Exception as e:
            return f"<p>{html.escape(_friendly(e))}</p>"

    def paper_table() -> list[list[Any]]:
        try:
            return [[e.label, e.paper_id, e.source, e.position] for e in backend.assistant().papers()]
        except Exception:
            return []

    def show_paper(evt: gr.SelectData) -> str:
        try:
            row = evt.row_value
            e = backend.assistant().retriever.store.get_papers([row[1]])[row[1]]
        except Exception as err:
            return f"<p>{html.escape(_friendly(err))}</p>"
        return (f"<div class='evidence-card'><b>{html.escape(e.label)}</b>{_meta(e.paper_id, e.source, e.position)}"
                f"<div class='abstract'>{html.escape(e.text)}</div></div>")

    # Documented API endpoints (gradio_client): the same fields as `papers ask --json`.
    def ask(question: str, mode: str = "auto", k: int = 5, paper_ids: list[str] | None = None) -> dict:
        """Answer a question from the indexed abstracts; returns the `papers ask --json` object."""
        try:
            return backend.assistant().ask(question, k=int(k), paper_ids=paper_ids or None,
                                           mode=mode or "auto").to_dict()
        except (QuestionError, StoreError) as e:
            return {"question": question, "error": str(e)}

    def cite(query: str, k: int = 5) -> list[dict]:
        """Citation lookup: papers matching a method name, claim or topic, best first."""
        try:
            return [h.__dict__ for h in backend.assistant().cite(query, k=int(k))]
        except (QuestionError, StoreError) as e:
            return [{"error": str(e)}]

    with gr.Blocks(title="Paper Q&A") as demo:
        count = len(backend.paper_choices())
        gr.Markdown(f"## Paper Q&A\n{count} papers indexed. Every answer cites its papers; sentences the "
                    "citation check cannot trace to a cited paper are marked ⚠.")
        conversation = gr.State(None)
        with gr.Tab("Ask"):
            with gr.Row():
                with gr.Column(scale=3):
                    chatbot = gr.Chatbot(label="Chat", height=480, examples=[{"text": x} for x in EXAMPLES],
                                         placeholder="Ask a question about the papers, or pick an example.",
                                         buttons=["copy"], elem_id="chat")
                    with gr.Row():
                        box = gr.Textbox(placeholder="Ask about the papers…", show_label=False, scale=8,
                                         elem_id="question", max_lines=4, container=False)
                        send = gr.Button("Ask", variant="primary", scale=1, min_width=80, elem_id="ask-button")
                        clear_btn = gr.Button("Clear", scale=1, min_width=80, elem_id="clear-button")
                    status = gr.Markdown(elem_classes=["status-line"], elem_id="status")
                with gr.Column(scale=2):
                    gr.Markdown("### Evidence")
                    evidence = gr.HTML(evidence_html(None, backend), elem_id="evidence")
            with gr.Accordion("Options", open=False):
                with gr.Row():
                    mode = gr.Radio(modes, value=default_mode, label="Answer mode",
                                    info=None if settings.llm_configured else
                                    "LLM mode appears when OPENAI_BASE_URL or OPENAI_API_KEY is set.")
                    k = gr.Slider(1, 10, value=settings.top_k, step=1, label="Papers retrieved")
                scope = gr.Dropdown(backend.paper_choices(), multiselect=True, label="Restrict to papers",
                                    info="Leave empty to search all papers.", elem_id="scope")
        with gr.Tab("Citation lookup"):
            query = gr.Textbox(label="Method name, claim or topic", elem_id="lookup-query",
                               placeholder="e.g. Dynamic Motion Slider")
            with gr.Row():
                lookup_k = gr.Slider(1, 20, value=5, step=1, label="Results")
                lookup_btn = gr.Button("Find papers", variant="primary", elem_id="lookup-button")
            lookup_out = gr.HTML(elem_id="lookup-results")
        with gr.Tab("Papers"):
            table = gr.Dataframe(paper_table(), headers=["label", "id", "source", "position"], interactive=False,
                                 elem_id="paper-table")
            paper_view = gr.HTML()

        inputs = [box, chatbot, conversation, mode, k, scope]
        outputs = [chatbot, evidence, status, conversation, box]
        box.submit(respond, inputs, outputs, api_visibility="undocumented")
        send.click(respond, inputs, outputs, api_visibility="undocumented")
        chatbot.example_select(pick_example, None, box, api_visibility="undocumented").then(
            respond, inputs, outputs, api_visibility="undocumented")
        clear_btn.click(clear, None, outputs, api_visibility="undocumented")
        query.submit(ui_lookup, [query, lookup_k], lookup_out, api_visibility="undocumented")
        lookup_btn.click(ui_lookup, [query, lookup_k], lookup_out, api_visibility="undocumented")
        table.select(show_paper, None, paper_view, api_visibility="undocumented")
        gr.api(ask, api_name="ask")
        gr.api(cite, api_name="lookup")
    demo.queue(default_concurrency_limit=8)
    return demo


def launch(settings: Settings, prevent_thread_lock: bool = False) -> gr.Blocks:
    """Start the UI on the configured host and port (127.0.0.1 unless configured), with login if set."""
    demo = build_app(settings)
    auth = None
    if settings.ui_auth:  # validated as user:password by the settings; failed logins are slowed down
        from rag.login import LoginGuard

        user, _, password = settings.ui_auth.get_secret_value().partition(":")
        auth = LoginGuard(user, password).check
    demo.launch(server_name=settings.ui_host, server_port=settings.ui_port, auth=auth, css=CSS,
                prevent_thread_lock=prevent_thread_lock, footer_links=["api"], quiet=True)
    return demo
