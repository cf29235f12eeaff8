"""The one assistant every front end holds: retrieve -> answer -> check citations, and citation lookup.

The CLI, the web UI, the MCP server, the OpenAI-compatible endpoint and the LlamaIndex components are thin
clients of `Assistant`: they open it through `AssistantHolder` (or `open_assistant`), ask through a
`Conversation` (one per chat; a single question is a chat of one turn), read streams through `StreamView`, and
send records made by the one serialiser, `rag.schema.record`; every failure is a `rag.errors.PapersError`.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rag import prompts
from rag.answer.cite import check_answer
from rag.answer.conversation import Resolution, TurnRecord, acceptable_rewrite, resolve
from rag.answer.draft import Draft
from rag.answer.evidence import Vocabulary, current_constants, vocabulary_for
from rag.answer.extractive import draft_answer, prepare
from rag.answer.llm import LLMUnavailable, answer_messages, check_llm_settings, complete, llm_rewrite, stream_answer
from rag.answer.lookup import lookup_rows
from rag.answer.lookup import strength as lookup_strength
from rag.answer.naming import named_papers
from rag.answer.passages import ReaderRun, reader_run
from rag.answer.question import clean_question, is_list_question
from rag.answer.render import render_extractive, render_generated, sources_for, word_events
from rag.answer.retrieve import Retrieval, Retriever
from rag.corpus.references import paper_fields, reference_line
from rag.corpus.sections import abstract_of
from rag.errors import PapersError, QuestionError
from rag.index.store import CatalogEntry
from rag.schema import Answer, Grid, GridRow, LookupHit, PaperRecord, SentenceCheck, StreamEvent
from rag.settings import Settings

SENTENCE_CACHE = 20_000  # sentence vectors kept for the citation check (about 30 MB)


class Assistant:
    """One per process: holds the retriever (store, models, BM25) and answers questions."""

    def __init__(self, settings: Settings, retriever: Retriever | None = None) -> None:
        check_llm_settings(settings)
        self.settings = settings
        self.retriever = retriever or Retriever(settings)
        self._vectors: dict[str, list[float]] = {}
        self._prefetcher: ThreadPoolExecutor | None = None
        self._reader: ReaderRun | None = None

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

    def _start(self, question: str, k: int | None, paper_ids: list[str] | None, mode: str | None,
               within: list[str] | None = None) -> tuple[str, bool, Retrieval, float, float]:
        """Validate, pick the mode, retrieve; generation needs every chunk of the retrieved papers.

        `paper_ids` is the user's scope (checked: unknown ids are refused); `within` keeps retrieval to the
        papers a chat turn refers to (inside the scope, when both are given)."""
        t0 = time.perf_counter()
        q = clean_question(question, self.settings.max_question_chars)
        generate = self.resolve_mode(mode) == "llm"
        self.check_paper_ids(paper_ids)
        restrict = paper_ids
        if within:
            inside = [p for p in within if not paper_ids or p in paper_ids]
            restrict = inside or paper_ids
        retrieval = self.retriever.retrieve(q, k=self.depth(q, k), paper_ids=restrict)
        generate = generate and bool(retrieval.papers)
        if generate:
            self.retriever.complete(retrieval)
        return q, generate, retrieval, t0, time.perf_counter()

    def check_paper_ids(self, paper_ids: list[str] | None) -> None:
        """Refuse a scope naming papers the index does not have (a typo would otherwise answer from nothing)."""
        if not paper_ids:
            return
        known = self.retriever.local_index.papers if self.retriever.local_index is not None else {}
        unknown = [p for p in dict.fromkeys(paper_ids) if p not in known]
        if unknown:
            shown = ", ".join(repr(p) for p in unknown[:5]) + (" …" if len(unknown) > 5 else "")
            raise QuestionError(prompts.UNKNOWN_PAPERS.format(ids=shown))

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
            mode: str | None = None, within: list[str] | None = None) -> Answer:
        """Answer a question from the indexed abstracts, with checked citations (no streaming)."""
        answer = None
        for event in self.stream(question, k, paper_ids, mode, within, generate_stream=False):
            if event.kind == "final":
                answer = event.answer
        assert answer is not None
        return answer

    def stream(self, question: str, k: int | None = None, paper_ids: list[str] | None = None,
               mode: str | None = None, within: list[str] | None = None,
               generate_stream: bool = True, emphasis: tuple[str, ...] = ()) -> Iterator[StreamEvent]:
        """Answer as a stream of events; the citation check runs when the text is complete (`ask` asks the LLM
        for the whole reply at once: `generate_stream=False`).

        With a scope (`paper_ids`), a question that names indexed papers outside it gets "X is indexed but outside
        the selected papers" instead of an in-scope paper's quote, and a scoped abstention says where the evidence
        is when it is outside the scope."""
        q, generate, retrieval, t0, t1 = self._start(question, k, paper_ids, mode, within)
        outside = self._named_outside(q, paper_ids)
        if outside and not any(p in (paper_ids or ()) for p in self.named(q)):
            answer = self._out_of_scope(q, retrieval, outside)
            yield from word_events(answer.answer)
            yield StreamEvent("final", answer=self._timed(answer, retrieval, t0, t1))
            return
        if generate and not generate_stream:
            prefetch = self._prefetch(retrieval)
            try:
                raw = complete(self.settings, answer_messages(q, retrieval.papers, self.settings,
                                                              self._read_passages(q, retrieval)))
                answer = self._finish_llm(q, retrieval, raw, prefetch)
            except LLMUnavailable as e:
                answer = self._fallback(q, retrieval, e.reason)
        elif generate:
            parts: list[str] = []
            prefetch = self._prefetch(retrieval)
            try:
                messages = answer_messages(q, retrieval.papers, self.settings, self._read_passages(q, retrieval))
                for delta in stream_answer(self.settings, messages):
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
            answer = self._extractive(q, retrieval, emphasis)
            if paper_ids and answer.abstained:
                answer = self._evidence_outside(q, retrieval, paper_ids) or answer
            yield from word_events(answer.answer)
        if outside:  # named papers both inside and outside the scope: answered from the inside ones
            answer.outside_scope = self._labels(outside)
            names = ", ".join(answer.outside_scope)
            answer.notice = " ".join(x for x in (answer.notice, (prompts.OUT_OF_SCOPE_ONE if len(outside) == 1 else
                                                 prompts.OUT_OF_SCOPE_MANY).format(names=names)) if x)
        yield StreamEvent("final", answer=self._timed(answer, retrieval, t0, t1))

    # --- scope ----------------------------------------------------------------------------------------

    def _labels(self, paper_ids: list[str]) -> list[str]:
        """The labels of indexed papers (ids the local index gave)."""
        local = self.retriever.local_index
        papers = local.papers if local is not None else {}
        return [papers[p].label for p in paper_ids]

    def named(self, question: str) -> list[str]:
        """Indexed papers the question names (over the whole index)."""
        return named_papers(question, self.retriever.local_index, self.vocabulary())

    def _named_outside(self, question: str, paper_ids: list[str] | None) -> list[str]:
        if not paper_ids:
            return []
        return [p for p in self.named(question) if p not in paper_ids]

    def _out_of_scope(self, question: str, retrieval: Retrieval, outside: list[str], named: bool = True) -> Answer:
        """The abstention for a question about papers outside the scope (`named` by it, or holding the only
        evidence for it), naming them and the closest in-scope papers."""
        labels = self._labels(outside)
        one, many = ((prompts.OUT_OF_SCOPE_ONE, prompts.OUT_OF_SCOPE_MANY) if named
                     else (prompts.EVIDENCE_OUTSIDE_ONE, prompts.EVIDENCE_OUTSIDE_MANY))
        template = one if len(labels) == 1 else many
        answer = render_extractive(question, retrieval, Draft([], template.format(names=", ".join(labels))),
                                   self.settings.unsupported)
        answer.answer += _closest_in_scope(retrieval)
        answer.outside_scope = labels
        return answer

    def _evidence_outside(self, question: str, scoped: Retrieval, paper_ids: list[str]) -> Answer | None:
        """A scoped abstention whose answer is in papers outside the scope: say which ones."""
        full = self.retriever.complete(self.retriever.retrieve(question, k=self.depth(question)))
        draft = draft_answer(question, full, vocab=self.vocabulary(), reader=self.reader())
        found = list(dict.fromkeys(q.paper.paper_id for q in draft.quotes if q.paper.paper_id not in paper_ids))
        if draft.abstention or not found:
            return None
        return self._out_of_scope(question, scoped, found, named=False)

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

    def _read_passages(self, question: str, retrieval: Retrieval) -> list[tuple[str, str, str]]:
        """(paper id, section, paragraph) of the passages the reader ranks best for the question, best first:
        what an LLM is given of a full text too long for its context window (abstracts are given whole)."""
        if not any(p.layout for p in retrieval.papers):
            return []
        prepared = prepare(question, retrieval, self.vocabulary(), current_constants(), reader=self.reader(),
                           named=self.named(question))
        return [(x.paper.paper_id, x.context, x.text) for x in prepared.passages if x.segment >= 0]

    def reader(self) -> ReaderRun:
        """The reader answers use (rag/read/model.py), loaded on first use and shared by every session."""
        if self._reader is None:
            s = self.settings
            self._reader = reader_run(str(s.reader or ""), s.reader_passages, s.reader_threads)
        return self._reader

    def vocabulary(self) -> Vocabulary:
        """Word statistics of the current index (rarity, common vocabulary) for the evidence scorer."""
        return vocabulary_for(self.retriever.local_index)

    def _extractive(self, question: str, retrieval: Retrieval, emphasis: tuple[str, ...] = ()) -> Answer:
        # Every sentence of the retrieved papers is a candidate: their vectors come from the local index.
        self.retriever.complete(retrieval)
        draft = draft_answer(question, retrieval, vocab=self.vocabulary(), named=self.named(question),
                             reader=self.reader())
        return render_extractive(question, retrieval, draft, self.settings.unsupported, emphasis)

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
        return render_generated(question, retrieval, checked, raw, check_ms)

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

    def cite(self, query: str, k: int | None = None, paper_ids: list[str] | None = None) -> list[LookupHit]:
        """Citation lookup: papers matching a method name, claim or topic, best first, with the best sentence and
        how far a reviewer can rely on it (rag/answer/lookup.py: a model fitted on labelled lookups and
        off-topic queries; strong hits were the paper asked for at least 9 times in 10 on held-out folds).
        `paper_ids` restricts the lookup to those papers: the UI's evidence panel words an answer's retrieved
        papers with this same scorer."""
        q = clean_question(query, self.settings.max_question_chars)
        self.check_paper_ids(paper_ids)
        retrieval = self.retriever.complete(self.retriever.retrieve(q, k=k, paper_ids=paper_ids))
        # The same evidence scorer as the answerer gives each paper's best sentence; a query mostly in words no
        # indexed chunk uses meets its closest sentences by chance (`ask` abstains on it): no hit is a match.
        rows, by_chance = lookup_rows(q, retrieval, self.vocabulary())
        return [LookupHit(r.paper.paper_id, r.paper.label, r.paper.source, r.paper.position, round(r.paper.score, 4),
                          r.sentence, r.paper.reference, lookup_strength(r.prob, by_chance),
                          round(r.features["evidence"], 4), round(r.prob, 4), **paper_fields(r.paper))
                for r in rows]

    def grid(self, columns: list[str] | None = None, paper_ids: list[str] | None = None,
             lookup: str | None = None, k: int | None = None) -> Grid:
        """The papers grid (rag/answer/grid.py): chosen papers as rows (all, `paper_ids`, or the matching hits of
        `lookup`), columns the default ones or typed questions, every cell a checked quote or "not stated"."""
        from rag.answer.grid import COLUMNS, GridPaper, column_key, default_cell, paper_sentences, typed_cells

        t0 = time.perf_counter()
        self.check_paper_ids(paper_ids)
        names = [c.strip() for c in (columns or list(COLUMNS)) if c and c.strip()]
        if not names:
            raise QuestionError("a grid needs at least one column")
        typed = [clean_question(c, self.settings.max_question_chars) if column_key(c) is None else c for c in names]
        if lookup:
            hits = [h for h in self.cite(lookup, k) if h.strength != "none"]
            ids = [h.paper_id for h in hits if not paper_ids or h.paper_id in paper_ids]
        else:
            ids = list(dict.fromkeys(paper_ids)) if paper_ids else [e.paper_id for e in self.papers()]
        entries = [e for e in (self.paper(i) for i in ids) if e is not None]
        rows = [GridPaper(e.paper_id, e.label, e.title, paper_sentences(e.text)) for e in entries]
        by_column = []
        for name in typed:
            key = column_key(name)
            if key is not None:
                by_column.append([default_cell(key, r, self.settings.unsupported) for r in rows])
                continue
            retrieval = self.retriever.complete(self.retriever.retrieve(name, k=len(ids), paper_ids=ids)) \
                if ids else Retrieval(name, [], None, {}, "grid")
            by_column.append(typed_cells(name, rows, retrieval, self.vocabulary(), self._embed_cached,
                                         self.settings.unsupported))
        keys = [column_key(n) or n for n in typed]
        out = Grid(keys, [COLUMNS.get(k, k) for k in keys], lookup=lookup)
        hits_of = {e.paper_id: e for e in entries}
        for i, r in enumerate(rows):
            e = hits_of[r.paper_id]
            out.rows.append(GridRow(e.paper_id, e.label, e.title, e.year, e.url, reference_line(e),
                                    [cells[i] for cells in by_column]))
        out.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        return out

    def papers(self) -> list[CatalogEntry]:
        """Every indexed paper, in source order (from the index version questions are answered from)."""
        local = self.retriever.local_index
        entries = list(local.papers.values()) if local is not None else []
        return sorted(entries, key=lambda e: (e.source, e.position))

    def paper(self, paper_id: str) -> CatalogEntry | None:
        """The indexed paper with this id (from the index version answers come from; the catalog otherwise)."""
        local = self.retriever.local_index
        if local is not None:
            return local.papers.get(paper_id)
        return self.retriever.store.catalog().get(paper_id)

    def conversation(self) -> Conversation:
        """A new chat with this assistant (one per user session)."""
        return Conversation(self)


def paper_record(entry: CatalogEntry) -> PaperRecord:
    """An indexed paper as every front end shows it (its abstract: a PDF's text is the whole paper)."""
    return PaperRecord(entry.paper_id, entry.label, entry.source, entry.position, entry.title, entry.authors,
                       entry.year, entry.venue, entry.doi, entry.arxiv, entry.url, entry.key, entry.collection,
                       bool(entry.layout), abstract_of(entry.text, entry.layout))


def open_assistant(settings: Settings) -> Assistant:
    """The one way every front end opens the assistant; failures are PapersErrors with the user's message."""
    return Assistant(settings)


class AssistantHolder:
    """A long-running front end's assistant (UI, MCP, /v1), opened on first use, so a server starts (and says
    why it cannot answer) before the first `papers ingest`; a failure is raised on each call and retried on the
    next."""

    def __init__(self, settings: Settings, assistant: Assistant | None = None) -> None:
        self.settings = settings
        self._assistant = assistant
        self._lock = threading.Lock()

    def get(self) -> Assistant:
        with self._lock:
            if self._assistant is None:
                self._assistant = open_assistant(self.settings)
            return self._assistant

    def warm_up_in_background(self) -> None:
        """Load the index and models while the server starts, so the first call does not pay for it."""

        def work() -> None:
            with contextlib.suppress(PapersError):  # reported by the first call
                self.get().retriever.warm_up()

        threading.Thread(target=work, name="warm-up", daemon=True).start()


class StreamView:
    """The one consumer of `Assistant.stream` events for every front end.

    `feed(event)` returns the text to append for front ends that can only append (a terminal, server-sent
    events, a LlamaIndex token generator): a `reset` (the LLM failed mid-answer, or its draft gave way to the
    extractive answer) appends a line saying so. `text` is the answer as a front end that redraws (the UI) shows
    it now: a reset withdraws the draft. `answer` is the checked Answer once the stream ends.
    """

    def __init__(self) -> None:
        self.text = ""
        self.appended = ""
        self.answer: Answer | None = None
        self.resets = 0

    def feed(self, event: StreamEvent) -> str:
        if event.kind == "token":
            self.text += event.text
            self.appended += event.text
            return event.text
        if event.kind == "reset":
            self.text = ""
            self.resets += 1
            note = prompts.STREAM_RESET if not event.text else f"\n\n[{event.text}]\n\n"
            self.appended += note
            return note
        if event.kind == "final":
            self.answer = event.answer
        return ""


def _closest_in_scope(retrieval: Retrieval) -> str:
    """'Closest papers in the scope' lines for an out-of-scope abstention."""
    if not retrieval.papers:
        return ""
    lines = [f"- {p.label}" + (f" — {p.title}" if p.title and p.title != p.label else "") for p in retrieval.papers[:3]]
    return "\n" + prompts.CLOSEST_IN_SCOPE + "\n" + "\n".join(lines)


# --- conversations -------------------------------------------------------------------------------------------

MAX_HISTORY_TURNS = 6  # turns a chat keeps for resolving references (and sends an LLM rewrite as context)


@dataclass
class Turn:
    """One answered chat turn: the question as typed, what was searched, the answer, and the papers it was
    about (what a later "it" or "they" can mean)."""

    question: str
    searched: str
    answer: Answer
    referents: list[str]

    def record(self) -> TurnRecord:
        return TurnRecord(self.question, self.searched, list(self.referents))


class Conversation:
    """One user's chat (never shared between sessions): each turn is resolved against the earlier ones
    (rag/answer/conversation.py), then answered by the assistant. The UI, `papers chat`, `papers ask
    --conversation`, the `/v1` endpoint, MCP and the eval all ask through this class."""

    def __init__(self, assistant: Assistant) -> None:
        self.assistant = assistant
        self.turns: list[Turn] = []
        self.history: list[TurnRecord] = []  # earlier turns known only as records (a /v1 client's messages)

    def records(self) -> list[TurnRecord]:
        return (self.history + [t.record() for t in self.turns])[-MAX_HISTORY_TURNS:]

    def _named(self, text: str) -> list[str]:
        return self.assistant.named(text)

    def _label(self, paper_id: str) -> str:
        local = self.assistant.retriever.local_index
        return local.papers[paper_id].label if local is not None and paper_id in local.papers else paper_id

    def _describes(self, paper_id: str, noun: str) -> bool:
        local = self.assistant.retriever.local_index
        entry = local.papers.get(paper_id) if local is not None else None
        return entry is not None and bool(re.search(rf"\b{re.escape(noun)}", entry.text + " " + entry.label, re.I))

    def resolve(self, question: str, use_llm: bool = False) -> tuple[Resolution, str | None]:
        """How this turn is asked, and a notice when the LLM's rewrite could not be used."""
        history = self.records()
        res = resolve(question, history, self._named, self._label, self._describes)
        if not (use_llm and res.depends):
            return res, None
        try:
            text = llm_rewrite(self.assistant.settings, question, history, [t.answer.answer for t in self.turns],
                               self._label)
        except LLMUnavailable as e:
            return res, f"LLM not used: {e.reason}; the follow-up was resolved without it"
        if acceptable_rewrite(text, question, history, self._named, 3 * len(question) + 200, res.referents):
            return Resolution(text, res.papers, res.referents, "llm"), None
        return res, None

    def ask(self, question: str, **kwargs: Any) -> Answer:
        answer = None
        for event in self.stream(question, **kwargs):
            if event.kind == "final":
                answer = event.answer
        assert answer is not None
        return answer

    def stream(self, question: str, k: int | None = None, paper_ids: list[str] | None = None,
               mode: str | None = None) -> Iterator[StreamEvent]:
        """Resolve the turn, then stream its answer; the turn is remembered when it completes."""
        q = clean_question(question, self.assistant.settings.max_question_chars)
        use_llm = self.assistant.resolve_mode(mode) == "llm"
        res, notice = self.resolve(q, use_llm)
        turn_mode = "extractive" if notice else mode  # the LLM just failed: do not wait for it twice
        for event in self.assistant.stream(res.question, k=k, paper_ids=paper_ids, mode=turn_mode, within=res.papers,
                                           emphasis=tuple(res.emphasis)):
            if event.kind == "final" and event.answer is not None:
                a = event.answer
                a.question = q
                a.rewritten = res.question if res.question != q else None
                if notice:
                    a.notice = " ".join(x.rstrip(".") + "." for x in (a.notice, notice) if x)
                self.turns.append(Turn(q, res.question, a, self._referents(res, a)))
                del self.turns[:-MAX_HISTORY_TURNS]
            yield event

    def _referents(self, res: Resolution, answer: Answer) -> list[str]:
        """What this turn was about: the papers it referred to or named, else the papers its answer cites."""
        if res.referents:
            return list(res.referents)
        if answer.outside_scope or answer.abstained:
            return []
        return [c.paper_id for c in answer.citations]

    def remember(self, question: str, reply: str) -> None:
        """An earlier turn known only by its text (a chat client sends the history back): resolved as it would
        have been, its papers read from the names in the question and in the reply."""
        history = self.records()
        res = resolve(question, history, self._named, self._label, self._describes)
        referents = res.referents or self._named(reply)[:4]
        self.history.append(TurnRecord(question, res.question, referents))
        del self.history[:-MAX_HISTORY_TURNS]

    def clear(self) -> None:
        self.turns.clear()
        self.history.clear()
