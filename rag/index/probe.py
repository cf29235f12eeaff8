"""Reading the embedded store's vector index in a child process first, so damaged files cannot crash this one.

Chroma keeps each collection's HNSW vector index in files under `chroma/<segment id>/` (header.bin,
data_level0.bin, length.bin, link_lists.bin, index_metadata.pickle) and reads them with hnswlib, which trusts
them. Garbage in data_level0.bin under an intact header makes the first read of the collection (count, get or
query: Chroma first adds the entries of its log newer than the files to the index it loaded, walking the
garbage links) touch memory it does not own, and the process dies with SIGSEGV, no message. A Python `try`
cannot catch a segfault: the only safe way to find out is to let another process read the files. So the first
open after the files change spawns a child that opens the store, counts, reads a few vectors and runs one
query; its death (or Chroma's refusal to load the files) becomes one clear StoreError in this process, which
never touches the damaged files.

It stays cheap: the child runs only when the fingerprint of the files (path, size, mtime_ns, ctime_ns of each)
differs from the one of the last verdict, kept in `data_dir/.vector-probe.json` (written atomically). A store
whose index has not reached Chroma's sync threshold has no such files and needs no probe.

Only the standard library is imported here: the child (`main`, also `python -m rag.index.probe CHROMA_DIR
NAME...`) imports chromadb and none of this package's heavier modules.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# A segment directory holding this file is an index Chroma loads from disk. One without it (a collection below
# the sync threshold) is rebuilt from Chroma's log at each open and rewritten by every reader: never read, it
# cannot crash anything, and counting it would make every command probe.
PERSISTED_MARK = "index_metadata.pickle"
RECORD_FILE = ".vector-probe.json"
# Bounds the child, which takes 1.2 s at 1,600 chunks and 1.7 s at 20k (a second of it importing chromadb): the
# margin is for much larger indexes on a busy machine. A read that does not end is reported, and tried again.
TIMEOUT_S = 120.0
PROBE_ROWS = 17  # vectors read by the child (the first rows: a read by offset makes Chroma scan the collection)
_DAMAGED_EXIT = 3  # the child's exit code when Chroma refused the index files (its own error, caught)
# Chroma's words when it refuses the files themselves (a garbage header.bin, index_metadata.pickle), as opposed to
# an error met on the way, e.g. in its database while it adds the log to the index
_FILE_ERRORS = ("error loading hnsw index", "deserializing pickle", "persisted hnsw")
# Deaths that come from the reading itself. Another one (SIGKILL from the out-of-memory killer, SIGTERM) says
# nothing about the files: no verdict is kept, and the next open probes again.
_CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}

spawned = 0  # child processes started by this process (tests check that an unchanged store is probed once)


def hnsw_files(chroma_dir: Path) -> list[tuple[str, int, int, int]]:
    """(path under chroma_dir, size, mtime_ns, ctime_ns) of each file of the vector indexes Chroma loads from
    disk, sorted; empty when there are none (or no store)."""
    out: list[tuple[str, int, int, int]] = []
    try:
        segments = [d for d in Path(chroma_dir).iterdir() if d.is_dir() and (d / PERSISTED_MARK).exists()]
        for segment in segments:
            for f in segment.iterdir():
                if f.is_file():
                    st = f.stat()
                    out.append((f"{segment.name}/{f.name}", st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    except OSError:  # no store yet, or a file replaced while listed: the next open lists it again
        pass
    return sorted(out)


def fingerprint(chroma_dir: Path) -> str:
    """A digest of `hnsw_files`; "" when the store keeps no vector index in files."""
    files = hnsw_files(chroma_dir)
    return hashlib.sha256(json.dumps(files).encode()).hexdigest() if files else ""


def recorded(data_dir: Path) -> dict[str, str]:
    """The last verdict: {"fingerprint": ..., "damage": "" when the files read fine}."""
    try:
        data = json.loads((Path(data_dir) / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record(data_dir: Path, digest: str, damage: str) -> None:
    path = Path(data_dir) / RECORD_FILE
    tmp = path.with_name(f"{RECORD_FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"fingerprint": digest, "damage": damage}), encoding="utf-8")
        os.replace(tmp, path)  # readers see the old verdict or the new one, never half of one
    except OSError as e:  # a read-only data dir: the files are probed again next time
        log.warning("cannot record the vector index probe in %s: %s", path, e)
        tmp.unlink(missing_ok=True)


def vector_damage(chroma_dir: Path, data_dir: Path, names: list[str], timeout: float = TIMEOUT_S) -> str | None:
    """What is wrong with the store's vector index files, in a phrase ("the reading process died with
    SIGSEGV"), or None when they read fine, are as they were at the last verdict, or do not exist."""
    digest = fingerprint(chroma_dir)
    if not digest:
        return None
    last = recorded(data_dir)
    if last.get("fingerprint") == digest:
        return last.get("damage") or None
    damage, settled = _run_child(Path(chroma_dir), names, timeout)
    if settled:
        _record(data_dir, digest, damage or "")
    return damage


