"""The direct answer: one short line that states what was asked, taken from the first quote.

A researcher reads the answer before the evidence ("3.04× lower latency", "Dynamic Motion Slider (DyMoS)",
"BRIGHT and BEIR"), so where the question asks for one thing the extractive answer starts with it. The line is
always a verbatim span of the quoted sentence — the citation check verifies it like any quote — and where no
span answers, there is no line. What is asked is read from the question's grammar (rag/answer/question.py):

- a number: the figure whose neighbouring words share most of the question's words, with its unit ("1,800
  test steps"), or a range ("from 87.4% to 98.75%");
- an expansion ("what does X stand for"): "Long Name (X)";
- names ("which datasets / benchmarks"): the sentence from its first name to its last ("BRIGHT and BEIR");
- parts ("what three components ..."): the enumeration ("A, B, and C");
- yes/no, only when the quote says it in so many words: "No: training-free" for "does it need training?"
  when the sentence calls the method training-free or says it works without it; "Yes: GRPO" when every quoted
  paper's sentence names the asked thing;
- which paper (a lookup): the cited paper's label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from dataclasses import dataclass

from rag.answer.calibration import AnswerConstants, answer_constants
from rag.answer.intent import Asks, Intent, Shape
from rag.answer.passages import PassageRead
from rag.answer.question import kind_nouns, specific_tokens
from rag.corpus.labels import initials_match, is_coined
from rag.text import (
    DEVICE_COUNT_WORDS,
    LITERAL_YES_NO_AUXILIARIES,
    NAME_TOKEN_RE,
    NONSPACE_RE,
    PLAIN_NEGATIONS,
    SMALL_NUMBER_WORDS,
    UNIT_STOP_WORDS,
    WORD_AT_RE,
    WORD_CURLY_RE,
    numbers,
    one_of,
    stem,
    stems,
    whole_word,
    word_stems,
)

MAX_SPAN_WORDS = 14  # a lead longer than this is no longer a glance
UNIT_WORDS = 3       # words kept after a figure as its unit ("fewer decoder-side tokens")
OTHER_QUOTE_MARGIN = 1.0  # closeness (one asked word right beside the figure) by which another quote must win
NEAR_WORDS = 5            # words on either side of a figure whose asked words count toward its closeness
EMPHASIS_WEIGHT = 4       # a word a chat turn added ("and memory?") counts this many times an asked word
NUMBER_WORD_PENALTY = 0.25  # a figure written as a word ("three") against one written in digits
VERSION_PENALTY = 0.5       # a number right after a capitalised name ("Qwen 2.5") is likelier a version
_NUMBER_WORD = r"\b" + one_of(SMALL_NUMBER_WORDS) + r"\b"
_NUMBER_TOKEN_RE = re.compile(_NUMBER_WORD + r"|(?<![\w.])(?<![A-Za-z][-–])[~≈<>≤≥]?[-+]?\$?\d[\d,.]*"
                              r"(?:\s?[%×x]|[KMB]\b|k\b)?(?:\s?[–-]\s?\d[\d,.]*\s?[%×x]?)?")
_NUM = r"[-+]?\$?\d[\d,.]*\d?\s?(?:%|×|x\b|pp\b|[KMB]\b)?"
# "1B and 3B", "2, 4 and 8": figures listed together answer together.
_LIST_OF_NUMBERS_RE = re.compile(r"(?<![\w.])\$?\d[\d,.]*[KMB%×]?(?:\s*,\s*\$?\d[\d,.]*[KMB%×]?)*,?\s+(?:and|or)\s+"
                                 r"\$?\d[\d,.]*[KMB%×]?(?![\w.])")
_RANGE_RE = re.compile(r"\bfrom\s+(?:approximately\s+|about\s+|around\s+|roughly\s+)?" + _NUM +
                       r"\s+to\s+(?:over\s+|above\s+|about\s+|nearly\s+|almost\s+|roughly\s+)?" + _NUM)
# Words that qualify a figure and only that ("over" and "about" also head a place or a topic: "over 1,800 steps").
_QUALIFIER_RE = re.compile(r"\b(?:below|above|up\s+to|approximately|nearly|almost|roughly|more\s+than|less\s+than|"
                           r"fewer\s+than|at\s+least|at\s+most)\s+$", re.I)
_YES_NO_RE = re.compile(r"^\s*" + one_of(LITERAL_YES_NO_AUXILIARIES) + r"\b", re.I)
_NEEDS_RE = re.compile(r"\b(?:need|needs|require|requires|required|use|uses|involve|involves|rely|relies|"
                       r"depend|depends)\b(?:\s+on)?\s+(?:any\s+|a\s+|an\s+|extra\s+|additional\s+|further\s+|"
                       r"more\s+|new\s+|re-?)*([A-Za-z][\w-]*)", re.I)
_ENUM_RE = re.compile(r"(?:[\w'’()\-–/]+(?:\s+[\w'’()\-–/]+){0,4},\s+){1,8}(?:and|or)\s+[\w'’()\-–/]+"
                      r"(?:\s+[\w'’()\-–/]+){0,4}"
                      r"|[\w'’()\-–/]+(?:\s+[\w'’()\-–/]+){0,3},?\s+and\s+[\w'’()\-–/]+(?:\s+[\w'’()\-–/]+){0,3}")


@dataclass
class Lead:
    text: str     # the line shown ("1,800 test steps", "No: training-free")
    span: str     # the verbatim part of the quoted sentence it rests on
    paper_id: str


def _trim(span: str) -> str:
    """A span without the punctuation around it, a full stop after a sentence's last figure included."""
    return re.sub(r"(?<=\d)\.$", "", span.strip().strip(",;:").strip())


