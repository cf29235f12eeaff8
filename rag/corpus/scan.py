"""Corpus reading: paper-list files, JSON Lines and single-paper text files become `Paper` records.

Every problem with an input file becomes a one-line message naming the file (and line) and the reason; a bad
file never stops the others from being read. A file that could not be read at all is `failed`, so ingestion
keeps every paper it indexed from it before; in a file with some bad lines (records) the good ones are read
as usual and only the bad positions are recorded (`bad_positions`), so only papers previously indexed at those
positions are kept.

Only regular files are read (FIFOs, devices and sockets, also behind symlinks, are skipped unread), and the
size limit is checked on the opened file before reading, then enforced by the read itself.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag.corpus import readers
from rag.corpus.labels import extract_label
from rag.corpus.readers import markdown
from rag.corpus.readers.common import BIBLIO_FIELDS, entry_name
from rag.corpus.records import CorpusError, FileReport, Paper, check_regular, display_path, load_json, read_text
from rag.text import clean_markup, stable_id

# BibTeX, RIS and PDF (and CSL-JSON among .json files) are read by rag/corpus/readers/.
SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".jsonl", ".ndjson", ".json") + readers.SUFFIXES
JSON_FIELDS = ("title", "id", "url", "authors", "venue", "year")
MAX_ID_CHARS = 200
_ID_RE = re.compile(rf"[^\x00-\x1f\x7f]{{1,{MAX_ID_CHARS}}}")  # a blank id is read as none (the text's hash)
MIN_ABSTRACT_CHARS = 40


def discover(paths: list[Path]) -> tuple[list[Path], list[str], list[FileReport]]:
    """Expand directories into the supported files under them, sorted; report paths that do not exist, and
    files that cannot be resolved (a symlink loop) as failed reports, so their indexed papers are kept."""
    files: list[Path] = []
    problems: list[str] = []
    for p in paths:
        if p.is_dir():
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                files.extend(Path(root) / n for n in sorted(names)
                             if not n.startswith(".") and n.lower().endswith(SUPPORTED_SUFFIXES))
        elif p.exists() or _loops(p):  # a symlink loop is told below as one, not as a missing path
            files.append(p)
        else:
            problems.append(f"{p}: no such file or directory")
    seen: set[Path] = set()
    unique: list[Path] = []
    unresolved: list[FileReport] = []
    for f in files:
        try:
            r = f.resolve()
        except (RuntimeError, OSError) as e:  # a symlink loop ("Symlink loop from ..."), a dangling chain
            source = display_path(f)
            unresolved.append(FileReport(path=f, source=source, failed=True,
                                         problems=[f"{source}: cannot be read ({e}); skipped"]))
            continue
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return unique, problems, unresolved


def _loops(p: Path) -> bool:
    """A path that is a symlink loop (`exists()` says False for it, as for a missing file)."""
    try:
        p.resolve(strict=True)
    except FileNotFoundError:
        return False
    except (RuntimeError, OSError):
        return True
    return False


LabelLookup = Callable[[str, str], "str | None"]


def read_file(path: Path, max_bytes: int, max_abstract_chars: int,
              known_label: LabelLookup | None = None) -> FileReport:
    """Read one corpus file of any supported format into papers, collecting problems instead of raising.

    `known_label(content_hash, title)` returns the label already stored for an unchanged paper: extracting
    labels is most of the work of re-reading a large corpus, and an unchanged text has the same label.
    """
    report = FileReport(path=path, source=display_path(path))
    try:
        return _read_file(report, path, max_bytes, max_abstract_chars, known_label)
    except MemoryError:  # one file too big for this machine must not stop the whole ingest
        return _failed(report, "out of memory while reading it")
    except RecursionError:  # JSON or markup nested thousands deep
        return _failed(report, "nested too deeply to read")
    except UnicodeError as e:  # text no UTF-8 encoder takes (JSON's lone surrogates are replaced before this)
        return _failed(report, f"holds text that is not valid Unicode ({getattr(e, 'reason', e)})")


def _failed(report: FileReport, reason: str) -> FileReport:
    report.papers.clear()
    report.failed = True
    report.problems.append(f"{report.source}: {reason}; skipped")
    return report


def _read_file(report: FileReport, path: Path, max_bytes: int, max_abstract_chars: int,
               known_label: LabelLookup | None) -> FileReport:
    try:
        check_regular(path, max_bytes)  # before anything opens it: a format sniffer or reader reads it too
        reader = readers.reader_for(path)
        text = read_text(path, max_bytes) if reader is None else ""
        suffix = path.suffix.lower()
        if reader is not None:
            records = reader(path, max_bytes, report)
        elif suffix in (".jsonl", ".ndjson"):
            records = _parse_jsonl(text, report)
        elif suffix == ".json":
            records = _parse_json_array(text, report)
        elif suffix in (".md", ".markdown"):
            # a full text with sections (rag/corpus/readers/markdown.py), else one abstract or a paper list
            records = markdown.records(text, report) or _parse_text(text, suffix, report)
        elif suffix == ".txt":
            records = _parse_text(text, suffix, report)
        else:
            raise CorpusError(f"unsupported file type '{suffix}' (use {', '.join(SUPPORTED_SUFFIXES)})")
    except CorpusError as e:
        report.problems.append(f"{report.source}: {e}")
        report.failed = True
        return report
    for position, record in records:
        abstract = record["abstract"]
        where = f"{report.source}:{position}" if suffix in (".jsonl", ".ndjson") else report.source
        name = entry_name(str(record.get("key") or ""), str(record.get("title") or ""))
        if name:
            where += f" ({name})"
        # A full text's readers make plain text (rag/corpus/readers/fulltext.py): cleaning markup from it again
        # would move its layout. Only they set `full_text`: a JSON paper object saying so is an abstract.
        full_text = (reader is not None or suffix in (".md", ".markdown")) and bool(record.get("full_text"))
        cleaned = abstract if full_text else clean_markup(abstract)
        if len(cleaned) < MIN_ABSTRACT_CHARS:
            report.problems.append(f"{where}: abstract too short ({len(cleaned)} characters)")
            report.bad_positions.add(position)
            continue
        if len(cleaned) > max_abstract_chars and not full_text:  # a PDF's text is not an abstract
            report.problems.append(
                f"{where}: abstract too long ({len(cleaned):,} characters; limit {max_abstract_chars:,})")
            report.bad_positions.add(position)
            continue
        content_hash = stable_id(abstract)
        title = clean_markup(str(record["title"])) if record.get("title") else ""
        label = known_label(content_hash, title) if known_label else None
        given_id = str(record.get("id") or "").strip()
        if given_id and not _ID_RE.fullmatch(given_id):
            report.problems.append(f"{where}: id {given_id[:40]!r}{'…' if len(given_id) > 40 else ''} is not a usable "
                                   f"id (1-{MAX_ID_CHARS} printable characters, no spaces at the ends); skipped")
            report.bad_positions.add(position)
            continue
        report.papers.append(Paper(
            paper_id=given_id or content_hash,
            text=cleaned,
            source=report.source,
            position=position,
            # a reader may name the paper itself (a PDF's label comes from its title, not from its text)
            label=label or str(record.get("label") or "") or extract_label(cleaned, title=title, raw=abstract),
            content_hash=content_hash,
            title=title,
            url=str(record.get("url") or ""),
            authors=_authors(record.get("authors")),
            venue=str(record.get("venue") or ""),
            year=str(record.get("year") or ""),
            **{f: str(record.get(f) or "") for f in ("doi", "arxiv", "key", "kind", "collection") + BIBLIO_FIELDS},
            layout=str(record.get("layout") or "") if full_text else "",
        ))
    return report


def _authors(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(a) for a in value)
    return str(value or "")


def _record(obj: object, where: str, report: FileReport, position: int) -> dict | None:
    if not isinstance(obj, dict):
        report.problems.append(f"{where}: expected a JSON object, got {type(obj).__name__}")
        report.bad_positions.add(position)
        return None
    abstract = obj.get("abstract")
    if not isinstance(abstract, str) or not abstract.strip():
        report.problems.append(f"{where}: missing 'abstract' (a non-empty string is required)")
        report.bad_positions.add(position)
        return None
    return obj


def _parse_jsonl(text: str, report: FileReport) -> list[tuple[int, dict]]:
    records = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{report.source}:{lineno}"
        try:
            obj = load_json(line, report, where)
        except json.JSONDecodeError as e:
            report.problems.append(f"{where}: invalid JSON ({e.msg} at column {e.colno})")
            report.bad_positions.add(lineno)
            continue
        rec = _record(obj, where, report, lineno)
        if rec is not None:
            records.append((lineno, rec))
    if not records and not report.problems:
        raise CorpusError("no papers found")
    return records


def _parse_json_array(text: str, report: FileReport) -> list[tuple[int, dict]]:
    try:
        data = load_json(text, report, report.source)
    except json.JSONDecodeError as e:
        raise CorpusError(f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise CorpusError("expected a JSON array of paper objects")
    records = []
    for i, obj in enumerate(data, 1):
        rec = _record(obj, f"{report.source}[{i}]", report, i)
        if rec is not None:
            records.append((i, rec))
    return records


_BLOCK_SPLIT_RE = re.compile(r"\n[ \t]*\n")
_HEADING_RE = re.compile(r"#{1,6}[ \t]+\S")  # a markdown ATX heading line


def _is_header(block: str) -> bool:
    """A list header is a paragraph of one short line that does not read as a sentence of an abstract
    (a markdown `# heading` line always is one)."""
    if "\n" in block or len(block) > 200:
        return False
    return bool(_HEADING_RE.match(block)) or not block.endswith(".")


def _parse_text(text: str, suffix: str, report: FileReport) -> list[tuple[int, dict]]:
    """Paper-list files (header line, then one abstract per paragraph) or a single paper per file.

    A file is a paper list when a header line is followed by two or more paragraphs. A `.txt` file with
    several long paragraphs and no header is read as a list too, with a warning. Anything else is one paper;
    its first line is the title when it is a short heading.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks = [b.strip() for b in _BLOCK_SPLIT_RE.split(normalized) if b.strip()]
    first, _, rest = blocks[0].partition("\n")
    if rest.strip() and _HEADING_RE.match(first):  # `# Title` directly followed by text: still the title
        blocks[0:1] = [first.strip(), rest.strip()]
    if _is_header(blocks[0]):
        body = blocks[1:]
        if not body:
            raise CorpusError("only a header line, no abstracts")
        if len(body) >= 2 and suffix == ".txt":
            # The header names the list ("NeurIPS 2026 论文列表"): the list's name, not a venue.
            return [(i, {"abstract": b, "collection": blocks[0].lstrip("#").strip()}) for i, b in enumerate(body, 1)]
        return [(1, {"abstract": "\n".join(body), "title": blocks[0].lstrip("#").strip()})]
    if suffix == ".txt" and len(blocks) >= 2 and all(len(b) >= 200 for b in blocks):
        report.warnings.append(f"{report.source}: no header line; read each of its {len(blocks)} paragraphs "
                               "as one paper")
        return [(i, {"abstract": b}) for i, b in enumerate(blocks, 1)]
    return [(1, {"abstract": "\n".join(blocks)})]


