"""Login checking for the web UI: constant-time comparison, and failed attempts slowed down.

Gradio calls the `auth` callable with the user name and password only (not the client's address), and awaits
it when it is a coroutine, so waiting here does not block the server. Each failure doubles the wait before the
next attempt for that user name, and failures for any name slow down every attempt a little, so guessing
with rotating names is slowed too; a success resets the user's count. Attempts for one name wait in turn, so
firing many at once gains nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import time

FIRST_DELAY_S = 0.25   # wait before the attempt after a first failure
MAX_DELAY_S = 8.0      # the wait never grows beyond this
FORGET_AFTER_S = 900   # failures older than this no longer count


class LoginGuard:
    """`await guard.check(user, password)` -> bool; pass `guard.check` (a coroutine function: gradio awaits
    only those, and would take an un-awaited coroutine object for a successful login) as gradio's `auth=`."""

    def __init__(self, user: str, password: str) -> None:
        self._user = user.encode()
        self._password = password.encode()
        self._failures: dict[str, tuple[int, float]] = {}  # user name -> (count, time of last failure)
        self._all_failures = (0, 0.0)
        self._locks: dict[str, asyncio.Lock] = {}

    def delay(self, user: str) -> float:
        """Seconds the next attempt for `user` waits."""
        now = time.monotonic()
        count, last = self._failures.get(user, (0, 0.0))
        count = count if now - last < FORGET_AFTER_S else 0
        overall, last_any = self._all_failures
        overall = overall if now - last_any < FORGET_AFTER_S else 0
        mine = 0.0 if count == 0 else FIRST_DELAY_S * 2 ** (count - 1)
        shared = 0.0 if overall < 10 else FIRST_DELAY_S * 2 ** min(5, (overall - 10) // 10)
        return min(MAX_DELAY_S, max(mine, shared))

    def _fail(self, user: str) -> None:
        now = time.monotonic()
        count, last = self._failures.get(user, (0, 0.0))
        self._failures[user] = ((count if now - last < FORGET_AFTER_S else 0) + 1, now)
        if len(self._failures) > 10_000:  # bounded memory under a flood of made-up names
            self._failures = dict(sorted(self._failures.items(), key=lambda kv: kv[1][1])[-5_000:])
        overall, last_any = self._all_failures
        self._all_failures = ((overall if now - last_any < FORGET_AFTER_S else 0) + 1, now)

    async def check(self, user: str, password: str) -> bool:
        if len(self._locks) > 10_000:
            self._locks = {u: lk for u, lk in self._locks.items() if lk.locked()}
        lock = self._locks.setdefault(user, asyncio.Lock())
        async with lock:
            wait = self.delay(user)
            if wait:
                await asyncio.sleep(wait)
            ok = hmac.compare_digest(user.encode(), self._user) & hmac.compare_digest(password.encode(),
                                                                                     self._password)
            if ok:
                self._failures.pop(user, None)
            else:
                self._fail(user)
            return bool(ok)