def _closeness(sentence: str, at: int, end: int, asked: Set[str]) -> float:
    """How near the asked words stand to a figure: each asked word within five words on either side counts
    1 / distance (the nearest figure to "speedup" in "19.1 ms, a 3.04× speedup" is 3.04×)."""
    # Within the figure's own stretch of the sentence: a comma or semicolon ends one listed item ("27 tabular
    # datasets, five vision datasets").
    before = re.split(r"[,;:(]", sentence[:at])[-1]
    after = re.split(r"[,;:)]", re.sub(r"^\w+", "", sentence[end:]))[0]  # after a glued unit
    left = WORD_AT_RE.findall(before)[-NEAR_WORDS:][::-1]
    right = WORD_AT_RE.findall(after)[:NEAR_WORDS]
    score = 0.0
    for side in (left, right):
        for d, w in enumerate(side, 1):
            if stems(w) & asked:
                score += 1.0 / d
    return score


def number_span(sentence: str, asked: Set[str], given: frozenset[str] = frozenset(),
                prefer: Set[str] | None = None) -> str | None:
    """The figure of the sentence the question asks for, with its unit (see `scored_number_span`)."""
    found = scored_number_span(sentence, asked, given, prefer)
    return found[1] if found else None


_PERCENT_RE = re.compile(r"\b(?:per ?cent(?:age)?s?)\b|%", re.I)
_DEVICE_COUNT_RE = re.compile(r"(?<![\w.,])(\d[\d,]*|" + "|".join(DEVICE_COUNT_WORDS) + r")\s+$")  # "64 V100 GPUs"
_NEGATED_RE = re.compile(r"\b" + one_of(PLAIN_NEGATIONS) + r"\s+\S*$")


