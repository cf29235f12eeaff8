"""Every fixed sentence and prompt the assistant uses, in one place.

The abstention sentence is a fixed prefix (as PaperQA2's "cannot answer" sentinel) so that the citation
check, the eval and the UI can recognise an abstention in any mode.
"""

from __future__ import annotations

ABSTAIN_PREFIX = "The indexed abstracts don't say"

ABSTAIN_NO_PAPERS = ABSTAIN_PREFIX + " anything on this: no paper in the index matches the question."
ABSTAIN_MISSING_TERMS = ABSTAIN_PREFIX + " anything about {terms}."
ABSTAIN_NO_FIGURE = ABSTAIN_PREFIX + " this: {paper}'s abstract gives no figure for {what}."
ABSTAIN_NO_NAMES = ABSTAIN_PREFIX + " this: {paper}'s abstract does not name them."
ABSTAIN_NO_MATCH = ABSTAIN_PREFIX + " this: no sentence in the closest abstracts answers it."
ABSTAIN_UNSUPPORTED = ABSTAIN_PREFIX + " this: no sentence of the generated answer could be traced to the sources."


def is_abstention(text: str) -> bool:
    return text.strip().startswith(ABSTAIN_PREFIX)
