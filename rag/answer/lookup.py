"""Citation-lookup strength: how far a reviewer can rely on each hit of `papers cite`, and the order of the hits.

A hit's strength comes from a logistic model of the probability that the paper is the one the query is after
(a cited abstract for a SciFact claim, a hand-labelled paper for a seed lookup), fitted by `eval/fit_lookup.py`
on labelled lookups from two corpora and on off-topic queries made by asking one corpus's queries of the other.
Its features mean the same on any corpus: the paper's best and second sentence evidence probabilities and the
paper-level probability (rag/answer/evidence.py), the margins of both over the best other hit, the retriever's
rank and each fused ranking's rank, the best sentence's own cosine and coverage of the query's rare words, the
query's cosine to the paper's contribution statements ("We propose ...") and its margin over the other hits, and
query-level signs of an off-topic query (share of its words the corpus never uses, the `foreign` test, the best
cosine of any retrieved sentence).

    strong  the probability is at or above `strong_at`: chosen on the training folds as the lowest threshold at
            which strong hits are a labelled paper at least 9 times in 10 in every corpus and no off-topic
            query gets one; a reviewer can cite it after reading the quoted sentence.
    weak    at or above `weak_at`, chosen so that hits below it are a labelled paper at most 1 time in 20 on
            the training folds: worth reading, not to be cited unread.
    none    below `weak_at`, or a query mostly in words no indexed chunk uses: unlikely to be the paper.

The constants live in rag/answer/fitted/lookup.json, written by that script (never by hand). As last fitted:
strong_at 0.94, weak_at 0.13; on held-out folds strong hits were a labelled paper 97% of the time on SciFact
claims and 100% on the seed lookups, and none of 1,165 off-topic queries had one (docs/lookup.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rag.answer import fitted
from rag.answer.abstain import foreign
from rag.answer.evidence import RANKINGS, Candidate, Constants, Vocabulary, paper_features, paper_probabilities
from rag.answer.extractive import evidence_for
from rag.answer.retrieve import PaperHit, Retrieval
from rag.text import CONTRIBUTION_RE

LOOKUP_FEATURES = ("evidence", "second", "paper", "evidence_lead", "paper_lead", "rank", "cosine", "rare_share",
                   "overlap", "paper_rare", "unseen", "foreign", "top_cosine", "proposal", "proposal_lead",
                   *(f"rr_{name}" for name in RANKINGS))


@dataclass
class LookupConstants:
    """The fitted lookup model (see eval/fit_lookup.py): weights, thresholds, and whether hits are reordered."""

    weights: dict[str, float]
    bias: float
    strong_at: float
    weak_at: float
    rerank: bool = False  # order hits by the fitted probability rather than the retriever's fused score
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@lru_cache(maxsize=1)
def load_lookup() -> LookupConstants:
    """The shipped constants (rag/answer/fitted/lookup.json); a missing file is an installation error."""
    return LookupConstants(**json.loads(fitted.read(fitted.LOOKUP)))


def hit_features(cands: Sequence[Candidate], papers: Sequence[PaperHit], by_chance: bool,
                 evidence_constants: Constants | None = None) -> dict[str, dict[str, float]]:
    """The lookup model's features of every retrieved paper, from its scored sentences (`evidence_for`)."""
    pf = paper_features(cands)
    pp = paper_probabilities(cands, evidence_constants)
    best: dict[str, Candidate] = {}
    for c in cands:
        if c.paper.paper_id not in best or c.prob > best[c.paper.paper_id].prob:
            best[c.paper.paper_id] = c
    top_cos = max((c.features["cosine"] for c in cands), default=0.0)
    unseen = cands[0].features["unseen"] if cands else 1.0
    ev = {pid: c.prob for pid, c in best.items()}
    # How close the query is to what the paper says it proposes (its contribution statements): the paper that
    # proposes the thing, not the ones that mention its words, for "which paper proposes X?".
    proposal: dict[str, float] = {}
    for c in cands:
        if CONTRIBUTION_RE.search(c.sentence):
            proposal[c.paper.paper_id] = max(proposal.get(c.paper.paper_id, 0.0), c.features["cosine"])
    out: dict[str, dict[str, float]] = {}
    for rank, p in enumerate(papers):
        pid = p.paper_id
        top = best.get(pid)
        f = pf.get(pid, {})
        others_ev = max((v for q, v in ev.items() if q != pid), default=0.0)
        others_pp = max((v for q, v in pp.items() if q != pid), default=0.0)
        others_prop = max((v for q, v in proposal.items() if q != pid), default=0.0)
        ranks = getattr(p, "ranks", {}) or {}
        out[pid] = {
            "evidence": ev.get(pid, 0.0), "second": f.get("second", 0.0), "paper": pp.get(pid, 0.0),
            "evidence_lead": ev.get(pid, 0.0) - others_ev, "paper_lead": pp.get(pid, 0.0) - others_pp,
            "rank": 1.0 / (1 + rank),
            "cosine": top.features["cosine"] if top else 0.0,
            "rare_share": top.features["rare_share"] if top else 0.0,
            "overlap": top.features["overlap"] if top else 0.0,
            "paper_rare": f.get("paper_rare", 0.0),
            "unseen": unseen, "foreign": 1.0 if by_chance else 0.0, "top_cosine": top_cos,
            "proposal": proposal.get(pid, 0.0), "proposal_lead": proposal.get(pid, 0.0) - others_prop,
            **{f"rr_{n}": 1.0 / ranks[n] if ranks.get(n) else 0.0 for n in RANKINGS},
        }
    return out


@dataclass
class Row:
    """One retrieved paper of a lookup: its best sentence, the model's features, and the fitted probability."""

    paper: PaperHit
    sentence: str
    features: dict[str, float]
    prob: float = 0.0


def lookup_rows(query: str, retrieval: Retrieval, vocab: Vocabulary, constants: LookupConstants | None = None
                ) -> tuple[list[Row], bool]:
    """Every retrieved paper (the retrieval completed) scored for a lookup, in the order hits are shown, and
    whether the query is foreign to the corpus (then no hit is a match: its nearest sentences are near by chance).
    The one path `Assistant.cite` and `eval/fit_lookup.py` share."""
    c = constants or load_lookup()
    cands = evidence_for(query, retrieval, vocab)
    by_chance = foreign(query, vocab)
    feats = hit_features(cands, retrieval.papers, by_chance)
    sentence: dict[str, tuple[float, str]] = {}
    for cand in cands:
        if cand.prob > sentence.get(cand.paper.paper_id, (-1.0, ""))[0]:
            sentence[cand.paper.paper_id] = (cand.prob, cand.sentence)
    rows = [Row(p, sentence.get(p.paper_id, (0.0, ""))[1], feats[p.paper_id]) for p in retrieval.papers]
    for r in rows:
        r.prob = probability(r.features, c)
    if c.rerank:
        rows.sort(key=lambda r: r.prob, reverse=True)  # stable: ties keep the retriever's order
    return rows, by_chance


def probability(features: dict[str, float], constants: LookupConstants | None = None) -> float:
    """The fitted probability that a hit is the paper the query is after."""
    c = constants or load_lookup()
    z = c.bias + sum(c.weights.get(k, 0.0) * v for k, v in features.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def strength(prob: float, by_chance: bool = False, constants: LookupConstants | None = None) -> str:
    """'strong', 'weak' or 'none' for a hit's fitted probability (see the module docstring)."""
    c = constants or load_lookup()
    if by_chance:
        return "none"
    return "strong" if prob >= c.strong_at else "weak" if prob >= c.weak_at else "none"
