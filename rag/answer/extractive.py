"""The default answerer: no LLM, only passages quoted from the retrieved papers, each with its citation.

The answer is drawn in named steps:
1. `prepare`: what the question asks (rag/answer/intent.py), which indexed papers it names (those narrow the
   answer to them), every sentence of the pool scored by the evidence scorer (rag/answer/evidence.py: fitted
   probabilities that a sentence is evidence and that a paper is relevant), and the best passages read by the
   reader (rag/answer/passages.py, rag/read/model.py), which re-ranks them;
2. the checks every question gets (rag/answer/abstain.py: a term the corpus never uses, no passage the reader
   finds likely enough), each a reason to abstain with a fixed sentence that names the closest papers;
3. the answer type of what was asked (rag/answer/types/): a figure, names, or the passages as they rank (one
   named paper, several, every paper that fits, or the best paper and those likely relevant).
The direct-answer line is written from the chosen quotes afterwards (rag/answer/lead.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rag import prompts
from rag.answer import abstain, types
from rag.answer.calibration import AnswerConstants, answer_constants
from rag.answer.draft import Draft, abstain_with, no_match
from rag.answer.evidence import Candidate, Constants, Vocabulary, candidates, current_constants, question_terms
from rag.answer.intent import Intent, Shape, read_intent
from rag.answer.passages import PassageRead, ReaderRun
from rag.answer.passages import read as read_passages
from rag.answer.question import capitals
from rag.answer.retrieve import PaperHit, Retrieval
from rag.answer.types.context import Context
from rag.answer.types.words import names_few, present
from rag.corpus.labels import label_keys, mentions, name_used
from rag.text import LABEL_WORD_RE, stem, terms, whole_word


@dataclass
class Prepared:
    """A question read against its retrieved papers: its shape, the papers it names, the pool of papers
    the answer is drawn from, and every pool sentence scored as evidence."""

    intent: Intent
    focus: list[PaperHit]
    focus_terms: set[str]
    names: dict[str, str]
    pool: list[PaperHit]
    cands: list[Candidate]
    passages: list[PassageRead] = field(default_factory=list)  # best reading first (rag/answer/passages.py)


def prepare(  # noqa: PLR0913 - the options the fitting scripts pass by keyword (eval/fit_*.py)
        question: str, retrieval: Retrieval, vocab: Vocabulary, constants: Constants,
        embed: Callable[[list[str]], list[list[float]]] | None = None,
        intent: Intent | None = None, named: list[str] | None = None,
        reader: ReaderRun | None = None, answer: AnswerConstants | None = None) -> Prepared:
    """Shape, named papers and scored sentences of a question (shared by the answerer and the fitting script).

    `named`: ids of the papers the caller knows the question is about (a chat turn that refers to them, or the
    papers it names found over the whole index), in the order named."""
    c = constants
    intent = intent or read_intent(question, lambda t: vocab.common(t, c))
    papers = retrieval.papers
    focus = [p for p in papers if mentions(question, p.label) and names_few(name_used(question, p.label), vocab)]
    if named:
        by_id = {p.paper_id: p for p in papers}
        focus = [by_id[i] for i in named if i in by_id] + [p for p in focus if p.paper_id not in named]
    focus_terms = {stem(w.lower()) for p in focus for k in label_keys(p.label) for w in LABEL_WORD_RE.findall(k)}
    if not focus and intent.specific and not intent.every_paper and intent.shape is not Shape.CLAIM:
        # A name the question uses ("PerturbRM") narrows the answer to the papers that contain it. A claim's
        # names are its subject, which relevant and irrelevant papers share alike (measured on SciFact: narrowing
        # claims this way cited no more relevant papers and 7% more papers in all).
        caps = set(capitals(question))
        focus = [p for p in papers if all(present(t, [p], t in caps) for t in intent.specific)]
        if len(focus) > 2:
            focus = []  # a term many retrieved papers share narrows nothing
    names = {p.paper_id: name_used(question, p.label) for p in focus}
    if intent.compares and not intent.every_paper:
        # "Compare A and B" where B is not a label: the first retrieved paper that uses the name B.
        for t in intent.specific:
            if any(mentions(t, p.label) for p in focus):
                continue
            holder = next((p for p in papers if present(t, [p])), None)
            if holder is not None and holder not in focus:
                focus.append(holder)
                names[holder.paper_id] = t
    pool = focus if focus and not intent.every_paper else papers
    qt = question_terms(question, pool, vocab, intent.shape is Shape.DEFINITION,
                        {k: v for k, v in names.items() if v}, intent.shape is Shape.CONTRIBUTION,
                        intent.shape is Shape.LIMITATION)
    cands = candidates(question, pool, vocab, qt, c, embed, retrieval.query_vector) if pool else []
    cands.sort(key=lambda x: x.prob, reverse=True)
    run = reader or ReaderRun(None)
    passages = read_passages(question, cands, run.reader, run.top_n, (answer or answer_constants()).passage_weights)
    return Prepared(intent, focus, focus_terms, names, pool, cands, passages)


def draft_answer(  # noqa: PLR0913 - the options the service and the fitting scripts pass by keyword
        question: str, retrieval: Retrieval, intent: Intent | None = None,
        vocab: Vocabulary | None = None, embed: Callable[[list[str]], list[list[float]]] | None = None,
        constants: Constants | None = None, prepared: Prepared | None = None,
        named: list[str] | None = None, reader: ReaderRun | None = None,
        answer: AnswerConstants | None = None) -> Draft:
    """Choose the quotes that answer the question, or the reason to abstain (the steps of the module docstring;
    `prepared`: the question already read and scored, as the fitting script reuses it across constants)."""
    c = constants or current_constants()
    vocab = vocab or Vocabulary(None)
    papers = retrieval.papers
    if not papers:
        return Draft([], prompts.ABSTAIN_NO_PAPERS)
    ac = answer or answer_constants()
    pr = prepared or prepare(question, retrieval, vocab, c, embed, intent, named, reader, ac)
    if not pr.cands:
        return Draft([], no_match(pr.pool))
    aspect = None
    if len(pr.focus) >= 2 and not pr.intent.every_paper:
        aspect = _aspect_candidates(question, pr.focus, pr.names, pr.intent, vocab, c, embed, retrieval)
    ctx = Context(question, pr.intent, pr.focus, pr.focus_terms, pr.names, pr.pool, pr.cands,
                  papers, vocab, c, ac, aspect, pr.passages)
    reason = abstain.first_reason(ctx, abstain.EVERY)
    draft = abstain_with(reason, ctx.cands) if reason is not None else types.answer(ctx)
    draft.intent = pr.intent
    draft.passages = pr.passages
    return draft


def _aspect_candidates(question: str, focus: list[PaperHit], names: dict[str, str], intent: Intent,
                       vocab: Vocabulary, c: Constants, embed: Callable[[list[str]], list[list[float]]] | None,
                       retrieval: Retrieval) -> list[Candidate] | None:
    """The named papers' sentences scored on what the question asks of them, the papers' names left out.

    With two or more papers named ("which of RecMem and CIB is trained with an RL objective?") the names are the
    question's rarest words, so each paper's best-scored sentences are the ones that name it ("We propose
    RecMem, ...") rather than the ones about the asked aspect. None when nothing but the names is asked."""
    aspect = question
    for p in focus:
        # longest first, in a fixed order: "SLG" taken out before "SLG Search" would leave "Search" behind, and a
        # set's order changes with PYTHONHASHSEED (answers differed run to run)
        for name in sorted({names.get(p.paper_id, ""), *label_keys(p.label)}, key=lambda n: (-len(n), n)):
            if name:
                aspect = whole_word(name, ignore_case=True).sub(" ", aspect)
    if not terms(aspect):
        return None
    qt = question_terms(aspect, focus, vocab, intent.shape is Shape.DEFINITION, {},
                        intent.shape is Shape.CONTRIBUTION, intent.shape is Shape.LIMITATION)
    out = candidates(aspect, focus, vocab, qt, c, embed, retrieval.query_vector)
    out.sort(key=lambda x: x.prob, reverse=True)
    return out


def evidence_for(question: str, retrieval: Retrieval, vocab: Vocabulary, constants: Constants | None = None,
                 embed: Callable[[list[str]], list[list[float]]] | None = None) -> list[Candidate]:
    """Every sentence of the retrieved papers scored as evidence for a query (citation lookup)."""
    c = constants or current_constants()
    qt = question_terms(question, retrieval.papers, vocab, False, {})
    return candidates(question, retrieval.papers, vocab, qt, c, embed, retrieval.query_vector)
