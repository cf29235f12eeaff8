"""`papers serve`: an OpenAI-compatible chat endpoint (FastAPI), so chat clients (Open WebUI, LibreChat, the `openai`
library, curl) can use the assistant as a "model".

- `POST /v1/chat/completions`, streaming (server-sent events) or not. The last user message is the question;
  earlier turns are the conversation, so follow-ups work (rag.answer.conversation.Conversation rewrites them).
- The message text has `[n]` markers and ends with a reference list (`![` and `<tag` from paper text are
  backslash-escaped, so a client rendering Markdown fetches no image and renders no tag), so a client that shows only text still shows
  the sources. The citations as data (n, paper_id, label, title, quote, source, position, reference, url) are in
  an extra field `citations`, on the response and on its choice (streaming: on the last chunk, the one with a
  `finish_reason`). `papers` on the same objects holds abstained, mode, notice, rewritten, unsupported and timings_ms.
- Optional request fields (the `openai` client's `extra_body`): `k`, `paper_ids`, `answer_mode`.
- `GET /v1/models` lists one model (PAPERS_SERVE_MODEL); any model name is accepted in requests.
- With PAPERS_SERVE_API_KEY set, every call needs `Authorization: Bearer KEY` (compared in constant time; the key
  is never logged or echoed).
"""

from __future__ import annotations

import hmac
import json
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from rag import prompts
from rag.frontends.common import (AssistantHolder, MarkdownSafeStream, Unavailable, citation_dicts, markdown_safe,
                                     with_references)

if TYPE_CHECKING:
    from rag.answer.conversation import Conversation
    from rag.schema import StreamEvent
    from rag.service import Assistant
    from rag.schema import Answer
    from rag.settings import Settings

