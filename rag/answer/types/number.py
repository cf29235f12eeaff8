"""NUMBER: a figure is asked ("how many GPUs", "what speedup"). Only a sentence that states one, for the thing
asked, answers: a figure beside the asked quantity's words (or its unit: "3 hours" states a time), counting
the asked thing for "how many", in the asked setting ("on LIBERO"), in the section a per-experiment count is
asked of; citations, list markers, pointers ("Table 2") and formula terms are no figures. Otherwise the answer
says the paper gives no figure for it. The figure and its unit lead the answer (rag/answer/lead.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from rag.answer.draft import MAX_SENTENCES, Draft, Quote, as_written, full_text, no_figure
from rag.answer.evidence import Candidate, Constants
from rag.answer.intent import Intent, NumberAsk
from rag.answer.lead import scored_number_span
from rag.answer.types.context import Context
from rag.answer.types.named import each_named
from rag.corpus.sections import section_of
from rag.text import (
    MEASURE_UNITS,
    QUANTITY_NOUNS,
    STOPWORDS,
    WORD_APOS_RE,
    WORD_RE,
    WORD_START,
    numbers,
    stem,
    stems,
)

# Numbers that are not figures the sentence states: a citation ("(Kocetkov et al., 2022)", "[5,6,7]"), a list
# marker opening the sentence ("1) Predefined spans: ..."), a pointer to a part of the paper ("Section 4",
# "Table 2", "Eq. (3)") and the number in a name joined to it by a hyphen. A full text has them in most sentences.
_NOT_FIGURE_RE = re.compile(r"\((?:[^()]*?\bet al\.?|[A-Z][^()]*?)[, ]+(?:19|20)\d\d[a-z]?(?:[;,][^()]*)?\)"
                            r"|\[\d+(?:\s*[,–-]\s*\d+)*\]|^\(?\d{1,2}[.)]\s"
                            r"|\b(?:Sections?|Sec\.|Tables?|Tab\.|Figures?|Figs?\.|Eqs?\.|Equations?|Appendix|Algorithm"
                            r"|Lines?|§)\s*\(?[A-Z]?\d+(?:\.\d+)*\)?(?:\s*(?:and|,|–|-)\s*\(?[A-Z]?\d+(?:\.\d+)*\)?)*"
                            r"|\b[A-Za-z][A-Za-z]*(?:-\d[\w.]*)+"  # a name's number: "LLaMA-2-13B", "GPT-4"
                            # a bound in a formula ("w ≤ 1, ∀i", "x ∈ [0, 1]"): a term of an equation, no measure
                            r"|(?<![\w.])[A-Za-z]\w{0,2}\s*[≤≥∈]\s*[\[(]?[-+]?\d[\d.]*"
                            r"(?:\s*,\s*[-+]?\d[\d.]*[\])])?"
                            r"|[-+]?\d[\d.]*\s*,?\s*∀"
                            # a tensor's shape with a symbol for a factor ("R^{C/r×1×1}", "H×W×3"): a term of
                            # an equation, not a count of anything
                            r"|(?<![\w.])[A-Za-z]\w{0,2}(?:/[A-Za-z\d]+)?(?:\s*×\s*[\w/]+)+"
                            r"|(?<![\w.])\d+(?:\s*×\s*\d+)*\s*×\s*[A-Za-z]\w{0,2}(?![\w-])(?:\s*×\s*[\w/]+)*")

_CONTINUES_RE = re.compile(r"^\W*(?:This|These|It|Its|Such|The latter|The former)\b")
_SIZE_RE = re.compile(r"\bhow (?:large|big)\b", re.I)
_BYTES_RE = re.compile(r"\d\s?[KMGTP]i?B\b")


def states(sentence: str, quantity: Set[str], acronyms: Sequence[str] = ()) -> bool:
    """Does the sentence state every word of the asked quantity (an acronym's plural counts as it: "GPU" for
    "GPUs"; so does the acronym written out: "language models" for "LMs"), or, for a time or a size, a figure
    with its unit?"""
    have = stems(sentence)
    bare = {w.rstrip("s") for w in have}
    spelled = {a.lower() for a in acronyms if spells_out(sentence, a)}
    return all(w in have or w.rstrip("s") in bare or w.rstrip("s") in spelled
               or (w in MEASURE_UNITS and MEASURE_UNITS[w].search(sentence)) for w in quantity)


def counts(sentence: str, units: Set[str], acronyms: Sequence[str] = ()) -> bool:
    """Does one of the sentence's figures stand next to the counted noun (see lead.scored_number_span), or next
    to its acronym written out ("42 language models" for "how many LMs")?"""
    for a in acronyms:
        units = units | {stem(w.lower()) for run in spelled_out(sentence, a) for w in run}
    found = scored_number_span(_NOT_FIGURE_RE.sub(" ", sentence), units)
    return found is not None and found[0] > 0


def figures(sentence: str) -> frozenset[str]:
    """The numbers a sentence states, citations and list markers left out."""
    return numbers(_NOT_FIGURE_RE.sub(" ", sentence))


def numeric(intent: Intent, cands: list[Candidate], focus_terms: set[str], c: Constants) -> Draft:
    """A number is asked for: only a sentence that gives one (for the thing asked about) can answer."""
    num = intent.number or NumberAsk(frozenset(), frozenset(), (), False)
    asked = num.units or (intent.content - focus_terms)
    with_numbers = _stating(cands, num, asked)
    what = f"“{as_written(intent.text, num.units)}”" if num.units else "what was asked"
    if not with_numbers:
        return Draft([], no_figure(cands[0].paper, what))
    best = with_numbers[0]
    if best.prob < c.abstain_below and not (asked and asked <= stems(best.sentence)):
        return Draft([], no_figure(best.paper, what))
    setting = asked_setting(intent.text) - focus_terms
    if setting and not setting <= stems(best.sentence):
        # "what latency on the conveyor-belt sorting task?": a figure stated for another setting does not answer.
        own = [x for x in with_numbers if x.paper is best.paper and setting <= stems(x.sentence)]
        if own:
            best = own[0]
        elif any(setting <= stems(x.sentence) for x in cands if x.paper is best.paper):
            return Draft([], no_figure(best.paper, f"“{as_written(intent.text, setting)}”"))
    if num.units and full_text(best.paper):
        best = _by_section(intent, num, focus_terms, best, with_numbers)
    best = _of_paper(intent, num, asked, best, with_numbers, cands)
    quotes = [Quote(best.paper, best.sentence)]
    for x in with_numbers[:MAX_SENTENCES]:
        if x is not best and x.paper is best.paper and x.prob >= c.second_sentence_at and len(quotes) < MAX_SENTENCES:
            quotes.append(Quote(x.paper, x.sentence))
    return Draft(quotes)


def _stating(cands: list[Candidate], num: NumberAsk, asked: Set[str]) -> list[Candidate]:
    """The sentences that state a figure for the asked quantity, best first."""
    with_numbers = [x for x in cands if figures(x.sentence)]
    if asked:
        with_numbers = [x for x in with_numbers if asked & (stems(x.sentence) | stems(x.paper.label))
                        or any(spells_out(x.sentence, a) for a in num.acronyms)]
    if len(num.units) > 1:
        # "How many different speakers": a figure stated with every word of the asked quantity is of that
        # quantity; one stated with a part of it ("differ in ...") is of something else.
        whole = [x for x in with_numbers if num.units <= stems(x.sentence) | stems(x.paper.label)]
        with_numbers = whole or with_numbers
    if num.quantity:
        # The sentence must state what is asked ("learning rate", "time"): a figure beside other words is
        # another quantity's.
        with_numbers = [x for x in with_numbers if states(x.sentence, num.quantity, num.acronyms)]
    if num.counts:
        # "How many parameters does X have?": the figure must count the asked thing, standing beside its noun in
        # its own clause ("25.9M parameters", "the number of parameters is 25.9M"); a sentence that mentions
        # parameters and gives "the other two factors" counts something else.
        with_numbers = [x for x in with_numbers if counts(x.sentence, num.units, num.acronyms)]
    return with_numbers


def _by_section(intent: Intent, num: NumberAsk, focus_terms: set[str], best: Candidate,
                with_numbers: list[Candidate]) -> Candidate:
    """"How many GPUs were used to train the audio model?": in a full text the same count is often given for each
    experiment, in its own section ("3.1 Audio", "3.2 Vision"); the section heading holding more of the question's
    other words says which experiment's figure is asked (ties: the likeliest)."""
    rest = intent.content - num.units - focus_terms - stems(best.paper.label) - stems(best.paper.title)

    def headed(x: Candidate) -> int:
        return len(rest & stems(section_of(x.paper.text, x.paper.layout or "", x.sentence)))

    top = max((x for x in with_numbers if x.paper is best.paper), key=headed)
    return top if headed(top) > headed(best) else best


