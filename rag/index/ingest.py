"""Incremental ingestion: corpus files -> sentence-whole chunks -> embeddings -> Chroma, then the BM25 index.

Only what changed is embedded: papers are diffed against the store's catalog by content hash. Papers from
files that disappeared (under the paths being ingested) are removed; papers from files that could not be read
are kept. Work is written in batches, chunks before catalog records, so a killed ingest resumes where it
stopped and never leaves a paper twice.

The store's version is committed last (see rag/index/store.py): an ingest marks the store pending before writing,
publishes the local index for the new version, then commits. An ingest that finds the store pending (the
last one was killed) checks every paper's chunks against the catalog and rebuilds the local index from the
store instead of deriving it, so nothing a killed ingest wrote is ever served stale.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rag import prompts
from rag.corpus.scan import CorpusScan, Paper, scan
from rag.errors import QuestionError
from rag.index.chunking import SectionChunks, WholeSentenceChunker
from rag.index.embed import Embedder, embedder_engine, embedder_runtime, ensure_onnx, ingest_embedder_for
from rag.index.onnx_embed import TokenBatches
from rag.index.paper_level import heading
from rag.index.snapshot import LocalIndex, Written, probe_ids
from rag.index.store import (
    VERSION_CHECK_S,
    CatalogEntry,
    Store,
    StoreError,
    embeddings_of,
    metadatas_of,
    paper_in,
    writer_lock,
)
from rag.index.versions import (
    committed_index,
    ensure_local_index,
    index_digest,
    index_dir,
    publish_full_index,
    remove_other_versions,
    update_local_index,
)
from rag.settings import Settings

if TYPE_CHECKING:
    from types import FrameType

    import numpy as np
    from chromadb.api.types import Metadata
    from llama_index.core.schema import BaseNode, Document
    from numpy.typing import ArrayLike, NDArray


SPLITTER_VERSION = "w1"
LABELS_VERSION = "l2"  # bump when the label extractor changes: untitled papers' labels are in the embedded text
EMBED_TEXT_VERSION = "t1"  # bump when what a chunk is embedded as changes (t1: title, or label when untitled)
ROWS_PER_WRITE = 256  # chunks per Chroma add: its GIL-holding call is kept short so embedding goes on meanwhile
CHUNK_META_KEYS = ("paper_id", "label", "source", "position", "heading")


@dataclass
class IngestReport:
    """What one ingest did; the CLI prints it and tests assert on it."""

    papers_seen: int = 0
    added: list[str] = field(default_factory=list)
    reembedded: list[str] = field(default_factory=list)
    relocated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    chunks_embedded: int = 0
    total_papers: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    repaired: int = 0
    moved_aside: str | None = None
    seconds: float = 0.0
    embed_runtime: str = ""  # the runtime record of the vectors written (see rag.index.embed.runtime_id)
    embed_engine: str = ""  # what really computed them: torch-bf16, onnx, onnx-int8 or torch
    interrupted: bool = False  # Ctrl-C: the papers in `not_embedded` are left for the next ingest
    not_embedded: int = 0
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase (see _embed_and_write)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.reembedded or self.relocated or self.removed or self.repaired)


def chunking_key(settings: Settings) -> str:
    """Identifies how chunks were cut and labelled; a paper chunked or labelled differently is re-embedded."""
    return f"{settings.chunk_tokens}:{SPLITTER_VERSION}:{LABELS_VERSION}:{EMBED_TEXT_VERSION}"


def make_document(paper: Paper) -> Document:
    """A llama-index Document whose embedded and keyword-indexed text starts with the paper's heading: its
    title, or its (generated) label when it has none, so generated labels never shape a titled paper's vectors."""
    from llama_index.core.schema import Document

    return Document(
        id_=paper.paper_id,
        text=paper.text,
        metadata={"paper_id": paper.paper_id, "label": paper.label, "source": paper.source,
                  "position": paper.position, "content_hash": paper.content_hash,
                  "heading": heading(paper.title, paper.label)},
        excluded_embed_metadata_keys=["paper_id", "label", "source", "position", "content_hash"],
        excluded_llm_metadata_keys=["paper_id", "label", "source", "position", "content_hash"],
        metadata_template="{value}",
        text_template="{metadata_str}: {content}",
    )


