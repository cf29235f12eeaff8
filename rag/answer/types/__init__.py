"""The answer types: what each kind of question (rag/answer/intent.py `Asks`) quotes, given the scored
passages. A figure (number.py), names (names.py) and yes/no (yes_no.py: its verdict leads) have their own; every
other kind quotes the passages as they rank (quotes.py). `answer` picks the type; rag/answer/extractive.py runs
the checks every question gets (rag/answer/abstain.py) before it."""

from __future__ import annotations

from collections.abc import Callable

from rag.answer.draft import Draft
from rag.answer.intent import Asks
from rag.answer.types import names, number, quotes, yes_no
from rag.answer.types.context import Context

TYPES: dict[Asks, Callable[[Context], Draft]] = {Asks.NUMBER: number.answer, Asks.NAMES: names.answer,
                                                 Asks.YES_NO: yes_no.answer}


def answer(ctx: Context) -> Draft:
    """The draft of the question's answer type (`quotes.answer` for the kinds without one of their own)."""
    return TYPES.get(ctx.intent.asks, quotes.answer)(ctx)
