"""The UI's Ask tab: a streaming chat whose answers cite their papers with clickable chips, the evidence panel
beside it, the scope picker, the chat export, and the documented `/ask` API endpoint.

The chat is rendered without Markdown: its HTML is built here, with every text from a paper (quote, label,
title) written through `esc`.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from rag.answer.question import clean_question
from rag.errors import PapersError, QuestionError
from rag.frontends.common import outgoing
from rag.index.store import CatalogEntry
from rag.schema import Answer, Citation
from rag.service import Conversation, StreamView
from rag.settings import Settings
from rag.text import CITATION_RE, QUOTED_RE, citation_parts
from ui.backend import Backend, Listener, friendly
from ui.cards import paper_meta
from ui.escape import esc, esc_plain
from ui.evidence import EMPTY_EVIDENCE, evidence_html, reference_text
from ui.export import chat_markdown, write_export

EXAMPLES = [
    "Over how many test steps does RecMem stay stable?",
    "Which paper proposes a training-free way to make image-to-video models less static?",
    "Which papers study test-time scaling?",
    "What speedup does CoRF report?",
]

_MARK = "\ue000"  # placeholder for a repaired-citation mark while a line is escaped


# --- rendering: the chat ------------------------------------------------------------------------------------

def _tip(c: Citation, entry: CatalogEntry | None) -> str:
    title = paper_meta(c, entry)["title"]
    quote = c.quote if len(c.quote) <= 320 else c.quote[:317].rstrip() + "…"
    title_html = f"<span class='tip-title'>{esc(title)}</span>" if title and title != c.label else ""
    return (f"<span class='cite-tip'><b>[{c.n}] {esc(c.label)}</b>{title_html}"
            f"<span class='tip-quote'>“{esc(quote)}”</span></span>")


def _chips(line: str, turn: int, tips: dict[int, str], marks: list[str]) -> str:
    """A line of answer text, escaped, with every known [n] turned into a chip and repair marks put back."""
    out, last = [], 0
    quoted = [q.span() for q in QUOTED_RE.finditer(line)]  # a paper's own "[32]" inside a quote is its text
    for m in CITATION_RE.finditer(line):  # the citation check's own marker pattern
        nums = [int(x) for x in citation_parts(m.group(1))]
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


def notice_html(text: str) -> str:
    """A message in the chat in place of an answer (a refused question, a failure)."""
    return f"<div class='answer notice'><div class='answer-text'>{esc(text)}</div></div>"


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


# --- the tab ----------------------------------------------------------------------------------------------

@dataclass
class AskTab:
    """The Ask tab's components (the session's conversation and shown texts are gr.State made by the caller)."""

    tab: gr.Tab
    scope: gr.Dropdown
    reset_btn: gr.Button
    banner: gr.HTML
    scope_clear: gr.Button
    chatbot: gr.Chatbot
    box: gr.Textbox
    send: gr.Button
    status: gr.HTML
    export_btn: gr.DownloadButton
    evidence: gr.HTML
    mode: gr.Radio
    k: gr.Slider
    conversation: gr.State
    shown: gr.State


def build_ask_tab(settings: Settings, backend: Backend, conversation: gr.State, shown: gr.State) -> AskTab:
    """The Ask tab's layout, inside the caller's gr.Tabs; the events are attached by `wire_questions` and
    `wire_controls`."""
    modes = ["extractive", "llm"] if settings.llm_configured else ["extractive"]
    with gr.Tab("Ask") as tab:
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
            mode = gr.Radio(modes, value=settings.effective_answer_mode, label="Answer mode",
                            info=None if settings.llm_configured else
                            "LLM mode appears when OPENAI_BASE_URL or OPENAI_API_KEY is set.")
            k = gr.Slider(1, 10, value=settings.top_k, step=1, label="Papers retrieved")
    return AskTab(tab=tab, scope=scope, reset_btn=reset_btn, banner=banner, scope_clear=scope_clear, chatbot=chatbot,
                  box=box, send=send, status=status, export_btn=export_btn, evidence=evidence, mode=mode, k=k,
                  conversation=conversation, shown=shown)


def pick_example(evt: gr.SelectData) -> str:
    return evt.value["text"]


def reset() -> tuple[Any, ...]:
    """New chat: the messages, the conversation memory, every answer's evidence and the scope."""
    return [], EMPTY_EVIDENCE, "", None, [], "", gr.update(value=[]), gr.update(value=None, interactive=False)


