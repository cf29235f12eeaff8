"""Idle servers give freed memory back (rag/frontends/memory.py): when the watch fires, and that it releases."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rag.frontends.memory import IdleWatch, release_memory

# (wall s, cpu s) readings every 5 s -> whether memory is released at that reading: 10 s under 0.05 of a core
# after work (a quiet spell starts where its first quiet interval starts)
BUSY_THEN_IDLE = [((0, 0.0), False), ((5, 4.0), False), ((10, 4.1), False), ((15, 4.2), True),
                  ((20, 4.25), False), ((25, 4.3), False), ((30, 4.3), False)]
NEVER_BUSY = [((0, 0.0), False), ((5, 0.01), False), ((10, 0.02), False), ((15, 0.03), False), ((20, 0.04), False)]
BUSY_AGAIN = [((0, 0.0), False), ((5, 3.0), False), ((10, 3.0), False), ((15, 3.0), True), ((20, 3.0), False),
              ((25, 6.0), False), ((30, 6.0), False), ((35, 6.0), True), ((40, 6.0), False)]
CLOCK_BACK = [((10, 0.0), False), ((5, 3.0), False), ((10, 3.0), False)]


@pytest.mark.parametrize("readings", [BUSY_THEN_IDLE, NEVER_BUSY, BUSY_AGAIN, CLOCK_BACK])
def test_memory_is_released_once_per_idle_spell_after_work(readings: list) -> None:
    watch = IdleWatch(idle_s=10, busy_share=0.05)
    assert [watch.observe(wall, cpu) for (wall, cpu), _ in readings] == [want for _, want in readings]


def test_the_release_itself_does_not_count_as_work() -> None:
    watch = IdleWatch(idle_s=10, busy_share=0.05)
    for wall, cpu in [(0, 0.0), (5, 3.0), (10, 3.0)]:
        watch.observe(wall, cpu)
    assert watch.observe(15, 3.0)
    watch.restart_from(16, 4.0)  # the release took a second of CPU
    assert [watch.observe(w, 4.0) for w in (20, 25, 30, 35)] == [False] * 4


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_freed_memory_goes_back_to_the_system() -> None:
    keep, junk = [], []
    for i in range(20_000):  # 160 MB freed between small blocks still in use: malloc cannot shrink its heap's end
        junk.append(bytes(8_000 + i % 7))
        keep.append(bytes(600 + i % 7))
    del junk
    before = _rss_mb()
    assert release_memory()
    after = _rss_mb()
    assert before - after > 50, (before, after)
    assert len(keep) == 20_000
