"""`papers serve`: an OpenAI-compatible chat endpoint (FastAPI), so chat clients (Open WebUI, LibreChat, the `openai`
library, curl) can use the assistant as a "model".

- `POST /v1/chat/completions`, streaming (server-sent events) or not. The last user message is the question;
  earlier turns are the conversation, so follow-ups work (rag.service.Conversation resolves them; the question
  searched for is in `papers.rewritten`).
- The message text has `[n]` markers and ends with a reference list (backslashes, `![`, `<tag` and the `]` of a
  link from paper text are backslash-escaped, rag.frontends.common.markdown_safe, so a client rendering Markdown
  fetches no image and renders no tag or link), so a client that shows only text still shows the sources. The
  citations as data (the `papers ask --json` citation records) are in an extra field `citations`, on the response
  and on its choice (streaming: on the last chunk, the one with a `finish_reason`). `papers` on the same objects
  holds abstained, mode, lead, notice, rewritten, outside_scope, unsupported and timings_ms. Every string of
  these records has escape sequences, control and bidi characters made inert (rag.frontends.common.outgoing).
- `usage` counts tokens with the cl100k_base tokenizer (prompt: every message's text; completion: the reply),
  also streamed as a last chunk when the request sets `stream_options.include_usage`.
- Optional request fields (the `openai` client's `extra_body`): `k`, `paper_ids`, `answer_mode`. `n` other than 1
  is refused (one answer per question).
- `GET /v1/models` lists one model (PAPERS_SERVE_MODEL), `GET /v1/models/{id}` describes it; any model name is
  accepted in requests. Every error has OpenAI's shape: `{"error": {"message", "type", "code", "param"}}`.
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
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from rag import prompts
from rag.answer.conversation import TurnRecord
from rag.errors import PapersError
from rag.frontends.common import MarkdownSafeStream, markdown_safe, outgoing, with_references
from rag.schema import Answer, StreamEvent, record
from rag.service import MAX_HISTORY_TURNS, Assistant, AssistantHolder, Conversation, StreamView
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
    stream_options: dict[str, Any] | None = None
    n: int | None = None
    k: int | None = Field(None, ge=1, le=50, description="Papers to retrieve.")
    paper_ids: list[str] | None = Field(None, description="Answer only from these papers.")
    answer_mode: Literal["auto", "extractive", "llm"] | None = None


class ApiError(Exception):
    """An error of the HTTP protocol itself (auth, a request field); the assistant's own are PapersErrors."""

    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class Conversations:
    """Rebuilds a request's conversation from its messages: turns this server answered are remembered by their
    reply text (with the papers they were about); an earlier reply it does not know (after a restart, or from
    another model) is resolved again from its text (rag.service.Conversation.remember)."""

    def __init__(self) -> None:
        self._turns: OrderedDict[str, TurnRecord] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, content: str, record: TurnRecord) -> None:
        with self._lock:
            self._turns[_key(content)] = record
            while len(self._turns) > ANSWER_CACHE:
                self._turns.popitem(last=False)

    def build(self, assistant: Assistant, history: list[ChatMessage]) -> Conversation:
        pairs: list[tuple[str, str]] = []
        pending: str | None = None
        for m in history:
            if m.role == "user":
                pending = m.text
            elif m.role == "assistant" and pending is not None and pending.strip():
                pairs.append((pending, m.text))
                pending = None
        conversation = Conversation(assistant)
        for question, reply in pairs[-MAX_HISTORY_TURNS:]:
            with self._lock:
                known = self._turns.get(_key(reply))
            if known is not None:
                conversation.history.append(known)
            else:
                conversation.remember(question, reply)
        return conversation