def scored_number_span(sentence: str, asked: Set[str], given: frozenset[str] = frozenset(),
                       prefer: Set[str] | None = None, percent: bool = False) -> tuple[float, str] | None:
    """The figure of the sentence the question asks for, with its unit (see the module docstring); `given` are
    the numbers the question itself states ("the 4B model"), which are not what it asks; `prefer` are the words
    a chat turn added to the question it continues ("and memory?"), which weigh most; `percent`: a percentage
    is asked ("by what percentage"), which a count beside it ("from 510 to 414, an 18.8% reduction") is not."""
    best: tuple[float, int, str] | None = None
    ranges = list(_RANGE_RE.finditer(sentence)) + list(_LIST_OF_NUMBERS_RE.finditer(sentence))
    for m in _NUMBER_TOKEN_RE.finditer(sentence):
        token = m.group(0).strip()
        if not numbers(token) or re.fullmatch(r"(?:19|20)\d\d", token) or numbers(token) <= given:
            continue  # a year, or a figure the question gives, is not the figure asked for
        score = _closeness(sentence, m.start(), m.end(), asked) - (NUMBER_WORD_PENALTY if token[0].isalpha() else 0.0)
        if prefer:
            score += EMPHASIS_WEIGHT * _closeness(sentence, m.start(), m.end(), prefer)
        if percent and "%" not in token and any("%" in t.group(0) for t in _NUMBER_TOKEN_RE.finditer(sentence)):
            continue  # a percentage asked, and the sentence gives one: a count beside it is not the answer
        if re.search(r"(?<![.!?]\s)\b[A-Z][a-z]+\s$", sentence[:m.start()]) and re.fullmatch(r"\d+(?:\.\d+)?", token):
            score -= VERSION_PENALTY  # "Claude Opus 4.6", "Qwen 2.5": a version, not a figure
        start, end = m.start(), m.end()
        for r in ranges:  # "from 87.4% to 98.75%", "1B and 3B": the whole range or list is the answer
            if r.start() <= m.start() < r.end():
                start, end = r.start(), r.end()
        if end == m.end() or sentence[end - 1].isdigit() or sentence[end - 1] in "%×":
            end = _unit_end(sentence, end)
        start = _span_start(sentence, start, end, asked)
        span = sentence[start:end]
        if best is None or score > best[0]:
            best = (score, -m.start(), _trim(span))
    return (best[0], best[2]) if best else None


def _unit_end(sentence: str, end: int) -> int:
    """Where a figure's span ends when the figure's unit follows it ("1,800 test steps", "+8.5pp accuracy", "1B
    and 3B parameters"): up to UNIT_WORDS words, to a function word or punctuation."""
    taken, base = 0, end
    for w in NONSPACE_RE.finditer(sentence[base:]):
        core = w.group(0).rstrip(",.;:)")
        if taken == UNIT_WORDS or not core or core.lower() in UNIT_STOP_WORDS or \
                (w.start() > 0 and not re.match(r"[A-Za-z]", core)):
            break
        end = base + w.start() + len(core)
        taken += w.start() > 0
        if core != w.group(0):
            break
    return end


def _span_start(sentence: str, start: int, end: int, asked: Set[str]) -> int:
    """Where a figure's span starts: at the qualifier before it ("below 30%", "up to 5.9×", "more than 3,000": part
    of the figure); a bare figure, which says nothing of what it measures, from the asked word before it in its
    clause ("AUROC from chance to 0.711", "discount factor is γ = 0.95")."""
    qualifier = _QUALIFIER_RE.search(sentence[:start])
    if qualifier:
        return qualifier.start()
    if re.fullmatch(r"[-+]?\d[\d,.]*", _trim(sentence[start:end])):
        clause = re.split(r"[,;:(]", sentence[:start])[-1]
        words = list(WORD_AT_RE.finditer(clause))[-NEAR_WORDS:]
        hit = next((w for w in words if stems(w.group(0)) & asked), None)
        if hit is not None:
            return start - len(clause) + hit.start()
    return start


def expansion_span(sentence: str, name: str) -> str | None:
    """"Long Name (NAME)" or "NAME (Long Name)" as written in the sentence."""
    for m in re.finditer(r"\(([^()]{1,60})\)", sentence):
        inside = m.group(1).strip()
        if inside.lower() != name.lower():
            before = sentence[:m.start()].rstrip()
            if before.lower().endswith(name.lower()) and initials_match(inside, name):
                return sentence[len(before) - len(name):m.end()]
            continue
        words = WORD_CURLY_RE.findall(sentence[:m.start()])[-8:]
        for i in range(len(words)):
            if initials_match(" ".join(words[i:]), name):
                first = words[i]
                at = sentence.rfind(first, 0, m.start())
                return sentence[at:m.end()]
    return None


