"""SciFact (Wadden et al. 2020) as a corpus the project was not written for: reading the release files, turning
the corpus into the project's JSON Lines format, and ingesting it once into a data dir of its own.

The data is not part of the repository (CC BY-NC 2.0): it is read from `../shared/scifact/` beside the
checkout (or the folder given). Only the train claims are used for fitting and reporting.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from rag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
N_PAPERS = 5183


def default_dir() -> Path:
    """`../shared/scifact` beside the checkout (a git worktree one level deeper finds the same folder)."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "scifact" / "corpus.jsonl").exists():
            return base / "shared" / "scifact"
    return ROOT.parent / "shared" / "scifact"


@dataclass
class Claim:
    """A train claim, the abstracts it cites (the relevance judgements), and the rationale sentences of those
    that support or contradict it (empty: the cited abstracts say neither)."""

    id: str
    claim: str
    gold: set[str]
    rationales: dict[str, set[int]] = field(default_factory=dict)  # doc id -> sentence indexes
    labels: dict[str, str] = field(default_factory=dict)  # doc id -> SUPPORT / CONTRADICT


def load_claims(folder: Path, split: str = "train") -> list[Claim]:
    out = []
    for line in (folder / f"claims_{split}.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        rationales = {str(doc): {i for ev in evs for i in ev["sentences"]} for doc, evs in d["evidence"].items()}
        labels = {str(doc): evs[0]["label"] for doc, evs in d["evidence"].items() if evs}
        out.append(Claim(str(d["id"]), d["claim"], {str(x) for x in d["cited_doc_ids"]}, rationales, labels))
    return out


def load_qrels(folder: Path, split: str = "train") -> dict[str, set[str]]:
    """BEIR-format judgements (header line, CRLF): query id -> relevant doc ids."""
    out: dict[str, set[str]] = {}
    for line in (folder / f"qrels_{split}.tsv").read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) == 3 and int(parts[2]) > 0:
            out.setdefault(parts[0], set()).add(parts[1])
    return out


def load_corpus(folder: Path) -> dict[str, dict]:
    """doc id -> {"title", "sentences"} in file order."""
    out = {}
    for line in (folder / "corpus.jsonl").read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            out[str(d["doc_id"])] = {"title": d["title"], "sentences": [s.strip() for s in d["abstract"]]}
    return out


def write_jsonl(folder: Path, out: Path) -> Path:
    """The corpus in the project's JSON Lines format (id = SciFact doc id, so ids are stable), as a user would
    write it: the abstract is its sentences joined."""
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": pid, "title": d["title"], "abstract": " ".join(d["sentences"])})
             for pid, d in load_corpus(folder).items()]
    out.write_text("\n".join(lines) + "\n")
    return out


def ensure_ingested(settings: Settings, folder: Path, progress: bool = False, partial_ok: bool = False
                    ) -> float | None:
    """Ingest the corpus into settings.data_dir unless it already holds it (with `partial_ok`, any part of it);
    the ingest's seconds, or None when the store was reused."""
    from rag.index.store import Store, StoreError

    try:
        count = Store.open(settings).papers.count()
        if count >= N_PAPERS or (partial_ok and count):
            return None
    except StoreError:
        pass
    from rag.index.ingest import ingest

    path = write_jsonl(folder, settings.data_dir.parent / f"{settings.data_dir.name}-corpus" / "scifact.jsonl")
    t = time.perf_counter()
    report = ingest(settings, [path], progress=progress)
    if report.problems:
        raise RuntimeError("SciFact ingest had problems: " + "; ".join(report.problems[:3]))
    return time.perf_counter() - t


# --- anchors and scores (shared by benchmarks/scifact.py and its test) ----------------------------------------

def whole_abstract(doc: dict) -> str:
    """What the whole-abstract anchors index: title, then the sentences."""
    return " ".join([doc["title"], *doc["sentences"]])


def bm25_rankings(corpus: dict[str, dict], queries: list[str], k: int = 10) -> list[list[str]]:
    """The whole-abstract BM25 anchor: bm25s over title + abstract, with the project's tokeniser."""
    from rag.index.bm25 import bm25_index, tokenize

    ids = list(corpus)
    index = bm25_index([whole_abstract(corpus[i]) for i in ids])
    out = []
    for q in queries:
        tokens = [t for t in tokenize(q) if t in index.vocab_dict]
        if not tokens:
            out.append([])
            continue
        docs, scores = index.retrieve([tokens], k=min(k, len(ids)), show_progress=False)
        out.append([ids[int(d)] for d, s in zip(docs[0], scores[0]) if s > 0])
    return out


