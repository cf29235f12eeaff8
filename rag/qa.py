"""The assistant: retrieve -> answer -> check citations, behind the interface every front end uses."""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag import prompts
from rag.cite import SourceText, check_answer
from rag.evidence import Vocabulary, strength, vocabulary_for
from rag.extractive import Draft, draft_answer, evidence_for, foreign
from rag.question import analyse, is_list_question
from rag.references import citation_fields, paper_fields
from rag.retrieve import PaperHit, Retrieval, Retriever
from rag.schema import Answer, Citation, Retrieved, SentenceCheck
from rag.settings import Settings
from rag.store import CatalogEntry
from rag.text import sentences_of

if TYPE_CHECKING:
    from rag.integrations.llamaindex import PapersQueryEngine

SENTENCE_CACHE = 20_000  # sentence vectors kept for the citation check (about 30 MB)
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")


class QuestionError(ValueError):
    """A question that cannot be asked (empty, too long); the message says why."""


def clean_question(question: str, max_chars: int) -> str:
    """Normalise a question; refuse empty or oversized ones with a message naming the problem."""
    if question is None:
        raise QuestionError("empty question: type a question about the papers")
    text = _ANSI_RE.sub(" ", str(question))  # terminal colour codes pasted along with a question
    if not text.isprintable():  # printable text holds no control or format characters (category C)
        text = "".join(ch if unicodedata.category(ch)[0] != "C" or ch in "\n\t" else " " for ch in text)
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
    """Numbered sources ([1] = first retrieved paper) with every sentence of their abstracts."""
    return [SourceText(n, p.label, list(sentences_of(p.text))) for n, p in enumerate(papers, 1)]


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


@dataclass
class StreamEvent:
    """What `Assistant.stream` yields: text as it arrives ('token'), 'reset' when the text so far is
    withdrawn (the LLM failed mid-answer, or its answer gave way to the extractive one: `text` then says why),
    and one 'final' event carrying the checked Answer."""

    kind: str
    text: str = ""
    answer: Answer | None = None


def preload_answer_path() -> None:
    """Start importing the LlamaIndex retriever (llama-index's 2 s import) on a thread, so that it overlaps with
    opening the store and loading the models; a command that will answer questions calls this first."""
    import sys
    import threading

    def load() -> None:
        try:
            import rag.integrations.llamaindex  # noqa: F401
        except Exception:  # noqa: S110 - the answer path imports it again and reports any error itself
            pass

    if "rag.integrations.llamaindex" not in sys.modules:
        threading.Thread(target=load, name="preload-llamaindex", daemon=True).start()


class Assistant:
    """One per process: holds the retriever (store, models, BM25) and answers questions."""

    def __init__(self, settings: Settings, retriever: Retriever | None = None) -> None:
        from rag.llm import check_llm_settings

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
        k = self.depth(q, k)
        # Through the LlamaIndex retriever: the one retrieval path, seen by LlamaIndex callbacks and events.
        from rag.integrations.llamaindex import PapersRetriever

        retrieval = PapersRetriever(self.retriever, k=k, paper_ids=paper_ids).retrieve_papers(q)
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
            from rag.llm import LLMUnavailable, answer_messages, complete

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
            from rag.llm import LLMUnavailable, answer_messages, stream_answer

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
                    yield from _word_events(answer.answer)
            except LLMUnavailable as e:
                if parts:
                    yield StreamEvent("reset")
                answer = self._fallback(q, retrieval, e.reason)
                yield from _word_events(answer.answer)
        else:
            answer = self._extractive(q, retrieval)
            yield from _word_events(answer.answer)
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

    def query_engine(self, **options: object) -> PapersQueryEngine:
        """This assistant as a LlamaIndex query engine (options: k, paper_ids, mode, streaming)."""
        from rag.integrations.llamaindex import PapersQueryEngine

        return PapersQueryEngine(assistant=self, **options)

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


_CITE_NUM_RE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def renumber_citations(text: str) -> tuple[str, dict[int, int]]:
    """Renumber [n] markers 1, 2, ... in order of first use, so an answer's citations read in order."""
    mapping: dict[int, int] = {}
    for m in _CITE_NUM_RE.finditer(text):
        for x in m.group(1).split(","):
            mapping.setdefault(int(x), len(mapping) + 1)
    return _apply_renumber(text, mapping), mapping


def _apply_renumber(text: str, mapping: dict[int, int]) -> str:
    return _CITE_NUM_RE.sub(lambda m: "[" + ", ".join(str(mapping.get(int(x), int(x)))
                                                      for x in m.group(1).split(",")) + "]", text)


def _renumber_repair(repaired: str, mapping: dict[int, int], papers: list[PaperHit]) -> str:
    """A repair note in the answer's final numbering; a source the answer no longer cites is named by label."""
    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if n in mapping:
            return f"[{mapping[n]}]"
        return papers[n - 1].label if 0 < n <= len(papers) else m.group(0)

    return re.sub(r"\[(\d+)\]", one, repaired)


def _best_sentence(paper: PaperHit) -> str:
    best = max(paper.chunks, key=lambda c: c.cosine, default=None)
    return best.text if best else ""


def _word_events(text: str) -> Iterator[StreamEvent]:
    """Stream a finished text word by word, so every mode reaches a UI the same way."""
    for piece in re.findall(r"\S+\s*|\s+", text):
        yield StreamEvent("token", piece)


def render_extractive(question: str, retrieval: Retrieval, draft: Draft, policy: str) -> Answer:
    """Number the quoted papers, write the answer text, and run the citation check on it."""
    retrieved = [Retrieved(p.paper_id, p.label, p.score, p.source, p.position, **paper_fields(p))
                 for p in retrieval.papers]
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
                                  **citation_fields(p, " … ".join(quoted))))
    # The citation check runs on extractive answers too: quotes must be verbatim and cite their paper.
    sources = sources_for(order)
    checked = check_answer("\n".join(lines), sources, policy)
    return Answer(question=question, answer=checked.text, abstained=checked.abstained, mode="extractive",
                  citations=citations, retrieved=retrieved, checks=checked.checks,
                  unsupported=[{"sentence": c.sentence, "reason": c.reason} for c in checked.unsupported],
                  removed_citations=checked.removed_citations)


def outside_scope(assistant: Assistant, question: str, paper_ids: list[str]) -> list[str]:
    """Names in a question that the whole index has, but only in papers outside `paper_ids`.

    An answer restricted to some papers abstains with "the abstracts don't say anything about X" even when X is
    indexed; the UI uses this to say that X is outside the selection instead. Checked against the unscoped
    index: a retrieved paper outside the scope whose label the question names, or whose abstract contains a
    specific term of the question that no paper in the scope contains.
    """
    from rag.extractive import mentions

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
