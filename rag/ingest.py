"""Incremental ingestion: corpus files -> sentence-whole chunks -> embeddings -> Chroma, then the BM25 index.

Only what changed is embedded: papers are diffed against the store's catalog by content hash. Papers from
files that disappeared (under the paths being ingested) are removed; papers from files that could not be read
are kept. Work is written in batches, chunks before catalog records, so a killed ingest resumes where it
stopped and never leaves a paper twice.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rag.corpus import Paper, scan
from rag.settings import Settings
from rag.store import CatalogEntry, Store

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.schema import BaseNode, Document

SPLITTER_VERSION = "w1"
LABELS_VERSION = "l2"  # bump when the label extractor changes: labels are part of the embedded text
PAPERS_PER_BATCH = 512  # papers per pipeline run (chunks are sorted by length within a run) and per commit
CHUNK_META_KEYS = ("paper_id", "label", "source", "position")


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

    @property
    def changed(self) -> bool:
        return bool(self.added or self.reembedded or self.relocated or self.removed or self.repaired)


def chunking_key(settings: Settings) -> str:
    """Identifies how chunks were cut and labelled; a paper chunked or labelled differently is re-embedded."""
    return f"{settings.chunk_tokens}:{SPLITTER_VERSION}:{LABELS_VERSION}"


def make_document(paper: Paper) -> Document:
    """A llama-index Document whose embedded and keyword-indexed text starts with the paper's label."""
    from llama_index.core.schema import Document

    return Document(
        id_=paper.paper_id,
        text=paper.text,
        metadata={"paper_id": paper.paper_id, "label": paper.label, "source": paper.source,
                  "position": paper.position},
        excluded_embed_metadata_keys=["paper_id", "source", "position"],
        excluded_llm_metadata_keys=["paper_id", "source", "position"],
        metadata_template="{value}",
        text_template="{metadata_str}: {content}",
    )


def make_splitter(settings: Settings):  # noqa: ANN201 - a llama-index NodeParser
    """The chunker used at ingest: whole sentences grouped up to settings.chunk_tokens."""
    from rag.chunking import WholeSentenceChunker

    return WholeSentenceChunker(chunk_tokens=settings.chunk_tokens, include_prev_next_rel=False)


def _source_key(path: str) -> str:
    """Where a file really is: sources are compared by resolved absolute path."""
    return str(Path(path).resolve())


def _under(key: str, roots: list[str]) -> bool:
    return any(key == r or key.startswith(r.rstrip("/") + "/") for r in roots)


def ingest(settings: Settings, paths: list[Path] | None = None, *, rebuild: bool = False,
           embedder: BaseEmbedding | None = None, progress: bool | None = None) -> IngestReport:
    """Bring the index in line with the files under `paths` (default: settings.corpus_paths)."""
    t0 = time.perf_counter()
    paths = list(paths or settings.corpus_paths)
    report = IngestReport()
    if rebuild:
        report.moved_aside = Store.destroy(settings)
    store = Store.open(settings, create=True)
    previous_version = store.version
    catalog = store.catalog(with_text=False)
    chunking = chunking_key(settings)
    labels = {(e.content_hash, e.title): e.label for e in catalog.values() if e.chunking == chunking}
    found = scan(paths, int(settings.max_file_mb * 2**20), settings.max_abstract_chars,
                 known_label=lambda content_hash, title: labels.get((content_hash, title)))
    report.problems, report.warnings, report.duplicates = found.problems, found.warnings, found.duplicates
    report.papers_seen = len(found.papers)

    # Diff the scan against the catalog.
    to_embed: list[Paper] = []
    relocate: list[Paper] = []
    for p in found.papers:
        old = catalog.get(p.paper_id)
        if old is None:
            to_embed.append(p)
            report.added.append(p.paper_id)
        elif old.content_hash != p.content_hash or old.label != p.label or old.chunking != chunking \
                or old.n_chunks == 0:
            to_embed.append(p)
            report.reembedded.append(p.paper_id)
        elif (old.source, old.position, old.title, old.url, old.authors, old.venue, old.year) != \
                (p.source, p.position, p.title, p.url, p.authors, p.venue, p.year):
            relocate.append(p)
            report.relocated.append(p.paper_id)
        else:
            report.unchanged += 1

    # Removal: indexed papers from files under the ingested paths that are gone or no longer hold them.
    # Files that could not be read keep their papers: a damaged file must not empty the index.
    roots = [_source_key(str(p)) for p in paths]
    seen_ids = {p.paper_id for p in found.papers}
    unreadable = {_source_key(str(r.path)) for r in found.files if not r.clean}
    report.removed = [pid for pid, e in catalog.items()
                      if pid not in seen_ids and _under(e.source_key, roots) and e.source_key not in unreadable]

    # Repair after an interrupted ingest: chunks whose paper has no catalog record, or records without chunks.
    repairing = store.chunks.count() != sum(e.n_chunks for e in catalog.values())
    if repairing:
        stored = store.chunk_paper_ids()
        orphans = [pid for pid in stored if pid not in catalog and pid not in seen_ids]
        store.delete_chunks_of(orphans)
        report.repaired = len(orphans)
        for p in found.papers:
            e = catalog.get(p.paper_id)
            if e is not None and stored.get(p.paper_id, 0) != e.n_chunks and p not in to_embed:
                to_embed.append(p)
                report.reembedded.append(p.paper_id)
                if p in relocate:
                    relocate.remove(p)
                    report.relocated.remove(p.paper_id)
                else:
                    report.unchanged -= 1

    if report.removed:
        store.delete_papers(report.removed)
    if relocate:
        _rewrite_metadata(store, relocate, chunking)
    if to_embed:
        if embedder is None:  # loaded only when something needs embedding: a no-op ingest stays fast
            from rag.embed import embedder_for

            embedder = embedder_for(settings)
        report.chunks_embedded = _embed_and_write(settings, store, to_embed, embedder, chunking, progress)
    if report.changed or not store.version:
        store.bump_version()
    from rag.embed import ensure_onnx

    ensure_onnx(settings)  # the fast query path; exported once, next to the store
    from rag.localindex import ensure_local_index, update_local_index

    if report.changed and not repairing:  # only the touched papers' chunks are read back
        update_local_index(settings, store, previous_version,
                           set(report.added) | set(report.reembedded) | set(report.removed), set(report.relocated))
    else:
        ensure_local_index(settings, store, load=False)
    report.total_papers = store.papers.count()
    report.seconds = time.perf_counter() - t0
    return report


