"""The answer types that quote passages as they rank: a question about one named paper (its definition, its
contribution, its two likeliest sentences), several named papers (each on the asked aspect), every paper that
fits (PAPERS), and otherwise the best paper and each further paper likely relevant (`cited`)."""

from __future__ import annotations

from rag.answer import abstain
from rag.answer.draft import MAX_SENTENCES, Draft, Quote, abstain_with
from rag.answer.evidence import Candidate, Constants, defines, paper_probabilities
from rag.answer.intent import Intent, Shape
from rag.answer.passages import best_is_full_text
from rag.answer.question import specific_tokens
from rag.answer.retrieve import PaperHit
from rag.answer.types.context import Context
from rag.answer.types.words import present


def best_of(cands: list[Candidate], paper: PaperHit) -> Quote | None:
    own = [x for x in cands if x.paper is paper]
    return Quote(paper, own[0].sentence) if own else None


def about_paper(intent: Intent, cands: list[Candidate], paper: PaperHit, name: str, c: Constants) -> Draft:
    """A question about one named paper: its definition, its contribution, or its best evidence."""
    own = [x for x in cands if x.paper is paper]
    if intent.shape is Shape.DEFINITION and name:
        defining = [x for x in own if defines(x.sentence, name)]
        if defining:
            return Draft([Quote(paper, defining[0].sentence)])
    # A question about a named paper gets its two likeliest sentences (a lookup only its best): the second is
    # often the one that states the asked detail, and both are that paper's own words.
    n = 1 if intent.lookup else MAX_SENTENCES
    quotes = [Quote(paper, x.sentence) for x in own[:n]]
    return Draft(in_order(quotes, cands), best=quotes[0])


def in_order(quotes: list[Quote], cands: list[Candidate]) -> list[Quote]:
    """Quotes of one paper read in the abstract's order."""
    pos = {(x.paper.paper_id, x.sentence): x.index for x in cands}
    return sorted(quotes, key=lambda q: (q.paper.paper_id != quotes[0].paper.paper_id,
                                         pos.get((q.paper.paper_id, q.sentence), 0)))


def cited(intent: Intent, cands: list[Candidate], papers: list[PaperHit], c: Constants) -> Draft:
    """The lead paper (the retriever's first, or the one its evidence favours when the fit chose that), then
    every further paper more likely relevant than not, in retrieval order, each with its best sentence (two
    when both are likely evidence). The retriever's first paper is always among them, so the answer never
    cites a relevant paper less often than citing the top result would."""
    probs = paper_probabilities(cands, c)
    ranked = [p for p in papers if p.paper_id in probs]
    lead = max(ranked, key=lambda p: probs[p.paper_id]) if c.primary_by_evidence else ranked[0]
    chosen = [lead] + [p for p in ranked if p is not lead and (p is ranked[0] or probs[p.paper_id] >= c.cite_paper_at)]
    if intent.lookup or intent.number is not None:
        chosen = chosen[:1] + [p for p in chosen[1:] if p is ranked[0] or probs[p.paper_id] >= c.cite_paper_at]
    quotes: list[Quote] = []
    for p in chosen:
        own = [x for x in cands if x.paper is p]
        quotes.append(Quote(p, own[0].sentence))
        if len(own) > 1 and own[1].prob >= c.second_sentence_at and not intent.lookup:
            quotes.append(Quote(p, own[1].sentence))
    return Draft(quotes)


def multi(intent: Intent, cands: list[Candidate], c: Constants) -> Draft:
    """Every retrieved paper whose evidence passes, not just the first: likely relevant (the fitted list
    threshold), or holding every name the question lists by ("which papers use GRPO?")."""
    probs = paper_probabilities(cands, c)
    best_per_paper: dict[str, Candidate] = {}
    for x in cands:
        best_per_paper.setdefault(x.paper.paper_id, x)
    key_terms = specific_tokens(intent.text)  # names, however common: they are the list's criterion
    quotes = []
    for x in sorted(best_per_paper.values(), key=lambda x: x.rank):
        has_key = bool(key_terms) and all(present(t, [x.paper]) for t in key_terms)
        if x.rank == 0 or has_key or probs[x.paper.paper_id] >= c.multi_paper_at:
            quotes.append(Quote(x.paper, x.sentence))
    summary = "Matching papers" if len(quotes) > 1 else None
    return Draft(quotes, summary=summary)


def read_full_text(ctx: Context) -> bool:
    """The answer's best passage is a full text's paragraph the reader read (its fitted threshold decides)."""
    return best_is_full_text(ctx.passages)


def answer(ctx: Context, checked: bool = True) -> Draft:
    """The quotes of every kind of question but a figure or names: after the quoting checks (when no paper is
    named, and `checked`), each named paper on the asked aspect, the one named paper's answer, every paper that
    fits, or the best paper and those likely relevant."""
    intent, focus, cands = ctx.intent, ctx.focus, ctx.cands
    if not focus and checked:
        reason = abstain.first_reason(ctx, abstain.QUOTING)
        if reason is not None:
            return abstain_with(reason, cands)
    if len(focus) >= 2 and not intent.every_paper:
        # Each named paper on the asked aspect: its two likeliest sentences, in its abstract's order.
        quotes = []
        for p in focus:
            own = [Quote(p, x.sentence) for x in (ctx.aspect or cands) if x.paper is p][:MAX_SENTENCES]
            quotes += in_order(own, cands) if own else []
        return Draft(quotes, best=best_of(cands, focus[0]))
    if focus:
        return about_paper(intent, cands, focus[0], ctx.names.get(focus[0].paper_id, ""), ctx.c)
    if intent.every_paper:
        return multi(intent, cands, ctx.c)
    return cited(intent, cands, ctx.papers, ctx.c)
