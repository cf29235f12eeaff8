"""Training data for the reader (eval/fit_reader.py): (question, relevant passage, hard negative) triplets.

- QASPER dev: each question with its paper's paragraphs ("<section>: <paragraph>"); each annotator evidence
  paragraph is a positive, paired with one of the paper's other paragraphs that share most of the question's
  rare words (a hard negative); a yes/no annotator's answer labels its evidence paragraphs.
- SciFact train: each claim with a rationale sentence of a cited abstract ("<title>: <sentence>"), paired with
  another sentence of that abstract; SUPPORT labels "yes", CONTRADICT "no".
- This project's labelled questions (eval/questions.jsonl): the gold paper's sentence stating a key fact,
  paired with another of its sentences.

Every source is split by a stable key (QASPER paper, SciFact claim, seed question) into the folds the
evaluations use (eval/qasper.py `fold_of`), so a fold's figures come from a model that never saw it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from eval import qasper
from rag.read.passages import passage_text
from rag.text import split_sentences, term_stems

HARD_NEGATIVES = 3  # a positive's negative is drawn from the question's top non-evidence paragraphs by overlap


@dataclass(frozen=True)
class Triplet:
    question: str
    positive: str
    negative: str
    source: str
    group: str


def fold_of(key: str, folds: int = qasper.FOLDS) -> int:
    return qasper.fold_of(key, folds)


def _idf(docs: list[list[str]]) -> dict[str, float]:
    df = Counter(w for d in docs for w in set(d))
    n = len(docs)
    return {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}


def overlap_order(question: str, texts: list[str]) -> list[int]:
    """Indexes of texts by the idf mass of the question's stems they hold (a BM25-like order; ties in order)."""
    docs = [list(term_stems(t)) for t in texts]
    idf = _idf(docs)
    q = set(term_stems(question))
    scores = [sum(idf.get(w, 0.0) for w in q & set(d)) for d in docs]
    return sorted(range(len(texts)), key=lambda i: -scores[i])


def contexts(paper: qasper.Paper) -> list[str]:
    """The section heading of each of a QASPER paper's paragraphs, as the Markdown reader names them."""
    return ["Abstract"] + [name or "Body" for name, ps in paper.sections for _ in ps]


def qasper_data(papers: list[qasper.Paper], rng: random.Random) -> list[Triplet]:
    triplets = []
    for p in papers:
        texts = [passage_text(c, t) for c, t in zip(contexts(p), p.paragraphs)]
        index = {t: i for i, t in enumerate(p.paragraphs)}
        for q in p.questions:
            positive = sorted({index[e] for r in q.references for e in r.evidence if e in index})
            negatives = [i for i in overlap_order(q.question, p.paragraphs) if i not in positive][:HARD_NEGATIVES]
            for i in positive:
                if negatives:
                    triplets.append(Triplet(q.question, texts[i], texts[rng.choice(negatives)], "qasper", p.id))
    return triplets


def scifact_data(folder: Path, rng: random.Random, limit: int | None = None) -> list[Triplet]:
    from eval.scifact import load_claims, load_corpus

    corpus = load_corpus(folder)
    triplets = []
    for c in load_claims(folder)[:limit]:
        for doc, rationale in c.rationales.items():
            if doc not in corpus:
                continue
            d = corpus[doc]
            sentences = [passage_text(d["title"], s) for s in d["sentences"]]
            others = [i for i in overlap_order(c.claim, d["sentences"]) if i not in rationale][:HARD_NEGATIVES]
            for i in sorted(x for x in rationale if x < len(sentences)):
                if others:
                    triplets.append(Triplet(c.claim, sentences[i], sentences[rng.choice(others)], "scifact", c.id))
    return triplets


def seed_data(questions: Path, corpus_dir: Path, rng: random.Random) -> list[Triplet]:
    """The labelled seed questions against the seed abstracts (read with the project's own scanner)."""
    from rag.corpus.scan import scan

    papers = {p.paper_id: p for p in scan([corpus_dir], 64 * 2**20, 20_000).papers}
    out = []
    for line in questions.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        facts = [f.lower() for f in q.get("key_facts") or []]
        for pid in q.get("gold") or []:
            p = papers.get(pid)
            if p is None or not facts:
                continue
            sentences = [passage_text(p.title or p.label, s) for s in split_sentences(p.text)]
            hits = [s for s in sentences if any(f in s.lower() for f in facts)]
            rest = [s for s in sentences if s not in hits]
            out += [Triplet(q["question"], s, rng.choice(rest), "seed", q["id"]) for s in hits if rest]
    return out


def held(items: list, holdout: set[int]) -> tuple[list, list]:
    """(training items, held-out items): a group's fold decides its side."""
    train, out = [], []
    for x in items:
        (out if fold_of(x.group) in holdout else train).append(x)
    return train, out


def digest(items: list) -> str:
    """A short hash of a training set (written beside the model, so a refit on other data shows)."""
    h = hashlib.sha1()
    for x in items:
        h.update(repr(x).encode())
    return h.hexdigest()[:12]
