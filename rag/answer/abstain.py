"""When the retrieved text does not carry what was asked: an ordered list of named checks, each returning the
abstention sentence (the reason, as users read it) or None.

`EVERY` runs on every question, first to last; `QUOTING` runs, after it, on the questions answered by quoting
the best passages (not on a figure or names, whose answer types say "gives no figure" / "names no ..."
themselves), and only when the question names no paper. The first reason found is the answer; the draft adds
the closest papers to it (rag/answer/draft.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag import prompts
from rag.answer.draft import full_text, no_match
from rag.answer.evidence import Vocabulary
from rag.answer.intent import Asks, Shape
from rag.answer.passages import best_is_full_text
from rag.answer.types.context import Context
from rag.answer.types.words import present
from rag.corpus.labels import mentions
from rag.text import LETTERS2_RE, LONG_LETTER_WORDS_RE, stem, stems

Check = Callable[[Context], "str | None"]
SHORT_QUESTION_WORDS = 4  # topic questions this short must contain their rarest word in the answer paper
FOREIGN_SHARE = 0.5  # a question is in another language when more than half its words are new to the corpus


def missing_terms(ctx: Context) -> str | None:
    """A question naming something no retrieved paper mentions is not answered by the nearest paper; when it
    names no paper, only a term the whole corpus never uses counts (a paraphrase may use other words). A long
    question whose other words find strong evidence is a paraphrase ("... when doing MCMC" for a
    Metropolis-Hastings paper), not a question about something absent. A yes/no question of a full text is
    answered instead ("No (not stated in the text)", rag/answer/types/yes_no.py)."""
    intent, focus, pool, vocab = ctx.intent, ctx.focus, ctx.pool, ctx.vocab
    if intent.asks is Asks.YES_NO and best_is_full_text(ctx.passages):
        return None
    missing = [t for t in intent.specific if not any(mentions(t, p.label) for p in focus) and not present(t, pool)
               and (focus or intent.shape is Shape.COMPARISON or
                    (all(vocab.unseen(stem(w.lower())) for w in LETTERS2_RE.findall(t))
                     and (ctx.cands[0].prob < ctx.c.missing_below or len(intent.words) <= SHORT_QUESTION_WORDS
                          or intent.shape in (Shape.DEFINITION, Shape.CONTRIBUTION, Shape.LIMITATION))))]
    if not missing:
        return None
    template = prompts.ABSTAIN_MISSING_TERMS_TEXTS if any(full_text(p) for p in pool) else prompts.ABSTAIN_MISSING_TERMS
    return template.format(terms=", ".join(f"“{t}”" for t in missing))


def reader_below(ctx: Context) -> str | None:
    """The reader finds no passage likely enough to answer (the threshold fitted on held-out folds,
    rag/answer/calibration.py). A yes/no question is answered instead: its verdict is "No (not stated in the
    text)" (rag/answer/types/yes_no.py). Only where the best passage is a full text's paragraph: the threshold
    was fitted on QASPER paragraphs, and an abstract's one-sentence passages score lower for the same evidence
    (the sentence spelling out an acronym reads under it against "What does RSPO stand for?"); abstracts keep
    the first stage's checks, fitted on abstracts (QUOTING)."""
    if ctx.intent.asks is Asks.YES_NO:
        return None
    read = [x for x in ctx.passages if x.reading is not None]
    if best_is_full_text(read) and read[0].probability < ctx.ac.abstain_below:
        return no_match(ctx.pool)
    return None


def foreign(question: str, vocab: Vocabulary) -> bool:
    """Are most of the question's words (four letters or more) ones no indexed chunk uses? Then its nearest
    sentences are near by chance. Corpus-derived, so a terse English claim ("Activated Cdk5 regulates neuronal
    death") is not mistaken for another language."""
    words = LONG_LETTER_WORDS_RE.findall(question.lower())
    if len(words) < 3 or vocab.index is None:
        return False
    return sum(vocab.unseen(stem(w)) for w in words) > FOREIGN_SHARE * len(words)


def foreign_question(ctx: Context) -> str | None:
    """Mostly words the corpus never uses (a question in another language): the embedding model is English, so
    the nearest sentence is near by chance, not evidence."""
    return no_match([x.paper for x in ctx.cands]) if foreign(ctx.question, ctx.vocab) else None


def short_topic(ctx: Context) -> str | None:
    """A short topic question ("paper on quantum machine learning") must find its rarest word in the best
    paper (an abstract: in a full text the reader's fitted threshold decides, `reader_below`)."""
    intent, best = ctx.intent, ctx.cands[0]
    if best.paper.layout and any(x.reading is not None for x in ctx.passages):
        return None
    words = list(intent.words)
    if not words or len(words) > SHORT_QUESTION_WORDS or intent.every_paper or intent.shape is Shape.CLAIM:
        return None
    idf = ctx.vocab.idf(words)
    top = max(idf.values())
    rarest = {w for w in words if idf[w] == top}  # ties: any of them (never set order)
    if rarest & (stems(best.paper.text) | stems(best.paper.label) | stems(best.paper.title)):
        return None
    return no_match([x.paper for x in ctx.cands])


def weak_evidence(ctx: Context) -> str | None:
    """No sentence is likely enough to be evidence (the evidence scorer's fitted threshold)."""
    return no_match([x.paper for x in ctx.cands]) if ctx.cands[0].prob < ctx.c.abstain_below else None


EVERY: tuple[Check, ...] = (missing_terms, reader_below)
QUOTING: tuple[Check, ...] = (foreign_question, short_topic, weak_evidence)


def first_reason(ctx: Context, checks: Sequence[Check]) -> str | None:
    """The first check's reason to abstain, in order; None when every check passes."""
    for check in checks:
        reason = check(ctx)
        if reason is not None:
            return reason
    return None