@dataclass
class CorpusScan:
    """Everything read from a set of paths: papers (duplicates folded), per-file reports, problems."""

    papers: list[Paper]
    files: list[FileReport]
    problems: list[str]
    warnings: list[str]
    duplicates: list[str]


def _title_key(title: str) -> str:
    """A title compared across files: case, accents, punctuation and spacing ignored."""
    folded = unicodedata.normalize("NFKD", title.casefold())
    return " ".join(re.findall(r"\w+", "".join(c for c in folded if not unicodedata.combining(c))))


def _first_author(p: Paper) -> list[str]:
    """The first author's name as written ("Given Family"), folded like titles, as words ([] when none given)."""
    first = re.split(r"\s*(?:,|;|\band\b)\s*", p.authors.strip())[0] if p.authors.strip() else ""
    return _title_key(first).split()


def _same_person(a: list[str], b: list[str]) -> bool:
    """Two first authors are one person when the family names agree and so do the given names, word by word,
    an initial matching a name it begins ("B. Silva" is "Beatriz Silva", as two exports of one paper write it;
    "Wei Wang" is not "Jun Wang"). A family name alone matches nobody's full name but its own."""
    if not a or not b or a[-1] != b[-1] or (len(a) == 1) != (len(b) == 1):
        return False
    return all(x == y or (len(x) == 1 and y.startswith(x)) or (len(y) == 1 and x.startswith(y))
               for x, y in zip(a[:-1], b[:-1]))


