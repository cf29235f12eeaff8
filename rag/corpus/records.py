"""The records every reader produces and the scanner collects: `Paper`, the per-file `FileReport`, the one
`CorpusError` a bad input raises, and reading a file's text safely.

Readers (rag/corpus/readers/) and the scanner (rag/corpus/scan.py) both build on this module, and on nothing
of each other's.

Only regular files are read (FIFOs, devices and sockets, also behind symlinks, are skipped unread), and the
size limit is checked on the opened file before reading, then enforced by the read itself.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.corpus.references import reference_line
from rag.errors import PapersError


@dataclass(frozen=True)
class Paper:
    """One abstract as indexed: what users see in citations and what the store keeps."""

    paper_id: str
    text: str
    source: str
    position: int
    label: str
    content_hash: str
    title: str = ""
    url: str = ""
    authors: str = ""
    venue: str = ""
    year: str = ""
    doi: str = ""
    arxiv: str = ""
    key: str = ""         # the input's citation key (BibTeX key, CSL id, RIS ID)
    kind: str = ""        # BibTeX entry type the input implies (article, inproceedings, misc, ...)
    collection: str = ""  # the name of the paper list the paper came from (a list's header line)
    layout: str = ""      # PDF full texts: JSON [[offset, page, section], ...] into `text`
    # bibliographic fields as the input had them (rag/corpus/readers/common.py BIBLIO_FIELDS), for the exports
    volume: str = ""
    number: str = ""      # issue number
    pages: str = ""       # '1-29'
    month: str = ""       # '1'..'12', or the input's own text
    issn: str = ""
    publisher: str = ""

    @property
    def reference(self) -> str:
        """A ready-to-paste reference line."""
        return reference_line(self)


@dataclass
class FileReport:
    """What reading one file produced."""

    path: Path
    source: str
    papers: list[Paper] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failed: bool = False  # the whole file could not be read or parsed
    bad_positions: set[int] = field(default_factory=set)  # lines / records / paragraphs that were not read

    @property
    def clean(self) -> bool:
        return not self.problems


class CorpusError(PapersError, ValueError):
    """A problem with one input file or line; the message names the file and the reason."""

    exit_code = 2


def display_path(path: Path) -> str:
    """Path as users should see it in citations: relative to the working directory when inside it."""
    absolute = Path(os.path.abspath(path))  # symlinks are shown as the user named them
    try:
        return absolute.relative_to(Path(os.path.abspath(Path.cwd()))).as_posix()
    except ValueError:
        return absolute.as_posix()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _too_large(size: int, max_bytes: int) -> CorpusError:
    return CorpusError(f"file too large ({size / 2**20:.1f} MB; limit {max_bytes / 2**20:.0f} MB)")


def _open_nonblocking(path: Path) -> int:
    """Open for reading without blocking (opening a FIFO would otherwise wait for a writer forever)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except PermissionError:
        raise CorpusError("unreadable (permission denied)") from None
    except OSError as e:
        raise CorpusError(f"unreadable ({e.strerror or e})") from None


def check_regular(path: Path, max_bytes: int) -> None:
    """Refuse what read_text refuses before reading: anything but a regular file within the size limit."""
    fd = _open_nonblocking(path)
    try:
        _check_opened(fd, max_bytes)
    finally:
        os.close(fd)


def _check_opened(fd: int, max_bytes: int) -> None:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise CorpusError("is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise CorpusError(f"{_kind(info.st_mode)}, not a regular file: skipped unread")
    if info.st_size > max_bytes:
        raise _too_large(info.st_size, max_bytes)


def read_text(path: Path, max_bytes: int) -> str:
    """The file's text, if it is a regular file within the size limit.

    Opened non-blocking (opening a FIFO would otherwise wait for a writer forever) and checked with fstat on
    the opened file, so a symlink to a device or a file swapped after the check is never read unbounded.
    """
    fd = _open_nonblocking(path)
    try:
        _check_opened(fd, max_bytes)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:  # it grew after the check
            raise _too_large(len(data), max_bytes)
    except OSError as e:
        raise CorpusError(f"unreadable ({e.strerror or e})") from None
    finally:
        os.close(fd)
    if not data.strip():
        raise CorpusError("empty file")
    if b"\x00" in data[:8192]:
        raise CorpusError("binary file (contains NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CorpusError(f"not valid UTF-8 text (bad byte 0x{data[e.start]:02x} at offset {e.start})") from None


_LONE_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_SURROGATE_ESCAPE_RE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def load_json(text: str, report: FileReport, where: str) -> Any:
    """JSON text parsed as json.loads does (raising its JSONDecodeError), lone UTF-16 surrogates replaced.

    `"\\udfff"` is valid JSON, and json.loads gives a str holding a lone surrogate, which no UTF-8 encoder takes:
    hashing it, embedding it or storing it would fail and stop the whole ingest. Every reader that takes text
    from JSON parses it here, so each such surrogate becomes U+FFFD, with one warning per record naming the file
    and the record (`where`, and `[i]` for each item of a top-level array). A pair (an emoji written
    `\\ud83d\\ude00`) is decoded whole by json.loads and kept."""
    data = json.loads(text)
    if not _SURROGATE_ESCAPE_RE.search(text):  # no \\uD800-\\uDFFF escape: no surrogate can be in `data`
        return data
    if isinstance(data, list):  # an array of records: each is named by its place
        return [_without_surrogates(item, report, f"{where}[{i}]") for i, item in enumerate(data, 1)]
    return _without_surrogates(data, report, where)


def _without_surrogates(data: Any, report: FileReport, where: str) -> Any:
    fixed, n = _replace_surrogates(data)
    if n:
        report.warnings.append(f"{where}: {n} string{'s' * (n != 1)} with a lone UTF-16 surrogate (a "
                               "\\uD800-\\uDFFF escape not in a pair); each replaced with U+FFFD")
    return fixed


def _replace_surrogates(data: Any) -> tuple[Any, int]:
    """`data` with its lone surrogates replaced by U+FFFD (lists and dicts changed in place), and how many strings
    held one. An explicit stack, not recursion: JSON may nest as deep as json.loads allows."""
    count = 0
    stack: list[Any] = []

    def fix(v: Any) -> Any:
        nonlocal count
        if isinstance(v, str) and _LONE_SURROGATE_RE.search(v):
            count += 1
            return _LONE_SURROGATE_RE.sub("\ufffd", v)
        if isinstance(v, (list, dict)):
            stack.append(v)
        return v

    root = fix(data)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            node[:] = [fix(v) for v in node]
        else:
            items = [(fix(k), fix(v)) for k, v in node.items()]
            node.clear()
            node.update(items)
    return root, count