def _is_name(w: str) -> bool:
    """A coined name ("BRIGHT", "Qwen3", "LIBERO"), not a plural acronym naming a kind ("LLMs")."""
    if w.endswith("s") and w[:-1].isupper():
        return False
    if len(w) < 3 and not any(c.isdigit() for c in w):
        return False  # "AI", "RL": two letters name a field, not a model or benchmark
    return is_coined(w) or (w[0].isupper() and any(c.isdigit() for c in w))


def names_span(sentence: str, label: str, kind: str = "") -> str | None:
    """The stretch of the sentence from its first coined name to its last (the paper's own label left out, and the
    asked kind's own nouns: "GPU" in "1.4m samples per GPU ... 64 V100 GPUs" names no GPU)."""
    nouns = {n.lower().removesuffix("s") for n in kind_nouns(kind)} if kind else set()
    hits = [m for m in NAME_TOKEN_RE.finditer(sentence)
            if _is_name(m.group(0)) and m.group(0).lower() not in label.lower()
            and m.group(0).lower().removesuffix("s") not in nouns]
    if not hits:
        return None
    # The first name and the ones listed with it ("BRIGHT and BEIR", "A, B, and C"): one enumeration; names
    # written one after the other are one name ("NVIDIA A6000").
    start, end = hits[0].start(), hits[0].end()
    for h in hits[1:]:
        if not re.fullmatch(r"\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|&\s*|/)\s*|\s+", sentence[end:h.start()]):
            break
        end = h.end()
    if nouns:
        # of a kind asked, the count before the name and the kind's noun after it: "64 V100 GPUs", "A6000 GPU"
        after = re.match(r"\s+([A-Za-z][\w-]*)", sentence[end:])
        if after and after.group(1).lower().removesuffix("s") in nouns:
            end += after.end()
            count = _DEVICE_COUNT_RE.search(sentence[:start])
            if count:
                start = count.start(1)
    return sentence[start:end]


def parts_span(sentence: str) -> str | None:
    """An enumeration of the sentence ("A, B, and C")."""
    found = [m.group(0) for m in _ENUM_RE.finditer(sentence)]
    found = [f for f in found if len(f.split()) <= 2 * MAX_SPAN_WORDS]
    return _trim(max(found, key=lambda f: f.count(","))) if found else None


def yes_no(question: str, sentences: list[str], asked_names: list[str]) -> tuple[str, str] | None:
    """("No", span) or ("Yes", span) when every sentence says it literally; None otherwise."""
    if not _YES_NO_RE.match(question):
        return None
    need = _NEEDS_RE.search(question)
    if need:
        root = re.escape(stem(need.group(1).lower()))
        spans = []
        for s in sentences:
            m = re.search(r"\b([\w-]*?" + root + r"\w*-free)\b|\bwithout\s+(?:any\s+)?(?:\w+\s+)?" + root + r"\w*", s,
                          re.I)
            if m and not _NEGATED_RE.search(s[:m.start()]):
                spans.append(m.group(0))
        if spans and len(spans) == len(sentences):
            return "No", spans[0]
    if asked_names and all(all(whole_word(n).search(s) for n in asked_names)
                           for s in sentences):
        return "Yes", asked_names[0]
    return None


def lead_for(question: str, intent: Intent, quotes: list[tuple[str, str, str, str]],
             emphasis: tuple[str, ...] = (), passages: Sequence[PassageRead] = (),
             constants: AnswerConstants | None = None) -> Lead | None:
    """The lead of an extractive answer; `quotes` are (paper id, label, title, sentence) in answer order,
    `emphasis` the words a chat turn added to the question it continues, and `passages` the passages the reader
    read (best first): where no rule finds the answer in the quote, a yes/no question's verdict leads."""
    if not quotes or intent.every_paper:
        return None
    # Names from a full text's paragraph: the names rule's span scored under the quote it comes from on held-out
    # QASPER questions (token F1 0.059 against 0.083 for the quote alone, 53 names questions of fold 0: it takes
    # a paper's reference marks and one name of a list), so a full text's quote stands alone.
    full_text = any(x.segment >= 0 for x in passages if x.paper.paper_id == quotes[0][0])
    found = _rule_lead(question, intent, quotes, emphasis, with_names=not full_text)
    if found is not None or not passages:
        return found
    return _reader_lead(question, intent, quotes, passages, constants or answer_constants())