def _error(status: int, message: str, code: str, param: str | None = None) -> JSONResponse:
    """OpenAI's error shape, for every error this server returns."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    kind = "invalid_request_error" if status < 500 else "server_error"
    if status == 401:
        kind = "authentication_error"
    return JSONResponse(outgoing({"error": {"message": message, "type": kind, "code": code, "param": param}}),
                        status_code=status, headers=headers)


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from llama_index.core.utils import get_tokenizer  # cl100k_base, shipped with llama-index (no download)

    return get_tokenizer()


def usage(messages: list[ChatMessage], content: str) -> dict[str, int]:
    """Token counts as OpenAI reports them (cl100k_base: the assistant has no tokenizer of its own)."""
    count = _tokenizer()
    prompt = sum(len(count(m.text)) for m in messages)
    completion = len(count(content))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class Guard:
    """Checks a request before the app reads its body (ASGI middleware): the key first (401 without reading a
    byte), then the size: a declared Content-Length over the limit is refused at once (413), and a body sent
    without one is read up to the limit and refused there. So an unauthenticated or oversized body never reaches
    the JSON parser, and no request holds more than `max_bytes` of memory."""

    def __init__(self, app: Any, secret: bytes | None, max_bytes: int) -> None:
        self.app, self.secret, self.max_bytes = app, secret, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if self.secret is not None:
            scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.secret):
                await _error(401, prompts.SERVE_BAD_KEY, "invalid_api_key")(scope, receive, send)
                return
        declared = headers.get(b"content-length", b"")
        if declared and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._too_large(scope, receive, send)
            return
        # The body, read here up to the limit and handed to the app whole (a body arriving without a length is
        # cut off at the limit instead of growing without bound).
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            received += len(chunks[-1])
            if received > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        limit = f"{self.max_bytes / 2**20:g} MB"
        await _error(413, f"request body too large (the limit is {limit}: PAPERS_SERVE_MAX_BODY_MB)",
                     "request_too_large")(scope, receive, send)


def create_app(settings: Settings, assistant: Assistant | None = None) -> FastAPI:
    """The FastAPI app (made per server; tests pass an Assistant they already hold), behind the `Guard`."""
    holder = AssistantHolder(settings, assistant)
    conversations = Conversations()
    app = FastAPI(title="papers: OpenAI-compatible chat endpoint", docs_url=None, redoc_url=None)
    app.state.holder = holder
    secret = settings.serve_api_key.get_secret_value().encode() if settings.serve_api_key else None
    app.add_middleware(Guard, secret=secret, max_bytes=int(settings.serve_max_body_mb * 2**20))
    _add_error_handlers(app)

    def authorised(request: Request) -> None:
        if secret is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), secret):
            raise ApiError(401, prompts.SERVE_BAD_KEY, "invalid_api_key")

    def model_card() -> dict[str, Any]:
        return {"id": settings.serve_model, "object": "model", "created": 0, "owned_by": "papers"}

    @app.get("/v1/models", dependencies=[Depends(authorised)])
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model_id:path}", dependencies=[Depends(authorised)])
    def model(model_id: str) -> dict[str, Any]:
        if model_id != settings.serve_model:
            raise ApiError(404, prompts.SERVE_NO_MODEL.format(model=model_id, served=settings.serve_model),
                           "model_not_found", "model")
        return model_card()

    @app.post("/v1/chat/completions", dependencies=[Depends(authorised)], response_model=None)
    def chat_completions(body: ChatRequest) -> dict[str, Any] | StreamingResponse:
        last = _last_question(body)
        question = body.messages[last].text
        assistant = holder.get()
        conversation = conversations.build(assistant, body.messages[:last])
        events = conversation.stream(question, k=body.k, paper_ids=body.paper_ids, mode=body.answer_mode)
        first = next(events)  # the question is checked here, so a bad one is a 400, not a broken stream
        ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

        def chain() -> Iterator[StreamEvent]:
            yield first
            yield from events

        if body.stream:
            include_usage = bool((body.stream_options or {}).get("include_usage"))
            return StreamingResponse(_sse(chain(), conversations, conversation, ident, created, settings.serve_model,
                                          body.messages if include_usage else None),
                                     media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        answer = _final(chain())
        content = markdown_safe(with_references(answer))
        conversations.remember(content, conversation.turns[-1].record())
        extra = _extra(answer)
        return {"id": ident, "object": "chat.completion", "created": created, "model": settings.serve_model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop", **extra}],
                "usage": usage(body.messages, content), **extra}

    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every failure as an OpenAI-style error body."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, e: ApiError) -> JSONResponse:
        return _error(e.status, e.message, e.code, e.param)

    @app.exception_handler(PapersError)
    async def _papers_error(_: Request, e: PapersError) -> JSONResponse:
        return _error(e.http_status, str(e), e.code)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        return _error(400, f"invalid request: {where or 'body'}: {first.get('msg', 'invalid value')}",
                      "invalid_request", where or None)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, e: HTTPException) -> JSONResponse:
        return _error(e.status_code, str(e.detail), "not_found" if e.status_code == 404 else "http_error")


def _last_question(body: ChatRequest) -> int:
    """The index of the message asked (the last user message); a request this endpoint cannot answer is an
    ApiError."""
    if body.n not in (None, 1):
        raise ApiError(400, prompts.SERVE_ONE_CHOICE.format(n=body.n), "unsupported_value", "n")
    users = [i for i, m in enumerate(body.messages) if m.role == "user"]
    if not users:
        raise ApiError(400, prompts.SERVE_NO_QUESTION, "no_user_message", "messages")
    return users[-1]


def _final(events: Iterable[StreamEvent]) -> Answer:
    """The answer a stream ends with (its "final" event)."""
    for e in events:
        if e.kind == "final" and e.answer is not None:
            return e.answer
    raise RuntimeError("the answer stream ended without its final answer")


def _extra(answer: Answer) -> dict[str, Any]:
    """The documented extra fields: `citations` (the `papers ask --json` records) and `papers` (answer facts the
    text does not carry as data), made inert by `outgoing` as every record leaving a front end is."""
    return outgoing({"citations": [record(c) for c in answer.citations],
            "papers": {"abstained": answer.abstained, "mode": answer.mode, "lead": answer.lead,
                       "notice": answer.notice, "rewritten": answer.rewritten, "outside_scope": answer.outside_scope,
                       "unsupported": [u["sentence"] for u in answer.unsupported],
                       "timings_ms": {k: round(v, 1) for k, v in answer.timings_ms.items()}}})


def _sse(events: Iterator[StreamEvent], conversations: Conversations, conversation: Conversation, ident: str,
         created: int, model: str, usage_of: list[ChatMessage] | None) -> Iterator[str]:
    """OpenAI-style chunks: the text as it comes, then (when the citation check changed a generated answer) the
    checked version, then the reference list; the last choice chunk carries finish_reason and the citations, and
    with `include_usage` a final chunk with no choices carries `usage`."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, **extra}
        return "data: " + json.dumps({"id": ident, "object": "chat.completion.chunk", "created": created,
                                      "model": model, "choices": [choice], **extra}, ensure_ascii=False) + "\n\n"

    view = StreamView()
    safe = MarkdownSafeStream()
    yield chunk({"role": "assistant", "content": ""})
    for event in events:
        text = view.feed(event)
        if text and (shown := safe.feed(text)):
            yield chunk({"content": shown})
    answer = view.answer
    assert answer is not None
    streamed = view.appended
    tail = ""
    if streamed.strip() != answer.answer.strip() and view.text.strip() != answer.answer.strip():
        tail += f"\n\n{prompts.CHECKED_HEADING}\n{answer.answer}"
    full = with_references(answer)
    tail += full[len(answer.answer):]
    shown = safe.feed(tail) + safe.flush()
    if shown:
        yield chunk({"content": shown})
    content = markdown_safe(streamed + tail)
    conversations.remember(content, conversation.turns[-1].record())
    yield chunk({}, "stop", **_extra(answer))
    if usage_of is not None:
        yield "data: " + json.dumps({"id": ident, "object": "chat.completion.chunk", "created": created,
                                     "model": model, "choices": [], "usage": usage(usage_of, content)}) + "\n\n"
    yield "data: [DONE]\n\n"


def run(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    import uvicorn

    from rag.frontends.memory import start_idle_release

    app = create_app(settings)
    app.state.holder.warm_up_in_background()
    start_idle_release()
    uvicorn.run(app, host=host or settings.serve_host, port=port or settings.serve_port,
                log_level="warning")