def make_splitter(settings: Settings) -> WholeSentenceChunker:
    """The chunker used at ingest: whole sentences grouped up to settings.chunk_tokens."""
    return WholeSentenceChunker(chunk_tokens=settings.chunk_tokens, include_prev_next_rel=False)


def _source_key(path: str) -> str:
    """Where a file really is: sources are compared by resolved absolute path. A path that cannot be resolved
    (a symlink loop, which the scan reports as one line) is taken as written: it must not stop the ingest."""
    try:
        return str(Path(path).resolve())
    except (RuntimeError, OSError):
        return os.path.abspath(path)


def _under(key: str, roots: list[str]) -> bool:
    return any(key == r or key.startswith(r.rstrip("/") + "/") for r in roots)


def _indexed_from(old: CatalogEntry | None, new: Paper) -> bool:
    """The index holds the paper's id from the file the paper was read from now: on an id read twice, this paper
    keeps it (see rag/corpus/scan.py `_yield_id`)."""
    return old is not None and old.source_key == _source_key(new.source)


def _id_taken(old: CatalogEntry, new: Paper, roots: list[str]) -> bool:
    """Another paper with the indexed paper's explicit id, from another file that still exists and is not read
    again now: indexing it would silently replace the first (an edit moved to another file re-reads both)."""
    return old.content_hash != new.content_hash and old.source_key != _source_key(new.source) \
        and not _under(old.source_key, roots) and Path(old.source_key).exists()


def ingest(settings: Settings, paths: list[Path] | None = None, *, rebuild: bool = False,
           embedder: Embedder | None = None, progress: bool | None = None) -> IngestReport:
    """Bring the index in line with the files under `paths` (default: settings.corpus_paths)."""
    with writer_lock(settings):
        return _ingest(settings, paths, rebuild=rebuild, embedder=embedder, progress=progress)


# Papers taken out with `papers remove`, by id, with the file each came from: every later ingest leaves them out
# (their files still hold them), until `papers remove --undo` brings them back.
REMOVED_FILE = "removed.json"


def removed_papers(settings: Settings, store: Store | None = None) -> dict[str, dict[str, str]]:
    """The papers `papers remove` took out: id -> {"source_key", "label", "title"}. They are kept in the store
    (shared by every data dir using a `chroma run` server); a data dir's older REMOVED_FILE is read beside it."""
    if store is None and (settings.chroma_host or settings.chroma_dir.exists()):
        store = Store.open(settings, create=True)
    return _removed_file(settings) | (store.removed() if store is not None else {})


def _removed_file(settings: Settings) -> dict[str, dict[str, str]]:
    path = settings.data_dir / REMOVED_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise StoreError(f"cannot read the list of removed papers {path} ({e}): fix or delete it") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "source_key" in v for v in data.values()):
        raise StoreError(f"{path} is not a list of removed papers: fix or delete it")
    return data


def _write_removed(settings: Settings, removed: dict[str, dict[str, str]]) -> None:
    """The removals into the store (one write of its metadata); the data dir's older file, now read into them,
    is retired."""
    Store.open(settings, create=True).set_removed(removed)
    (settings.data_dir / REMOVED_FILE).unlink(missing_ok=True)


