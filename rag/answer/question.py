"""What a question asks for: a paper (lookup), several papers, a number, names, or a fact.

The extractive answerer uses this to pick sentences and, above all, to abstain: a question that asks for a
number is not answered by a sentence without one, and a question naming something no abstract mentions
("ImageNet", "GPT-5") is not answered by the nearest paper.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from rag.errors import QuestionError
from rag.text import (
    ASKED_PREPOSITIONS,
    AUX_WORDS,
    COMPARATIVES,
    COMPARISON_RE,
    COUNT_WORDS,
    FRAME_WORDS,
    GENERIC_QUANTITY_NOUNS,
    KIND_MEMBERS,
    LETTERS_RE,
    LOOKUP_NOUNS,
    LOOKUP_RE,
    METRIC_NOUNS,
    NAME_NOUNS,
    NUMERIC_AFTER_BY_WHAT,
    NUMERIC_AFTER_HOW,
    NUMERIC_AFTER_WHAT,
    NUMERIC_AFTER_WHAT_IS_THE,
    PART_NOUNS,
    PASTED_ESCAPES_RE,
    PHRASE_WORD_RE,
    QUANTITY_NOUNS,
    SINGULAR_QUANTITY_NOUNS,
    SPECIFIC_TOKEN_RE,
    STOPWORDS,
    STRICT_NAME_NOUNS,
    VERB_AUX,
    WH_PHRASE_WORD_RE,
    WH_WORDS,
    WORD_APOS_RE,
    WORD_END,
    WORD_START,
    collapse_whitespace,
    one_of,
    stem,
    terms,
)

# Whether a token is the indexed collection's common vocabulary ("LLM" among NLP papers, "cells" among
# biology ones): decided from the index's document frequencies (rag/evidence.Vocabulary.common), never from a
# word list. Without an index nothing counts as common.
Common = Callable[[str], bool]


def _never(_token: str) -> bool:
    return False


# The word lists these patterns read are rag/text.py's lexicon (a comparison and a lookup are read there too).
_MULTI_RE = re.compile(
    r"\b(which|what|list|all|any|are there)\b(?:(?!\b(?:paper|work|method|approach|abstract|study|one)\b).){0,20}"
    r"\b(papers|works|methods|abstracts|approaches|ones|studies)\b|"
    r"\bpapers (that|which|on|about|using|use|study|propose)\b|\bmore than one paper\b", re.I)
_NUMERIC_RE = re.compile(
    r"\bhow (many|much)\b|^\W*(?:[\w'-]+\W+){0,5}?how (" + "|".join(NUMERIC_AFTER_HOW) + r")\b|"
    r"\bby (how much|what (" + "|".join(NUMERIC_AFTER_BY_WHAT) + r"))\b|"
    r"\bwhat (" + "|".join(NUMERIC_AFTER_WHAT) + r")\b|"
    r"\bwhat('s| is| was) the (" + "|".join(NUMERIC_AFTER_WHAT_IS_THE) + r")\b|\b(percent|percentage)\b", re.I)
_UNIT_AFTER_RE = re.compile(r"\bhow (?:many|much)\s+((?:[a-z][\w-]*\s*){1,2})", re.I)
_WH_RE = re.compile(r"\b(what|which)(?:'s|\s+(?:is|are|was|were)\b)?\s+(.*)", re.I)
_HOW_MANY_RE = re.compile(r"how\s+(?:many|much)\b", re.I)
_ASKING_WH_RE = re.compile(r"\b(?:what|which|who|whom|whose|why)\b", re.I)  # a wh-word before "how much" embeds it
_WHAT_IS_A_RE = re.compile(r"^\W*(?:what|which)(?:'s|\s+(?:is|was))\s+(?:an?|the)\s", re.I)
_KINDS_OF_RE = re.compile(r"^\W*(?:what|which)\s+(?:kinds?|types?|sorts?)\s+of\b", re.I)
_ACRONYM_RE = re.compile(r"[A-Z]{2,}")
_PLURAL_END_RE = re.compile(r"[^s]s$")
_INFLECTED_END_RE = re.compile(r"(?:[^s]s|ed|ing)$")
_WORD_CHAR_RE = re.compile(r"\w")
_QUOTED_TERM_RE = re.compile(r"(?:^|(?<=\s))[\"“']([^\"”']{2,60})[\"”'](?=\s|[?.!,;:]|$)")  # "a quoted term"


def _wh_phrase(  # noqa: C901, PLR0911 - a decision list over the words after what/which, one return per reading
        question: str, common: Common = _never) -> tuple[list[str], str | None, str]:
    """The noun phrase right after what/which, what it asks for ('number', 'names' or None), and its head noun
    as written (the kind of thing whose names or value are asked: "GPUs", "datasets", "rate").

    "what noise scale does PTRM inject" -> (["noise", "scale"], "number", "scale");
    "what embedding model powers ..." -> (["embedding", "model"], "names", "model");
    "which knowledge graphs was CoRF ..." -> (["knowledge", "graphs"], "names", "graphs") (a plural asks for names).
    """
    m = _WH_RE.search(question)
    if not m:
        return [], None, ""
    words: list[str] = []
    tokens = WH_PHRASE_WORD_RE.findall(m.group(2))
    for i, w in enumerate(tokens[:4]):
        low = w.lower()
        if low in AUX_WORDS and not words:
            continue
        if stem(low.split("-")[0]) in METRIC_NOUNS and (any(c.isupper() for c in w) or low in ("perplexity", "f1")):
            return words + [low], "number", w  # "what WER does ...", "what BLEU score ...": the metric's value
        if not words and (_field_acronym(w, common) or i == 0 and _kind_acronym(w, tokens[1:2])):
            return [], "names", w  # "which VLM does ...", "what LLMs ...", "what GPUs were ..."
        if _field_acronym(w, common):
            rest = [x.lower() for x in tokens]
            if any(stem(x) in LOOKUP_NOUNS for x in rest[len(words) + 1:len(words) + 3]):
                return [], None, ""  # "which label-free RL method ...": a lookup
            return words, "names", w  # "which base LLM ..."
        if any(c.isupper() for c in w[1:]) and not words:
            nxt = tokens[i + 1:i + 2]
            if nxt and stem(nxt[0].lower()) in NAME_NOUNS:
                return [], "names", nxt[0]  # "which I2V backbones ...": a name-like modifier of a noun asking for names
        if low in AUX_WORDS or low in STOPWORDS and low not in COUNT_WORDS or any(c.isupper() for c in w[1:]):
            break
        words.append(low)
        st = stem(low)
        if st in FRAME_WORDS:
            return [], None, ""
        if st in QUANTITY_NOUNS or st in SINGULAR_QUANTITY_NOUNS and st == low:
            return words, "number", w
        if st in NAME_NOUNS:
            return words, "names", w
        if len(words) == 3:
            break
    if words and words[-1].endswith("s") and not words[-1].endswith("ss") and len(words[-1]) > 3:
        return words, "names", words[-1]
    return [], None, ""


def _kind_acronym(w: str, nxt: list[str]) -> bool:
    """"what GPUs ...", "which GPU was ...": an acronym that is the whole asked noun (plural, or followed by the
    verb) names a kind of thing, however rare in the collection."""
    core = w[:-1] if w.endswith("s") else w
    return bool(_ACRONYM_RE.fullmatch(core)) and (w != core or bool(nxt) and nxt[0].lower() in VERB_AUX)


def head_noun(phrase: str, counted: bool = True) -> str:
    """The noun a "how many" / "how much" question counts or measures, when the words after it show it.

    Counted things are plural: the first plural within three words ("microbial genomes come from ..." ->
    "genomes", "participants contributed ..." -> "participants"). A measured amount is the last word before a
    function word, when no word before that reads as a verb ("wall-clock computation time does ..." -> "time";
    "data comes from ..." -> none)."""
    words: list[str] = []
    ended = False
    for w in PHRASE_WORD_RE.findall(phrase)[:4]:
        low = w.lower()
        if not w[0].isalpha() or low in AUX_WORDS or low in STOPWORDS:
            ended = True
            break
        if counted and _PLURAL_END_RE.search(w) and len(w) > 2:
            return w
        words.append(w)
    if counted or not ended or not words or any(_INFLECTED_END_RE.search(w.lower()) for w in words[1:]):
        return ""  # where the noun phrase ends is not shown
    return words[-1]


def kind_nouns(kind: str) -> tuple[str, ...]:
    """The asked noun and the nouns of what belongs to its kind ("hardware": GPU, TPU, CPU, accelerator)."""
    return (kind, *KIND_MEMBERS.get(stem(kind.lower()), ()))


_CAPITALS_RE = re.compile(WORD_START + r"[A-Z][A-Z0-9]+(?:s)?" + WORD_END)


def capitals(question: str) -> list[str]:
    """Words the question writes in capitals ("BASE", "LARGE", "CBAM"): names, matched where the text writes them
    in capitals ("the BASE model", not "a strong base"). None in a question written all in capitals."""
    letters = [c for c in question if c.isalpha()]
    if sum(c.isupper() for c in letters) * 2 > len(letters):
        return []
    return [w for w in _CAPITALS_RE.findall(question) if sum(c.isupper() for c in w) >= 2]


def kind_phrase(question: str, kind: str) -> list[str]:
    """The asked noun and the nouns written after it in its noun phrase ("software framework" for "In which software
    framework was it implemented?"): all of it the asked kind, none of it words the answer need repeat."""
    m = re.search(WORD_START + re.escape(kind) + WORD_END + r"((?:\s+[A-Za-z][\w-]*){0,2})", question) if kind else None
    if not m:
        return [kind] if kind else []
    out = [kind]
    for w in m.group(1).split():
        if w.lower() in AUX_WORDS or w.lower() in STOPWORDS or stem(w.lower()) in FRAME_WORDS:
            break
        out.append(w)
    return out


_FRONTED_RE = re.compile(r"^\W*(" + "|".join(ASKED_PREPOSITIONS) + r")\s+(?:which|what)\b", re.I)
_STRANDED_RE = re.compile(r"\b(" + "|".join(ASKED_PREPOSITIONS) + r")\W*$", re.I)


def asked_preposition(question: str) -> str:
    """The preposition the asked name is the object of: fronted ("In which framework was it implemented?") or
    left at the end ("What hardware was it trained on?"); '' for none."""
    m = _FRONTED_RE.search(question) or _STRANDED_RE.search(question)
    return m.group(1).lower() if m else ""


def _field_acronym(w: str, common: Common) -> bool:
    """An acronym the collection uses widely ("LLM", "VLMs"): a kind of thing, not one thing's name."""
    core = w[:-1] if w.endswith("s") and w[:-1].isupper() else w
    return len(core) >= 2 and core.isupper() and (common(core) or common(w))


_DEFINITION_RE = re.compile(r"\bstands? for\b|\bacronym\b|\bmeaning of\b|\bdefin(?:e|ition of)\b|"
                            r"^\W*(?:what|who)(?:'s|\s+(?:is|are|was|were))\s+(?:an?\s+|the\s+)?"
                            r"[\w'’\-–]+(?:\s+[\w'’\-–]+){0,2}\W*$", re.I)
_CONTRIBUTION_RE = re.compile(r"\bwhat (?:does|do|did) .+ (?:do|propose|introduce|contribute|offer)\b|"
                              r"\b(?:main|key|core|central) (?:idea|contribution|insight)\b|\bcontributions?\b|"
                              r"\bhow does .+ work\b", re.I)
_LIMITATION_RE = re.compile(r"\blimitations?\b|\blimits\b|\bweakness(?:es)?\b|\bdrawbacks?\b|\bshortcomings?\b|"
                            r"\bproblems? with\b|\bgoes wrong\b|\bwrong with\b|\bfail(?:s|ure|ures)?\b|"
                            r"\bfalls? short\b|\bunreliable\b|\bgaps? in\b|\binefficienc(?:y|ies)\b|"
                            r"\bunrealistic\b|\bmissing from\b", re.I)
_WH_START_RE = re.compile(r"^\W*" + one_of((*WH_WORDS, "is", "are", "does", "do", "did", "can", "could", "any", "list",
                                             "name", "tell", "give", "show", "find", "compare")) + r"\b", re.I)


def question_shape(question: str) -> str:
    """The kind of answer asked for: 'comparison', 'definition', 'contribution', 'limitation', 'claim'
    (a statement to verify, as in citation lookup) or 'question' (anything else).

    Read from the question's grammar (question words, "stand for", "compare"), the same on any corpus.
    """
    q = question.strip()
    if not q.endswith("?") and not _WH_START_RE.search(q) and len(q.split()) >= 4:
        return "claim"  # a statement ("X is higher in A compared to B") is verified, whatever words it uses
    if COMPARISON_RE.search(q):
        return "comparison"
    if _DEFINITION_RE.search(q):
        return "definition"
    if _CONTRIBUTION_RE.search(q):
        return "contribution"
    if _LIMITATION_RE.search(q) and (_WH_START_RE.search(q) or q.endswith("?")):
        return "limitation"
    return "question"


@dataclass
class QuestionInfo:
    """The parts of a question the answerer needs."""

    text: str
    multi: bool
    lookup: bool
    wants_number: bool
    wants_names: bool
    content: set[str] = field(default_factory=set)   # content stems, frame words removed
    words: set[str] = field(default_factory=set)     # the same for whole words only (no hyphen parts)
    specific: list[str] = field(default_factory=list)  # surface tokens that name something specific
    units: set[str] = field(default_factory=set)     # stems of what a number is asked for ("GPUs")
    attribute: set[str] = field(default_factory=set)  # words a named answer must sit next to ("embedding")
    shape: str = "question"  # see question_shape
    unit_acronyms: list[str] = field(default_factory=list)  # "LMs" in "how many LMs": matches "language models"
    strict_names: bool = False  # names of models, benchmarks, datasets ... are asked for: coined names expected
    parts: bool = False      # asks for the parts of something ("what three components ...")
    kind: str = ""           # the noun whose names are asked, as written ("GPUs", "dataset")
    quantity: set[str] = field(default_factory=set)  # stems a figure's sentence must state ("learning rate")
    counts: bool = False     # "how many <units>": the figure must count the units, not merely share a sentence


def _specific_part(part: str, mid_sentence: bool, common: Common = _never) -> bool:
    """A word that names something: not the collection's common vocabulary (LLM, RL, API in an NLP corpus,
    by document frequency) and not an ordinary word."""
    if len(part) < 2:
        return False
    inner_caps = any(c.isupper() for c in part[1:])
    has_digit = any(c.isdigit() for c in part) and any(c.isalpha() for c in part)
    if not (inner_caps or has_digit or (mid_sentence and part[0].isupper())):
        return False  # decided before `common`, whose document frequencies cost a posting-list scan per word
    return not (common(part) or (part.endswith("s") and common(part[:-1])))


def specific_tokens(question: str, common: Common = _never) -> list[str]:
    """Tokens that name something: inner capitals, digits, acronyms, or capitalised mid-sentence words."""
    out: list[str] = []
    words = SPECIFIC_TOKEN_RE.findall(question)
    for i, w in enumerate(words):
        low = w.lower()
        if stem(low) in FRAME_WORDS or low in STOPWORDS:
            continue
        if any(_specific_part(part, i > 0, common) for part in w.split("-")):
            out.append(w.strip(".-"))
    for quoted in _QUOTED_TERM_RE.findall(question):
        out.append(quoted)
    return out


def is_list_question(question: str) -> bool:
    """Does the question ask for every paper that fits ("which papers use X?")?"""
    return bool(_MULTI_RE.search(question))


def analyse(question: str, common: Common | None = None) -> QuestionInfo:
    """Classify a question and extract its content terms; `common` tells the collection's common words."""
    common = common or _never
    q = question.strip()
    multi = is_list_question(q)
    lookup = multi or bool(LOOKUP_RE.search(q))
    phrase, asks, head = _wh_phrase(q, common)
    numeric = _NUMERIC_RE.search(q)
    embedded = numeric is not None and _HOW_MANY_RE.match(numeric.group(0)) and \
        _ASKING_WH_RE.search(q[:numeric.start()])
    # "what knob controls how much motion there is" asks for the knob: an embedded "how much" asks no figure.
    wants_number = bool(numeric and not embedded) or asks == "number"
    if asks == "names" and _WHAT_IS_A_RE.match(q):
        asks = None  # "what is a Hamiltonian Causal Model?" asks what it is, not for names
    shape = question_shape(q)
    wants_names = asks == "names" and not wants_number and not multi and shape == "question"
    # A statement to verify (a claim) asks for support, not for a figure or a list of names.
    wants_number = wants_number and shape not in ("definition", "claim")
    wants_names = wants_names and shape != "claim"
    content = {stem(t) for t in terms(q)} - FRAME_WORDS
    units: set[str] = set()
    m = _UNIT_AFTER_RE.search(q)
    acronyms: list[str] = []
    if m and m.group(1).split()[0].lower() not in AUX_WORDS:  # "how much does X ..." names no unit
        units = {stem(t) for t in terms(m.group(1))} - FRAME_WORDS
        acronyms = [w.rstrip("s") for w in LETTERS_RE.findall(m.group(1))
                    if len(w.rstrip("s")) >= 2 and w.rstrip("s").isupper()]
    elif asks == "number":
        units = {stem(t) for t in terms(" ".join(phrase))} - FRAME_WORDS
        acronyms = [head] if len(head) >= 2 and head.isupper() else []  # "WER": "word error rate"
    units -= QUANTITY_NOUNS | SINGULAR_QUANTITY_NOUNS | {stem(w) for w in COMPARATIVES}
    quantity: set[str] = set()
    if wants_number and asks == "number" and len(phrase) >= 2:
        # "what learning rate": a sentence with a figure and "learning" alone ("scikit-learn") states no learning rate
        quantity = {stem(t) for w in phrase if w not in COMPARATIVES for t in w.split("-")
                    if len(t) > 1 and t not in STOPWORDS} - GENERIC_QUANTITY_NOUNS
    elif wants_number and m and m.group(1).split()[0].lower() not in AUX_WORDS:
        # "how much wall-clock computation time": the head noun of what is counted or measured
        counted = head_noun(q[m.start(1):], counted=m.group(0).lower().startswith("how many"))
        quantity = {stem(counted.lower())} if counted and counted.lower() not in COMPARATIVES - {"time"} else set()
    attribute = {stem(w) for w in phrase if w not in COUNT_WORDS} - NAME_NOUNS - FRAME_WORDS if wants_names \
        else set()
    words = {stem(t.lower()) for t in WORD_APOS_RE.findall(q)
             if t.lower() not in STOPWORDS and len(t) > 1} - FRAME_WORDS
    heads = {stem(w) for w in phrase}
    if _KINDS_OF_RE.match(q):
        wants_names = False  # "what kinds of tasks ..." asks for a description, not for names
    return QuestionInfo(text=q, multi=multi, words=words, lookup=lookup and not wants_number, wants_number=wants_number,
                        wants_names=wants_names, content=content, specific=specific_tokens(q, common), units=units,
                        attribute=attribute, shape=shape, unit_acronyms=acronyms,
                        strict_names=bool(heads & STRICT_NAME_NOUNS) or (wants_names and not phrase),
                        parts=bool(heads & PART_NOUNS), kind=head if wants_names else "", quantity=quantity,
                        counts=bool(units and m and m.group(0).lower().startswith("how many")))


def clean_question(question: str, max_chars: int) -> str:
    """Normalise a question; refuse empty or oversized ones with a message naming the problem."""
    if question is None:
        raise QuestionError("empty question: type a question about the papers")
    text = PASTED_ESCAPES_RE.sub(" ", str(question))  # terminal colour codes pasted along with a question
    if not text.isprintable():  # printable text holds no control or format characters (category C)
        text = "".join(ch if unicodedata.category(ch)[0] != "C" or ch in "\n\t" else " " for ch in text)
    text = collapse_whitespace(text)
    if not text:
        raise QuestionError("empty question: type a question about the papers")
    if len(text) > max_chars:
        raise QuestionError(f"question too long ({len(text):,} characters; the limit is {max_chars:,}): "
                            "ask about one thing at a time")
    if not _WORD_CHAR_RE.search(text):
        raise QuestionError("the question has no words: type a question about the papers")
    return text