def _of_paper(intent: Intent, num: NumberAsk, asked: Set[str], best: Candidate, with_numbers: list[Candidate],
              cands: list[Candidate]) -> Candidate:
    """Of the best paper's figures, the one asked: for "how large", a size in bytes where one is given; asked no
    unit, the one whose sentence holds most of the question's other words; else the best."""
    sized = [x for x in with_numbers if x.paper is best.paper and _BYTES_RE.search(x.sentence)] \
        if _SIZE_RE.search(intent.text) else []
    if sized:
        # "How large is the datastore?": of the paper's figures for it, a size in bytes, where one is given
        # ("a datastore with a size of 27GB" rather than "2.7M samples as the datastore"); of several sizes, the
        # one whose sentence (with the sentence a "This ..." opening continues) holds most of the question's
        # words ("Datastores For CodeLlama, we ... This dataset ... 27GB").
        before = {(x.paper.paper_id, x.index): x.sentence for x in cands}

        def said(x: Candidate) -> int:
            text = x.sentence
            if _CONTINUES_RE.match(x.sentence):
                text = before.get((x.paper.paper_id, x.index - 1), "") + " " + text
            return len(asked & stems(text))

        return max(sized, key=said)
    if not num.units:
        # Asked "how long does the calibration of X take?", the words that name the paper (its title's and
        # label's) say whose figure is asked, not which one: of the paper's figures, the one whose sentence
        # holds most of the question's other words answers it (ties: the likeliest).
        # Of sentences holding as many, the one that repeats the question's phrasing ("reduced the number of
        # hallucinated examples" for "reduce the number of hallucinated examples") states the asked figure.
        phrasing = word_pairs(intent.text)

        def told(x: Candidate) -> tuple[int, int]:
            whose = stems(x.paper.title) | stems(x.paper.label) | stems(label_continued(intent.text, x.paper.label))
            pairs = {p for p in phrasing & word_pairs(x.sentence) if not set(p) <= whose}
            return len((asked - whose) & stems(x.sentence)), len(pairs)

        return max((x for x in with_numbers if x.paper is best.paper), key=told)
    return best