def _entry(p: Paper, n_chunks: int, chunking: str) -> CatalogEntry:
    return CatalogEntry(
        paper_id=p.paper_id, content_hash=p.content_hash, label=p.label, source=p.source,
        source_key=_source_key(p.source), position=p.position, n_chunks=n_chunks, chunking=chunking,
        title=p.title, url=p.url, authors=p.authors, venue=p.venue, year=p.year, text=p.text,
    )


def _mean_vector(vectors: list[list[float]]) -> list[float]:
    import numpy as np

    m = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
    n = float(np.linalg.norm(m)) or 1.0
    return (m / n).tolist()


def _embed_and_write(settings: Settings, store: Store, papers: list[Paper], embedder: BaseEmbedding,
                     chunking: str, progress: bool | None) -> int:
    """Chunk, embed and store papers in batches: old chunks out, new chunks in, then catalog records."""
    from llama_index.core.ingestion import IngestionPipeline
    from tqdm.auto import tqdm

    from rag.chunking import LongestFirst

    splitter = make_splitter(settings)
    pipeline = IngestionPipeline(transformations=[splitter, LongestFirst(), embedder],
                                 vector_store=store.vector_store, disable_cache=True)
    show = sys.stderr.isatty() if progress is None else progress
    embedded = 0
    with tqdm(total=len(papers), unit="paper", desc="Embedding", disable=not show, file=sys.stderr) as bar:
        for i in range(0, len(papers), PAPERS_PER_BATCH):
            batch = papers[i:i + PAPERS_PER_BATCH]
            store.delete_chunks_of([p.paper_id for p in batch])
            nodes: list[BaseNode] = pipeline.run(documents=[make_document(p) for p in batch])
            by_paper: dict[str, list[list[float]]] = {}
            for n in nodes:
                by_paper.setdefault(n.metadata["paper_id"], []).append(n.get_embedding())
            store.write_catalog([_entry(p, len(by_paper[p.paper_id]), chunking) for p in batch],
                                [_mean_vector(by_paper[p.paper_id]) for p in batch])
            embedded += len(nodes)
            bar.update(len(batch))
    return embedded


def _rewrite_metadata(store: Store, papers: list[Paper], chunking: str) -> None:
    """A paper that only moved (new source or position) keeps its vectors; its records are rewritten."""
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

    by_id = {p.paper_id: p for p in papers}
    got = store.chunks.get(where={"paper_id": {"$in": list(by_id)}}, include=["metadatas"])
    ids, metas = [], []
    counts: dict[str, int] = {}
    for cid, meta in zip(got["ids"], got["metadatas"]):
        node = metadata_dict_to_node(meta)
        p = by_id[node.metadata["paper_id"]]
        node.metadata.update(source=p.source, position=p.position, label=p.label)
        new_meta = node_to_metadata_dict(node, remove_text=True, flat_metadata=True)
        ids.append(cid)
        metas.append({k: ("" if v is None else v) for k, v in new_meta.items()})
        counts[p.paper_id] = counts.get(p.paper_id, 0) + 1
    if ids:
        store.chunks.update(ids=ids, metadatas=metas)
    vectors = store.papers.get(ids=list(by_id), include=["embeddings"])
    vector_of = dict(zip(vectors["ids"], vectors["embeddings"]))
    store.write_catalog([_entry(p, counts.get(p.paper_id, 0), chunking) for p in papers],
                        [list(vector_of[p.paper_id]) for p in papers])
