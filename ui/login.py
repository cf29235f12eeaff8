"""Login checking for the web UI: constant-time comparison, and failed attempts slowed down per source.

Gradio calls the `auth` callable with the user name and password only, so `ClientAddress` (an ASGI middleware
given to gradio's app) records each request's client address in a context variable that the check reads.
Each failure from a source doubles the wait before that source's next attempt (up to MAX_DELAY_S), and the
attempts of one source wait in turn, so firing many at once gains nothing; a success resets the source's
count. Failures from every source together slow every attempt by at most SHARED_MAX_S, so a flood from other
addresses never locks out the owner's right password (before, fifteen parallel wrong logins for the owner's
name made the owner's own login wait 86.8 s).

The source is the socket peer, never a header the client writes: X-Forwarded-For and Forwarded are not trusted
(there is no setting naming trusted proxies). Uvicorn, under gradio, replaces the peer with the X-Forwarded-For
address when the peer is 127.0.0.1, so a request carrying that header counts as one source, "forwarded", whatever
it claims: before, fifteen wrong logins from 127.0.0.1 claiming the owner's address made the owner's right
password wait 91 s. Behind a reverse proxy every client is the proxy (or "forwarded"), so all clients share
the proxy's delays.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from contextvars import ContextVar
from typing import Any

FIRST_DELAY_S = 0.25   # wait before a source's attempt after its first failure
MAX_DELAY_S = 8.0      # a source's wait never grows beyond this
SHARED_MAX_S = 1.0     # the most that other sources' failures slow an attempt
FORGET_AFTER_S = 900   # failures older than this no longer count
MAX_SOURCES = 10_000   # sources remembered (bounded memory under a flood of addresses)

CLIENT: ContextVar[str] = ContextVar("papers_login_client", default="")


FORWARDED = "forwarded"  # the one source of every request that names a forwarded client (module docstring)
_FORWARDING_HEADERS = frozenset({b"x-forwarded-for", b"forwarded"})


def source_of(scope: dict[str, Any]) -> str:
    """The source a request's failed logins count against: its peer address, or FORWARDED when it carries a
    forwarding header (the address in the scope may then be the header's, chosen by the client)."""
    if any(name.lower() in _FORWARDING_HEADERS for name, _ in scope.get("headers") or ()):
        return FORWARDED
    return str((scope.get("client") or ("",))[0])


class ClientAddress:
    """ASGI middleware: the request's source (`source_of`), for the login check (`CLIENT`)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        token = CLIENT.set(source_of(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            CLIENT.reset(token)


class LoginGuard:
    """`await guard.check(user, password)` -> bool; pass `guard.check` (a coroutine function: gradio awaits
    only those, and would take an un-awaited coroutine object for a successful login) as gradio's `auth=`."""

    def __init__(self, user: str, password: str) -> None:
        self._user = user.encode()
        self._password = password.encode()
        self._failures: dict[str, tuple[int, float]] = {}  # source -> (count, time of last failure)
        self._all_failures = (0, 0.0)
        self._locks: dict[str, asyncio.Lock] = {}

    def delay(self, source: str = "") -> float:
        """Seconds the next attempt from `source` waits."""
        now = time.monotonic()
        count, last = self._failures.get(source, (0, 0.0))
        count = count if now - last < FORGET_AFTER_S else 0
        overall, last_any = self._all_failures
        overall = overall if now - last_any < FORGET_AFTER_S else 0
        mine = 0.0 if count == 0 else min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** (count - 1))
        shared = 0.0 if overall < 10 else min(SHARED_MAX_S, FIRST_DELAY_S * 2 ** ((overall - 10) // 10))
        return max(mine, shared)

    def _fail(self, source: str) -> None:
        now = time.monotonic()
        count, last = self._failures.get(source, (0, 0.0))
        self._failures[source] = ((count if now - last < FORGET_AFTER_S else 0) + 1, now)
        if len(self._failures) > MAX_SOURCES:
            self._failures = dict(sorted(self._failures.items(), key=lambda kv: kv[1][1])[-MAX_SOURCES // 2:])
        overall, last_any = self._all_failures
        self._all_failures = ((overall if now - last_any < FORGET_AFTER_S else 0) + 1, now)

    async def check(self, user: str, password: str) -> bool:
        source = CLIENT.get()
        if len(self._locks) > MAX_SOURCES:
            self._locks = {s: lk for s, lk in self._locks.items() if lk.locked()}
        lock = self._locks.setdefault(source, asyncio.Lock())
        async with lock:
            wait = self.delay(source)
            if wait:
                await asyncio.sleep(wait)
            ok = hmac.compare_digest(user.encode(), self._user) & hmac.compare_digest(password.encode(),
                                                                                     self._password)
            if ok:
                self._failures.pop(source, None)
            else:
                self._fail(source)
            return bool(ok)
