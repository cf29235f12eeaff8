"""A figure or names asked of several named papers ("how many models does each of A and B evaluate?"): each
named paper answers on its own, and the answer joins those that do."""

from __future__ import annotations

from collections.abc import Callable

from rag.answer import abstain
from rag.answer.draft import Draft, abstain_with, no_match
from rag.answer.types.context import Context


def each_named(ctx: Context, answer: Callable[[Context], Draft]) -> Draft:
    """`answer` asked of each named paper alone (after the checks every question gets); the answers that quote
    something, joined, or the first paper's abstention when none does."""
    parts = []
    for p in ctx.focus:
        one = ctx.narrowed(p)
        if not one.cands:
            continue
        reason = abstain.first_reason(one, abstain.EVERY)
        parts.append(abstain_with(reason, one.cands) if reason else answer(one))
    answered = [d for d in parts if d.quotes]
    if not answered:
        return parts[0] if parts else abstain_with(no_match([x.paper for x in ctx.cands]), ctx.cands)
    return Draft([q for d in answered for q in d.quotes], best=answered[0].best or answered[0].quotes[0])
