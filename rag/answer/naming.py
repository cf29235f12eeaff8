"""Which indexed papers a question names, over the whole index (not only the retrieved papers).

A chat turn that names its papers does not refer back ("Also, what does CoRF speed up?"), and a question that
names a paper outside the chosen scope must be told so, not answered from an in-scope paper. Both need the
names of every indexed paper, so a question is matched against all their labels at once: each label and each
coined word of it ("FLASH" of "Realtime-VLA FLASH") is a run of whole tokens, looked up by the question's
token n-grams (a dict lookup per n-gram, whatever the number of papers).

A label made of the collection's ordinary words ("DNA damage" in a biology corpus) is a topic, not a name: it
names its paper only when its rarest word is used by few papers (`FEW_PAPERS`, as the extractive answerer
decides for the retrieved papers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag.corpus.labels import label_keys
from rag.text import ALNUM2_RE, NONSPACE_RE

if TYPE_CHECKING:
    from rag.answer.evidence import Vocabulary
    from rag.index.snapshot import LocalIndex
    from rag.index.store import CatalogEntry

# A label (or a name matched in a question: rag/answer/types/words.py) names its paper only if its rarest word is
# used by at most this many papers.
FEW_PAPERS = 3
MAX_KEY_TOKENS = 8
_EDGE_RE = re.compile(r"^[\"“”‘’'(\[{<]+|[\"“”‘’')\]}>.,;:!?]+$")
_POSSESSIVE_RE = re.compile(r"[’']s$", re.I)


def tokens(text: str) -> list[str]:
    """Whitespace tokens, lower-cased, without surrounding punctuation or a possessive 's."""
    out = []
    for raw in NONSPACE_RE.findall(text):
        t = _POSSESSIVE_RE.sub("", _EDGE_RE.sub("", raw)).lower()
        t = _EDGE_RE.sub("", t)
        if t:
            out.append(t)
    return out


@dataclass
class LabelIndex:
    """Every label key of the indexed papers as a token tuple -> the papers it names."""

    keys: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # paper id -> label
    longest: int = 1

    @classmethod
    def build(cls, papers: Mapping[str, CatalogEntry]) -> LabelIndex:
        out = cls()
        for pid, entry in papers.items():
            out.labels[pid] = entry.label
            for key in label_keys(entry.label):
                toks = tuple(tokens(key))
                if toks and len(toks) <= MAX_KEY_TOKENS:
                    owners = out.keys.setdefault(toks, [])
                    if pid not in owners:
                        owners.append(pid)
                    out.longest = max(out.longest, len(toks))
        return out

    def matches(self, question: str) -> list[tuple[str, str, int]]:
        """(paper id, the matched key as written in the label, token position) for every label key the
        question contains as whole tokens, longest match first at each position."""
        q = tokens(question)
        found: list[tuple[str, str, int]] = []
        covered: set[int] = set()
        for n in range(min(self.longest, len(q)), 0, -1):
            for i in range(len(q) - n + 1):
                if any(j in covered for j in range(i, i + n)):
                    continue
                owners = self.keys.get(tuple(q[i:i + n]))
                if owners:
                    covered.update(range(i, i + n))
                    found += [(pid, " ".join(q[i:i + n]), i) for pid in owners]
        return sorted(found, key=lambda x: x[2])


_INDEXES: dict[int, tuple[LocalIndex | None, LabelIndex]] = {}


def label_index(index: LocalIndex | None) -> LabelIndex:
    """The label index of a local index (built once per index version: a new version is a new object)."""
    got = _INDEXES.get(id(index))
    if got is None or got[0] is not index:
        if len(_INDEXES) > 4:
            _INDEXES.clear()
        got = _INDEXES[id(index)] = (index, LabelIndex.build(index.papers if index is not None else {}))
    return got[1]


def named_papers(question: str, index: LocalIndex | None, vocab: Vocabulary) -> list[str]:
    """Ids of the indexed papers the question names, in the order it names them.

    A key shared by more than `FEW_PAPERS` papers, or made only of words many papers use, names none of them.
    """
    if index is None:
        return []
    n = len(index.papers)
    out: list[str] = []
    by_key: dict[str, list[str]] = {}
    for pid, key, _ in label_index(index).matches(question):
        by_key.setdefault(key, []).append(pid)
    for key, owners in by_key.items():
        if len(owners) > FEW_PAPERS:
            continue
        words = ALNUM2_RE.findall(key)
        if words and n and min(vocab.paper_share(w) for w in words) * n > FEW_PAPERS:
            continue
        out += [p for p in owners if p not in out]
    return out
