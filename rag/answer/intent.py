"""What a question asks, as one typed value: the kind of answer (`Asks`) and, for the kinds that need them, the
details that kind reads (`NumberAsk`, `NamesAsk`).

`read_intent` reads it from the question's grammar (rag/answer/question.py holds the patterns: question words,
"how many", "stand for", "compare", auxiliary verbs); the answer types (rag/answer/types/) each take one kind.
The kinds are exclusive and tried in this order, the first that fits wins; beside the kind, `shape` is the
question's frame (a figure may be asked of a comparison) and `every_paper` says that every paper that fits is
asked for (also of a figure: "which papers report a speedup over 2x?").

CLAIM        a statement to verify ("X improves Y"), as citation lookups are phrased
NUMBER       a figure ("how many GPUs", "what speedup")
NAMES        names of a kind of thing ("which datasets", "what GPUs"), or the parts of something
DEFINITION   what a name stands for or is ("what does DyMoS stand for?")
COMPARISON   how named things differ ("compare A and B")
CONTRIBUTION what a paper proposes or how it works
LIMITATION   what limitation or problem it points out
PAPERS       every paper that fits ("which papers use GRPO?")
LOOKUP       which paper, method or benchmark ("which paper proposes ReLoop?", "is there a paper on X?")
YES_NO       a polar question ("Do they report results only on English data?"), not an alternative one
DESCRIPTION  anything else ("how is the data annotated?")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from rag.answer.question import Common, QuestionInfo, analyse
from rag.text import AUXILIARIES, one_of


class Shape(Enum):
    """The question's grammatical frame (rag/answer/question.py `question_shape`): what it does besides asking
    for a figure or names (a figure can be asked of a comparison, names of a definition's paper)."""

    QUESTION = "question"
    CLAIM = "claim"
    COMPARISON = "comparison"
    DEFINITION = "definition"
    CONTRIBUTION = "contribution"
    LIMITATION = "limitation"


class Asks(Enum):
    CLAIM = "claim"
    PAPERS = "papers"
    NUMBER = "number"
    NAMES = "names"
    DEFINITION = "definition"
    COMPARISON = "comparison"
    CONTRIBUTION = "contribution"
    LIMITATION = "limitation"
    YES_NO = "yes_no"
    LOOKUP = "lookup"
    DESCRIPTION = "description"


@dataclass(frozen=True)
class NumberAsk:
    """A figure is asked: of what (`units`, stems: "gpu"), which words its sentence must state (`quantity`:
    "learning rate"), acronyms of the unit ("LMs": "language models"), and whether it counts the unit."""

    units: frozenset[str]
    quantity: frozenset[str]
    acronyms: tuple[str, ...]
    counts: bool


@dataclass(frozen=True)
class NamesAsk:
    """Names are asked: of which kind (the noun as written: "GPUs", "datasets"; "" when not said), the words an
    answer must sit next to (`attribute`), whether coined names are expected (`strict`: models, datasets,
    benchmarks) and whether the parts of something are asked ("what three components")."""

    kind: str
    attribute: frozenset[str]
    strict: bool
    parts: bool


@dataclass(frozen=True)
class Intent:
    text: str
    asks: Asks
    shape: Shape = Shape.QUESTION
    content: frozenset[str] = frozenset()  # content stems, frame words removed
    words: frozenset[str] = frozenset()    # the same for whole words only
    specific: tuple[str, ...] = ()         # surface tokens that name something specific
    number: NumberAsk | None = None
    names: NamesAsk | None = None
    lookup: bool = False       # a paper can be the answer ("which paper / method ...")
    every_paper: bool = False  # every paper that fits is asked for ("which papers ..."), not one answer

    @property
    def compares(self) -> bool:
        return self.shape is Shape.COMPARISON


# A polar question opens with an auxiliary verb; "A or B?" asks to choose, not yes or no.
_POLAR_RE = re.compile(r"^\W*" + one_of(AUXILIARIES) + r"\b", re.I)
_ALTERNATIVE_RE = re.compile(r"\bor\b(?!\s+not\b)", re.I)


def is_polar(question: str) -> bool:
    """A yes/no question: opens with an auxiliary verb and does not offer alternatives ("A or B?")."""
    return bool(_POLAR_RE.match(question)) and not _ALTERNATIVE_RE.search(question)


def _asks(info: QuestionInfo) -> Asks:
    if info.shape == "claim":
        return Asks.CLAIM
    if info.wants_number:
        return Asks.NUMBER
    if info.wants_names:
        return Asks.NAMES
    by_shape = {"definition": Asks.DEFINITION, "comparison": Asks.COMPARISON, "contribution": Asks.CONTRIBUTION,
                "limitation": Asks.LIMITATION}
    if info.shape in by_shape:
        return by_shape[info.shape]
    if info.multi:
        return Asks.PAPERS
    if info.lookup:
        return Asks.LOOKUP
    return Asks.YES_NO if is_polar(info.text) else Asks.DESCRIPTION


def from_info(info: QuestionInfo) -> Intent:
    asks = _asks(info)
    number = NumberAsk(frozenset(info.units), frozenset(info.quantity), tuple(info.unit_acronyms), info.counts) \
        if info.wants_number else None
    names = NamesAsk(info.kind, frozenset(info.attribute), info.strict_names, info.parts) if info.wants_names else None
    return Intent(info.text, asks, Shape(info.shape), frozenset(info.content), frozenset(info.words),
                  tuple(info.specific), number, names, info.lookup, info.multi)


def read_intent(question: str, common: Common | None = None) -> Intent:
    """What the question asks (`common`: whether a token is the collection's common vocabulary)."""
    return from_info(analyse(question, common))