def _reader_lead(question: str, intent: Intent, quotes: list[tuple[str, str, str, str]],
                 passages: Sequence[PassageRead], c: AnswerConstants) -> Lead | None:
    """A yes/no question's verdict from the passages the reader read (rag/answer/types/yes_no.py): "Yes: <clause
    of the first quote>", or "No (not stated in the text)" (`span` empty: nothing is quoted for it)."""
    # imported here: the answer types import this module's span finders
    from rag.answer.types import yes_no

    if intent.asks is not Asks.YES_NO:
        return None
    found = yes_no.verdict(quotes[0][0], quotes[0][3], passages, c.yes_at)
    if found is None:
        return None
    word, shown = found
    if shown:
        return Lead(f"{word}: {shown}", shown, quotes[0][0])
    return Lead("Yes" if word == "Yes" else yes_no.NOT_STATED, "", quotes[0][0])  # a verdict alone, then the quotes


def _rule_lead(question: str, intent: Intent, quotes: list[tuple[str, str, str, str]],
               emphasis: tuple[str, ...], with_names: bool = True) -> Lead | None:
    """The lead a rule finds in the first quote: a figure, an expansion, the paper's label, a literal yes/no, an
    enumeration or names (see the module docstring)."""
    pid, label, _title, sentence = quotes[0]
    if intent.shape is Shape.DEFINITION:
        return _expansion_lead(question, intent, pid, sentence)
    if intent.number is not None:
        return _number_lead(question, intent.number.units, intent.content, quotes, emphasis)
    names_paper = label.lower() in question.lower()
    if intent.lookup and not names_paper and len({q[0] for q in quotes}) == 1:
        return Lead(label, label, pid)
    names = [t for t in intent.specific if t.lower() not in label.lower()]
    by_paper: dict[str, str] = {}
    for q in quotes:  # all of a paper's quotes: the yes/no may be in its second one
        by_paper[q[0]] = (by_paper.get(q[0], "") + " " + q[3]).strip()
    verdict = yes_no(question, list(by_paper.values()), names)
    if verdict:
        return Lead(f"{verdict[0]}: {verdict[1]}", verdict[1], pid)
    if intent.names is not None and intent.names.parts and not intent.lookup:
        span = parts_span(sentence)
        if span:
            return Lead(span, span, pid)
    if intent.names is not None and with_names:
        span = names_span(sentence, label, intent.names.kind)
        return Lead(span, span, pid) if span else None
    return None


def _expansion_lead(question: str, intent: Intent, pid: str, sentence: str) -> Lead | None:
    """What a name stands for, as the quote writes it: every name the question spells, even one the collection
    shares ("RSP" beside "RSPO")."""
    for name in dict.fromkeys([*intent.specific, *specific_tokens(question)]):
        span = expansion_span(sentence, name)
        if span:
            return Lead(span, span, pid)
    return None


def _number_lead(question: str, units: Set[str], content: Set[str], quotes: list[tuple[str, str, str, str]],
                 emphasis: tuple[str, ...]) -> Lead | None:
    """Of the lead paper's quotes, the figure that stands nearest the asked words (ties: the likeliest quote)."""
    pid, label, title, _sentence = quotes[0]
    focus_words = word_stems(label) | word_stems(title)
    asked = (units - focus_words) or (content - focus_words) or content
    prefer = {s for w in emphasis for s in stems(w)}
    percent = bool(_PERCENT_RE.search(question))
    found = [f for q in quotes if q[0] == pid
             if (f := scored_number_span(q[3], asked, numbers(question), prefer, percent)) is not None]
    if not found:
        return None
    # the likeliest quote's figure, unless another quote's stands clearly nearer the asked words
    span = found[0][1] if found[0][0] >= max(f[0] for f in found) - OTHER_QUOTE_MARGIN else \
        max(found, key=lambda f: f[0])[1]
    return Lead(span, span, pid) if len(span.split()) <= MAX_SPAN_WORDS else None