def dense_rankings(doc_ids: list[str], doc_vectors, query_vectors, k: int = 10) -> list[list[str]]:  # noqa: ANN001
    """The dense anchor: unit vectors of whole abstracts against unit vectors of the claims, exact."""
    import numpy as np

    sims = np.asarray(query_vectors, dtype=np.float32) @ np.asarray(doc_vectors, dtype=np.float32).T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return [[doc_ids[int(j)] for j in row] for row in top]


def rrf_rankings(a: list[list[str]], b: list[list[str]], k: int = 10, rrf_k: int = 60) -> list[list[str]]:
    """RRF of two anchors (the same fusion function the retriever uses)."""
    from rag.answer.retrieve import reciprocal_rank_fusion

    out = []
    for x, y in zip(a, b):
        fused = reciprocal_rank_fusion([x, y], rrf_k)
        out.append(sorted(fused, key=fused.get, reverse=True)[:k])
    return out


def retrieval_figures(claims: list[Claim], rankings: list[list[str]], k: int = 10) -> dict[str, float]:
    """Mean nDCG@k, recall@k, hit@1 and MRR of rankings against the claims' cited abstracts (eval.metrics)."""
    from eval.metrics import hit_at, ndcg_at, recall_at, reciprocal_rank

    n = max(1, len(claims))
    return {f"ndcg@{k}": sum(ndcg_at(r, c.gold, k) for c, r in zip(claims, rankings)) / n,
            f"recall@{k}": sum(recall_at(r, c.gold, k) for c, r in zip(claims, rankings)) / n,
            "hit@1": sum(hit_at(r, c.gold, 1) for c, r in zip(claims, rankings)) / n,
            "mrr": sum(reciprocal_rank(r, c.gold) for c, r in zip(claims, rankings)) / n}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def is_rationale(quote: str, paper_id: str, claim: Claim, corpus: dict[str, dict]) -> bool:
    """Whether a quoted sentence is one of the claim's gold rationale sentences of that paper. The project splits
    sentences with its own splitter, so a quote matches a rationale sentence it contains or is part of."""
    q = _norm(quote)
    if len(q) < 20 or paper_id not in claim.rationales:
        return False
    sentences = corpus[paper_id]["sentences"]
    return any(q in _norm(sentences[i]) or _norm(sentences[i]) in q
               for i in claim.rationales[paper_id] if i < len(sentences))


@dataclass
class AnswerOutcome:
    """What one answer did, as the benchmark counts it."""

    cites_relevant: bool
    quotes_rationale: bool
    abstained: bool


def answer_outcome(claim: Claim, quotes: list[tuple[str, str]], abstained: bool,
                   corpus: dict[str, dict]) -> AnswerOutcome:
    """`quotes` = (paper id, quoted sentence) of each citation."""
    cites = any(pid in claim.gold for pid, _ in quotes)
    rationale = any(is_rationale(s, pid, claim, corpus) for pid, s in quotes)
    return AnswerOutcome(cites and not abstained, rationale and not abstained, abstained)


def answer_figures(claims: list[Claim], outcomes: list[AnswerOutcome]) -> dict[str, float]:
    """Cites-relevant over all claims; rationale-quote and wrong abstentions over claims with evidence
    (a supporting or contradicting abstract exists, so abstaining is wrong)."""
    with_evidence = [(c, o) for c, o in zip(claims, outcomes) if c.rationales]
    n, m = max(1, len(claims)), max(1, len(with_evidence))
    wrong = sum(o.abstained for _, o in with_evidence)
    return {"cites_relevant": sum(o.cites_relevant for o in outcomes) / n,
            "rationale_quote": sum(o.quotes_rationale for _, o in with_evidence) / m,
            "wrong_abstentions": wrong, "wrong_abstentions_pct": 100.0 * wrong / m,
            "claims_with_evidence": len(with_evidence)}


def naive_answer(ranking: list[str], claim_vector, sentence_vectors) -> tuple[str, int]:  # noqa: ANN001
    """The naive answer: cite the top result and quote its sentence closest to the claim by cosine.
    `sentence_vectors(paper_id)` gives unit vectors of that paper's sentences; returns (paper id, index)."""
    import numpy as np

    if not ranking:
        return "", -1
    top = ranking[0]
    v = np.asarray(sentence_vectors(top), dtype=np.float32)
    return top, int(np.argmax(v @ np.asarray(claim_vector, dtype=np.float32))) if len(v) else -1
