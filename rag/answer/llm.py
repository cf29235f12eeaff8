"""Generation through any OpenAI-compatible server, via llama-index's OpenAILike LLM (the `openai` client).

Every failure is turned into an `LLMUnavailable` with a one-line reason (unreachable, timeout, HTTP status,
rate limit, empty reply), so the caller can fall back to the extractive answer and say why. The endpoint is
named with any user:password in its URL redacted.

PAPERS_LLM_TIMEOUT_S bounds the whole reply, not each read: httpx's timeouts apply per read, so a server that
sends a keep-alive byte every few seconds would otherwise hold a caller forever. The reply is read on a worker
thread and the caller stops waiting at the deadline; the worker's connection is cut at its next byte.
"""

from __future__ import annotations

import ipaddress
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

from rag import prompts
from rag.errors import ConfigurationError
from rag.settings import Settings, redact, redact_logs
from rag.text import split_sentences

if TYPE_CHECKING:
    import httpx
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai_like import OpenAILike

    from rag.answer.retrieve import PaperHit

T = TypeVar("T")

LOCAL_API_KEY = "not-needed"  # local servers ignore the key, but the openai client insists on one
CHARS_PER_TOKEN = 4           # rough budget estimate; abstracts are English prose
PREPARE_S = 30                # most a request may take to be sent (client set-up) before it counts as failed


class LLMConfigError(ConfigurationError):
    """The LLM settings cannot work (e.g. a remote endpoint without an API key); the message starts with
    "configuration:" wherever it is shown."""

    def __str__(self) -> str:
        return f"configuration: {super().__str__()}"


