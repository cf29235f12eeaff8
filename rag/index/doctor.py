"""`papers doctor`: is the store (chunks and catalog) consistent with itself and with the local index?

Each problem is one line saying what is wrong and the command that fixes it. `repair` fixes what needs no
re-embedding: orphan chunks are deleted, a damaged vector index is rebuilt from the vectors kept in the local
index, a missing, damaged or stale local index is rebuilt from the store, and papers whose chunks disagree
with the catalog are marked so that the next `papers ingest` re-embeds them.

Vector index files that would crash the process reading them (rag/index/probe.py) are found by a child process
before anything else is read, and are then the only finding: nothing else can be read safely. Their repair
sets them aside (Chroma then starts the index afresh from its log) and rebuilds it from the local index.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from typing import Any

from rag.index.probe import vector_segment_dirs
from rag.index.snapshot import build_local_index
from rag.index.store import (
    GET_BATCH,
    HNSW_CONFIGURATION,
    Store,
    StoreError,
    as_embeddings,
    collection_names,
    vector_files_damage,
    vector_files_fix,
)
from rag.index.versions import index_dir, load_index, publish_full_index
from rag.settings import Settings


@dataclass
class Finding:
    """One problem: what is wrong, the command that fixes it, and whether `--repair` can do it."""

    problem: str
    fix: str
    repairable: bool = False
    kind: str = ""  # VECTOR_FILES for files that must be set aside before the store can be read

    def line(self) -> str:
        return f"problem: {self.problem} — fix: {self.fix}"


@dataclass
class Checkup:
    findings: list[Finding]
    summary: str
    store: Store | None = None


REPAIR = "`papers doctor --repair`"
INGEST = "`papers ingest`"
REBUILD = "`papers ingest --rebuild`"
VECTOR_FILES = "vector files"


def _read_all(collection: Any, include: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"ids": [], **{k: [] for k in include}}
    total = collection.count()
    for offset in range(0, total, GET_BATCH):
        got = collection.get(include=include, limit=GET_BATCH, offset=offset)
        out["ids"].extend(got["ids"])
        for k in include:
            out[k].extend(got[k] if got[k] is not None else [])
    return out


def diagnose(settings: Settings) -> Checkup:
    """Every check; nothing is changed."""
    try:
        store = Store.open(settings, probe=False)  # reads the collections' metadata only, never their vectors
    except StoreError as e:
        return Checkup([Finding(str(e), REBUILD if "unreadable" in str(e) else INGEST)], "store not usable")
    damage = vector_files_damage(settings)
    if damage:
        fix = vector_files_fix(settings, store.version)
        return Checkup([Finding(f"the store's vector index files are damaged ({damage})", fix,
                                fix.startswith(REPAIR), VECTOR_FILES)],
                       f"version {store.version[:12] or '-'}, not read further", store)
    try:
        return _diagnose(settings, store)
    except BaseException as e:  # a damaged database raises anything, Rust panics (BaseException) included
        if not _store_failure(e):
            raise
        reason = " ".join(str(e).split())[:200]
        return Checkup([Finding(f"the store's database cannot be read ({type(e).__name__}: {reason})",
                                f"{REBUILD} (re-reads the corpus files into a new store; the damaged one is "
                                "moved aside)")], "store not readable")


def _store_failure(e: BaseException) -> bool:
    """An error of the store's own reading (Chroma's, or a panic in its Rust core), not an interrupt or a bug
    of ours."""
    if isinstance(e, KeyboardInterrupt | SystemExit | GeneratorExit):
        return False
    return type(e).__name__ == "PanicException" or type(e).__module__.split(".")[0] in {"chromadb", "sqlite3"}


def _diagnose(settings: Settings, store: Store) -> Checkup:
    findings: list[Finding] = []
    if store.pending:
        findings.append(Finding("the last ingest was interrupted before it finished", INGEST))
    catalog = store.catalog()
    summary = store.chunk_summary()
    n_chunks = store.chunks.count()
    orphans = sorted(pid for pid in summary if pid not in catalog)
    if orphans:
        findings.append(Finding(f"{sum(summary[p][0] for p in orphans)} chunks belong to {len(orphans)} papers "
                                f"missing from the catalog (e.g. {orphans[0]})", REPAIR, True))
    broken = sorted(pid for pid, e in catalog.items()
                    if summary.get(pid, (0, set()))[0] != e.n_chunks
                    or summary.get(pid, (0, set()))[1] - {"", e.content_hash})
    if broken:
        findings.append(Finding(f"{len(broken)} papers' chunks disagree with the catalog (missing, extra or cut "
                                f"from another text; e.g. {broken[0]})", f"{REPAIR}, then {INGEST}", True))
    empty = sorted(pid for pid, e in catalog.items() if not e.text.strip())
    if empty:
        findings.append(Finding(f"{len(empty)} catalog records have no abstract text (e.g. {empty[0]})", INGEST))
    try:
        store.check_vectors(full=True)
    except StoreError as e:
        findings.append(Finding(str(e).split(": run `papers doctor`")[0],
                                f"{REPAIR} (rebuilds it from the local index's vectors), else {REBUILD}", True))
        return Checkup(findings, _summary(catalog, n_chunks, store), store)
    findings += _check_local_index(settings, store)
    return Checkup(findings, _summary(catalog, n_chunks, store), store)


def _summary(catalog: dict, n_chunks: int, store: Store) -> str:
    return f"{len(catalog)} papers, {n_chunks} chunks, version {store.version[:12] or '-'}"


def _check_local_index(settings: Settings, store: Store) -> list[Finding]:
    import numpy as np

    path = index_dir(settings, store.version)
    full = build_local_index(store)
    if full is None:
        return []
    if not path.exists():
        return [Finding(f"no local index (BM25, snapshot) for the store's version under {path.parent}", REPAIR, True)]
    try:
        local = load_index(path)
    except Exception as e:
        return [Finding(f"the local index at {path} is damaged ({type(e).__name__})", REPAIR, True)]
    if sorted(local.chunk_ids) != sorted(full.chunk_ids):
        return [Finding(f"the local index holds {local.size} chunks, the store {full.size}: it is out of date",
                        REPAIR, True)]
    for cid in full.chunk_ids:
        a, b = local.row_of[cid], full.row_of[cid]
        if (local.paper_ids[a], local.texts[a]) != (full.paper_ids[b], full.texts[b]) or \
                not np.allclose(np.asarray(local.vectors[a]), np.asarray(full.vectors[b]), atol=1e-5):
            return [Finding(f"the local index's chunk {cid} differs from the store's: it is out of date",
                            REPAIR, True)]
    if {p: e.__dict__ for p, e in local.papers.items()} != {p: e.__dict__ for p, e in full.papers.items()}:
        return [Finding("the local index's paper records differ from the catalog: it is out of date", REPAIR, True)]
    return []


def repair(settings: Settings, checkup: Checkup) -> list[str]:
    """Fix every repairable finding; returns one line per action taken."""
    store = checkup.store
    if store is None:
        return []
    done: list[str] = []
    problems = " ".join(f.problem for f in checkup.findings)
    if any(f.kind == VECTOR_FILES for f in checkup.findings):
        done.append(_set_aside(settings))
        store = Store.open(settings, probe=False)
    if "vector index" in problems:
        done += _rebuild_vectors(settings, store)
        store.check_vectors(full=True)
    catalog = store.catalog(with_text=False)
    summary = store.chunk_summary()
    orphans = [pid for pid in summary if pid not in catalog]
    if orphans:
        store.delete_chunks_of(orphans)
        done.append(f"deleted the chunks of {len(orphans)} papers missing from the catalog")
    broken = [pid for pid, e in catalog.items() if summary.get(pid, (0, set()))[0] != e.n_chunks
              or summary.get(pid, (0, set()))[1] - {"", e.content_hash}]
    if broken:
        store.begin_update()  # the next ingest checks every paper and re-embeds these
        done.append(f"marked {len(broken)} papers for re-embedding: run `papers ingest`")
    if orphans or "local index" in problems or "vector index" in problems:
        publish_full_index(settings, store, store.version)
        done.append("rebuilt the local index from the store")
    return done


def _set_aside(settings: Settings) -> str:
    """Move the collections' vector index directories out of the store (kept beside it): Chroma then rebuilds
    them from what its log still holds, and the records can be read again to be re-indexed."""
    from chromadb.api.client import SharedSystemClient

    try:
        folders = vector_segment_dirs(settings.chroma_dir, collection_names(settings))
    except Exception as e:  # Chroma's own tables, read directly: another layout is refused, not guessed at
        raise StoreError(f"cannot find the vector index files in {settings.chroma_dir} ({e}): run {REBUILD}"
                         ) from None
    aside = settings.data_dir / f"chroma.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
    aside.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        shutil.move(str(folder), str(aside / folder.name))
    SharedSystemClient.clear_system_cache()  # the next client opens the store without them
    return f"set the damaged vector index files aside in {aside}"


def _rebuild_vectors(settings: Settings, store: Store) -> list[str]:
    """Re-create both collections from their records and the vectors the local index keeps (no re-embedding)."""
    import numpy as np

    folder = settings.data_dir / "index"
    candidates = [index_dir(settings, store.version)] + sorted(folder.glob(f"{settings.collection}-*"),
                                                               key=lambda p: p.stat().st_mtime, reverse=True)
    chunks = _read_all(store.chunks, ["documents", "metadatas"])
    vectors: dict[str, Any] = {}
    for path in candidates:
        try:
            local = load_index(path)
        except Exception:
            continue
        for cid in chunks["ids"]:
            if cid not in vectors and cid in local.row_of:
                vectors[cid] = np.asarray(local.vectors[local.row_of[cid]], dtype=np.float32)
        if len(vectors) == len(chunks["ids"]):
            break
    missing = [cid for cid in chunks["ids"] if cid not in vectors]
    if missing:
        raise StoreError(f"{len(missing)} chunk vectors are in no local index (e.g. {missing[0]}): run "
                         "`papers ingest --rebuild` (re-embeds everything)")
    papers = _read_all(store.papers, ["documents", "metadatas"])
    by_paper: dict[str, list[Any]] = {}
    for cid, meta in zip(chunks["ids"], chunks["metadatas"]):
        by_paper.setdefault(str(meta.get("paper_id", "")), []).append(vectors[cid])
    means = {}
    for pid, vs in by_paper.items():
        m = np.mean(np.stack(vs), axis=0)
        means[pid] = m / (float(np.linalg.norm(m)) or 1.0)
    dim = len(next(iter(vectors.values()))) if vectors else 1
    paper_vectors = [means.get(pid, np.eye(1, dim, 0)[0]) for pid in papers["ids"]]
    _recreate(store, "chunks", chunks, [vectors[c] for c in chunks["ids"]])
    _recreate(store, "papers", papers, paper_vectors)
    return [f"rebuilt the vector index from the local index's vectors ({len(chunks['ids'])} chunks, "
            f"{len(papers['ids'])} papers)"]


def _recreate(store: Store, which: str, records: dict[str, list[Any]], vectors: list[Any]) -> None:
    old = getattr(store, which)
    name, metadata = old.name, dict(old.metadata or {})
    store.client.delete_collection(name)
    new = store.client.create_collection(name, metadata=metadata or None, configuration=HNSW_CONFIGURATION)
    for i in range(0, len(records["ids"]), 1000):
        new.add(ids=records["ids"][i:i + 1000], documents=records["documents"][i:i + 1000],
                metadatas=records["metadatas"][i:i + 1000],
                embeddings=as_embeddings([list(map(float, v)) for v in vectors[i:i + 1000]]))
    setattr(store, which, new)
    store._vector_store = None
