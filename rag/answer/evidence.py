"""Evidence selection: how strongly each sentence of the retrieved papers answers a question, which papers
that makes worth citing, and when nothing retrieved carries what was asked.

Every sentence gets features that mean the same on any corpus: its own dense similarity to the question,
BM25 of the sentence for the question (corpus idf from the local index), how much of the question's rare
vocabulary it and its paper hold, the paper's retrieval rank and fused score, where the sentence sits in
its abstract and how specific its own words are. A logistic model turns them into the probability that the
sentence is evidence for the question; a second one turns a paper's best sentences and rank into the
probability that the paper is relevant. Both were fitted by `eval/fit_evidence.py` on SciFact train claims
(gold rationale sentences) and part of eval/questions.jsonl, and their constants live in one file,
`rag/answer/fitted/evidence.json`, written by that script and never edited by hand. Logistic regression rather
than a grid over hand weights: there are a dozen features, the outputs are probabilities (so "cite a paper
when it is more likely relevant than not" is a decision rule, not one more threshold) and refitting on a
user's own corpus takes seconds.

A full text read from a PDF (a paper with a layout) is a run of sections, each scored like an abstract: a
sentence's place ("first", "position") and the question's rare terms around it ("paper_rare") are taken in its
section, where for an abstract they are taken in the abstract. Taken over a whole paper they say nothing
(every paper holds every term somewhere) or the wrong thing (its last sentences are appendices, not results).
Fragments the extraction leaves between sentences (list markers, pieces of formulas) are not candidates.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rag.answer import fitted
from rag.corpus.labels import initials_match
from rag.corpus.sections import parse_layout
from rag.text import LETTER_WORDS_RE, WORD_RE, WORD_START, sentences_of, stem, term_stems, terms, whole_word

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rag.answer.retrieve import PaperHit
    from rag.index.snapshot import LocalIndex

SENTENCE_FEATURES = ("cosine", "cosine_gap", "bm25", "bm25_rel", "overlap", "rare_share", "paper_rare",
                     "paper_rank", "paper_score", "first", "position", "specificity", "names_focus",
                     "defines_asked", "unseen", "introduces_asked", "after_intro_asked", "before_intro_limitation",
                     "early_limitation")
# The paper model also sees where each of the retriever's rankings put the paper (1 / rank, 0 when absent):
# sentence evidence and paper-level evidence (title and whole-abstract BM25, mean chunk vector) are fused here.
RANKINGS = ("chunks", "dense_chunks", "bm25_chunks", "bm25_paper", "bm25_title", "dense_paper", "dense_top2")
PAPER_FEATURES = ("best", "second", "best_gap", "paper_rank", "paper_score", "paper_rare", "names_focus",
                  *(f"rr_{name}" for name in RANKINGS))
BM25_K1, BM25_B = 1.2, 0.75  # the usual BM25 defaults (Robertson & Zaragoza 2009), as bm25s uses
RARE_SHARE = 0.6  # a question's word is one of its rare words when its idf is at least this share of the rarest's


@dataclass
class Constants:
    """The fitted numbers: two logistic models and the decision thresholds (see eval/fit_evidence.py)."""

    sentence_weights: dict[str, float]
    sentence_bias: float
    paper_weights: dict[str, float]
    paper_bias: float
    abstain_below: float        # best sentence probability under which the answer abstains
    cite_paper_at: float = 0.5  # a further paper is cited when it is more likely relevant than not
    second_sentence_at: float = 0.5  # a second sentence of a cited paper is quoted when likelier evidence than not
    missing_below: float = 0.5  # an asked term the corpus never uses: abstain when the best sentence is under this
    # A sentence's evidence strength (`strength`: evidence cards, grid cells); written by fit_evidence.py. A
    # citation lookup's strength is rag/answer/lookup.py's fitted model (eval/fit_lookup.py reports these as its
    # baseline).
    strong_at: float = 0.5
    weak_at: float = 0.0
    common_share: float = 0.15  # a term in more than this share of papers is the collection's vocabulary
    multi_paper_at: float = 0.5  # a list question cites every paper at least this likely relevant
    primary_by_evidence: bool = False  # lead with the paper the evidence favours, not the retriever's first
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@lru_cache(maxsize=4)
def _load(path: str) -> Constants:
    text = Path(path).read_text(encoding="utf-8") if path else fitted.read(fitted.EVIDENCE)
    return Constants(**json.loads(text))


def load_constants(path: Path | None = None) -> Constants:
    """The fitted constants (cached; default: the shipped rag/answer/fitted/evidence.json); a missing file is an
    installation error, not a silent default."""
    return _load(str(path) if path else "")


_override: Constants | None = None


def use_constants(constants: Constants | None) -> None:
    """Answer with other constants (cross-validation folds of the fitting script); None restores the file."""
    global _override
    _override = constants


def current_constants() -> Constants:
    return _override or load_constants()


# --- corpus statistics -----------------------------------------------------------------------------------

class Vocabulary:
    """Word statistics of the indexed corpus: BM25 idf of stems and the share of papers using a term.

    Everything the answerer knows about which words are rare, coined or the field's common vocabulary comes
    from here, so it adapts to whatever corpus was ingested.
    """

    def __init__(self, index: LocalIndex | None = None) -> None:
        self.index = index
        self._share: dict[str, float] = {}
        self._paper_of_row: NDArray[Any] | None = None
        self._keys: list[str] | None = None
        self._unseen: dict[str, bool] = {}
        self._rarities: dict[str, float] | None = None
        self._rarity_sums: dict[str, tuple[float, int]] = {}  # sentence -> (sum of rarities, stems)
        self.max_idf = math.log(max(2, index.size if index is not None else 2) + 1.0)

    def idf(self, words: set[str] | list[str]) -> dict[str, float]:
        if self.index is None:
            return {w: self.max_idf for w in words}
        return self.index.idf(words)

    def rarities(self) -> dict[str, float]:
        """`rarity` of every indexed term (a word missing from it has `unseen_rarity`): a sentence's
        specificity averages it over all the sentence's words."""
        if self._rarities is None:
            scale = self.max_idf
            self._rarities = {w: v / scale for w, v in self.index.idf_table.items()} \
                if self.index is not None else {}
        return self._rarities

    def rarity_sum(self, sentence: str, stems: tuple[str, ...]) -> tuple[float, int]:
        """Sum of `rarity` over a sentence's stems, and their number (kept: sentences recur across questions)."""
        got = self._rarity_sums.get(sentence)
        if got is None:
            if len(self._rarity_sums) > 65536:
                self._rarity_sums = {}
            rarity, unseen = self.rarities(), self.unseen_rarity
            got = self._rarity_sums[sentence] = (sum([rarity.get(w, unseen) for w in stems]), len(stems))
        return got

    @functools.cached_property
    def unseen_rarity(self) -> float:
        """`rarity` of a word no chunk contains."""
        return (self.index.idf(["\0"])["\0"] if self.index is not None else self.max_idf) / self.max_idf

    def rarity(self, word: str) -> float:
        """idf scaled to [0, 1] by the idf of a word no chunk contains."""
        return min(1.0, self.idf([word])[word] / self.max_idf)

    def _keys_with_prefix(self, prefix: str) -> list[str]:
        """Indexed tokens starting with a stem: "qwen" finds "qwen3", "llm" finds "llms" (BM25 tokens split
        on punctuation and keep digits, so a name is often only a prefix of the indexed token)."""
        import bisect

        if self._keys is None:
            self._keys = sorted(self.index.bm25.vocab_dict) if self.index is not None else []
        i = bisect.bisect_left(self._keys, prefix)
        out = []
        while i < len(self._keys) and self._keys[i].startswith(prefix):
            out.append(self._keys[i])
            i += 1
        return out

    def unseen(self, word: str) -> bool:
        """No indexed token starts with this stem: the corpus never uses the word."""
        if word not in self._unseen:
            self._unseen[word] = self.index is not None and len(word) >= 2 and not self._keys_with_prefix(word)
        return self._unseen[word]

    def paper_share(self, token: str) -> float:
        """Share of indexed papers whose chunks contain a token starting with the token's stem (0 if none)."""
        st = stem(token.lower())
        if st in self._share:
            return self._share[st]
        share = 0.0
        idx = self.index
        if idx is not None and idx.papers and len(st) >= 2:
            import numpy as np

            if self._paper_of_row is None:
                order = {pid: n for n, pid in enumerate(dict.fromkeys(idx.paper_ids))}
                self._paper_of_row = np.asarray([order[p] for p in idx.paper_ids])
            indptr, indices = idx.bm25.scores["indptr"], idx.bm25.scores["indices"]
            rows = [np.asarray(indices[indptr[i]:indptr[i + 1]])
                    for i in (idx.bm25.vocab_dict[k] for k in self._keys_with_prefix(st))]
            if rows:
                share = len(np.unique(self._paper_of_row[np.concatenate(rows)])) / len(idx.papers)
        self._share[st] = share
        return share

    def common(self, token: str, constants: Constants | None = None) -> bool:
        """A term shared by many papers ("LLM" in an NLP corpus, "cells" in a biology one) names none of them."""
        c = constants or current_constants()
        n = len(self.index.papers) if self.index is not None else 0
        share = self.paper_share(token)
        return share > c.common_share and share * n >= 2  # one paper's word is never shared vocabulary