ANSWER_CACHE = 1_000  # answers remembered to rebuild conversations from the history clients send back


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    @property
    def text(self) -> str:
        """The message's text (content parts of type 'text' joined; images and other parts ignored)."""
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    """The fields of OpenAI's chat-completions request that apply here; the rest (temperature, ...) are ignored."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    k: int | None = Field(None, ge=1, le=50, description="Papers to retrieve.")
    paper_ids: list[str] | None = Field(None, description="Answer only from these papers.")
    answer_mode: Literal["auto", "extractive", "llm"] | None = None


class ApiError(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class Conversations:
    """Rebuilds a request's conversation from its messages: answers this server gave are remembered (by text);
    an earlier answer it does not know (after a restart) is re-derived by asking that question extractively."""

    def __init__(self) -> None:
        self._answers: OrderedDict[str, tuple[str, Answer]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, content: str, standalone: str, answer: Answer) -> None:
        with self._lock:
            self._answers[_key(content)] = (standalone, answer)
            while len(self._answers) > ANSWER_CACHE:
                self._answers.popitem(last=False)

    def build(self, assistant: Assistant, history: list[ChatMessage]) -> Conversation:
        from rag.answer.conversation import MAX_HISTORY_TURNS, Conversation, Turn
        from rag.schema import Answer

        pairs: list[tuple[str, str]] = []
        pending: str | None = None
        for m in history:
            if m.role == "user":
                pending = m.text
            elif m.role == "assistant" and pending is not None and pending.strip():
                pairs.append((pending, m.text))
                pending = None
        conversation = Conversation(assistant)
        pairs = pairs[-MAX_HISTORY_TURNS:]
        for i, (question, reply) in enumerate(pairs):
            with self._lock:
                known = self._answers.get(_key(reply))
            if known is not None:
                standalone, answer = known
            elif i == len(pairs) - 1:  # the turn a follow-up refers to needs its papers: ask it again
                try:
                    answer = assistant.ask(question, mode="extractive")
                except ValueError:
                    continue
                standalone = answer.question
            else:  # older turns only give the LLM's rewrite some context
                standalone, answer = question, Answer(question=question, answer=reply, abstained=False, mode="history")
            conversation.turns.append(Turn(question, standalone, answer))
        return conversation


def create_app(settings: Settings, assistant: Assistant | None = None) -> FastAPI:
    """The FastAPI app (made per server; tests pass an Assistant they already hold)."""
    holder = AssistantHolder(settings, assistant)
    conversations = Conversations()
    app = FastAPI(title="papers: OpenAI-compatible chat endpoint", docs_url=None, redoc_url=None)
    app.state.holder = holder
    secret = settings.serve_api_key.get_secret_value().encode() if settings.serve_api_key else None

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, e: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
        return JSONResponse({"error": {"message": e.message, "type": "invalid_request_error" if e.status < 500
                                       else "server_error", "code": e.code}}, status_code=e.status, headers=headers)

    def authorised(request: Request) -> None:
        if secret is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), secret):
            raise ApiError(401, prompts.SERVE_BAD_KEY, "invalid_api_key")

    @app.get("/v1/models", dependencies=[Depends(authorised)])
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": settings.serve_model, "object": "model", "created": 0,
                                            "owned_by": "papers"}]}

    @app.post("/v1/chat/completions", dependencies=[Depends(authorised)], response_model=None)
    def chat_completions(body: ChatRequest) -> dict[str, Any] | StreamingResponse:
        from rag.errors import QuestionError

        users = [i for i, m in enumerate(body.messages) if m.role == "user"]
        if not users:
            raise ApiError(400, prompts.SERVE_NO_QUESTION, "no_user_message")
        last = users[-1]
        question = body.messages[last].text
        try:
            assistant = holder.get()
        except Unavailable as e:
            raise ApiError(503, str(e), "unavailable") from None
        conversation = conversations.build(assistant, body.messages[:last])
        events = conversation.stream(question, k=body.k, paper_ids=body.paper_ids, mode=body.answer_mode)
        try:
            first = next(events)  # the question is checked here, so a bad one is a 400, not a broken stream
        except QuestionError as e:
            raise ApiError(400, str(e), "invalid_question") from None
        ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

        def chain() -> Iterator[StreamEvent]:
            yield first
            yield from events

        if body.stream:
            return StreamingResponse(_sse(chain(), assistant, conversations, conversation, ident, created,
                                          settings.serve_model), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        answer = next(e.answer for e in chain() if e.kind == "final")
        content = markdown_safe(with_references(answer))
        conversations.remember(content, conversation.turns[-1].standalone, answer)
        extra = _extra(assistant, answer)
        return {"id": ident, "object": "chat.completion", "created": created, "model": settings.serve_model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop", **extra}],
                "usage": None, **extra}

    return app


def _extra(assistant: Assistant, answer: Answer) -> dict[str, Any]:
    """The documented extra fields: `citations` and `papers` (answer facts the text does not carry as data)."""
    return {"citations": citation_dicts(assistant, answer),
            "papers": {"abstained": answer.abstained, "mode": answer.mode, "notice": answer.notice,
                       "rewritten": answer.rewritten, "unsupported": [u["sentence"] for u in answer.unsupported],
                       "timings_ms": {k: round(v, 1) for k, v in answer.timings_ms.items()}}}


def _sse(events: Iterator[StreamEvent], assistant: Assistant, conversations: Conversations,
         conversation: Conversation, ident: str, created: int, model: str) -> Iterator[str]:
    """OpenAI-style chunks: the text as it comes, then (when the citation check changed a generated answer) the
    checked version, then the reference list; the last chunk carries finish_reason and the citations."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, **extra}
        return "data: " + json.dumps({"id": ident, "object": "chat.completion.chunk", "created": created,
                                      "model": model, "choices": [choice], **extra}, ensure_ascii=False) + "\n\n"

    sent: list[str] = []
    safe = MarkdownSafeStream()
    yield chunk({"role": "assistant", "content": ""})
    answer = None
    for event in events:
        text = ""
        if event.kind == "token":
            text = event.text
        elif event.kind == "reset":
            text = prompts.STREAM_RESET
        elif event.kind == "final":
            answer = event.answer
        if text:
            sent.append(text)
            if shown := safe.feed(text):
                yield chunk({"content": shown})
    assert answer is not None
    streamed = "".join(sent)
    tail = ""
    if streamed.strip() != answer.answer.strip():
        tail += f"\n\n{prompts.CHECKED_HEADING}\n{answer.answer}"
    full = with_references(answer)
    tail += full[len(answer.answer):]
    shown = safe.feed(tail) + safe.flush()
    if shown:
        yield chunk({"content": shown})
    conversations.remember(markdown_safe(streamed + tail), conversation.turns[-1].standalone, answer)
    yield chunk({}, "stop", **_extra(assistant, answer))
    yield "data: [DONE]\n\n"


def run(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    import uvicorn

    app = create_app(settings)
    app.state.holder.warm_up_in_background()
    uvicorn.run(app, host=host or settings.serve_host, port=port or settings.serve_port,
                log_level="warning")
