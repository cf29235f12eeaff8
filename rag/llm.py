"""Generation through any OpenAI-compatible server, via llama-index's OpenAILike LLM (the `openai` client).

Every failure is turned into an `LLMUnavailable` with a one-line reason (unreachable, timeout, HTTP status,
rate limit, empty reply), so the caller can fall back to the extractive answer and say why.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from rag import prompts
from rag.settings import Settings

if TYPE_CHECKING:
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai_like import OpenAILike

    from rag.retrieve import PaperHit

LOCAL_API_KEY = "not-needed"  # local servers ignore the key, but the openai client insists on one
CHARS_PER_TOKEN = 4           # rough budget estimate; abstracts are English prose


class LLMConfigError(ValueError):
    """The LLM settings cannot work (e.g. a remote endpoint without an API key)."""


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
            raise LLMConfigError(f"OPENAI_BASE_URL must be an http(s) URL, got {url!r}")
        if not settings.openai_api_key and not is_local_url(url):
            raise LLMConfigError(f"OPENAI_API_KEY is required for the non-local endpoint "
                                 f"{url or 'https://api.openai.com/v1'}")


def make_llm(settings: Settings, max_tokens: int | None = None) -> OpenAILike:
    from llama_index.llms.openai_like import OpenAILike

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else LOCAL_API_KEY
    return OpenAILike(
        model=settings.llm_model, api_base=settings.openai_base_url or "https://api.openai.com/v1", api_key=key,
        is_chat_model=True, context_window=settings.llm_context_window,
        max_tokens=max_tokens or settings.llm_max_tokens, temperature=settings.llm_temperature,
        timeout=settings.llm_timeout_s, max_retries=0,
    )


def explain(error: BaseException, settings: Settings) -> str:
    """One line saying why the LLM was not used, without secrets or stack traces."""
    import httpx
    import openai

    where = settings.openai_base_url or "api.openai.com"
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


def source_texts(papers: list[PaperHit], budget_tokens: int) -> list[str]:
    """The text of each source, shortened to its most relevant sentences when they do not all fit."""
    from rag.text import split_sentences

    full = [p.text for p in papers]
    if sum(len(t) for t in full) <= budget_tokens * CHARS_PER_TOKEN:
        return full
    per_paper = budget_tokens * CHARS_PER_TOKEN // max(1, len(papers))
    out = []
    for p in papers:
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


def answer_messages(question: str, papers: list[PaperHit], settings: Settings) -> list[ChatMessage]:
    """System rules plus the numbered sources and the question, sized to the model's context window."""
    from llama_index.core.llms import ChatMessage, MessageRole

    budget = settings.llm_context_window - settings.llm_max_tokens - 400
    texts = source_texts(papers, max(200, budget))
    blocks = [prompts.SOURCE_BLOCK.format(n=i, label=p.label, paper_id=p.paper_id,
                                          text=_defang(t)) for i, (p, t) in enumerate(zip(papers, texts), 1)]
    return [ChatMessage(role=MessageRole.SYSTEM, content=prompts.ANSWER_SYSTEM),
            ChatMessage(role=MessageRole.USER, content=prompts.ANSWER_USER.format(
                sources="\n\n".join(blocks), question=question, first_label=papers[0].label if papers else ""))]


def _defang(text: str) -> str:
    """Source text cannot close its own quotation block."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def stream_answer(settings: Settings, messages: list[ChatMessage]) -> Iterator[str]:
    """Yield text deltas from the LLM; raise LLMUnavailable (with the reason) on any failure."""
    llm = make_llm(settings)
    got_text = False
    try:
        for chunk in llm.stream_chat(messages):
            delta = chunk.delta or ""
            if delta:
                got_text = True
                yield delta
    except LLMUnavailable:
        raise
    except Exception as e:  # every client/server fault becomes a fallback with a reason
        raise LLMUnavailable(explain(e, settings)) from None
    if not got_text:
        raise LLMUnavailable(f"the LLM at {settings.openai_base_url or 'api.openai.com'} sent an empty reply")


def complete(settings: Settings, messages: list[ChatMessage], max_tokens: int | None = None) -> str:
    """A whole (non-streamed) reply; raise LLMUnavailable on failure or an empty reply."""
    llm = make_llm(settings, max_tokens=max_tokens)
    try:
        reply = llm.chat(messages)
    except Exception as e:
        raise LLMUnavailable(explain(e, settings)) from None
    text = (reply.message.content or "").strip() if reply and reply.message else ""
    if not text:
        raise LLMUnavailable(f"the LLM at {settings.openai_base_url or 'api.openai.com'} sent an empty reply")
    return text