def _agree(a: str, b: str) -> bool:
    """Two values of a field agree unless both are given and differ."""
    return not (a and b and a != b)


class _SamePaper:
    """The papers read so far by DOI and by normalised title, to tell when another file has the same paper.

    Same DOI (case-insensitive) is the same paper. A title alone never is ("Summary", "Editorial" and
    "Corresponding Author:" head many papers): the same title is the same paper when the first author agrees too
    (the full name, not only the family name: many papers share a surname) and neither the DOI, the year nor the
    venue disagrees (a reprint, an erratum, a chapter sharing a book's title, an editorial in another journal).
    `twin` finds a same-titled paper that is not the same, to say both were kept.
    """

    def __init__(self) -> None:
        self.by_doi: dict[str, Paper] = {}
        self.by_title: dict[str, list[Paper]] = {}

    def find(self, p: Paper) -> tuple[Paper, str] | None:
        if p.doi and p.doi.lower() in self.by_doi:
            return self.by_doi[p.doi.lower()], f"same DOI ({p.doi}) as"
        for q in self.by_title.get(_title_key(p.title), []) if p.title else []:
            if _agree(p.doi.lower(), q.doi.lower()) and _agree(p.year, q.year) \
                    and _agree(_title_key(p.venue), _title_key(q.venue)) \
                    and _same_person(_first_author(p), _first_author(q)):
                return q, "same title and first author as"
        return None

    def twin(self, p: Paper) -> Paper | None:
        """A paper read before with the same title (that `find` did not call the same paper)."""
        return next(iter(self.by_title.get(_title_key(p.title), [])), None) if p.title else None

    def add(self, p: Paper) -> None:
        if p.doi:
            self.by_doi.setdefault(p.doi.lower(), p)
        if p.title and _title_key(p.title):
            self.by_title.setdefault(_title_key(p.title), []).append(p)