def remove(settings: Settings, paper_ids: list[str], *, undo: bool = False, embedder: Embedder | None = None,
           progress: bool | None = None) -> IngestReport:
    """Take papers out of the index (with `undo`, bring removed ones back) by re-ingesting the files they came
    from with the papers left out: the store, the catalog and the local index change together, as for a file
    edited to drop them, with the same guarantees against a killed process. The ids are kept in REMOVED_FILE, so
    an ingest of their folder does not bring them back (an edit that changes a paper's text gives it a new id)."""
    ids = list(dict.fromkeys(i.strip() for i in paper_ids if i and i.strip()))
    if not ids:
        raise QuestionError("no paper id given: `papers list` shows the ids")
    with writer_lock(settings):
        removed = removed_papers(settings)
        if undo:
            unknown = [i for i in ids if i not in removed]
            if unknown:
                raise QuestionError(f"not removed with `papers remove`: {', '.join(map(repr, unknown))}")
            sources = [removed.pop(i)["source_key"] for i in ids]
        else:
            if not settings.chroma_host and not settings.chroma_dir.exists():
                raise StoreError(f"no index at {settings.chroma_dir}: run `papers ingest` first")
            found = Store.open(settings, create=True).get_papers(ids)
            unknown = [i for i in ids if i not in found]
            if unknown:
                raise QuestionError(prompts.UNKNOWN_PAPERS.format(ids=", ".join(map(repr, unknown))))
            for i in ids:
                e = found[i]
                removed[i] = {"source_key": e.source_key, "label": e.label, "title": e.title}
            sources = [found[i].source_key for i in ids]
        _write_removed(settings, removed)
        return _ingest(settings, [Path(s) for s in dict.fromkeys(sources)], rebuild=False, embedder=embedder,
                       progress=progress)


@dataclass
class _Plan:
    """The papers an ingest embeds (new, changed or with damaged chunks) and those whose records only change."""

    to_embed: list[Paper] = field(default_factory=list)
    relocate: list[Paper] = field(default_factory=list)


