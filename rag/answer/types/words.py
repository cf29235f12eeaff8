"""What several answer types ask of a sentence's words: whether a paper uses a term (as written, in capitals),
whether a sentence names a model, dataset or device, and the asked noun with its kind's nouns."""

from __future__ import annotations

import re

from rag.answer.evidence import Vocabulary
from rag.answer.naming import FEW_PAPERS  # a name picks out its paper only if at most this many papers use it
from rag.answer.question import kind_nouns
from rag.answer.retrieve import PaperHit
from rag.corpus.labels import initials_match, is_coined
from rag.text import ALNUM2_RE, LETTER_TOKEN_RE, TOKEN_RE, alnum, any_word


def names_few(key: str, vocab: Vocabulary) -> bool:
    """Does a label matched in a question name its paper, rather than a topic many papers share? A topic
    label ("DNA damage") matched in a claim about DNA damage is not the claim naming that paper."""
    n = len(vocab.index.papers) if vocab.index is not None else 0
    words = ALNUM2_RE.findall(key)
    if not n or not words:
        return True
    return min(vocab.paper_share(w) for w in words) * n <= FEW_PAPERS


def present(token: str, papers: list[PaperHit], cased: bool = False) -> bool:
    """Does any of the papers use the token (`cased`: as written, where it is written in capitals)?"""
    if cased:
        return any(cased_in(token, p.text) or cased_in(token, p.label) or cased_in(token, p.title) for p in papers)
    t = alnum(token)
    return any(t and (t in alnum(p.text) or t in alnum(p.label) or t in alnum(p.title)) for p in papers)


def cased_in(word: str, text: str) -> bool:
    """Is a word the question writes in capitals ("BASE") written so in the text (not "base", "database")?"""
    core = word[:-1] if word.endswith("s") else word
    return bool(re.search(r"(?<![A-Za-z0-9])" + re.escape(core) + r"s?(?![a-z0-9])", text))

_PAREN_ACRONYM_RE = re.compile(r"\(([A-Za-z][\w-]*)\)")


def drop_definitions(sentence: str) -> str:
    """Remove acronym definitions ("conditional message passing (CMP)") from a sentence."""
    out = sentence
    for m in _PAREN_ACRONYM_RE.finditer(sentence):
        before = sentence[:m.start()].split()
        for n in range(1, min(6, len(before)) + 1):
            if initials_match(" ".join(before[-n:]), m.group(1).rstrip("s")):
                out = out.replace(" ".join(before[-n:]) + " " + m.group(0), " ")
                break
    return out


def names_something(sentence: str, label: str, vocab: Vocabulary, question: str = "") -> bool:
    """Does the sentence name a model, benchmark or dataset (other than the paper's own label)?

    An acronym being defined ("Vision-Language Models (VLMs)") names a concept, and so does a term most of
    the collection's papers use.
    """
    label_n = alnum(label)
    asked = {alnum(w) for w in LETTER_TOKEN_RE.findall(question)}  # the question's own words
    sentence = drop_definitions(sentence)
    for w in TOKEN_RE.findall(sentence)[1:]:
        if alnum(w) in (label_n, *asked):
            continue
        # A model or device number ("V100", "A6000", "2080Ti") is a name however many papers use it: full texts
        # mention the same hardware and baselines, which makes them shared vocabulary by paper counts.
        if name_token(w, vocab):
            return True
    return False


def noun_re(noun: str) -> re.Pattern[str]:
    """The asked noun in its singular or plural ("GPU", "GPUs"; "dataset", "datasets"), or a noun of what
    belongs to its kind ("hardware": "V100 GPUs", see `kind_nouns`)."""
    cores = tuple(n[:-1] if n.endswith("s") and len(n) > 3 else n for n in kind_nouns(noun))
    return any_word(cores, ending="(?:s|es)?", ignore_case=True)


def has_noun(text: str, noun: str) -> bool:
    return bool(noun_re(noun).search(text))


def name_token(w: str, vocab: Vocabulary) -> bool:
    """A model, benchmark, dataset or device name (see `names_something`)."""
    if re.fullmatch(r"[A-Z]+-?\d[\w.-]*|\d{3,}[A-Z][a-z]?", w):
        return True
    if w[0].isdigit() or vocab.common(w) or (w.endswith("s") and vocab.common(w[:-1])):
        return False
    return is_coined(w) or (w[0].isupper() and any(c.isdigit() for c in w)) or \
        bool(re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", w))
