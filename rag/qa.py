"""The assistant: retrieve -> answer -> check citations, behind the interface every front end uses."""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass

from rag import prompts
from rag.cite import SourceText, check_answer
from rag.extractive import Draft, draft_answer
from rag.question import analyse
from rag.retrieve import PaperHit, Retrieval, Retriever
from rag.schema import Answer, Citation, Retrieved
from rag.settings import Settings
from rag.store import CatalogEntry
from rag.text import split_sentences, stems


class QuestionError(ValueError):
    """A question that cannot be asked (empty, too long); the message says why."""


def clean_question(question: str, max_chars: int) -> str:
    """Normalise a question; refuse empty or oversized ones with a message naming the problem."""
    if question is None:
        raise QuestionError("empty question: type a question about the papers")
    text = "".join(ch if unicodedata.category(ch)[0] != "C" or ch in "\n\t" else " " for ch in str(question))
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        raise QuestionError("empty question: type a question about the papers")
    if len(text) > max_chars:
        raise QuestionError(f"question too long ({len(text):,} characters; the limit is {max_chars:,}): "
                            "ask about one thing at a time")
    if not re.search(r"\w", text):
        raise QuestionError("the question has no words: type a question about the papers")
    return text


def sources_for(papers: list[PaperHit]) -> list[SourceText]:
    """Numbered sources ([1] = first retrieved paper) with sentence vectors for the citation check."""
    out = []
    for n, p in enumerate(papers, 1):
        sentences: list[str] = []
        vectors: list[list[float]] = []
        for c in p.chunks:
            for s in split_sentences(c.text):
                sentences.append(s)
                vectors.append(c.vector or [])
        out.append(SourceText(n, p.label, sentences, vectors if all(vectors) else None))
    return out


@dataclass
class LookupHit:
    """A `papers cite` result: a paper and its sentence that best matches the query."""

    paper_id: str
    label: str
    source: str
    position: int
    score: float
    sentence: str
    reference: str


class Assistant:
    """One per process: holds the retriever (store, models, BM25) and answers questions."""

    def __init__(self, settings: Settings, retriever: Retriever | None = None) -> None:
        self.settings = settings
        self.retriever = retriever or Retriever(settings)

    # --- questions ----------------------------------------------------------------------------------

    def ask(self, question: str, k: int | None = None, paper_ids: list[str] | None = None) -> Answer:
        """Answer a question from the indexed abstracts, with checked citations."""
        t0 = time.perf_counter()
        q = clean_question(question, self.settings.max_question_chars)
        retrieval = self.retriever.retrieve(q, k=k, paper_ids=paper_ids or None)
        t1 = time.perf_counter()
        answer = self._extractive(q, retrieval)
        answer.timings_ms.update(retrieval.timings_ms)
        answer.timings_ms["answer_ms"] = (time.perf_counter() - t1) * 1000
        answer.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        return answer

    def _extractive(self, question: str, retrieval: Retrieval) -> Answer:
        draft = draft_answer(question, retrieval, analyse(question))
        return render_extractive(question, retrieval, draft, self.settings.unsupported)

    # --- lookup and listing -------------------------------------------------------------------------

    def cite(self, query: str, k: int | None = None) -> list[LookupHit]:
        """Citation lookup: papers matching a method name, claim or topic, best first, with the best sentence."""
        q = clean_question(query, self.settings.max_question_chars)
        retrieval = self.retriever.retrieve(q, k=k)
        words = stems(q)
        out = []
        for p in retrieval.papers:
            best = max(((c.cosine + 0.5 * len(words & stems(s)) / max(1, len(words)), s)
                        for c in p.chunks for s in split_sentences(c.text)), default=(0.0, ""))
            out.append(LookupHit(p.paper_id, p.label, p.source, p.position, round(p.score, 4), best[1],
                                 p.reference))
        return out

    def papers(self) -> list[CatalogEntry]:
        """Every indexed paper, in source order."""
        entries = list(self.retriever.store.catalog().values())
        return sorted(entries, key=lambda e: (e.source, e.position))


def render_extractive(question: str, retrieval: Retrieval, draft: Draft, policy: str) -> Answer:
    """Number the quoted papers, write the answer text, and run the citation check on it."""
    retrieved = [Retrieved(p.paper_id, p.label, p.score, p.source, p.position) for p in retrieval.papers]
    if draft.abstention or not draft.quotes:
        return Answer(question=question, answer=draft.abstention or prompts.ABSTAIN_NO_MATCH, abstained=True,
                      mode="extractive", retrieved=retrieved)
    order: list[PaperHit] = []
    for quote in draft.quotes:
        if quote.paper not in order:
            order.append(quote.paper)
    n_of = {p.paper_id: i for i, p in enumerate(order, 1)}
    lines = []
    if draft.summary:
        lines.append(draft.summary + ": " + ", ".join(f"{p.label} [{n_of[p.paper_id]}]" for p in order) + ".")
    for quote in draft.quotes:
        lines.append(f"{quote.paper.label} [{n_of[quote.paper.paper_id]}]: “{quote.sentence}”")
    citations = []
    for p in order:
        quoted = [q.sentence for q in draft.quotes if q.paper is p]
        citations.append(Citation(n_of[p.paper_id], p.paper_id, p.label, p.source, p.position, " … ".join(quoted),
                                  p.reference))
    # The citation check runs on extractive answers too: quotes must be verbatim and cite their paper.
    sources = sources_for(order)
    checked = check_answer("\n".join(lines), sources, policy)
    return Answer(question=question, answer=checked.text, abstained=checked.abstained, mode="extractive",
                  citations=citations, retrieved=retrieved, checks=checked.checks,
                  unsupported=[{"sentence": c.sentence, "reason": c.reason} for c in checked.unsupported],
                  removed_citations=checked.removed_citations)