def _ingest(settings: Settings, paths: list[Path] | None, *, rebuild: bool, embedder: Embedder | None,
            progress: bool | None) -> IngestReport:
    t0 = time.perf_counter()
    paths = list(paths or settings.corpus_paths)
    report = IngestReport()
    if rebuild:
        report.moved_aside = Store.destroy(settings)
    store = Store.open(settings, create=True)
    report.phases["open_store_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    previous_version = store.version
    interrupted = bool(store.pending)  # the previous ingest stopped before its commit
    previous = _usable_previous(settings, store)
    catalog = dict(previous.papers) if previous is not None else store.catalog(with_text=False)
    report.phases["catalog_s"] = time.perf_counter() - t
    chunking = chunking_key(settings)
    found = _scan(settings, store, paths, catalog, chunking, report)
    roots = [_source_key(str(p)) for p in paths]
    plan = _diff(found, catalog, chunking, roots, report)
    report.removed = _gone(found, catalog, roots)

    # Repair after an interrupted ingest: chunks whose paper has no catalog record, records whose chunks are
    # missing, too many, or cut from another version of the text.
    repairing = interrupted or store.chunks.count() != sum(e.n_chunks for e in catalog.values())
    work = report.changed or repairing or not store.version
    target = store.begin_update() if work else ""
    if work and settings.chroma_host:
        # Serving processes re-read the store's state every VERSION_CHECK_S: once they have seen the pending
        # marker they search their own index version only, so no question meets a half-written store.
        time.sleep(VERSION_CHECK_S + 0.5)
    if repairing:
        _repair(store, found, catalog, plan, report)

    written = Written()  # the chunks written below, handed to the local index instead of read back
    if report.removed:
        store.delete_papers(report.removed)
    if plan.relocate:
        _rewrite_metadata(store, plan.relocate, chunking)
    if plan.to_embed:
        if embedder is None:  # loaded only when something needs embedding: a no-op ingest stays fast
            t = time.perf_counter()
            embedder = ingest_embedder_for(settings)
            report.phases["load_model_s"] = time.perf_counter() - t
        report.chunks_embedded = _embed_and_write(settings, store, plan.to_embed, embedder, chunking, progress,
                                                  report, written)

    ensure_onnx(settings)  # the fast query path; exported once, next to the store

    t_local = time.perf_counter()
    if work:  # the new version's local index is published first; the commit then switches readers to it
        if report.changed and not repairing:  # only the touched papers change: their chunks are handed over
            update_local_index(settings, store, previous_version,
                               set(report.added) | set(report.reembedded) | set(report.removed),
                               set(report.relocated), version=target, previous=previous, written=written)
        else:
            publish_full_index(settings, store, target)
        folder = index_dir(settings, target)
        store.commit(target, index_digest(folder) if folder.exists() else "")
        remove_other_versions(settings, keep={target, previous_version})
    else:
        ensure_local_index(settings, store, load=False)
    report.phases["local_index_s"] = time.perf_counter() - t_local
    report.total_papers = store.papers.count()
    report.seconds = time.perf_counter() - t0
    return report


def _usable_previous(settings: Settings, store: Store) -> LocalIndex | None:
    """The committed version's local index, which holds the catalog as committed (and the rows the next index
    is derived from); None when there is none that matches the store (the catalog is then read from Chroma)."""
    previous = committed_index(settings, store)
    # A damaged vector index is reported (with the way out), never declared "unchanged". The probe reads vectors
    # by the ids the index names (see Store.check_vectors); an index naming ids the store lacks is not used.
    if not store.check_vectors(sample=probe_ids(previous) if previous is not None else None):
        return None
    return previous


def _scan(settings: Settings, store: Store, paths: list[Path], catalog: dict[str, CatalogEntry], chunking: str,
          report: IngestReport) -> CorpusScan:
    """The papers under `paths`, less those taken out with `papers remove`; unchanged papers keep their labels."""
    labels = {(e.content_hash, e.title): e.label for e in catalog.values() if e.chunking == chunking}
    t = time.perf_counter()
    found = scan(paths, int(settings.max_file_mb * 2**20), settings.max_abstract_chars,
                 known_label=lambda content_hash, title: labels.get((content_hash, title)),
                 indexed_here=lambda p: _indexed_from(catalog.get(p.paper_id), p))
    report.phases["scan_s"] = time.perf_counter() - t
    report.problems, report.warnings, report.duplicates = found.problems, found.warnings, found.duplicates
    excluded = removed_papers(settings, store)
    kept = [p for p in found.papers if p.paper_id not in excluded]
    if len(kept) < len(found.papers):  # their files still hold them: left out as if the files did not
        n = len(found.papers) - len(kept)
        report.warnings.append(f"{n} paper{'s' * (n != 1)} left out: removed with `papers remove` "
                               "(`papers remove --undo ID` brings one back)")
        found.papers = kept
    report.papers_seen = len(found.papers)
    return found


def _diff(found: CorpusScan, catalog: dict[str, CatalogEntry], chunking: str, roots: list[str],
          report: IngestReport) -> _Plan:
    """The scan against the catalog: what to embed, what to rewrite, what is unchanged (in `report`). A paper
    whose id another file's paper holds is reported and dropped from `found`."""
    plan = _Plan()
    for p in list(found.papers):
        old = catalog.get(p.paper_id)
        if old is not None and _id_taken(old, p, roots):
            report.problems.append(f"{p.source}#{p.position}: id {p.paper_id!r} is already used by another paper "
                                   f"({old.source}#{old.position}, {old.label}); not indexed: give it its own id")
            found.papers.remove(p)
            continue
        if old is None:
            plan.to_embed.append(p)
            report.added.append(p.paper_id)
        elif old.content_hash != p.content_hash or old.label != p.label or old.title != p.title \
                or old.chunking != chunking or old.n_chunks == 0 or old.layout != p.layout:
            plan.to_embed.append(p)
            report.reembedded.append(p.paper_id)
        elif (old.source, old.position, old.title, old.url, old.authors, old.venue, old.year) != \
                (p.source, p.position, p.title, p.url, p.authors, p.venue, p.year) or _metadata_changed(old, p):
            plan.relocate.append(p)
            report.relocated.append(p.paper_id)
        else:
            report.unchanged += 1
    return plan


def _gone(found: CorpusScan, catalog: dict[str, CatalogEntry], roots: list[str]) -> list[str]:
    """Indexed papers from files under the ingested paths that are gone or no longer hold them.

    Files that could not be read keep their papers: a damaged file must not empty the index. In a file with
    some bad lines, only a paper indexed from one of those lines is kept (what the line holds now is unknown);
    the good lines are current, so an edited paper's old version goes."""
    seen_ids = {p.paper_id for p in found.papers}
    unreadable = {_source_key(str(r.path)) for r in found.files if r.failed}
    bad_at = {_source_key(str(r.path)): r.bad_positions for r in found.files if r.bad_positions}
    return [pid for pid, e in catalog.items()
            if pid not in seen_ids and _under(e.source_key, roots) and e.source_key not in unreadable
            and e.position not in bad_at.get(e.source_key, ())]


def _repair(store: Store, found: CorpusScan, catalog: dict[str, CatalogEntry], plan: _Plan,
            report: IngestReport) -> None:
    """Delete chunks no paper owns; re-embed papers whose stored chunks disagree with their record."""
    seen_ids = {p.paper_id for p in found.papers}
    stored = store.chunk_summary()
    orphans = [pid for pid in stored if pid not in catalog and pid not in seen_ids]
    store.delete_chunks_of(orphans)
    report.repaired = len(orphans)
    for p in found.papers:
        e = catalog.get(p.paper_id)
        n, hashes = stored.get(p.paper_id, (0, set()))
        if e is not None and (n != e.n_chunks or hashes - {"", e.content_hash}) and p not in plan.to_embed:
            plan.to_embed.append(p)
            report.reembedded.append(p.paper_id)
            if p in plan.relocate:
                plan.relocate.remove(p)
                report.relocated.remove(p.paper_id)
            else:
                report.unchanged -= 1


def _entry(p: Paper, n_chunks: int, chunking: str) -> CatalogEntry:
    return CatalogEntry(
        paper_id=p.paper_id, content_hash=p.content_hash, label=p.label, source=p.source,
        source_key=_source_key(p.source), position=p.position, n_chunks=n_chunks, chunking=chunking,
        title=p.title, url=p.url, authors=p.authors, venue=p.venue, year=p.year, text=p.text,
        **{f: getattr(p, f) for f in METADATA_FIELDS},
    )


METADATA_FIELDS = ("doi", "arxiv", "key", "kind", "collection", "layout",
                   "volume", "number", "pages", "month", "issn", "publisher")


def _metadata_changed(old: CatalogEntry, p: Paper) -> bool:
    """Bibliographic fields (rag/corpus/readers/) differ: the records are rewritten, the vectors kept."""
    return any(getattr(old, f) != getattr(p, f) for f in METADATA_FIELDS)


def _mean_vector(vectors: list[list[float]]) -> list[float]:
    import numpy as np

    m = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
    n = float(np.linalg.norm(m)) or 1.0
    return (m / n).tolist()


class _Stop(threading.Event):
    """Set to stop the embedding worker; `by_signal` when Ctrl-C set it (the ingest then reports what is left)."""

    by_signal = False


class _Embedded(NamedTuple):
    """One batch the worker embedded, handed to the writing thread."""

    papers: list[Paper]
    nodes: list[BaseNode]
    vectors: NDArray[np.float32]


class _Progress:
    """The embedding bar: papers done (a batch's share as its chunks are embedded) and the chunk rate."""

    def __init__(self, total: int, show: bool) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, unit="paper", desc="Embedding", disable=not show, file=sys.stderr,
                        dynamic_ncols=True, smoothing=0.1)
        self.lock = threading.Lock()
        self.started = time.perf_counter()
        self.papers = 0.0
        self.chunks = 0

    def advance(self, papers_done: float, chunks_done: int) -> None:
        with self.lock:
            self.papers += papers_done
            self.chunks += chunks_done
            self.bar.update(int(self.papers) - self.bar.n)
            rate = self.chunks / max(1e-9, time.perf_counter() - self.started)
            self.bar.set_postfix_str(f"{rate:.0f} chunks/s", refresh=False)

    def for_batch(self, size: int) -> Callable[[float, int], None]:
        """`advance` for a batch of `size` papers: the share of its chunks embedded, and how many."""
        return lambda share, n: self.advance(size * share, n)

    def close(self) -> None:
        self.bar.close()