def _run_child(chroma_dir: Path, names: list[str], timeout: float) -> tuple[str | None, bool]:
    """(damage or None, whether the verdict is settled). A child that fails for another reason (a damaged
    database, a missing collection) settles nothing: this process reads the store and reports it as usual."""
    global spawned
    spawned += 1
    # `rag` is imported from where this file is (a source tree need not be installed), looked up last; -P keeps
    # the working directory out of the child's path
    root = str(Path(__file__).resolve().parents[2])
    code = f"import sys; sys.path.append({root!r}); from rag.index.probe import main; sys.exit(main(sys.argv[1:]))"
    cmd = [sys.executable, "-P", "-c", code, str(chroma_dir), *names]
    try:
        done = subprocess.run(cmd, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"reading them did not finish within {timeout:.0f} s", False
    if done.returncode < 0:
        died = f"the reading process died with {_signal_name(-done.returncode)}"
        if -done.returncode in _CRASHES:
            return died, True
        log.info("the vector index probe was stopped: %s", died)
        return None, False
    last_line = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode == _DAMAGED_EXIT:
        return f"Chroma cannot load them: {last_line}", True
    if done.returncode:
        log.info("the vector index probe failed (exit %s): %s", done.returncode, last_line[:300])
        return None, False
    return None, True


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def vector_segment_dirs(chroma_dir: Path, names: list[str]) -> list[Path]:
    """The directories of the named collections' vector indexes (Chroma's segment table, read-only)."""
    db = Path(chroma_dir) / "chroma.sqlite3"
    marks = ",".join("?" * len(names))
    query = ("SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id "
             f"WHERE s.scope = 'VECTOR' AND c.name IN ({marks})")
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        ids = [str(row[0]) for row in conn.execute(query, names)]
    return [Path(chroma_dir) / i for i in ids if (Path(chroma_dir) / i).is_dir()]


# --- the child ---------------------------------------------------------------------------------------------

def _brief(error: BaseException) -> str:
    """Chroma's message from the part naming the HNSW index on, on one line."""
    parts = " ".join(str(error).split()).split(": ")
    hnsw = [i for i, p in enumerate(parts) if "hnsw" in p.lower()]
    start = hnsw[-1] + 1 if hnsw and hnsw[-1] + 1 < len(parts) else (hnsw[-1] if hnsw else 0)
    return ": ".join(parts[start:])[:200] or type(error).__name__


def _read(col: Any) -> None:
    """What a command reads first (a chromadb Collection): the count, some vectors, one query."""
    total = col.count()
    if not total:
        return
    embeddings = col.get(limit=PROBE_ROWS, include=["embeddings"])["embeddings"]
    dim = len(embeddings[0]) if embeddings is not None and len(embeddings) else 0
    if dim:
        col.query(query_embeddings=[[1.0] + [0.0] * (dim - 1)], n_results=min(total, 10), include=[])


def main(args: list[str]) -> int:
    """Read the named collections of the store at args[0]; 0 when they read, _DAMAGED_EXIT when Chroma refuses
    the vector index files, 2 on another error (a fatal signal ends the process before it returns)."""
    os.environ["ANONYMIZED_TELEMETRY"] = "False"
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    try:
        client = chromadb.PersistentClient(path=args[0], settings=ChromaSettings(anonymized_telemetry=False))
        for name in args[1:]:
            _read(client.get_collection(name))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # Chroma's errors, and the panics of its Rust core (BaseException)
        print(_brief(e), file=sys.stderr)
        return _DAMAGED_EXIT if any(m in str(e).lower() for m in _FILE_ERRORS) else 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
