"""The one error type every front end handles: a problem the user can act on.

`str(error)` is the message shown to the user (CLI line, UI notice, MCP tool error, `/v1` error body);
`exit_code` is the CLI's exit status, `http_status` and `code` are what the HTTP front ends answer. Each
layer raises its own subclass (a bad file, a bad question, a missing index, a bad configuration), so a
front end catches `PapersError` once and never maps exception classes to messages itself.
"""

from __future__ import annotations


class PapersError(Exception):
    """A failure with a message for the user (never a traceback)."""

    exit_code: int = 1
    http_status: int = 400
    code: str = "invalid_request"


class QuestionError(PapersError, ValueError):
    """A question that cannot be asked (empty, too long, an unknown paper id); the message says why."""

    exit_code = 2
    http_status = 400
    code = "invalid_question"


class ConfigurationError(PapersError, ValueError):
    """Settings that cannot work (a bad value, an LLM endpoint that is unsafe or incomplete)."""

    exit_code = 2
    http_status = 500
    code = "configuration"


class UnavailableError(PapersError, RuntimeError):
    """The assistant cannot answer at all right now (no index yet, a damaged store, no embedding model)."""

    exit_code = 1
    http_status = 503
    code = "unavailable"
