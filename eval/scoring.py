"""Per-question scores beyond retrieval: citations (ALCE), faithfulness (RAGAS), correctness, abstention.

Every function takes what one question produced and returns plain numbers; None means "does not apply"
(no citation to be precise about, no key fact to find), and such questions are left out of the averages.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag.answer.cite import SourceText

from eval.judge import Claim, Judge, Verdict


@dataclass
class SentenceScore:
    """ALCE verdicts on one answer sentence: supported by its cited passages together, and per citation
    whether it was needed."""

    text: str
    cited: list[str]
    supported: bool | None
    needed: list[bool]
    reason: str


@dataclass
class ClaimScore:
    """Faithfulness verdict on one claim, judged against every retrieved passage."""

    text: str
    supported: bool | None
    reason: str
    evidence: str = ""


@dataclass
class CitationScores:
    recall: float | None
    precision: float | None
    sentences: list[SentenceScore] = field(default_factory=list)


SourceOf = Callable[[str], SourceText | None]


def score_sentence(claim: Claim, source_of: SourceOf, judge: Judge) -> SentenceScore:
    """ALCE on one sentence: recall needs its citations together to support it; a citation is irrelevant
    when it alone does not support the sentence and the remaining citations still do."""
    cited = list(dict.fromkeys(claim.cited))
    if not cited:
        return SentenceScore(claim.text, [], False, [], "no citation")
    sources = [source_of(pid) for pid in cited]
    if any(s is None for s in sources):
        return SentenceScore(claim.text, cited, False, [False] * len(cited), "cites a source that was not given")
    given = [s for s in sources if s is not None]
    joint = judge.supports(claim.text, given)
    if not joint.supported:
        return SentenceScore(claim.text, cited, joint.supported, [False] * len(cited), joint.reason)
    if len(given) == 1:
        return SentenceScore(claim.text, cited, True, [True], joint.reason)
    needed = []
    for i, source in enumerate(given):
        if judge.supports(claim.text, [source]).supported:
            needed.append(True)
            continue
        others = judge.supports(claim.text, given[:i] + given[i + 1:])
        needed.append(others.supported is not True)
    return SentenceScore(claim.text, cited, True, needed, joint.reason)


def citation_scores(sentences: Sequence[Claim], source_of: SourceOf, judge: Judge) -> CitationScores:
    """Citation recall (share of sentences supported by their citations) and precision (share of citations
    needed), over the sentences the judge could decide."""
    scored = [score_sentence(c, source_of, judge) for c in sentences]
    decided = [s for s in scored if s.supported is not None]
    recall = sum(bool(s.supported) for s in decided) / len(decided) if decided else None
    n_citations = sum(len(s.cited) for s in decided)
    precision = sum(sum(s.needed) for s in decided) / n_citations if n_citations else None
    return CitationScores(recall, precision, scored)


def ordered_sources(claim: Claim, retrieved: Sequence[SourceText], source_of: SourceOf) -> list[SourceText]:
    """The retrieved passages with the claim's own cited papers first, then the rest in retrieval order."""
    first = [s for s in (source_of(pid) for pid in dict.fromkeys(claim.cited)) if s is not None]
    return first + [s for s in retrieved if all(s is not f for f in first)]


def faithfulness(claims: Sequence[Claim], retrieved: Sequence[SourceText], source_of: SourceOf,
                 judge: Judge) -> tuple[float | None, list[ClaimScore]]:
    """Share of claims the retrieved context supports (RAGAS faithfulness), over the claims judged."""
    scored = []
    for claim in claims:
        verdict: Verdict = judge.supports(claim.text, ordered_sources(claim, retrieved, source_of))
        scored.append(ClaimScore(claim.text, verdict.supported, verdict.reason, verdict.evidence))
    decided = [c for c in scored if c.supported is not None]
    return (sum(bool(c.supported) for c in decided) / len(decided) if decided else None), scored


# --- correctness ---------------------------------------------------------------------------------------

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"), "-")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split()) if i >= 2}


def normalise(text: str) -> str:
    """One spelling for facts written differently: case, dashes, × for x, thousands separators, trailing
    zeros, spaces before units, small number words ('0–8%' ~ '0-8%', '10.0×' ~ '10x', 'five' ~ '5')."""
    t = unicodedata.normalize("NFKC", text).translate(_DASHES).lower()
    t = t.replace("×", "x").replace("“", '"').replace("”", '"').replace("’", "'")
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)
    t = re.sub(r"(\d+)\.(\d*?)0+(?!\d)", lambda m: m.group(1) + ("." + m.group(2) if m.group(2) else ""), t)
    t = re.sub(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", lambda m: _NUMBER_WORDS[m.group(1)], t)
    t = re.sub(r"(?<=\d)\s+(?=[a-z%])", "", t)
    t = re.sub(r"(?<=[-+~])\s+(?=\d)|(?<=\d)\s+(?=-)", "", t)
    return re.sub(r"\s+", " ", t).strip()


def fact_present(fact: str, answer: str) -> bool:
    """Whether the answer states the fact, matched whole (so '5.6x' is not found inside '15.6x')."""
    f = normalise(fact)
    if not f:
        return False
    # A unit is glued to its number by normalise(), so a fact ending in a digit may be followed by a letter.
    after = r"(?![\d]|[.,]\d)" if f[-1].isdigit() else r"(?!\w)" if f[-1].isalnum() else ""
    pattern = (r"(?<![\w.])" if f[0].isalnum() else "") + re.escape(f) + after
    return re.search(pattern, normalise(answer)) is not None


def correctness(key_facts: Sequence[str], answer: str, abstained: bool) -> tuple[float | None, list[str]]:
    """Share of key facts the answer gives (an abstention gives none), and the facts it misses."""
    if not key_facts:
        return None, []
    missing = [f for f in key_facts if abstained or not fact_present(f, answer)]
    return 1 - len(missing) / len(key_facts), missing


# --- citations against gold, abstention ----------------------------------------------------------------

def gold_citations(cited: Sequence[str], gold: Sequence[str]) -> tuple[float | None, float | None]:
    """(cites a gold paper, cites only gold papers) for an answerable question; None where undefined."""
    if not gold:
        return None, None
    gold_set = set(gold)
    if not cited:
        return 0.0, None
    return float(any(p in gold_set for p in cited)), float(all(p in gold_set for p in cited))


def abstention(abstained: bool, answerable: bool) -> float:
    """1 when the assistant abstained exactly when the abstracts do not hold the answer."""
    return float(abstained != answerable)