_VOCABS: dict[int, Vocabulary] = {}


def vocabulary_for(index: LocalIndex | None) -> Vocabulary:
    """One Vocabulary per local index object (a new store version brings a new index and new statistics)."""
    key = id(index)
    vocab = _VOCABS.get(key)
    if vocab is None or vocab.index is not index:
        if len(_VOCABS) > 4:
            _VOCABS.clear()
        vocab = _VOCABS[key] = Vocabulary(index)
    return vocab


# --- sentence features -----------------------------------------------------------------------------------

@lru_cache(maxsize=65536)
def sentence_stems(sentence: str) -> tuple[str, ...]:
    """Stemmed content terms of a sentence, in order (repeats kept, for BM25 term frequency)."""
    return term_stems(sentence)


_PAREN_RE = re.compile(r"\(([^()]{1,80})\)")


def defines(sentence: str, name: str) -> bool:
    """Does the sentence say what `name` is: "Long Name (NAME)", "NAME (Long Name)", "NAME, a ...", "NAME is"?"""
    if not name:
        return False
    esc = re.escape(name)
    for m in _PAREN_RE.finditer(sentence):
        inside = m.group(1).strip()
        if inside.lower() == name.lower():
            before = WORD_RE.findall(sentence[:m.start()])[-8:]
            if any(initials_match(" ".join(before[i:]), name) for i in range(len(before))):
                return True
        if re.match(r"\s*" + esc + r"\s*$", sentence[:m.start()][-len(name) - 2:], re.I) and \
                initials_match(inside, name):
            return True
    return bool(re.search(WORD_START + esc + r"(?:\s*\([^()]*\))?(?:,\s*(?:a|an|the)\s|\s+(?:is|are)\s+(?:a|an|the)\s)",
                          sentence, re.I))