def _embed_and_write(settings: Settings, store: Store, papers: list[Paper], embedder: Embedder,
                     chunking: str, progress: bool | None, report: IngestReport | None = None,
                     written: Written | None = None) -> int:
    """Chunk, embed and store papers in batches: old chunks out, new chunks in, then catalog records.

    Embedding runs on a worker thread (onnxruntime and torch release the GIL while they compute) while this
    thread writes the previous batch to Chroma, in short adds so the worker is not held up for long. Ctrl-C
    stops the worker after its current model call; the batch it was on is abandoned (nothing of it is written),
    the batches already embedded are written, and the next ingest embeds the rest.
    """
    import queue

    report = report if report is not None else IngestReport()
    runtime, engine = embedder_runtime(embedder, settings), embedder_engine(embedder)
    store.claim_runtime(runtime, engine)
    report.embed_runtime, report.embed_engine = runtime, engine
    phases = {"chunk_s": 0.0, "tokenize_s": 0.0, "embed_s": 0.0, "write_chunks_s": 0.0, "write_catalog_s": 0.0}
    splitter = make_splitter(settings)
    stop = _Stop()
    handed: queue.Queue[_Embedded | None] = queue.Queue(maxsize=1)  # one batch waits while the next is embedded
    show = sys.stderr.isatty() if progress is None else progress
    bar = _Progress(len(papers), show)
    failure: list[BaseException] = []

    def worker() -> None:
        try:
            per_batch = settings.ingest_batch_papers
            for i in range(0, len(papers), per_batch):
                batch = papers[i:i + per_batch]
                t = time.perf_counter()
                nodes = splitter.get_nodes_from_documents([make_document(p) for p in batch])
                nodes = SectionChunks.for_papers(batch, settings.chunk_tokens)(nodes)  # a PDF's pages and sections
                phases["chunk_s"] += time.perf_counter() - t
                vectors = _embed_nodes(embedder, nodes, settings.embed_batch_size, stop, phases,
                                       bar.for_batch(len(batch)))
                if vectors is None:  # stopped: this batch is abandoned
                    return
                handed.put(_Embedded(batch, nodes, vectors))
        except BaseException as e:
            failure.append(e)
        finally:
            handed.put(None)

    embedded = committed = 0
    with _stop_on_sigint(stop):
        thread = threading.Thread(target=worker, name="embed", daemon=True)
        thread.start()
        try:
            while (item := handed.get()) is not None:
                embedded += _write_batch(store, item.papers, item.nodes, item.vectors, chunking, phases, written)
                committed += len(item.papers)
        finally:
            stop.set()  # on an error here, the worker stops too
            while thread.is_alive():
                with contextlib.suppress(queue.Empty):
                    handed.get(timeout=0.1)
            bar.close()
    if failure:
        raise failure[0]
    if stop.by_signal:
        report.interrupted, report.not_embedded = True, len(papers) - committed
    for k, v in phases.items():
        report.phases[k] = report.phases.get(k, 0.0) + v
    report.phases["embed_and_write_s"] = time.perf_counter() - bar.started
    return embedded


