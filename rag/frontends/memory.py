"""A long-running server gives memory it no longer uses back to the system once it goes idle.

glibc's malloc keeps what Python frees in its arenas (one per thread that allocated, and the servers answer on
thread pools) rather than returning it, so a server's resident memory stays at its busiest point long after the
load is gone. Measured on `papers ui` after 600 chat sessions (300 kept, `ui/app.py SESSIONS_KEPT`): 850 MB
resident, 683 MB after `malloc_trim(0)`, with the same Python objects alive. `malloc_trim` is glibc's own call for
this, so it is used through ctypes; elsewhere (musl, macOS) there is nothing to call and nothing runs.

Idle is judged from the process's own CPU time (all threads), not from the web framework's internals: a process
that used under BUSY_SHARE of a core for IDLE_S seconds is idle, and memory is released once per idle spell.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

IDLE_S = 30.0      # seconds of (near) no work before the process counts as idle
CHECK_S = 5.0      # how often the CPU clock is read
BUSY_SHARE = 0.05  # CPU seconds per wall-clock second above which the process is busy (heartbeats stay below)


@dataclass
class IdleWatch:
    """Decides, from readings of the wall clock and the process's CPU clock, when memory should be released:
    once, after `idle_s` seconds in which every interval used under `busy_share` of a core."""

    idle_s: float = IDLE_S
    busy_share: float = BUSY_SHARE
    _last: tuple[float, float] | None = field(default=None, repr=False)
    _quiet_since: float | None = field(default=None, repr=False)
    _released: bool = field(default=True, repr=False)  # nothing to release before the first work

    def observe(self, wall: float, cpu: float) -> bool:
        """Take one reading; True when memory should be released now."""
        last, self._last = self._last, (wall, cpu)
        if last is None or wall <= last[0]:
            return False
        if (cpu - last[1]) / (wall - last[0]) > self.busy_share:
            self._quiet_since, self._released = None, False
            return False
        if self._quiet_since is None:
            self._quiet_since = last[0]
        if self._released or wall - self._quiet_since < self.idle_s:
            return False
        self._released = True
        return True

    def restart_from(self, wall: float, cpu: float) -> None:
        """Read the clocks afresh after a release, so the release's own CPU time does not count as work."""
        self._last = (wall, cpu)


def _malloc_trim() -> Callable[[], object] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


def release_memory() -> bool:
    """Collect garbage, then hand malloc's free pages back to the system; False where there is no malloc_trim."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim()
    return True


def start_idle_release(watch: IdleWatch | None = None, check_s: float = CHECK_S) -> threading.Thread | None:
    """A daemon thread that releases memory whenever the process goes idle (None where it cannot release)."""
    if _malloc_trim() is None:
        return None
    watch = watch or IdleWatch()

    def loop() -> None:
        while True:
            if watch.observe(time.monotonic(), time.process_time()):
                release_memory()
                watch.restart_from(time.monotonic(), time.process_time())
            time.sleep(check_s)

    thread = threading.Thread(target=loop, name="idle-release", daemon=True)
    thread.start()
    return thread