@dataclass
class Candidate:
    """One sentence of a retrieved paper with its features and evidence probability."""

    paper: PaperHit
    rank: int             # the paper's retrieval rank, 0 = first
    index: int            # the sentence's position in its abstract (or full text)
    sentence: str
    features: dict[str, float]
    prob: float = 0.0
    first: float = 0.0    # the first stage's probability, kept when the reader re-scores `prob` (passages.py)
    segment: int = -1     # the layout segment (paragraph) the sentence is in; -1 for an abstract

    @property
    def cosine(self) -> float:
        return self.features["cosine"]


@dataclass
class QuestionTerms:
    """What scoring needs from a question: stems, their idf, the rare ones, and the papers it names."""

    stems: list[str]
    idf: dict[str, float]
    rare: set[str]
    focus: set[str]        # paper ids the question names
    focus_names: dict[str, str]  # paper id -> the name used
    asks_definition: bool
    unseen: float
    asks_contribution: bool = False  # "what does X do / propose", "main idea of X"
    asks_limitation: bool = False    # "what limitation of ... does X point out", "what goes wrong with X"


def question_terms(question: str, papers: Sequence[PaperHit], vocab: Vocabulary, asks_definition: bool,
                   focus_names: dict[str, str], asks_contribution: bool = False,
                   asks_limitation: bool = False) -> QuestionTerms:
    words = list(dict.fromkeys(stem(t) for t in terms(question)))
    idf = vocab.idf(words)
    top = max(idf.values(), default=0.0)
    rare = {w for w in words if idf[w] >= RARE_SHARE * top} if top else set()
    total = sum(idf.values()) or 1.0
    unseen = sum(v for w, v in idf.items() if vocab.unseen(w)) / total
    return QuestionTerms(words, idf, rare, set(focus_names), focus_names, asks_definition, unseen,
                         asks_contribution, asks_limitation)


