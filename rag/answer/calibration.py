"""The answer stage's decisions on the reader's outputs, as fitted numbers (eval/fit_answer.py writes them to
rag/answer/fitted/answer.json, with the held-out figures of the fit; never edited by hand):

- `passage_weights`: how a passage's score is made from the reader's logit and the first stage's (the evidence
  scorer's best sentence probability, as a logit): a logistic, fitted on held-out passages;
- `abstain_below`: the best passage's probability under which the answer abstains;
- `second_passage_at`: a further passage of the same paper is quoted when it is at least this likely;
- `yes_at`: a yes/no question is answered "Yes" when the reader's yes-probability on the best passage is at
  least this, else "No";
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rag.answer import fitted


@dataclass(frozen=True)
class AnswerConstants:
    passage_weights: dict[str, float] = field(default_factory=lambda: {"reader": 1.0, "first": 0.0, "bias": 0.0},
                                              compare=False, hash=False)
    abstain_below: float = 0.0
    second_passage_at: float = 0.5
    yes_at: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@lru_cache(maxsize=1)
def answer_constants() -> AnswerConstants:
    """The shipped constants (defaults until eval/fit_answer.py has written the file)."""
    try:
        data = json.loads(fitted.read(fitted.ANSWER))
    except FileNotFoundError:
        return AnswerConstants()
    return AnswerConstants(**data)
