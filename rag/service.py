"""The one assistant every front end holds: retrieve -> answer -> check citations, and citation lookup.

The CLI, the web UI, the MCP server, the OpenAI-compatible endpoint and the LlamaIndex components are thin
clients of `Assistant`: they open it through `AssistantHolder` (or `open_assistant`), send questions, and turn
its `Answer` into their own wire format with `rag.frontends.common`'s one serialiser.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from rag import prompts
from rag.answer.cite import check_answer
from rag.answer.evidence import Vocabulary, strength, vocabulary_for
from rag.answer.extractive import draft_answer, evidence_for, foreign
from rag.answer.llm import LLMUnavailable, answer_messages, check_llm_settings, complete, stream_answer
from rag.corpus.labels import mentions
from rag.answer.question import analyse, clean_question, is_list_question
from rag.answer.render import (_apply_renumber, _best_sentence, _renumber_repair, render_extractive,
                               renumber_citations, sources_for, word_events)
from rag.answer.retrieve import Retrieval, Retriever
from rag.corpus.references import citation_fields, paper_fields
from rag.errors import QuestionError
from rag.index.store import CatalogEntry
from rag.schema import Answer, Citation, Retrieved, SentenceCheck, StreamEvent
from rag.settings import Settings

SENTENCE_CACHE = 20_000  # sentence vectors kept for the citation check (about 30 MB)


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
    strength: str = "none"  # how well the best sentence carries the query: 'strong', 'weak' or 'none'
    evidence: float = 0.0   # the evidence scorer's probability for that sentence


class Assistant:
    """One per process: holds the retriever (store, models, BM25) and answers questions."""

    def __init__(self, settings: Settings, retriever: Retriever | None = None) -> None:
        check_llm_settings(settings)
        self.settings = settings
        self.retriever = retriever or Retriever(settings)
        self._vectors: dict[str, list[float]] = {}
        self._prefetcher: ThreadPoolExecutor | None = None

    def resolve_mode(self, mode: str | None) -> str:
        """'extractive' or 'llm' for this question; 'llm' only when an endpoint is configured."""
        if mode in (None, "auto"):
            return self.settings.effective_answer_mode
        if mode == "llm" and not self.settings.llm_configured:
            raise QuestionError("LLM mode needs OPENAI_BASE_URL or OPENAI_API_KEY to be configured")
        if mode not in ("llm", "extractive"):
            raise QuestionError(f"unknown answer mode {mode!r} (use extractive, llm or auto)")
        return mode

    # --- questions ----------------------------------------------------------------------------------

    def depth(self, question: str, k: int | None = None) -> int:
        """Papers to retrieve: k when given, else PAPERS_LIST_TOP_K for a list question, else PAPERS_TOP_K."""
        if k is not None:
            return k
        return max(self.settings.top_k, self.settings.list_top_k) if is_list_question(question) else self.settings.top_k

    def _start(self, question: str, k: int | None, paper_ids: list[str] | None,
               mode: str | None) -> tuple[str, bool, Retrieval, float, float]:
        """Validate, pick the mode, retrieve; generation needs every chunk of the retrieved papers."""
        t0 = time.perf_counter()
        q = clean_question(question, self.settings.max_question_chars)
        generate = self.resolve_mode(mode) == "llm"
        retrieval = self.retriever.retrieve(q, k=self.depth(q, k), paper_ids=paper_ids)
        generate = generate and bool(retrieval.papers)
        if generate:
            self.retriever.complete(retrieval)
        return q, generate, retrieval, t0, time.perf_counter()

    def _prefetch(self, retrieval: Retrieval) -> Future[list[list[float]]]:
        """Embed the sources' sentences for the citation check while the LLM is still generating.

        The first check of a paper's answer embeds every sentence of its abstract (~0.4 s for three papers
        here); done during generation, which takes seconds, the check at the end of the stream costs
        milliseconds. onnxruntime and tokenizers release the GIL, so this runs beside the stream.
        """
        if self._prefetcher is None:
            self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cite-prefetch")
        sentences = [s for src in sources_for(retrieval.papers) for s in src.sentences]
        return self._prefetcher.submit(self._embed_cached, sentences)

    def ask(self, question: str, k: int | None = None, paper_ids: list[str] | None = None,
            mode: str | None = None) -> Answer:
        """Answer a question from the indexed abstracts, with checked citations (no streaming)."""
        q, generate, retrieval, t0, t1 = self._start(question, k, paper_ids, mode)
        if generate:
            prefetch = self._prefetch(retrieval)
            try:
                raw = complete(self.settings, answer_messages(q, retrieval.papers, self.settings))
                answer = self._finish_llm(q, retrieval, raw, prefetch)
            except LLMUnavailable as e:
                answer = self._fallback(q, retrieval, e.reason)
        else:
            answer = self._extractive(q, retrieval)
        return self._timed(answer, retrieval, t0, t1)

    def stream(self, question: str, k: int | None = None, paper_ids: list[str] | None = None,
               mode: str | None = None) -> Iterator[StreamEvent]:
        """Answer as a stream of events; the citation check runs when the text is complete."""
        q, generate, retrieval, t0, t1 = self._start(question, k, paper_ids, mode)
        if generate:
            parts: list[str] = []
            prefetch = self._prefetch(retrieval)
            try:
                for delta in stream_answer(self.settings, answer_messages(q, retrieval.papers, self.settings)):
                    if not parts:
                        first_token_ms = (time.perf_counter() - t0) * 1000
                    parts.append(delta)
                    yield StreamEvent("token", delta)
                answer = self._finish_llm(q, retrieval, "".join(parts), prefetch)
                answer.timings_ms["first_token_ms"] = first_token_ms
                if answer.mode != "llm":  # the model's text was replaced by the extractive fallback
                    yield StreamEvent("reset", answer.notice or "")
                    yield from word_events(answer.answer)
            except LLMUnavailable as e:
                if parts:
                    yield StreamEvent("reset")
                answer = self._fallback(q, retrieval, e.reason)
                yield from word_events(answer.answer)
        else:
            answer = self._extractive(q, retrieval)
            yield from word_events(answer.answer)
        yield StreamEvent("final", answer=self._timed(answer, retrieval, t0, t1))

    def _embed_cached(self, texts: list[str]) -> list[list[float]]:
        """Sentence vectors for the citation check; abstract sentences recur across answers, so they are kept.

        Safe across threads (UI sessions, the prefetch): a full cache is replaced, never cleared in place.
        """
        cache = self._vectors
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        fresh = dict(zip(todo, self.retriever.embedder.get_text_embedding_batch(todo))) if todo else {}
        if len(cache) > SENTENCE_CACHE:
            self._vectors = {}
        self._vectors.update(fresh)
        return [fresh[t] if t in fresh else cache[t] for t in texts]

    def _timed(self, answer: Answer, retrieval: Retrieval, t0: float, t1: float) -> Answer:
        answer.timings_ms.update(retrieval.timings_ms)
        answer.timings_ms["answer_ms"] = (time.perf_counter() - t1) * 1000
        answer.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        return answer

    def vocabulary(self) -> Vocabulary:
        """Word statistics of the current index (rarity, common vocabulary) for the evidence scorer."""
        return vocabulary_for(self.retriever.local_index)

    def _extractive(self, question: str, retrieval: Retrieval) -> Answer:
        # Every sentence of the retrieved papers is a candidate: their vectors come from the local index.
        self.retriever.complete(retrieval)
        draft = draft_answer(question, retrieval, vocab=self.vocabulary())
        return render_extractive(question, retrieval, draft, self.settings.unsupported)

    def _fallback(self, question: str, retrieval: Retrieval, reason: str) -> Answer:
        answer = self._extractive(question, retrieval)
        answer.notice = f"LLM not used: {reason}; this is the extractive answer."
        return answer

    def _finish_llm(self, question: str, retrieval: Retrieval, raw: str,
                    prefetch: Future[list[list[float]]] | None = None, salvage: bool = True) -> Answer:
        """Check a generated answer's citations (repairing unambiguous ones) and number them in order of first
        use; an answer left with nothing supported gives way to the extractive answer (`salvage=False`: neither,
        the check alone, as the replay benchmark's baseline)."""
        t = time.perf_counter()
        if prefetch is not None:  # wait for the sources' vectors; if that failed, the check embeds them itself
            prefetch.exception()
        sources = sources_for(retrieval.papers)
        # Repairs may point only to papers the extractive answerer finds evidence in for this question: a
        # sentence copied from another retrieved abstract is true of its paper but no answer.
        extractive = self._extractive(question, retrieval) if salvage else None
        evidence = {c.paper_id for c in extractive.citations} if extractive and not extractive.abstained else set()
        repair_to = [n for n, p in enumerate(retrieval.papers, 1) if p.paper_id in evidence]
        checked = check_answer(raw, sources, self.settings.unsupported, embed=self._embed_cached,
                               repair_to=repair_to)
        check_ms = (time.perf_counter() - t) * 1000
        if checked.abstained and extractive is not None and not extractive.abstained:
            return self._salvage(extractive, raw, checked.checks, check_ms)
        text, renumber = renumber_citations(checked.text)
        citations = []
        for old, new in sorted(renumber.items(), key=lambda kv: kv[1]):
            paper = retrieval.papers[old - 1]
            evidence = [c.evidence for c in checked.checks if c.supported and c.evidence_n == old and c.evidence]
            quote = evidence[0] if evidence else _best_sentence(paper)
            citations.append(Citation(new, paper.paper_id, paper.label, paper.source, paper.position, quote,
                                      **citation_fields(paper, quote)))
        for c in checked.checks:
            # Numbers follow the final text; a dropped sentence keeps only citations that are still in it.
            c.sentence = _apply_renumber(c.sentence, renumber)
            c.citations = [renumber[n] for n in c.citations if n in renumber]
            c.evidence_n = renumber.get(c.evidence_n) if c.evidence_n is not None else None
            if c.repaired:
                c.repaired = _renumber_repair(c.repaired, renumber, retrieval.papers)
        retrieved = [Retrieved(p.paper_id, p.label, p.score, p.source, p.position, **paper_fields(p))
                     for p in retrieval.papers]
        return Answer(question=question, answer=text, abstained=checked.abstained, mode="llm",
                      citations=citations if not checked.abstained else [], retrieved=retrieved,
                      checks=checked.checks, removed_citations=checked.removed_citations,
                      unsupported=[{"sentence": c.sentence, "reason": c.reason} for c in checked.unsupported],
                      timings_ms={"check_ms": check_ms}, raw_answer=raw)

    def _salvage(self, extractive: Answer, raw: str, checks: list[SentenceCheck], check_ms: float) -> Answer:
        """The extractive answer, with a notice, in place of a generated answer that ended as the abstention
        (the model abstained, or no sentence could be traced) while the extractive answerer found quotes.

        A small model abstains or mis-cites where the abstracts hold the answer; the abstention would then tell
        the user something false. The model's text stays in `raw_answer`.
        """
        model_abstained = any(c.reason == "abstention" for c in checks)
        extractive.notice = prompts.FALLBACK_MODEL_ABSTAINED if model_abstained else prompts.FALLBACK_UNTRACEABLE
        extractive.raw_answer = raw
        extractive.timings_ms["check_ms"] = check_ms
        return extractive

    # --- lookup and listing -------------------------------------------------------------------------

    def cite(self, query: str, k: int | None = None) -> list[LookupHit]:
        """Citation lookup: papers matching a method name, claim or topic, best first, with the best sentence."""
        q = clean_question(query, self.settings.max_question_chars)
        retrieval = self.retriever.complete(self.retriever.retrieve(q, k=k))
        # The same evidence scorer as the answerer: each paper's best sentence and how strongly it matches.
        vocab = self.vocabulary()
        best: dict[str, tuple[float, str]] = {}
        for c in evidence_for(q, retrieval, vocab):
            if c.prob > best.get(c.paper.paper_id, (-1.0, ""))[0]:
                best[c.paper.paper_id] = (c.prob, c.sentence)
        # A query mostly in words no indexed chunk uses meets its closest sentences by chance: `ask` abstains on
        # it, and no hit is a match (the scorer's features are relative to the best sentence found, so on a small
        # corpus the best of unrelated sentences can score high).
        by_chance = foreign(q, vocab)
        out = []
        for p in retrieval.papers:
            prob, sentence = best.get(p.paper_id, (0.0, ""))
            out.append(LookupHit(p.paper_id, p.label, p.source, p.position, round(p.score, 4), sentence,
                                 p.reference, "none" if by_chance else strength(prob), round(prob, 4)))
        return out

    def papers(self) -> list[CatalogEntry]:
        """Every indexed paper, in source order (from the index version questions are answered from)."""
        local = self.retriever.local_index
        entries = list(local.papers.values()) if local is not None else []
        return sorted(entries, key=lambda e: (e.source, e.position))


def outside_scope(assistant: Assistant, question: str, paper_ids: list[str]) -> list[str]:
    """Names in a question that the whole index has, but only in papers outside `paper_ids`.

    An answer restricted to some papers abstains with "the abstracts don't say anything about X" even when X is
    indexed; the UI uses this to say that X is outside the selection instead. Checked against the unscoped
    index: a retrieved paper outside the scope whose label the question names, or whose abstract contains a
    specific term of the question that no paper in the scope contains.
    """
    q = clean_question(question, assistant.settings.max_question_chars)
    scope = set(paper_ids)
    inside = list(assistant.retriever.store.get_papers(list(scope)).values())
    outside = [p for p in assistant.retriever.retrieve(q, k=assistant.settings.top_k).papers
               if p.paper_id not in scope]
    names = [p.label for p in outside if mentions(q, p.label) and not any(mentions(q, i.label) for i in inside)]
    for term in analyse(q).specific:
        if any(mentions(term, n) for n in names) or any(mentions(p.text, term) for p in inside):
            continue
        if any(mentions(p.text, term) or mentions(term, p.label) for p in outside):
            names.append(term)
    return list(dict.fromkeys(names))