def _names(sentence: str, name: str) -> bool:
    return bool(whole_word(name, ignore_case=True).search(sentence))


def _sentences_of(paper: PaperHit, embed: Callable[[list[str]], list[list[float]]] | None,
                  qvec: NDArray[Any] | None) -> list[tuple[str, float]]:
    """(sentence, its cosine to the question) for every chunk of a paper; a chunk holding several
    sentences has them embedded one by one (through the caller's cache) when an embedder is given."""
    out: list[tuple[str, float]] = []
    pending: list[tuple[int, str]] = []
    for chunk in paper.chunks:  # in abstract order: the retriever sorts every paper's chunks
        parts = sentences_of(chunk.text)
        if len(parts) <= 1 or embed is None or qvec is None:
            out += [(s, chunk.cosine) for s in parts]
            continue
        for s in parts:
            pending.append((len(out), s))
            out.append((s, chunk.cosine))
    if pending and embed is not None and qvec is not None:  # (pending only with both)
        import numpy as np

        vecs = np.asarray(embed([s for _, s in pending]), dtype=np.float32)
        sims = vecs @ qvec
        for (i, s), sim in zip(pending, sims):
            out[i] = (s, float(sim))
    return out


PROSE_WORDS = 3  # a statement has a subject, a verb and what it says: fewer words is a list marker or a formula


def prose(sentence: str) -> bool:
    """Does a sentence read as a statement? A full text's extraction leaves list markers ("2."), pieces of
    formulas ("R to obtain q 2 R .") and table rows between its sentences: they share no word with a question,
    yet their rare tokens (digits, symbols) make them look specific. Evidence is a statement: at least
    PROSE_WORDS words of two letters or more, and letters for at least half of its characters."""
    if len(LETTER_WORDS_RE.findall(sentence)) < PROSE_WORDS:
        return False
    visible = [ch for ch in sentence if not ch.isspace()]
    return sum(ch.isalpha() for ch in visible) >= 0.5 * len(visible)


