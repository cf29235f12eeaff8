"""YES_NO: a polar question ("Do they report results only on English data?", "Is the dataset public?").

The answer quotes the best passages as they rank (quotes.py) and leads with a verdict: "Yes" with the clause of
the first quote that says it, when the text states the asked thing strongly enough (the best passage's
probability of answering at or above `yes_at`, fitted on held-out QASPER questions by eval/fit_answer.py);
otherwise "No (not stated in the text)". On QASPER dev, annotators answered "No" where the paper never says
the asked thing as often as where it says the opposite (52 and 51 of 103 "No" answers), and "Yes" almost only
with evidence (94 of 105): how strongly the text states the thing is the learned signal the verdict reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer.draft import Draft
from rag.answer.passages import PassageRead, best_is_full_text
from rag.answer.types.context import Context
from rag.answer.types.quotes import answer as quoted

NOT_STATED = "No (not stated in the text)"


def answer(ctx: Context) -> Draft:
    """The best passages as they rank; of a full text without the quoting checks: where the text is weak on the
    asked thing the verdict says so ("No (not stated in the text)") instead of abstaining. Abstracts keep the
    checks (the verdict's threshold was fitted on full texts' paragraphs: rag/answer/passages.py)."""
    return quoted(ctx, checked=not best_is_full_text(ctx.passages))


def clause(sentence: str) -> str:
    """The sentence's longest clause (a part of it: the citation check reads it as a quoted part); "" when the
    sentence is one clause (the quote that follows says it; a sentence cut at a word count read as a fragment:
    "... achieved with a classifier based on a")."""
    parts = [p.strip() for p in re.split(r"[,;:]\s", sentence.rstrip(".")) if p.strip()]
    best = max(parts, key=len, default="")
    return best if best != sentence.rstrip(".") else ""


def verdict(paper_id: str, first_quote: str, passages: Sequence[PassageRead], yes_at: float
            ) -> tuple[str, str] | None:
    """("Yes", clause) or ("No", "") from the lead paper's best read passage; None when none was read or it is
    not a full text's paragraph (where `yes_at` was fitted)."""
    top = next((x for x in passages if x.reading is not None and x.paper.paper_id == paper_id), None)
    if top is None or top.segment < 0:
        return None
    return ("Yes", clause(first_quote)) if top.probability >= yes_at else ("No", "")
