"""The default answerer: no LLM, only sentences quoted from the retrieved abstracts, each with its citation.

It picks the sentences that best answer the question (dense similarity of the sentence's chunk plus overlap
with the question's content words), names the paper's label for lookups, cites every matching paper for
questions that span papers, and abstains with a fixed sentence when the retrieved text does not contain what
was asked: a term no abstract mentions, a number no sentence gives, names a sentence does not list, or no
sentence close enough to the question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag import prompts
from rag.labels import COMMON_NAMES, initials_match, is_coined
from rag.question import QuestionInfo, analyse
from rag.retrieve import PaperHit, Retrieval
from rag.text import numbers, split_sentences, stem, stems

# Score of a sentence = cosine of its chunk with the question + LEX_WEIGHT * share of the question's content
# words it contains. Thresholds were set on tests/data/dev_questions.jsonl (see benchmarks/calibrate.py).
LEX_WEIGHT = 0.5
MIN_SCORE = 0.42          # below this the best sentence does not answer the question
MIN_COSINE = 0.32         # ... nor when its meaning is this far from the question (and no term anchors it)
MULTI_MIN_SCORE = 0.45    # a further paper joins a multi-paper answer above this ...
MULTI_RELATIVE = 0.75     # ... and above this share of the best paper's score
SHORT_QUESTION_WORDS = 4  # topic questions this short must contain their rarest word in the answer paper
MAX_SENTENCES = 2
SECOND_SENTENCE_RELATIVE = 0.9


@dataclass
class Candidate:
    paper: PaperHit
    sentence: str
    cosine: float
    lexical: float

    @property
    def score(self) -> float:
        return self.cosine + LEX_WEIGHT * self.lexical


@dataclass
class Quote:
    paper: PaperHit
    sentence: str


@dataclass
class Draft:
    """An extractive answer before numbering: quotes in order, or an abstention sentence."""

    quotes: list[Quote]
    abstention: str | None = None
    summary: str | None = None


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def label_keys(label: str) -> list[str]:
    """Ways a question may name a paper: its whole label, or a coined word of it ("FLASH", "SLG")."""
    keys = [label]
    keys += [w for w in re.split(r"\s+", label) if is_coined(w) and len(w) >= 3]
    return [k for k in keys if k]


def mentions(question: str, label: str) -> bool:
    q = question.lower()
    return any(re.search(r"(?<![\w-])" + re.escape(k.lower()) + r"(?![\w-])", q) for k in label_keys(label))


def _weight(words: set[str], idf: dict[str, float]) -> float:
    return sum(idf.get(w, 1.0) for w in words)


def _candidates(info: QuestionInfo, papers: list[PaperHit], exclude: set[str],
                idf: dict[str, float]) -> list[Candidate]:
    """Every sentence of the pool papers, scored by its chunk's cosine and IDF-weighted word overlap."""
    content = info.content - exclude
    total = _weight(content, idf)
    out: list[Candidate] = []
    for p in papers:
        label_stems = stems(p.label)
        for chunk in p.chunks:
            for sentence in split_sentences(chunk.text):
                have = stems(sentence) | label_stems
                lexical = _weight(content & have, idf) / total if total else 0.0
                out.append(Candidate(p, sentence, chunk.cosine, lexical))
    return out


def _rarest_missing(info: QuestionInfo, paper: PaperHit, idf: dict[str, float]) -> str | None:
    """For a short topic question ("paper on quantum machine learning"), its rarest word must be in the paper.

    Long descriptive questions paraphrase on purpose, so only short ones are held to this.
    """
    words = list(info.words)
    if not words or len(words) > SHORT_QUESTION_WORDS:
        return None
    rarest = max(words, key=lambda w: idf.get(w, 0.0))
    return None if rarest in stems(paper.text) | stems(paper.label) else rarest


def _present(token: str, papers: list[PaperHit]) -> bool:
    t = _norm(token)
    return any(t and (t in _norm(p.text) or t in _norm(p.label)) for p in papers)


_PAREN_ACRONYM_RE = re.compile(r"\(([A-Za-z][\w-]*)\)")


def _drop_definitions(sentence: str) -> str:
    """Remove acronym definitions ("conditional message passing (CMP)") from a sentence."""
    out = sentence
    for m in _PAREN_ACRONYM_RE.finditer(sentence):
        before = sentence[:m.start()].split()
        for n in range(1, min(6, len(before)) + 1):
            if initials_match(" ".join(before[-n:]), m.group(1).rstrip("s")):
                out = out.replace(" ".join(before[-n:]) + " " + m.group(0), " ")
                break
    return out


def _names_something(sentence: str, label: str) -> bool:
    """Does the sentence name a model, benchmark or dataset (other than the paper's own label)?

    An acronym being defined ("Vision-Language Models (VLMs)") names a concept, not a specific model.
    """
    label_n = _norm(label)
    sentence = _drop_definitions(sentence)
    for w in re.findall(r"[A-Za-z][\w.\-]*[\w]", sentence)[1:]:
        if _norm(w) == label_n or w in COMMON_NAMES or w.rstrip("s") in COMMON_NAMES:
            continue
        if is_coined(w) or (w[0].isupper() and any(c.isdigit() for c in w)) or re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", w):
            return True
    return False