def _embed_nodes(embedder: Embedder, nodes: list[BaseNode], batch_size: int, stop: threading.Event,
                 phases: dict[str, float], advance: Callable[[float, int], None]) -> NDArray[np.float32] | None:
    """Vectors of the nodes' embedded texts, in node order, or None when `stop` was set meanwhile.

    Texts are sorted by length and batched, so each batch is padded only to its own longest text (the ONNX
    embedder sorts by token count; others by characters, through their own batch call)."""
    import numpy as np
    from llama_index.core.schema import MetadataMode

    texts = [n.get_content(MetadataMode.EMBED) for n in nodes]
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    t = time.perf_counter()
    run: Callable[[list[int]], ArrayLike]
    if isinstance(embedder, TokenBatches):
        ids = embedder.encode_ids(texts)
        key = [len(i) for i in ids]
        run = lambda rows: embedder.run_batch([ids[r] for r in rows])  # noqa: E731
    else:
        key = [len(x) for x in texts]
        run = lambda rows: np.asarray(embedder.get_text_embedding_batch([texts[r] for r in rows]))  # noqa: E731
    phases["tokenize_s"] += time.perf_counter() - t
    order = sorted(range(len(texts)), key=key.__getitem__)
    out = np.zeros((0, 0), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        if stop.is_set():
            return None
        rows = order[start:start + batch_size]
        t = time.perf_counter()
        vecs = np.asarray(run(rows), dtype=np.float32)
        phases["embed_s"] += time.perf_counter() - t
        if start == 0:  # the first batch says the width
            out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        out[rows] = vecs
        advance(len(rows) / len(texts), len(rows))
    return out


def _write_batch(store: Store, batch: list[Paper], nodes: list[BaseNode], vectors: NDArray[np.float32],
                 chunking: str, phases: dict[str, float], written: Written | None = None) -> int:
    """Replace the batch's papers in the store: old chunks out, new chunks in, catalog records last; the chunks
    as the store holds them are added to `written`."""
    from llama_index.core.schema import MetadataMode

    t = time.perf_counter()
    store.delete_chunks_of([p.paper_id for p in batch])
    by_paper: dict[str, list[list[float]]] = {}
    for n, v in zip(nodes, vectors):
        n.embedding = v.tolist()
        by_paper.setdefault(n.metadata["paper_id"], []).append(n.embedding)
    for i in range(0, len(nodes), ROWS_PER_WRITE):
        store.vector_store.add(nodes[i:i + ROWS_PER_WRITE])
    if written is not None:  # what read_chunks would read back: ChromaVectorStore stores the text, metadata as is
        written.add([n.node_id for n in nodes], [str(n.metadata.get("paper_id", "")) for n in nodes],
                    [n.get_content(metadata_mode=MetadataMode.NONE) or "" for n in nodes],
                    [str(n.metadata.get("heading") or n.metadata.get("label", "")) for n in nodes], vectors)
    phases["write_chunks_s"] += time.perf_counter() - t
    t = time.perf_counter()
    store.write_catalog([_entry(p, len(by_paper[p.paper_id]), chunking) for p in batch],
                        [_mean_vector(by_paper[p.paper_id]) for p in batch])
    phases["write_catalog_s"] += time.perf_counter() - t
    return len(nodes)


class _stop_on_sigint:
    """While embedding: the first Ctrl-C asks the worker to stop after its current model call (the CLI then says
    how to resume); a second one interrupts at once (still safe: catalog records follow their chunks)."""

    def __init__(self, stop: _Stop) -> None:
        self.stop = stop
        self.previous: Callable[[int, FrameType | None], Any] | int | None = None

    def __enter__(self) -> _stop_on_sigint:
        if threading.current_thread() is threading.main_thread():
            def handler(signum: int, frame: FrameType | None) -> None:
                if self.stop.is_set():
                    raise KeyboardInterrupt
                self.stop.by_signal = True
                self.stop.set()
                print("\nstopping after the current batch (Ctrl-C again to stop at once)...", file=sys.stderr)

            self.previous = signal.signal(signal.SIGINT, handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _rewrite_metadata(store: Store, papers: list[Paper], chunking: str) -> None:
    """A paper that only moved (new source or position) keeps its vectors; its records are rewritten."""
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

    by_id = {p.paper_id: p for p in papers}
    got = store.chunks.get(where=paper_in(list(by_id)), include=["metadatas"])
    ids: list[str] = []
    metas: list[Metadata] = []
    counts: dict[str, int] = {}
    for cid, meta in zip(got["ids"], metadatas_of(got)):
        node = metadata_dict_to_node(dict(meta))
        p = by_id[node.metadata["paper_id"]]
        node.metadata.update(source=p.source, position=p.position, label=p.label)
        new_meta = node_to_metadata_dict(node, remove_text=True, flat_metadata=True)
        ids.append(cid)
        metas.append({k: ("" if v is None else v) for k, v in new_meta.items()})
        counts[p.paper_id] = counts.get(p.paper_id, 0) + 1
    store.update_chunk_metadata(ids, metas)
    vectors = store.papers.get(ids=list(by_id), include=["embeddings"])
    vector_of = dict(zip(vectors["ids"], embeddings_of(vectors)))
    store.write_catalog([_entry(p, counts.get(p.paper_id, 0), chunking) for p in papers],
                        [list(vector_of[p.paper_id]) for p in papers])