def _named(p: Paper) -> str:
    name = entry_name(p.key, p.title)
    return f"{p.source}#{p.position}" + (f" ({name})" if name else "")


IndexedHere = Callable[[Paper], bool]


def scan(paths: list[Path], max_bytes: int, max_abstract_chars: int,
         known_label: LabelLookup | None = None, indexed_here: IndexedHere | None = None) -> CorpusScan:
    """Read every supported file under `paths`; the same paper appearing twice is kept once and reported.

    The same abstract text or id is kept once: the first read, unless `indexed_here(paper)` says the index holds
    that id from this paper's own file (see `_yield_id`). The same paper by DOI or title (a Zotero export and a
    Better BibTeX export of one library, or a paper in two collections) is skipped the second time, with a note
    naming both places; a PDF's full text and a reference entry of the same paper are both kept (one gives the
    text, the other the abstract and metadata), with a note.
    """
    files, problems, reports = discover(paths)
    reports += [read_file(f, max_bytes, max_abstract_chars, known_label) for f in files]
    owners = _id_owners(reports, indexed_here)
    papers: list[Paper] = []
    by_id: dict[str, Paper] = {}
    by_hash: dict[str, Paper] = {}
    same_paper = _SamePaper()
    duplicates: list[str] = []
    for rep in reports:
        problems.extend(rep.problems)
        for p in rep.papers:
            if _yield_id(p, owners, problems, duplicates):
                continue
            first = by_hash.get(p.content_hash) or by_id.get(p.paper_id)
            if first is not None:
                what = "same text as" if first.content_hash == p.content_hash else "same id as"
                duplicates.append(f"{p.source}#{p.position}: {what} {first.source}#{first.position} "
                                  f"({first.paper_id}); kept once")
                continue
            found = same_paper.find(p)
            if found is not None:
                first, what = found
                if not (p.layout or first.layout):
                    duplicates.append(f"{_named(p)}: {what} {_named(first)}; skipped, the first is indexed")
                    continue
                duplicates.append(f"{_named(p)}: {what} {_named(first)}; both kept (a full text and a "
                                  "reference entry)")
            elif (twin := same_paper.twin(p)) is not None:
                duplicates.append(f"{_named(p)}: same title as {_named(twin)}; both kept (a title alone does not "
                                  "make them one paper)")
            by_hash[p.content_hash] = p
            by_id[p.paper_id] = p
            same_paper.add(p)
            papers.append(p)
    warnings = [w for rep in reports for w in rep.warnings]
    return CorpusScan(papers=papers, files=reports, problems=problems, warnings=warnings, duplicates=duplicates)


def _id_owners(reports: list[FileReport], indexed_here: IndexedHere | None) -> dict[str, Paper]:
    """For each id the index holds from a file read now, the paper read for it there (the first in that file)."""
    owners: dict[str, Paper] = {}
    if indexed_here is None:
        return owners
    for p in (p for rep in reports for p in rep.papers):
        if p.paper_id not in owners and indexed_here(p):
            owners[p.paper_id] = p
    return owners


def _yield_id(p: Paper, owners: dict[str, Paper], problems: list[str], duplicates: list[str]) -> bool:
    """Whether `p` gives way to the paper indexed under its id from another file, and is reported.

    An id names one paper: the one indexed keeps it, else a new file whose name sorts first would silently
    replace it (scan order decides only between papers none of which is indexed, and within one file). A copy
    of the indexed text is a duplicate; another text with that id is a problem, not indexed."""
    owner = owners.get(p.paper_id, p)
    if owner is p or owner.source == p.source:
        return False
    if owner.content_hash == p.content_hash:
        duplicates.append(f"{p.source}#{p.position}: same text as {owner.source}#{owner.position} "
                          f"({p.paper_id}); kept once")
    else:
        problems.append(f"{p.source}#{p.position}: id {p.paper_id!r} is already used by another paper "
                        f"({owner.source}#{owner.position}, {owner.label}); not indexed: give it its own id")
    return True
