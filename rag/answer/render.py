"""Answer text from what was chosen: an extractive draft numbered and quoted, a generated answer's citations
renumbered in order of use, and any finished text as stream events."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rag import prompts
from rag.answer.cite import CheckResult, SourceText, check_answer, cited_numbers, outside_quotes
from rag.answer.draft import Draft
from rag.answer.lead import lead_for
from rag.answer.retrieve import PaperHit, Retrieval
from rag.corpus.references import citation_fields, paper_fields
from rag.schema import Answer, Citation, Retrieved, StreamEvent
from rag.text import CITATION_RE, SINGLE_CITATION_RE, sentences_of


def sources_for(papers: list[PaperHit]) -> list[SourceText]:
    """Numbered sources ([1] = first retrieved paper) with every sentence of their abstracts."""
    return [SourceText(n, p.label, list(sentences_of(p.text))) for n, p in enumerate(papers, 1)]


def renumber_citations(text: str) -> tuple[str, dict[int, int]]:
    """Renumber [n] markers 1, 2, ... in order of first use, so an answer's citations read in order."""
    mapping: dict[int, int] = {}
    for n in cited_numbers(text):
        mapping.setdefault(n, len(mapping) + 1)
    return _apply_renumber(text, mapping), mapping


def _apply_renumber(text: str, mapping: dict[int, int]) -> str:
    return outside_quotes(text, lambda part: CITATION_RE.sub(
        lambda m: "[" + ", ".join(str(mapping.get(n, n)) for n in cited_numbers(m.group(0))) + "]", part))


def _renumber_repair(repaired: str, mapping: dict[int, int], papers: list[PaperHit]) -> str:
    """A repair note in the answer's final numbering; a source the answer no longer cites is named by label."""
    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if n in mapping:
            return f"[{mapping[n]}]"
        return papers[n - 1].label if 0 < n <= len(papers) else m.group(0)

    return SINGLE_CITATION_RE.sub(one, repaired)


def _best_sentence(paper: PaperHit) -> str:
    best = max(paper.chunks, key=lambda c: c.cosine, default=None)
    return best.text if best else ""


def word_events(text: str) -> Iterator[StreamEvent]:
    """Stream a finished text word by word, so every mode reaches a UI the same way."""
    for piece in re.findall(r"\S+\s*|\s+", text):
        yield StreamEvent("token", piece)


def render_extractive(question: str, retrieval: Retrieval, draft: Draft, policy: str,
                      emphasis: tuple[str, ...] = ()) -> Answer:
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
    ranked = ([draft.best] if draft.best is not None else []) + [q for q in draft.quotes if q is not draft.best]
    lead_quotes = [(q.paper.paper_id, q.paper.label, q.paper.title, q.sentence) for q in ranked]
    lead = lead_for(question, draft.intent, lead_quotes, emphasis, draft.passages) if draft.intent is not None else None
    verdict_only = lead is not None and not lead.span  # "No (not stated in the text)": it quotes nothing
    if lead is not None and not verdict_only:
        line = f"{lead.text} [{n_of[lead.paper_id]}]"
        # The lead is shown only when the citation check passes it (a quoted part of its sentence): a line the
        # check would mark ⚠ is left out, not shown marked.
        if all(c.supported for c in check_answer(line, sources_for(order), "drop").checks):
            lines.append(line)
        else:
            lead = None
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
    if verdict_only and lead is not None and not checked.abstained:
        # the verdict states what the text does not say, so no source is cited for it; the quotes follow
        checked.text = f"{lead.text}.\n{checked.text}"
    return Answer(question=question, answer=checked.text, abstained=checked.abstained, mode="extractive",
                  lead=lead.text if lead is not None and not checked.abstained else None,
                  citations=citations, retrieved=retrieved, checks=checked.checks,
                  unsupported=[{"sentence": c.sentence, "reason": c.reason} for c in checked.unsupported],
                  removed_citations=checked.removed_citations)


def render_generated(question: str, retrieval: Retrieval, checked: CheckResult, raw: str, check_ms: float) -> Answer:
    """A checked generated answer with its citations numbered in order of first use; each citation quotes the
    source sentence the check found for it (or the paper's closest sentence)."""
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