class LLMUnavailable(RuntimeError):
    """The LLM could not produce an answer this time; `reason` is one line for the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_local_url(url: str | None) -> bool:
    """Loopback or private-network endpoints (a llama.cpp, Ollama or vLLM server of one's own)."""
    if not url:
        return False
    host = urlparse(url).hostname or ""
    if host in ("localhost",) or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private


def check_llm_settings(settings: Settings) -> None:
    """Fail at start, with the variable to set, when the LLM configuration cannot work."""
    if settings.answer_mode == "llm" and not settings.llm_configured:
        raise LLMConfigError("PAPERS_ANSWER_MODE=llm needs OPENAI_BASE_URL (a local server) or OPENAI_API_KEY")
    if settings.effective_answer_mode == "llm":
        url = settings.openai_base_url
        if url and not urlparse(url).scheme.startswith("http"):
            raise LLMConfigError(f"OPENAI_BASE_URL must be an http(s) URL, got {redact(repr(url))}")
        if url and urlparse(url).username and settings.openai_api_key:
            # httpx sends the URL's user:password as the Authorization header, in place of the key's
            raise LLMConfigError("OPENAI_BASE_URL holds a user:password and OPENAI_API_KEY is set: only one can be "
                                 "sent (the key would be dropped); remove the user:password from the URL, or unset "
                                 "the key")
        if not settings.openai_api_key and not is_local_url(url):
            raise LLMConfigError(f"OPENAI_API_KEY is required for the non-local endpoint "
                                 f"{redact(url or 'https://api.openai.com/v1')}")


def endpoint(settings: Settings) -> str:
    """The endpoint as users may see it: credentials in the URL are redacted."""
    return redact(settings.openai_base_url or "api.openai.com")


def make_llm(settings: Settings, max_tokens: int | None = None, http_client: httpx.Client | None = None) -> OpenAILike:
    from llama_index.llms.openai_like import OpenAILike

    if "@" in (settings.openai_base_url or "") or "=" in (settings.openai_base_url or ""):
        redact_logs()
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else LOCAL_API_KEY
    # OpenAI's __init__ takes http_client; mypy reads the constructor from the pydantic fields, which lack it.
    return OpenAILike(  # type: ignore[call-arg]
        model=settings.llm_model, api_base=settings.openai_base_url or "https://api.openai.com/v1", api_key=key,
        is_chat_model=True, context_window=settings.llm_context_window,
        max_tokens=max_tokens or settings.llm_max_tokens, temperature=settings.llm_temperature,
        timeout=settings.llm_timeout_s, max_retries=0, http_client=http_client,
    )


def _deadline_client(deadline: list[float], timeout: float) -> httpx.Client:
    """An httpx client that starts the clock (`deadline[0]`, time.monotonic) when it sends the request and
    whose response fails at the first byte read after it."""
    import httpx

    class Body(httpx.SyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __iter__(self) -> Iterator[bytes]:
            for part in self.inner:
                if time.monotonic() > deadline[0]:
                    raise httpx.ReadTimeout("the reply took longer than the whole-reply timeout")
                yield part

        def close(self) -> None:
            self.inner.close()

    class Transport(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if deadline[0] == float("inf"):
                deadline[0] = time.monotonic() + timeout
            r = super().handle_request(request)
            return httpx.Response(r.status_code, headers=r.headers, stream=Body(r.stream),
                                  extensions=r.extensions)

    return httpx.Client(transport=Transport(), follow_redirects=True)


def _within_deadline(settings: Settings, run: Callable[[OpenAILike], Iterator[T]],
                     max_tokens: int | None = None) -> Iterator[T]:
    """Items of `run(llm)`, read on a worker thread; LLMUnavailable once the reply has taken longer than
    settings.llm_timeout_s (and for any failure of the worker, with its reason). The clock starts when the
    request is sent: building the client (imports, on first use) is not the server's time."""
    timeout = settings.llm_timeout_s
    deadline = [float("inf")]
    client = _deadline_client(deadline, timeout)
    llm = make_llm(settings, max_tokens=max_tokens, http_client=client)
    out: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            for item in run(llm):
                if stop.is_set():
                    return
                out.put(("item", item))
            out.put(("end", None))
        except BaseException as e:  # handed to the caller, which explains it
            out.put(("error", e))
        finally:
            client.close()

    not_sent_by = time.monotonic() + timeout + PREPARE_S
    threading.Thread(target=work, name="llm-reply", daemon=True).start()
    try:
        while True:
            limit = deadline[0] if deadline[0] != float("inf") else not_sent_by
            try:
                kind, value = out.get(timeout=min(0.25, max(0.0, limit - time.monotonic())))
            except queue.Empty:
                if time.monotonic() < (deadline[0] if deadline[0] != float("inf") else not_sent_by):
                    continue
                raise LLMUnavailable(f"the LLM at {endpoint(settings)} did not answer within {timeout:g} s"
                                     ) from None
            if kind == "item":
                yield value
            elif kind == "end":
                return
            else:
                raise LLMUnavailable(explain(value, settings))
    finally:
        stop.set()


def explain(error: BaseException, settings: Settings) -> str:  # noqa: PLR0911 - one line per kind of failure
    """One line saying why the LLM was not used, without secrets or stack traces."""
    import httpx
    import openai

    where = endpoint(settings)
    if isinstance(error, LLMUnavailable):
        return error.reason
    # While a streamed reply is read, the openai client lets httpx errors through unwrapped.
    if isinstance(error, (openai.APITimeoutError, httpx.TimeoutException)):
        return f"the LLM at {where} did not answer within {settings.llm_timeout_s:g} s"
    cut_off = (httpx.RemoteProtocolError, httpx.ReadError)
    if isinstance(error, cut_off) or (isinstance(error, openai.APIConnectionError)
                                      and isinstance(error.__cause__, cut_off)):
        return f"the LLM at {where} dropped the connection mid-reply"
    if isinstance(error, (openai.APIConnectionError, httpx.TransportError)):
        return f"the LLM at {where} is unreachable"
    if isinstance(error, openai.RateLimitError):
        after = error.response.headers.get("retry-after") if error.response is not None else None
        wait = "" if not after else f"; retry after {after} s" if after.strip().isdigit() else f"; retry after {after}"
        return f"the LLM at {where} is rate limited (HTTP 429{wait})"
    if isinstance(error, openai.AuthenticationError):
        return f"the LLM at {where} refused the API key (HTTP 401): check OPENAI_API_KEY"
    if isinstance(error, openai.APIStatusError):
        return f"the LLM at {where} returned HTTP {error.status_code}"
    if isinstance(error, (ValueError, TypeError, KeyError, IndexError, AttributeError)):
        return f"the LLM at {where} sent a reply that could not be read ({type(error).__name__})"
    return f"the LLM at {where} failed ({type(error).__name__})"


def source_texts(papers: list[PaperHit], budget_tokens: int,
                 passages: Sequence[tuple[str, str, str]] = ()) -> list[str]:
    """The text of each source, shortened when they do not all fit: to the passages the reader ranked best
    (`passages`: (paper id, section, paragraph), best first; each kept whole, with its section), else to its
    sentences closest to the question."""
    full = [p.text for p in papers]
    if sum(len(t) for t in full) <= budget_tokens * CHARS_PER_TOKEN:
        return full
    per_paper = budget_tokens * CHARS_PER_TOKEN // max(1, len(papers))
    out = []
    for p in papers:
        own = [(section, text) for pid, section, text in passages if pid == p.paper_id]
        if own:
            kept: list[str] = []
            for section, text in own:
                piece = f"§{section}: {text}" if section else text
                if kept and sum(len(k) for k in kept) + len(piece) > per_paper:
                    break
                kept.append(piece)
            out.append("\n".join(kept))
            continue
        scored = [(c.cosine, i, s) for i, c in enumerate(p.chunks) for s in split_sentences(c.text)]
        keep: set[int] = set()
        size = 0
        for _cos, i, s in sorted(scored, reverse=True):
            if size + len(s) > per_paper and keep:
                break
            keep.add(i)
            size += len(s)
        out.append(" … ".join(c.text for i, c in enumerate(p.chunks) if i in keep))
    return out


def answer_messages(question: str, papers: list[PaperHit], settings: Settings,
                    passages: Sequence[tuple[str, str, str]] = ()) -> list[ChatMessage]:
    """System rules plus the numbered sources and the question, sized to the model's context window (full texts
    cut to the passages the reader ranked best)."""
    from llama_index.core.llms import ChatMessage, MessageRole

    budget = settings.llm_context_window - settings.llm_max_tokens - 400
    texts = source_texts(papers, max(200, budget), passages)
    blocks = [prompts.SOURCE_BLOCK.format(n=i, label=p.label, paper_id=p.paper_id,
                                          text=_defang(t)) for i, (p, t) in enumerate(zip(papers, texts), 1)]
    return [ChatMessage(role=MessageRole.SYSTEM, content=prompts.ANSWER_SYSTEM),
            ChatMessage(role=MessageRole.USER, content=prompts.ANSWER_USER.format(
                sources="\n\n".join(blocks), question=question, first_label=papers[0].label if papers else ""))]


def _defang(text: str) -> str:
    """Source text cannot close its own quotation block."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def stream_answer(settings: Settings, messages: list[ChatMessage]) -> Iterator[str]:
    """Yield text deltas from the LLM; raise LLMUnavailable (with the reason) on any failure, and when the
    whole reply takes longer than PAPERS_LLM_TIMEOUT_S."""
    def deltas(llm: OpenAILike) -> Iterator[str]:
        for chunk in llm.stream_chat(messages):
            if chunk.delta:
                yield chunk.delta

    got_text = False
    for delta in _within_deadline(settings, deltas):
        got_text = True
        yield delta
    if not got_text:
        raise LLMUnavailable(f"the LLM at {endpoint(settings)} sent an empty reply")


def complete(settings: Settings, messages: list[ChatMessage], max_tokens: int | None = None) -> str:
    """A whole (non-streamed) reply within PAPERS_LLM_TIMEOUT_S; raise LLMUnavailable on failure or an empty
    reply."""
    def reply(llm: OpenAILike) -> Iterator[Any]:
        yield llm.chat(messages)

    got = list(_within_deadline(settings, reply, max_tokens=max_tokens))
    message = got[0].message if got and got[0] else None
    text = (message.content or "").strip() if message else ""
    if not text:
        raise LLMUnavailable(f"the LLM at {endpoint(settings)} sent an empty reply")
    return text


def llm_rewrite(settings: Settings, question: str, history: list[Any], replies: list[str],
                label: Callable[[str], str]) -> str:
    """The model's standalone form of a follow-up (first line of its reply); the caller checks it names no paper
    the conversation did not (rag/answer/conversation.py, acceptable_rewrite)."""
    from llama_index.core.llms import ChatMessage, MessageRole

    turns = []
    for i, t in enumerate(history):
        about = ", ".join(label(p) for p in t.referents)
        reply = replies[i - (len(history) - len(replies))][:300] if i >= len(history) - len(replies) else ""
        turns.append(f"User: {t.question}" + (f"\nAbout: {about}" if about else "") +
                     (f"\nAssistant: {reply}" if reply else ""))
    messages = [ChatMessage(role=MessageRole.SYSTEM, content=prompts.REWRITE_SYSTEM),
                ChatMessage(role=MessageRole.USER, content=prompts.REWRITE_USER.format(history="\n".join(turns),
                                                                                        question=question))]
    text = complete(settings, messages, max_tokens=80).strip()
    line = text.splitlines()[0].strip() if text else ""
    # Small models echo the prompt's role labels ("User: How ...?"): the question is what follows the label.
    return re.sub(r"^(?:user|question|rewritten(?: question)?|standalone(?: question)?)\s*:\s*", "", line,
                  flags=re.IGNORECASE).strip().strip('"')