def word_pairs(text: str) -> set[tuple[str, str]]:
    """Stems of the consecutive content words of each clause ("reduce the number of examples": (reduc, number),
    (number, exampl)): how a text phrases what it says."""
    out: set[tuple[str, str]] = set()
    for clause in re.split(r"[,;:()\[\]?!]|[.](?:\s|$)", text):
        words = [stem(w.lower()) for w in WORD_APOS_RE.findall(clause) if w.lower() not in STOPWORDS]
        out |= set(zip(words, words[1:]))
    return out


def label_continued(question: str, label: str) -> str:
    """The capitalised words the question writes right after the paper's label ("Guided Decoding" in "Lookback Lens
    Guided Decoding"): the name of one of the paper's methods, which says whose figure is asked, as the label does."""
    m = re.search(WORD_START + re.escape(label) + r"((?:\s+[A-Z][\w-]*)+)", question) if label else None
    return m.group(1) if m else ""

_SETTING_RE = re.compile(r"(?<=\w)\s+(?:on|under|during)\s+(?:the\s+|a\s+|an\s+)?([\w\-–.+]+(?:\s+[\w\-–.+]+){0,3})",
                         re.IGNORECASE)


def asked_setting(question: str) -> set[str]:
    """The stems of where a figure is asked for: the object of "on / under / during" after the question has
    begun ("what latency ... on the conveyor-belt sorting task" -> conveyor-belt, sort, task), up to a function
    word. ("In the fMRI study, ..." opening a question says which paper, not the figure's setting.)"""
    out: set[str] = set()
    for m in _SETTING_RE.finditer(question):
        words = []
        for w in m.group(1).split():
            if w.lower() in STOPWORDS:
                break
            words.append(w)
        out |= stems(" ".join(words)) - QUANTITY_NOUNS
    return out


def spelled_out(sentence: str, acronym: str) -> list[list[str]]:
    """The runs of consecutive words of the sentence whose initials are the acronym's letters ("language
    models" for "LMs")."""
    letters = acronym.lower()
    words = WORD_RE.findall(sentence)
    n = len(letters)
    return [words[i:i + n] for i in range(len(words) - n + 1)
            if "".join(w[0].lower() for w in words[i:i + n]) == letters]


def spells_out(sentence: str, acronym: str) -> bool:
    """The sentence writes an acronym of the question out ("LMs" -> "language models")."""
    return bool(spelled_out(sentence, acronym))


def answer(ctx: Context) -> Draft:
    """Each named paper's own figure when the question names several ("how many models does each of A and B
    evaluate?"), else the figure of `numeric`."""
    if len(ctx.focus) >= 2 and not ctx.intent.every_paper:
        return each_named(ctx, answer)
    return numeric(ctx.intent, ctx.cands, ctx.focus_terms, ctx.c)