class Chat:
    """The Ask tab's handlers; a session's conversation and the texts shown come in and go out as gr.State.

    Attach each handler once per event, or bind it to a name first (`respond = chat.respond`): Gradio groups
    events for their concurrency limit by the identity of the function, and each `chat.respond` is a new object.
    """

    def __init__(self, settings: Settings, backend: Backend) -> None:
        self.settings = settings
        self.backend = backend

    @staticmethod
    def turns(conversation: Conversation | None, shown: list[str | None]) -> list[tuple[Answer, str | None]]:
        """The session's answers, each with the text shown for it (None: the answer's own text)."""
        turns = conversation.turns if conversation is not None else []
        shown = list(shown) + [None] * (len(turns) - len(shown))
        return [(t.answer, s) for t, s in zip(turns, shown)]

    def respond(self, message: str, history: list[dict], conversation: Conversation | None, shown: list[str | None],
                mode: str, k: float, scope: list[str] | None) -> Iterator[tuple[Any, ...]]:
        backend = self.backend
        history = list(history or [])
        shown = list(shown or [])
        if not (message or "").strip():  # nothing asked: no bubble, the status line says why
            yield history, gr.skip(), "Type a question first.", conversation, shown, gr.skip()
            return
        try:
            clean_question(message, self.settings.max_question_chars)
        except QuestionError as e:  # refused: said in the chat, and the text stays in the box to be shortened
            history.append({"role": "assistant", "content": notice_html(f"⚠ {e}")})
            yield (history, evidence_html(self.turns(conversation, shown), backend, note=f"Not answered: {e}"),
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
                    yield (history, evidence_html(self.turns(conversation, shown), backend),
                           status_text(a, self.settings), conversation, shown, gr.skip())
        except Exception as e:  # every failure becomes a message in the chat, never a traceback
            if history and history[-1]["role"] == "assistant":
                history.pop()
            message_text = friendly(e)
            history.append({"role": "assistant", "content": notice_html(message_text)})
            note = f"Not answered: {message_text}"
            yield (history, evidence_html(self.turns(conversation, shown), backend, note=note),
                   "Not answered.", conversation, shown, gr.skip())

    def export_chat(self, conversation: Conversation | None, shown: list[str | None]) -> Any:
        """The chat so far as a Markdown file with each answer's references, for the download button."""
        turns = self.turns(conversation, shown)
        if not turns:
            return gr.update(value=None, interactive=False)
        entries = self.backend.entries([c.paper_id for a, _ in turns for c in a.citations])
        text = chat_markdown(turns, lambda c: reference_text(c, entries.get(c.paper_id), self.backend.roots))
        return gr.update(value=write_export(text), interactive=True)

    def scope_changed(self, scope: list[str] | None) -> tuple[str, Any]:
        return scope_banner(scope, self.backend), gr.update(visible=bool(scope))

    # Documented API endpoint (gradio_client): the same fields as `papers ask --json`.
    def ask(self, question: str, mode: str = "auto", k: int = 5, paper_ids: list[str] | None = None) -> dict:
        """Answer a question from the indexed abstracts; returns the `papers ask --json` object."""
        try:
            return outgoing(self.backend.assistant().conversation().ask(question, k=int(k), paper_ids=paper_ids or None,
                                                                       mode=mode or "auto"))
        except PapersError as e:
            return {"question": question, "error": str(e)}


def wire_questions(tab: AskTab, chat: Chat, synced: Listener) -> None:
    """Enter, the Ask button and a picked example each run `respond`; after each, what depends on the index is
    redrawn (`synced`) and the export button gets the chat so far."""
    respond = chat.respond  # one function object for the three events (one concurrency group, as before)
    inputs = [tab.box, tab.chatbot, tab.conversation, tab.shown, tab.mode, tab.k, tab.scope]
    outputs = [tab.chatbot, tab.evidence, tab.status, tab.conversation, tab.shown, tab.box]
    exported: Listener = {"fn": chat.export_chat, "inputs": [tab.conversation, tab.shown], "outputs": tab.export_btn,
                          "api_visibility": "undocumented"}
    for answered in (tab.box.submit(respond, inputs, outputs, api_visibility="undocumented"),
                     tab.send.click(respond, inputs, outputs, api_visibility="undocumented"),
                     tab.chatbot.example_select(pick_example, None, tab.box, api_visibility="undocumented").then(
                         respond, inputs, outputs, api_visibility="undocumented")):
        answered.then(**synced)
        answered.then(**exported)


def wire_controls(tab: AskTab, chat: Chat) -> None:
    """New chat (the button, or the chat's own clear button), and the scope banner with its clear button."""
    reset_outputs = [tab.chatbot, tab.evidence, tab.status, tab.conversation, tab.shown, tab.box, tab.scope,
                     tab.export_btn]
    tab.reset_btn.click(reset, None, reset_outputs, api_visibility="undocumented")
    tab.chatbot.clear(reset, None, reset_outputs, api_visibility="undocumented")
    tab.scope.change(chat.scope_changed, tab.scope, [tab.banner, tab.scope_clear], api_visibility="undocumented")
    tab.scope_clear.click(lambda: gr.update(value=[]), None, tab.scope, api_visibility="undocumented")
