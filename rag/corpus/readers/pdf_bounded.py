"""A PDF parsed in a child process with a memory and a time budget.

A PDF's streams are compressed: a 4 MB file can decompress to gigabytes (a decompression bomb) and PDFium holds
a page's decoded content in memory, so a hostile file could take the whole ingest (or the UI serving an upload)
down with it. The parse runs in one worker process whose address space is capped (`resource.RLIMIT_AS`) and
whose answer is awaited for at most `SECONDS`; a worker that runs out of either is replaced and the file gets
one clear line, while the ingest goes on with the next file.

Why our own and not a library: the standard library's ProcessPoolExecutor gives the worker and the broken-pool
signal; the limits and the message are this project's.
"""

from __future__ import annotations

import resource
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar

from rag.corpus.records import CorpusError

T = TypeVar("T")

# Set by hand, not fitted: a 200-page paper parses in under 400 MB of address space and 10 s here; the budget
# leaves five times that, while a bomb (5.3 GB measured for one 4 MB file) is stopped well before the machine is.
MEMORY_MB = 2048
SECONDS = 120

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _limit(memory_mb: int) -> None:
    """Worker initialiser: cap the worker's address space."""
    cap = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _worker(memory_mb: int) -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        # spawn: the parent may run threads (the UI, the embedder), which a forked child must not inherit
        _pool = ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_limit, initargs=(memory_mb,))
    return _pool


def _discard() -> None:
    """Stop the worker (killed if it still runs): the next parse starts a fresh one."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        for proc in list(getattr(pool, "_processes", {}).values()):  # no public way to kill a stuck worker
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)


def parse_bounded(parse: Callable[[Path], T], path: Path, memory_mb: int = MEMORY_MB,
                  seconds: float = SECONDS) -> T:
    """`parse(path)` in the bounded worker (`parse` a module-level function: the worker imports its module);
    CorpusError names the budget a file went over."""
    with _lock:  # one parse at a time: the worker is one process
        future = _worker(memory_mb).submit(parse, path)
        try:
            return future.result(timeout=seconds)
        except FutureTimeout:
            _discard()
            raise CorpusError(f"reading the PDF took longer than {seconds:g} s; it was stopped") from None
        except (MemoryError, BrokenProcessPool):
            _discard()
            raise CorpusError(f"reading the PDF needs more than {memory_mb} MB of memory (a decompression "
                              "bomb?); it was stopped") from None
