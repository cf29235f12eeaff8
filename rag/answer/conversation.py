"""Resolving a chat turn: does it depend on earlier turns, and on which papers?

A chat is several questions in a row, and most of them stand alone: a question that names its papers ("And
which RL algorithm does RLRT augment?"), or asks a new topic with no word that points back ("Okay, switching
topics: which paper studies glaciers?"), is sent as typed, without its leading filler. Only a real reference is
resolved, read from the question's grammar:

- a singular reference (it, its, this method, the paper, the model, ...) means the paper the last turn was
  about; "the benchmark" / "the dataset" means the latest such paper whose abstract has one;
- a plural reference (both, these, the two, each, which of them; they/their in a comparison) means every paper
  the last turn was about when it was about several, else the last two papers the chat was about, oldest first:
  "how do they differ?" after A and then B is about A and B;
- they/their outside a comparison mean the last paper's authors (one paper);
- an ellipsis ("And on LIBERO?", "what about memory?") continues the last question; "what about B?" naming a
  paper asks the last question about B.

The resolved question names the papers it refers to (labels put in place of the reference words), so the
answerer treats it like a question that named them; retrieval is kept to those papers. Nothing here knows any
corpus: names come from the index's labels (rag/answer/naming.py), the rest from English function words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag.text import (
    AUXILIARIES,
    COMPARISON_CUE_RE,
    EVALUATION_NOUNS,
    FRAGMENT_FUNCTION_WORDS,
    FRAGMENT_WORD_RE,
    LOOKUP_OPENING_RE,
    PLURAL_REFERENCE_LEADS,
    POSSESSIVE_PRONOUNS,
    WH_WORDS,
    one_of,
)

# Discourse fillers that open a chat message and refer to nothing ("And", "Also", "OK so", "Alright then").
_FILLER_RE = re.compile(r"^\s*(?:(?:and|also|but|so|then|ok|okay|alright|all right|right|now|well|plus|hmm+|great|"
                        r"thanks|thank you|cool|nice|next|another question|one more(?: thing| question)?|"
                        r"by the way|btw|moving on|anyway|actually)\b[\s,;:.!\-–—]*)+", re.I)
# A short preamble before a colon or comma ("switching topics:", "unrelated:", "switching gears,"), when it asks
# nothing itself and a question follows.
_PREAMBLE_RE = re.compile(r"^\s*([^:,?]{1,40})[:,]\s+(?=\S)")
_WHAT_ABOUT_RE = re.compile(r"^\s*(?:what|how)\s+about\s+(.+?)\s*\??\s*$", re.I)
_QUESTION_START_RE = re.compile(
    r"^\s*" + one_of((*WH_WORDS, *AUXILIARIES, "compare", "contrast", "list", "name", "tell", "give", "show", "explain",
                      "summari[sz]e", "describe", "define", "find", "please", r"i\b", r"we\b", r"in\s+what",
                      r"on\s+what", r"for\s+what", r"to\s+what", r"by\s+how")) + r"\b", re.I)
_PREPOSITION_START_RE = re.compile(r"^\s*(?:on|in|for|with|at|under|over|across|compared(?:\s+to|\s+with)?|versus|"
                                   r"vs\.?|than|without|beyond|per|against|from|to|using)\b", re.I)
_NOUNS = r"(?:method|methods|paper|papers|model|models|approach|approaches|framework|frameworks|work|works|" \
         r"technique|techniques|system|systems|algorithm|algorithms|architecture|study|studies|one|ones|authors|" \
         r"proposed\s+\w+|benchmark|benchmarks|dataset|datasets|task|suite)"
_PLURAL_RE = re.compile(
    r"\b(?:(?:they|them)\s+both|both(?:\s+of\s+(?:them|these|those|the\s+two))?(?:\s+" + _NOUNS + r")?|"
    r"(?:these|those)(?:\s+two)?(?:\s+" + _NOUNS + r")?|the\s+two(?:\s+" + _NOUNS + r")?|"
    + one_of(PLURAL_REFERENCE_LEADS) + r"\s+of\s+(?:them|(?:these|those)(?:\s+two)?|the\s+two)(?:\s+" + _NOUNS + r")?|"
    r"the\s+(?:former|latter))\b", re.I)
_THEY_RE = re.compile(r"\b(they|them|their|theirs|themselves)\b", re.I)
_POSSESSIVE = r"\b(?:its|their)\b"
_POSSESSIVE_RE = re.compile(_POSSESSIVE, re.I)
_SINGULAR_RE = re.compile(
    r"\b(?:(its|it|itself)|(?:this|that)\s+(?:[\w-]+\s+){0,2}?" + _NOUNS + r"|the\s+(?:same\s+)?(?:method|paper|model|"
    r"approach|framework|work|technique|system|algorithm|architecture|study|authors|proposed\s+\w+))\b", re.I)
_DEFINITE_THING_RE = re.compile(r"\bthe\s+(" + "|".join(EVALUATION_NOUNS) + r")\b", re.I)
# (Which words make they/them/their mean several papers, and which opening asks for a paper: rag/text.py,
# COMPARISON_CUE_RE and LOOKUP_OPENING_RE.)
MAX_LOOKBACK = 4  # earlier turns a reference may reach
# "Which of the 17 text models disclosed its identity?": a possessive after a "which ..." subject and its verb
# (not an auxiliary, so the wh-phrase is the subject) is bound by that subject, not by an earlier paper.
_AUX = r"(?!" + one_of((*AUXILIARIES, "its", "their", "it")) + r"\b)"
_BOUND_POSSESSIVE_RE = re.compile(
    r"^\s*which\s+(?:of\s+(?:the\s+)?)?(?:" + _AUX + r"[\w-]+\s+){0,3}?" + _AUX + r"[a-z][\w-]*\s+" + _AUX +
    r"[a-z]+(?:ed|es|s)\b[^?]*?" + _POSSESSIVE, re.I)


@dataclass
class TurnRecord:
    """What resolution needs of an earlier turn: the question as typed and as searched, and the papers it
    was about (named by it, or cited by its answer)."""

    question: str
    searched: str
    referents: list[str] = field(default_factory=list)


@dataclass
class Resolution:
    """How a turn is asked: `question` is what is searched and answered; `papers` (when set) keeps retrieval
    to the papers the turn refers to; `how` says why ('as typed', 'reference', 'ellipsis', 'switch', 'llm')."""

    question: str
    papers: list[str] | None = None
    referents: list[str] = field(default_factory=list)
    how: str = "as typed"
    emphasis: list[str] = field(default_factory=list)  # words an ellipsis added ("memory" in "what about memory?")

    @property
    def depends(self) -> bool:
        return self.how != "as typed"


def strip_filler(question: str, names_any: Callable[[str], bool]) -> str:
    """The question without an opening filler ("And", "Also,", "Okay, switching topics:"). A preamble before a
    colon is dropped only when it names no paper and asks nothing ("Compare DuST and PTRM: ..." stays)."""
    q = _FILLER_RE.sub("", question, count=1)
    m = _PREAMBLE_RE.match(q)
    if m and len(m.group(1).split()) <= 4 and not names_any(m.group(1)) and not _QUESTION_START_RE.match(m.group(1)) \
            and (q[m.end() - 1] == ":" or _QUESTION_START_RE.match(q[m.end():])):
        q = q[m.end():]
    q = q.strip()
    return (q[:1].upper() + q[1:]) if q and q != question.strip() else (q or question.strip())


def _recent(history: Sequence[TurnRecord]) -> list[TurnRecord]:
    return [t for t in list(history)[-MAX_LOOKBACK:] if t.referents][::-1]  # newest first


def plural_referents(history: Sequence[TurnRecord]) -> list[str]:
    """The papers "they / both / these" mean: all of the last turn's when it had several, else the last two
    papers the chat was about, in the order they came up."""
    recent = _recent(history)
    if not recent:
        return []
    if len(recent[0].referents) >= 2:
        return list(recent[0].referents)
    out: list[str] = []
    for t in recent:
        for p in t.referents[:1]:
            if p not in out:
                out.append(p)
        if len(out) == 2:
            break
    return out[::-1]


def singular_referent(history: Sequence[TurnRecord], thing: str = "",
                      describes: Callable[[str, str], bool] | None = None) -> list[str]:
    """The paper "it / the method" means (the last turn's first paper); for "the benchmark" the latest paper
    whose abstract has one."""
    recent = _recent(history)
    if thing and describes is not None:
        for t in recent:
            for p in t.referents:
                if describes(p, thing):
                    return [p]
    return recent[0].referents[:1] if recent else []


def _join(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _possessive(label: str) -> str:
    return label + ("'" if label.endswith("s") else "'s")


def _substitute_plural(question: str, labels: list[str]) -> str:
    both = _join(labels)
    out, n = _PLURAL_RE.subn(lambda m: _plural_phrase(m.group(0), labels), question, count=1)
    if n == 0:  # a comparison with only they/them/their
        out = _THEY_RE.sub(lambda m: _pronoun_phrase(m.group(1), labels), question, count=1)
    # Any further they/their refer to the same papers; keep them (the labels are already named once).
    return out if out != question else f"{question.rstrip(' ?')} ({both})?"


def _plural_phrase(phrase: str, labels: list[str]) -> str:
    low = phrase.lower()
    joined = _join(labels)
    for lead in PLURAL_REFERENCE_LEADS:
        if low.startswith(lead + " "):
            return f"{phrase.split()[0]} of {joined}"
    if low.startswith("both"):
        return f"{phrase.split()[0]} {joined}"
    if low.startswith(("they ", "them ")):  # "they both"
        return f"{joined} both" if low.startswith("they") else joined
    if low.startswith("the former"):
        return labels[0]
    if low.startswith("the latter"):
        return labels[-1]
    return joined


def _pronoun_phrase(word: str, labels: list[str]) -> str:
    if word.lower() in POSSESSIVE_PRONOUNS:
        return " and ".join(_possessive(x) for x in labels) if len(labels) > 1 else _possessive(labels[0])
    return _join(labels)


def _substitute_singular(question: str, label: str, thing: str) -> str:
    if thing:
        out, n = _DEFINITE_THING_RE.subn(lambda m: f"{_possessive(label)} {m.group(1)}", question, count=1)
        if n:
            return out

    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return _possessive(label) if m.group(1).lower() == "its" else label
        return label

    out, n = _SINGULAR_RE.subn(one, question, count=1)
    if n == 0:
        out, n = _THEY_RE.subn(lambda m: _pronoun_phrase(m.group(1), [label]), question, count=1)
    return out if n else f"{question.rstrip(' ?')} ({label})?"


def resolve(  # noqa: PLR0911 - one return per way a turn is resolved (module docstring), tried in that order
        question: str, history: Sequence[TurnRecord], named: Callable[[str], list[str]],
        labels: Callable[[str], str], describes: Callable[[str, str], bool] | None = None) -> Resolution:
    """How to ask `question` after `history` (oldest turn first).

    `named(text)` gives the ids of indexed papers a text names, `labels(id)` a paper's label, and
    `describes(id, noun)` whether a paper's abstract has that thing ("benchmark").
    """
    body = strip_filler(question, lambda s: bool(named(s)))
    names = named(body)
    if not history:
        return Resolution(body, referents=names)
    what_about = _WHAT_ABOUT_RE.match(body)
    plural = bool(_PLURAL_RE.search(body)) or (bool(_THEY_RE.search(body)) and bool(COMPARISON_CUE_RE.search(body)))
    singular = bool(_SINGULAR_RE.search(body)) or (bool(_THEY_RE.search(body)) and not plural)
    if singular and not plural and _BOUND_POSSESSIVE_RE.match(body):
        # its/their bound inside the question is no reference, unless another one is there too ("it", "this X").
        rest = _POSSESSIVE_RE.sub(" ", body)
        singular = bool(_SINGULAR_RE.search(rest)) or bool(_THEY_RE.search(rest))
    previous = next((t for t in reversed(history) if t.searched), None)
    if names:
        if what_about and previous is not None and not _QUESTION_START_RE.match(what_about.group(1)):
            return _switch(previous, names, labels)
        if singular and not plural and COMPARISON_CUE_RE.search(body):
            # "How does it compare to GRAM?": the paper of the chat and the one named.
            earlier = [p for p in singular_referent(history) if p not in names]
            if earlier:
                return Resolution(_substitute_singular(body, labels(earlier[0]), ""), earlier + names,
                                  earlier + names, "reference")
        return Resolution(body, referents=names)
    if LOOKUP_OPENING_RE.match(body) and not _PLURAL_RE.search(body):
        return Resolution(body)  # "which paper ...?" asks for a paper: a new topic, whatever words it uses
    if plural:
        papers = plural_referents(history)
        if len(papers) >= 2:
            return Resolution(_substitute_plural(body, [labels(p) for p in papers]), papers, papers, "reference")
        singular = True
    thing_match = _DEFINITE_THING_RE.search(body)
    thing = thing_match.group(1).lower() if thing_match else ""
    if singular or thing:
        papers = singular_referent(history, thing, describes)
        if papers:
            return Resolution(_substitute_singular(body, labels(papers[0]), thing), papers, papers, "reference")
        return Resolution(body)
    if previous is not None and (what_about or (body != question.strip() and not _QUESTION_START_RE.match(body))
                                 or _PREPOSITION_START_RE.match(body)):
        return _ellipsis(previous, what_about.group(1) if what_about else body)
    return Resolution(body)


def _switch(previous: TurnRecord, names: list[str], labels: Callable[[str], str]) -> Resolution:
    """"what about B?" after a question about A: the same question about B."""
    text = previous.searched
    old = [labels(p) for p in previous.referents]
    for label in old:
        if re.search(re.escape(label), text, re.I):
            text = re.sub(re.escape(label), _join([labels(p) for p in names]), text, count=1, flags=re.I)
            return Resolution(text, names, names, "switch")
    return Resolution(f"{text.rstrip(' ?')} ({_join([labels(p) for p in names])})?", names, names, "switch")


def _ellipsis(previous: TurnRecord, fragment: str) -> Resolution:
    """"And on LIBERO?" / "what about memory?": the last question, continued by the fragment."""
    frag = fragment.strip().rstrip("?").strip()
    if _PREPOSITION_START_RE.match(frag) or (frag[:1].isupper() and frag[1:2].islower()):
        frag = frag[:1].lower() + frag[1:]  # the filler was dropped: "On LIBERO" continues a sentence
    base = previous.searched.strip().rstrip("?").rstrip()
    joiner = " " if _PREPOSITION_START_RE.match(frag) else ", and "
    papers = previous.referents or None
    added = [w for w in FRAGMENT_WORD_RE.findall(frag) if w.lower() not in FRAGMENT_FUNCTION_WORDS]
    return Resolution(f"{base}{joiner}{frag}?", papers, list(previous.referents), "ellipsis", added)


def acceptable_rewrite(rewrite: str, typed: str, history: Sequence[TurnRecord], named: Callable[[str], list[str]],
                       max_chars: int, resolved: Sequence[str] = ()) -> bool:
    """An LLM's rewrite of a turn is used only when it keeps every paper the user named, names the papers the
    turn's own references resolved to (a rewrite still saying "it" resolves nothing), adds none the conversation
    did not name, and is a question of sane size."""
    if not rewrite or len(rewrite) > max_chars:
        return False
    mine, theirs = set(named(typed)), set(named(rewrite))
    known = mine | {p for t in history for p in t.referents}
    return mine <= theirs and set(resolved) <= theirs and theirs <= known