def _has_number(sentence: str) -> bool:
    return bool(numbers(sentence))


def draft_answer(question: str, retrieval: Retrieval, info: QuestionInfo | None = None) -> Draft:
    """Choose the quotes that answer the question, or the reason to abstain."""
    info = info or analyse(question)
    papers = retrieval.papers
    if not papers:
        return Draft([], prompts.ABSTAIN_NO_PAPERS)

    focus = [p for p in papers if mentions(question, p.label)]
    focus_terms = {stem(w.lower()) for p in focus for k in label_keys(p.label) for w in re.findall(r"[\w-]+", k)}
    if not focus and info.specific and not info.multi:
        # A name the question uses ("PerturbRM") narrows the answer to the papers that contain it.
        focus = [p for p in papers if all(_present(t, [p]) for t in info.specific)]
    pool = focus if focus and not info.multi else papers

    # A question that names something no retrieved abstract mentions is not answered by the nearest paper.
    missing = [t for t in info.specific if not any(mentions(t, p.label) for p in focus) and not _present(t, pool)]
    if missing:
        return Draft([], prompts.ABSTAIN_MISSING_TERMS.format(terms=", ".join(f"“{t}”" for t in missing)))

    cands = _candidates(info, pool, focus_terms, retrieval.idf)
    if not cands:
        return Draft([], prompts.ABSTAIN_NO_MATCH)
    cands.sort(key=lambda c: c.score, reverse=True)

    if info.wants_number:
        return _numeric(info, cands, focus_terms)
    if info.wants_names:
        named = [c for c in cands if _names_something(c.sentence, "" if not focus else c.paper.label)
                 and info.attribute <= stems(c.sentence) | stems(c.paper.label)]
        if not named or named[0].score < MIN_SCORE:
            return Draft([], prompts.ABSTAIN_NO_NAMES.format(paper=cands[0].paper.label))
        return Draft([Quote(named[0].paper, named[0].sentence)])
    best = cands[0]
    # Anchored: the question names a paper or a term the papers contain, or (for a multi-paper question)
    # most of its words are in the best sentence.
    anchored = bool(focus) or bool(info.specific) or (info.multi and best.lexical >= 0.5)
    if not anchored and best.cosine < MIN_COSINE:
        return Draft([], prompts.ABSTAIN_NO_MATCH)
    missing_word = None if anchored or info.multi else _rarest_missing(info, best.paper, retrieval.idf)
    if missing_word:
        return Draft([], prompts.ABSTAIN_NO_MATCH)
    if best.score < MIN_SCORE and not (focus and info.content - focus_terms == set()):
        return Draft([], prompts.ABSTAIN_NO_MATCH)
    if info.multi:
        return _multi(info, cands)
    quotes = [Quote(best.paper, best.sentence)]
    for c in cands[1:]:
        if len(quotes) >= MAX_SENTENCES or c.score < SECOND_SENTENCE_RELATIVE * best.score:
            break
        if c.paper is best.paper and c.sentence != best.sentence and not info.lookup:
            quotes.append(Quote(c.paper, c.sentence))
    return Draft(quotes)


def _numeric(info: QuestionInfo, cands: list[Candidate], focus_terms: set[str]) -> Draft:
    """A number is asked for: only a sentence that gives one (for the thing asked about) can answer."""
    with_numbers = [c for c in cands if _has_number(c.sentence)]
    asked = info.units or (info.content - focus_terms)
    if asked:
        with_numbers = [c for c in with_numbers if asked & (stems(c.sentence) | stems(c.paper.label))]
    what = " ".join(sorted(info.units)) if info.units else "what was asked"
    if not with_numbers:
        return Draft([], prompts.ABSTAIN_NO_FIGURE.format(paper=cands[0].paper.label, what=f"“{what}”"
                                                          if info.units else what))
    best = with_numbers[0]
    if best.score < MIN_SCORE and not (asked and asked <= stems(best.sentence)):
        return Draft([], prompts.ABSTAIN_NO_FIGURE.format(paper=best.paper.label, what=what))
    quotes = [Quote(best.paper, best.sentence)]
    for c in with_numbers[1:MAX_SENTENCES]:
        if c.paper is best.paper and c.score >= SECOND_SENTENCE_RELATIVE * best.score:
            quotes.append(Quote(c.paper, c.sentence))
    return Draft(quotes)


def _multi(info: QuestionInfo, cands: list[Candidate]) -> Draft:
    """Every retrieved paper whose best sentence matches, not just the first."""
    best_per_paper: dict[str, Candidate] = {}
    for c in cands:
        best_per_paper.setdefault(c.paper.paper_id, c)
    top = cands[0].score
    key_terms = [t for t in info.specific]
    quotes = []
    for c in best_per_paper.values():
        has_key = bool(key_terms) and all(_norm(t) in _norm(c.paper.text + c.paper.label) for t in key_terms)
        if c is cands[0] or has_key or (c.score >= MULTI_MIN_SCORE and c.score >= MULTI_RELATIVE * top):
            quotes.append(Quote(c.paper, c.sentence))
    summary = "Matching papers" if len(quotes) > 1 else None
    return Draft(quotes, summary=summary)