@lru_cache(maxsize=256)
def _layout_marks(layout: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Where each layout segment starts, and its section's number: a section running over a page break is
    two segments of one section."""
    marks = parse_layout(layout)
    ids: list[int] = []
    for i, (_o, _p, section) in enumerate(marks):
        ids.append(ids[-1] if i and section == marks[i - 1][2] else len(ids) and ids[-1] + 1)
    return tuple(o for o, _p, _s in marks), tuple(ids)


def chunk_segments(paper: PaperHit) -> list[int]:
    """The layout segment (a full text's paragraph, or a PDF section's text on one page) each of a paper's chunks
    is in; all 0 for a paper without a layout. Chunks never cross a segment (rag/index/chunking.py), so each
    chunk's start, found in the paper's text after the previous chunk's, places it."""
    marks, _ids = _layout_marks(getattr(paper, "layout", "") or "")
    if len(marks) <= 1:
        return [0] * len(paper.chunks)
    text = paper.text
    out, at = [], 0
    for chunk in paper.chunks:
        head = chunk.text[:40]
        found = text.find(head, at)
        if found < 0:
            found = text.find(head)
        if found >= 0:
            at = found
        out.append(max(0, bisect.bisect_right(marks, at) - 1))
    return out


def chunk_sections(paper: PaperHit, segs: list[int] | None = None) -> list[int]:
    """The section each of a paper's chunks is in (consecutive segments of one section, a section running over
    a page break, are one section); all 0 for a paper without a layout (an abstract is one section)."""
    _marks, ids = _layout_marks(getattr(paper, "layout", "") or "")
    segs = chunk_segments(paper) if segs is None else segs
    return [ids[i] if i < len(ids) else 0 for i in segs] if len(ids) > 1 else [0] * len(segs)


def _sentence_sections(paper: PaperHit, sections: list[int]) -> list[int]:
    """The section (or segment) of each sentence `_sentences_of` returns for a paper (its chunk's)."""
    return [sec for chunk, sec in zip(paper.chunks, sections) for _ in sentences_of(chunk.text)]


class _Sentence(NamedTuple):
    """A prose sentence of a retrieved paper, placed in its paper: what `candidates` scores."""

    paper: PaperHit
    rank: int                 # the paper's retrieval rank, 0 = first
    at: int                   # the sentence's position in its section (an abstract is one section)
    text: str
    cosine: float
    stems: tuple[str, ...]
    section: tuple[str, int]  # (paper id, section number)
    segment: int              # the layout segment (paragraph) it is in; -1 for a paper without a layout
    order: int                # the sentence's position in its paper (quotes of a paper are shown in this order)


def _layered(paper: PaperHit) -> bool:
    """A full text read with its layout (more than one segment)."""
    return len(_layout_marks(getattr(paper, "layout", "") or "")[0]) > 1


def _sentences(papers: Sequence[PaperHit], embed: Callable[[list[str]], list[list[float]]] | None,
               qvec: NDArray[Any] | None) -> list[_Sentence]:
    """The prose sentences of the papers, in retrieval order, each placed in its section and segment."""
    out: list[_Sentence] = []
    for rank, p in enumerate(papers):
        start = len(out)
        segs = chunk_segments(p)
        layered = _layered(p)
        in_section: dict[int, int] = {}
        for (s, cos), seg, sec in zip(_sentences_of(p, embed, qvec), _sentence_sections(p, segs),
                                      _sentence_sections(p, chunk_sections(p, segs))):
            if not prose(s):
                continue
            j = in_section.get(sec, 0)
            in_section[sec] = j + 1
            out.append(_Sentence(p, rank, j, s, cos, sentence_stems(s), (p.paper_id, sec), seg if layered else -1,
                                 len(out) - start))
    return out


def _bm25(rows: Sequence[_Sentence], hits: Sequence[frozenset[str]], q_idf: list[tuple[str, float]],
          total_idf: float) -> list[float]:
    """BM25 of each sentence for the question's terms (its hits among them), over the question's total idf."""
    avgdl = sum(len(r.stems) for r in rows) / len(rows) or 1.0
    k1, norm = BM25_K1, BM25_K1 * BM25_B / avgdl
    out: list[float] = []
    for r, hit in zip(rows, hits):
        st = r.stems
        score = 0.0
        if hit:
            base = BM25_K1 * (1 - BM25_B) + norm * len(st)
            for w, idf in q_idf:
                if w in hit:
                    tf = st.count(w)
                    score += idf * tf * (k1 + 1) / (tf + base)
        out.append(score / total_idf)
    return out


def _paper_rare(papers: Sequence[PaperHit], rows: Sequence[_Sentence], hits: Sequence[frozenset[str]],
                qt: QuestionTerms, label_stems: dict[str, set[str]], rare_terms: list[str],
                rare_total: float) -> dict[tuple[str, int], float]:
    """Per section of a paper, the share of the question's rare terms (by idf) present in it or in the paper's
    label and title. A paper holding all of its chunks has its text's terms in its sentences' (chunks split at
    whitespace), which are stemmed already; an abstract's section is its whole text."""
    layered = {p.paper_id for p in papers if _layered(p)}
    rare_q = set(qt.rare)
    in_paper: dict[tuple[str, int], set[str]] = {}  # the rare question terms in the sentences of papers held whole
    for r, hit in zip(rows, hits):
        if getattr(r.paper, "complete", False) or r.paper.paper_id in layered:
            in_paper.setdefault(r.section, set()).update(hit & rare_q)
    out: dict[tuple[str, int], float] = {}
    for p in papers:
        named = label_stems[p.paper_id] | set(sentence_stems(getattr(p, "title", "")))
        for key in dict.fromkeys(r.section for r in rows if r.section[0] == p.paper_id):
            text = in_paper[key] if key in in_paper else set() if p.paper_id in layered \
                else set(sentence_stems(p.text))
            out[key] = sum(qt.idf[w] for w in rare_terms if w in text | named) / rare_total
    return out


def _introductions(rows: Sequence[_Sentence], qt: QuestionTerms) -> dict[tuple[str, int], int]:
    """Asked what a named paper does or what limitation it points out: per section, where the paper first names
    the asked method ("We introduce X, ..."). Abstracts state the problem before they name their method and say
    how it works right after, so the naming sentence, the next one and those before it are features (fitted):
    the answer is sometimes the naming sentence, sometimes the next one, and sometimes neither."""
    intro: dict[tuple[str, int], int] = {}
    if qt.asks_contribution or qt.asks_limitation:
        for r in rows:
            name = qt.focus_names.get(r.paper.paper_id, "")
            if name and r.section not in intro and _names(r.text, name):
                intro[r.section] = r.at
    return intro


def candidates(question: str, papers: Sequence[PaperHit], vocab: Vocabulary, qt: QuestionTerms,
               constants: Constants | None = None, embed: Callable[[list[str]], list[list[float]]] | None = None,
               query_vector: Sequence[float] | None = None) -> list[Candidate]:
    """Every sentence of the retrieved papers with its features and evidence probability.

    A full text read with its layout is a run of sections, each like an abstract: the features that place a
    sentence in its paper (first, position, the question's rare terms in its paper) are taken in its section,
    since a whole paper holds every term and its last pages are appendices, not results. A paper without a
    layout is one section, so abstracts score as they were fitted (on SciFact abstracts)."""
    c = constants or current_constants()
    qvec = None
    if query_vector is not None and embed is not None:
        import numpy as np

        qvec = np.asarray(query_vector, dtype=np.float32)
    rows = _sentences(papers, embed, qvec)
    if not rows:
        return []
    qset = set(qt.stems)
    # Sums over the question's terms run in the question's word order, never a set's: set order follows string
    # hashing, which changes per process, and float sums in another order differ in their last bits (enough to
    # swap two near-tied papers; tests/test_extractive.py answers every question under two hash seeds).
    q_terms = list(dict.fromkeys(qt.stems))
    rare_terms = [w for w in q_terms if w in qt.rare]
    total_idf = sum(qt.idf.values()) or 1.0
    rare_total = sum(qt.idf[w] for w in rare_terms) or 1.0
    top_score = max((p.score for p in papers), default=1.0) or 1.0
    n_of_section: dict[tuple[str, int], int] = {}
    for r in rows:
        n_of_section[r.section] = n_of_section.get(r.section, 0) + 1
    label_stems = {p.paper_id: set(sentence_stems(p.label)) for p in papers}
    hits = [frozenset(r.stems) & qset for r in rows]  # the question's terms in each sentence
    paper_rare = _paper_rare(papers, rows, hits, qt, label_stems, rare_terms, rare_total)
    rarity = vocab.rarities()
    unseen_rarity = vocab.unseen_rarity
    max_cos = max(r.cosine for r in rows)
    intro = _introductions(rows, qt)
    q_idf = [(w, qt.idf[w]) for w in q_terms]
    bm25s_ = _bm25(rows, hits, q_idf, total_idf)
    max_bm25 = max(bm25s_) or 1.0
    rare_idf = [(w, qt.idf[w]) for w in rare_terms]
    label_q = {pid: stems_ & qset for pid, stems_ in label_stems.items()}
    out: list[Candidate] = []
    for r, bm, hit in zip(rows, bm25s_, hits):
        p, j, s, key = r.paper, r.at, r.text, r.section
        present = hit | label_q[p.paper_id]
        overlap = sum(v for w, v in q_idf if w in present) / total_idf if present else 0.0
        rare_share = sum(v for w, v in rare_idf if w in present) / rare_total if present else 0.0
        # Mean rarity of the sentence's words that are not the question's: the sum over all its words is
        # kept per sentence (it does not depend on the question), less the question words it holds.
        total, count = vocab.rarity_sum(s, r.stems)
        for w in q_terms if hit else ():
            if w in hit:
                k = r.stems.count(w)
                total -= k * rarity.get(w, unseen_rarity)
                count -= k
        name = qt.focus_names.get(p.paper_id, "")
        n = n_of_section[key]
        features = {
            "cosine": r.cosine, "cosine_gap": r.cosine - max_cos, "bm25": bm, "bm25_rel": bm / max_bm25,
            "overlap": overlap, "rare_share": rare_share, "paper_rare": paper_rare[key],
            "paper_rank": 1.0 / (1 + r.rank), "paper_score": p.score / top_score,
            "first": 1.0 if j == 0 else 0.0, "position": j / (n - 1) if n > 1 else 0.0,
            "specificity": total / count if count else 0.0,
            "names_focus": 1.0 if p.paper_id in qt.focus else 0.0,
            "defines_asked": 1.0 if qt.asks_definition and name and defines(s, name) else 0.0,
            "unseen": qt.unseen,
            "introduces_asked": 1.0 if qt.asks_contribution and intro.get(key, -2) == j else 0.0,
            "after_intro_asked": 1.0 if qt.asks_contribution and intro.get(key, -2) == j - 1 else 0.0,
            "before_intro_limitation": 1.0 if qt.asks_limitation and j < intro.get(key, -1) else 0.0,
            "early_limitation": (1.0 - (j / (n - 1) if n > 1 else 0.0)) if qt.asks_limitation else 0.0,
        }
        out.append(Candidate(p, r.rank, r.order, s, features, segment=r.segment))
    _score(out, c)
    return out


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _logistic(features: dict[str, float], weights: dict[str, float], bias: float) -> float:
    return _sigmoid(bias + sum([weights.get(k, 0.0) * v for k, v in features.items()]))


def _score(cands: list[Candidate], c: Constants) -> None:
    """`_logistic` for every candidate, with the weights laid out once in the features' order (`candidates` builds
    every feature dict from one literal): the same sum, in the same order, without a dict lookup per feature."""
    keys: tuple[str, ...] = ()
    weights: list[float] = []
    bias = c.sentence_bias
    for cand in cands:
        f = cand.features
        if tuple(f) != keys:
            keys = tuple(f)
            weights = [c.sentence_weights.get(k, 0.0) for k in keys]
        cand.prob = cand.first = _sigmoid(bias + sum(map(operator.mul, weights, f.values())))


def paper_features(cands: Sequence[Candidate]) -> dict[str, dict[str, float]]:
    """Per paper: its best and second-best sentence probabilities, the gap to the best paper, rank, score."""
    by_paper: dict[str, list[Candidate]] = {}
    for cand in cands:
        by_paper.setdefault(cand.paper.paper_id, []).append(cand)
    # the first stage's probabilities: the paper model was fitted on them (the reader re-scores `prob`)
    top = max((cand.first for cand in cands), default=0.0)
    out = {}
    for pid, cs in by_paper.items():
        probs = sorted((x.first for x in cs), reverse=True)
        f0 = cs[0].features
        ranks = getattr(cs[0].paper, "ranks", {}) or {}
        out[pid] = {"best": probs[0], "second": probs[1] if len(probs) > 1 else 0.0, "best_gap": probs[0] - top,
                    "paper_rank": f0["paper_rank"], "paper_score": f0["paper_score"],
                    "paper_rare": f0["paper_rare"], "names_focus": f0["names_focus"],
                    **{f"rr_{n}": 1.0 / ranks[n] if ranks.get(n) else 0.0 for n in RANKINGS}}
    return out


def paper_probabilities(cands: Sequence[Candidate], constants: Constants | None = None) -> dict[str, float]:
    """Probability that each retrieved paper is relevant, from its evidence and its rank."""
    c = constants or current_constants()
    return {pid: _logistic(f, c.paper_weights, c.paper_bias) for pid, f in paper_features(cands).items()}


def strength(prob: float, constants: Constants | None = None) -> str:
    """'strong', 'weak' or 'none' for one sentence's evidence probability, on the evidence scorer's thresholds:
    how well a quoted sentence carries a question (the UI's evidence cards, the grid's typed columns). A citation
    lookup's strength weighs a paper against the other hits and has its own model (rag/answer/lookup.py)."""
    c = constants or current_constants()
    return "strong" if prob >= c.strong_at else "weak" if prob >= max(c.weak_at, c.abstain_below) else "none"
