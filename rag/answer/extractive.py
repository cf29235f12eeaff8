"""The default answerer: no LLM, only sentences quoted from the retrieved abstracts, each with its citation.

Which sentences, which papers and whether to answer at all come from the evidence scorer (rag/answer/evidence.py:
fitted probabilities that a sentence is evidence and that a paper is relevant). This module adds what the
question's shape asks for, read from its grammar:
- a paper the question names narrows the answer to that paper; a comparison quotes each named paper;
- a definition ("what does X stand for") quotes the sentence that spells X out;
- a contribution or limitation quotes the paper's two most probable evidence sentences;
- a list question cites every paper whose evidence passes, not only the first;
- any other question or claim cites the retriever's first paper and each further paper that is more likely
  relevant than not.
It abstains with a fixed sentence, naming the closest papers, when the retrieved text does not carry what
was asked: a term the corpus never uses, a number no sentence gives, names no sentence lists, or no sentence
likely enough to be evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from rag import prompts
from rag.answer.evidence import Candidate, Constants, Vocabulary, candidates, current_constants, defines, \
    paper_probabilities, question_terms
from rag.corpus.sections import parse_layout, section_of
from rag.corpus.labels import initials_match, is_coined, label_keys, mentions, name_used
from rag.answer.lead import parts_span, scored_number_span
from rag.answer.question import QUANTITY_NOUNS, QuestionInfo, analyse, asked_preposition, capitals, kind_nouns, \
    kind_phrase, specific_tokens
from rag.answer.retrieve import PaperHit, Retrieval
from rag.text import STOPWORDS, numbers, stem, stems, terms

SHORT_QUESTION_WORDS = 4  # topic questions this short must contain their rarest word in the answer paper
MAX_SENTENCES = 2         # quotes per paper
CLOSEST_SHOWN = 3         # papers an abstention names
CLOSEST_CHARS = 140       # ... with this much of their best sentence


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
    info: QuestionInfo | None = None  # what the question asked (the lead line reads it)
    best: Quote | None = None  # the likeliest quote, when the quotes are shown in another order


_NOT_ALNUM_RE = re.compile(r"[^a-z0-9]")


@lru_cache(maxsize=4096)
def _norm(s: str) -> str:
    """Lower-cased letters and digits only (cached: a paper's whole text is normalised for every term checked)."""
    return _NOT_ALNUM_RE.sub("", s.lower())


FEW_PAPERS = 3  # a name matched in a question picks out its paper only if at most this many papers use it


def _names_few(key: str, vocab: Vocabulary) -> bool:
    """Does a label matched in a question name its paper, rather than a topic many papers share? A topic
    label ("DNA damage") matched in a claim about DNA damage is not the claim naming that paper."""
    n = len(vocab.index.papers) if vocab.index is not None else 0
    words = re.findall(r"[A-Za-z0-9]{2,}", key)
    if not n or not words:
        return True
    return min(vocab.paper_share(w) for w in words) * n <= FEW_PAPERS


def _present(token: str, papers: list[PaperHit], cased: bool = False) -> bool:
    """Does any of the papers use the token (`cased`: as written, where it is written in capitals)?"""
    if cased:
        return any(_cased_in(token, p.text) or _cased_in(token, p.label) or _cased_in(token, p.title) for p in papers)
    t = _norm(token)
    return any(t and (t in _norm(p.text) or t in _norm(p.label) or t in _norm(p.title)) for p in papers)


def _cased_in(word: str, text: str) -> bool:
    """Is a word the question writes in capitals ("BASE") written so in the text (not "base", "database")?"""
    core = word[:-1] if word.endswith("s") else word
    return bool(re.search(r"(?<![A-Za-z0-9])" + re.escape(core) + r"s?(?![a-z0-9])", text))


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


def _names_something(sentence: str, label: str, vocab: Vocabulary, question: str = "") -> bool:
    """Does the sentence name a model, benchmark or dataset (other than the paper's own label)?

    An acronym being defined ("Vision-Language Models (VLMs)") names a concept, and so does a term most of
    the collection's papers use.
    """
    label_n = _norm(label)
    asked = {_norm(w) for w in re.findall(r"[A-Za-z][\w.\-]*[\w]", question)}  # the question's own words
    sentence = _drop_definitions(sentence)
    for w in re.findall(r"[A-Za-z0-9][\w.\-]*[\w]", sentence)[1:]:
        if _norm(w) in (label_n, *asked):
            continue
        # A model or device number ("V100", "A6000", "2080Ti") is a name however many papers use it: full texts
        # mention the same hardware and baselines, which makes them shared vocabulary by paper counts.
        if _name_token(w, vocab):
            return True
    return False


def _noun_re(noun: str) -> re.Pattern[str]:
    """The asked noun in its singular or plural ("GPU", "GPUs"; "dataset", "datasets"), or a noun of what
    belongs to its kind ("hardware": "V100 GPUs", see `kind_nouns`)."""
    cores = [n[:-1] if n.endswith("s") and len(n) > 3 else n for n in kind_nouns(noun)]
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(c) for c in cores) + r")(?:s|es)?(?![\w-])", re.I)


def _has_noun(text: str, noun: str) -> bool:
    return bool(_noun_re(noun).search(text))


def _full_text(paper: PaperHit) -> bool:
    """A paper read with its sections (a PDF), not an abstract alone: an abstract leaves kind nouns out
    ("evaluated on BEIR"), a whole paper that used a dataset or a GPU writes the word somewhere."""
    return len(parse_layout(paper.layout or "")) > 1


KIND_WINDOW = 3  # words on either side of the asked noun a name of that kind is written within


def _kind_names(text: str, noun: str, label: str, vocab: Vocabulary, question: str) -> set[str]:
    """The names written within a few words of the asked noun, in the same clause ("NVIDIA A6000 GPU", "the
    Multiface dataset [66]", "encoded by the ResNet-v2-101 encoder", "datasets such as BEIR")."""
    label_n = _norm(label)
    asked = {_norm(w) for w in re.findall(r"[A-Za-z][\w.\-]*[\w]", question)}
    out: set[str] = set()
    for m in _noun_re(noun).finditer(text):
        # asides left out on the left ("V100 (32GB) GPUs", "ResNet v2 101 architecture [37]"), kept on the right
        # where they often are the name ("GPUs (V100)"); a clause ends at punctuation
        before = re.sub(r"\([^()]*\)|\[[^\]]*\]", " ", text[max(0, m.start() - 200):m.start()])
        opening = not re.search(r"[;:,(]", before) and (m.start() <= 200 or bool(re.search(r"[.!?]\s", before)))
        before = re.split(r"[;:,(]|[.!?]\s", before)[-1]
        after = re.split(r"[;,)]|[.!?](?:\s|$)", text[m.end():m.end() + 200])[0]
        left = re.findall(r"[A-Za-z0-9][\w.\-]*[\w]", before)[-KIND_WINDOW:]
        right = re.findall(r"[A-Za-z0-9][\w.\-]*[\w]", after)[:KIND_WINDOW]
        first = re.findall(r"[A-Za-z0-9][\w.\-]*[\w]", before)[:1] if opening else []
        for w in left + right:
            if _norm(w) in (label_n, *asked) or w.lower() in STOPWORDS:
                continue
            if _name_token(w, vocab) or w[0].isupper() and w[1:].islower() and not vocab.common(w) and [w] != first:
                out.add(w)  # a capitalised word beside the noun, not opening its sentence: "Multiface dataset"
    return out


CONTEXT_BEFORE = 2  # sentences before a sentence that say what it is about ("The LARGE model ... We train ...")
GOVERNED_WINDOW = 6  # words from the question's word to the preposition whose object is the name


def _governed_name(sentence: str, rest: set[str], caps: set[str], prep: str, label: str, vocab: Vocabulary) -> bool:
    """Does the sentence state every other word of the question and write, within a few words after one of them,
    the question's preposition with a name as its object ("We implement the entire method in Theano" for "In
    which software framework was the method implemented?")? The name answers though the kind noun is not beside
    it: the question's own verb and object govern it."""
    if not prep or not (rest or caps) or not rest <= stems(sentence) or not all(_cased_in(w, sentence) for w in caps):
        return False
    words = re.findall(r"[A-Za-z0-9][\w.\-]*[\w]|[A-Za-z]", sentence)
    own = [i for i, w in enumerate(words) if stems(w) & rest or w in caps]
    label_n = _norm(label)
    for i, w in enumerate(words):
        if w.lower() != prep or not any(0 < i - j <= GOVERNED_WINDOW for j in own):
            continue
        for n in words[i + 1:i + 3]:
            if _norm(n) != label_n and (_name_token(n, vocab) or n[0].isupper() and n[1:].islower()
                                        and not vocab.common(n)):
                return True
            if n.lower() not in STOPWORDS:
                break
    return False


def _names_one_of(sentence: str, names: set[str]) -> bool:
    return any(re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", sentence) for n in names)


def _names_kind(sentence: str, noun: str, label: str, vocab: Vocabulary, question: str) -> bool:
    """Is a name of the asked kind written in the sentence, beside the asked noun (see `_kind_names`)?"""
    return bool(_kind_names(sentence, noun, label, vocab, question))


def _name_token(w: str, vocab: Vocabulary) -> bool:
    """A model, benchmark, dataset or device name (see `_names_something`)."""
    if re.fullmatch(r"[A-Z]+-?\d[\w.-]*|\d{3,}[A-Z][a-z]?", w):
        return True
    if w[0].isdigit() or vocab.common(w) or (w.endswith("s") and vocab.common(w[:-1])):
        return False
    return is_coined(w) or (w[0].isupper() and any(c.isdigit() for c in w)) or \
        bool(re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", w))


FOREIGN_SHARE = 0.5  # a question is in another language when more than half its words are new to the corpus


def foreign(question: str, vocab: Vocabulary) -> bool:
    """Are most of the question's words (four letters or more) ones no indexed chunk uses? Then its nearest
    sentences are near by chance. Corpus-derived, so a terse English claim ("Activated Cdk5 regulates neuronal
    death") is not mistaken for another language."""
    words = re.findall(r"[^\W\d_]{4,}", question.lower())
    if len(words) < 3 or vocab.index is None:
        return False
    return sum(vocab.unseen(stem(w)) for w in words) > FOREIGN_SHARE * len(words)


def _closest(cands: list[Candidate]) -> str:
    """'Closest papers:' lines (label + the start of its best sentence) added to an abstention."""
    seen: dict[str, Candidate] = {}
    for c in sorted(cands, key=lambda c: c.prob, reverse=True):
        seen.setdefault(c.paper.paper_id, c)
    lines = []
    for c in list(seen.values())[:CLOSEST_SHOWN]:
        s = c.sentence if len(c.sentence) <= CLOSEST_CHARS else c.sentence[:CLOSEST_CHARS].rsplit(" ", 1)[0] + "…"
        lines.append(f"- {c.paper.label}: {s}")
    return ("\n" + prompts.ABSTAIN_CLOSEST + "\n" + "\n".join(lines)) if lines else ""


def _abstain(text: str, cands: list[Candidate]) -> Draft:
    return Draft([], text + _closest(cands))


def _no_match(papers: list[PaperHit]) -> str:
    """No sentence answers: said of "the closest papers" when any of them is a full text, not an abstract."""
    return prompts.ABSTAIN_NO_MATCH_TEXTS if any(_full_text(p) for p in papers) else prompts.ABSTAIN_NO_MATCH


def _no_figure(paper: PaperHit, what: str) -> str:
    template = prompts.ABSTAIN_NO_FIGURE_TEXT if _full_text(paper) else prompts.ABSTAIN_NO_FIGURE
    return template.format(paper=paper.label, what=what)


def _no_names(paper: PaperHit) -> str:
    return (prompts.ABSTAIN_NO_NAMES_TEXT if _full_text(paper) else prompts.ABSTAIN_NO_NAMES).format(paper=paper.label)


def _as_written(question: str, wanted: set[str]) -> str:
    """The question's words whose stems are `wanted`, as the user wrote them and in their order ("wall-clock
    computation" for the stems clock, comput, wall, wall-clock), each once."""
    out: list[str] = []
    for w in re.findall(r"[A-Za-z0-9][\w'’\-]*[\w]|[A-Za-z0-9]", question):
        if stems(w) & wanted and w not in out:
            out.append(w)
    return " ".join(out) or " ".join(sorted(wanted))


@dataclass
class Prepared:
    """A question read against its retrieved papers: its shape, the papers it names, the pool of papers
    the answer is drawn from, and every pool sentence scored as evidence."""

    info: QuestionInfo
    focus: list[PaperHit]
    focus_terms: set[str]
    names: dict[str, str]
    pool: list[PaperHit]
    cands: list[Candidate]


def prepare(question: str, retrieval: Retrieval, vocab: Vocabulary, constants: Constants,
            embed: Callable[[list[str]], list[list[float]]] | None = None,
            info: QuestionInfo | None = None, named: list[str] | None = None) -> Prepared:
    """Shape, named papers and scored sentences of a question (shared by the answerer and the fitting script).

    `named`: ids of the papers the caller knows the question is about (a chat turn that refers to them, or the
    papers it names found over the whole index), in the order named."""
    c = constants
    info = info or analyse(question, lambda t: vocab.common(t, c))
    papers = retrieval.papers
    focus = [p for p in papers if mentions(question, p.label) and _names_few(name_used(question, p.label), vocab)]
    if named:
        by_id = {p.paper_id: p for p in papers}
        focus = [by_id[i] for i in named if i in by_id] + [p for p in focus if p.paper_id not in named]
    focus_terms = {stem(w.lower()) for p in focus for k in label_keys(p.label) for w in re.findall(r"[\w-]+", k)}
    if not focus and info.specific and not info.multi and info.shape != "claim":
        # A name the question uses ("PerturbRM") narrows the answer to the papers that contain it. A claim's
        # names are its subject, which relevant and irrelevant papers share alike (measured on SciFact: narrowing
        # claims this way cited no more relevant papers and 7% more papers in all).
        caps = set(capitals(question))
        focus = [p for p in papers if all(_present(t, [p], t in caps) for t in info.specific)]
        if len(focus) > 2:
            focus = []  # a term many retrieved papers share narrows nothing
    names = {p.paper_id: name_used(question, p.label) for p in focus}
    if info.shape == "comparison" and not info.multi:
        # "Compare A and B" where B is not a label: the first retrieved paper that uses the name B.
        for t in info.specific:
            if any(mentions(t, p.label) for p in focus):
                continue
            holder = next((p for p in papers if _present(t, [p])), None)
            if holder is not None and holder not in focus:
                focus.append(holder)
                names[holder.paper_id] = t
    pool = focus if focus and not info.multi else papers
    qt = question_terms(question, pool, vocab, info.shape == "definition", {k: v for k, v in names.items() if v},
                        info.shape == "contribution", info.shape == "limitation")
    cands = candidates(question, pool, vocab, qt, c, embed, retrieval.query_vector) if pool else []
    cands.sort(key=lambda x: x.prob, reverse=True)
    return Prepared(info, focus, focus_terms, names, pool, cands)


def draft_answer(question: str, retrieval: Retrieval, info: QuestionInfo | None = None,
                 vocab: Vocabulary | None = None, embed: Callable[[list[str]], list[list[float]]] | None = None,
                 constants: Constants | None = None, prepared: Prepared | None = None,
                 named: list[str] | None = None) -> Draft:
    """Choose the quotes that answer the question, or the reason to abstain (`prepared`: the question
    already read and scored, as the fitting script reuses it across constants)."""
    c = constants or current_constants()
    vocab = vocab or Vocabulary(None)
    papers = retrieval.papers
    if not papers:
        return Draft([], prompts.ABSTAIN_NO_PAPERS)
    pr = prepared or prepare(question, retrieval, vocab, c, embed, info, named)
    info, focus, focus_terms, names, pool, cands = pr.info, pr.focus, pr.focus_terms, pr.names, pr.pool, pr.cands
    if not cands:
        return Draft([], _no_match(pr.pool))
    aspect = None
    if len(focus) >= 2 and not info.multi:
        aspect = _aspect_candidates(question, focus, names, info, vocab, c, embed, retrieval)
    draft = _choose(question, info, focus, focus_terms, names, pool, cands, papers, vocab, c, aspect)
    draft.info = info
    return draft


def _aspect_candidates(question: str, focus: list[PaperHit], names: dict[str, str], info: QuestionInfo,
                       vocab: Vocabulary, c: Constants, embed: Callable[[list[str]], list[list[float]]] | None,
                       retrieval: Retrieval) -> list[Candidate] | None:
    """The named papers' sentences scored on what the question asks of them, the papers' names left out.

    With two or more papers named ("which of RecMem and CIB is trained with an RL objective?") the names are the
    question's rarest words, so each paper's best-scored sentences are the ones that name it ("We propose
    RecMem, ...") rather than the ones about the asked aspect. None when nothing but the names is asked."""
    aspect = question
    for p in focus:
        for name in {names.get(p.paper_id, ""), *label_keys(p.label)}:
            if name:
                aspect = re.sub(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", " ", aspect, flags=re.I)
    if not terms(aspect):
        return None
    qt = question_terms(aspect, focus, vocab, info.shape == "definition", {}, info.shape == "contribution",
                        info.shape == "limitation")
    out = candidates(aspect, focus, vocab, qt, c, embed, retrieval.query_vector)
    out.sort(key=lambda x: x.prob, reverse=True)
    return out


def _choose(question: str, info: QuestionInfo, focus: list[PaperHit], focus_terms: set[str], names: dict[str, str],
            pool: list[PaperHit], cands: list[Candidate], papers: list[PaperHit], vocab: Vocabulary,
            c: Constants, aspect: list[Candidate] | None = None) -> Draft:
    """The quotes for a scored question, or the reason to abstain (the rules of the module docstring);
    `aspect`: the named papers' sentences scored without their names (see `_aspect_candidates`)."""
    # A question naming something no retrieved abstract mentions is not answered by the nearest paper; when it
    # names no paper, only a term the whole corpus never uses counts (a paraphrase may use other words).
    # A long question whose other words find strong evidence is a paraphrase ("... when doing MCMC" for a
    # Metropolis-Hastings paper), not a question about something absent.
    missing = [t for t in info.specific if not any(mentions(t, p.label) for p in focus) and not _present(t, pool)
               and (focus or info.shape == "comparison" or
                    (all(vocab.unseen(stem(w.lower())) for w in re.findall(r"[A-Za-z]{2,}", t))
                     and (cands[0].prob < c.missing_below or len(info.words) <= SHORT_QUESTION_WORDS
                          or info.shape in ("definition", "contribution", "limitation"))))]
    if missing:
        template = prompts.ABSTAIN_MISSING_TERMS_TEXTS if any(_full_text(p) for p in pool) \
            else prompts.ABSTAIN_MISSING_TERMS
        return _abstain(template.format(terms=", ".join(f"“{t}”" for t in missing)), cands)

    if len(focus) >= 2 and not info.multi and (info.wants_number or info.wants_names):
        # "How many models does each of A and B evaluate?": each named paper's own figure (or names).
        parts = [_choose(question, info, [p], focus_terms, names, [p], [x for x in cands if x.paper is p],
                         [p], vocab, c) for p in focus if any(x.paper is p for x in cands)]
        answered = [d for d in parts if d.quotes]
        if not answered:
            return parts[0] if parts else _abstain(_no_match([x.paper for x in cands]), cands)
        return Draft([q for d in answered for q in d.quotes], best=answered[0].best or answered[0].quotes[0])
    if info.wants_number:
        return _numeric(info, cands, focus_terms, c)
    if info.wants_names:
        scored, named = cands, None
        kind_names: dict[str, set[str]] = {}  # per paper: the names it writes beside the asked noun
        if info.kind and not focus and not info.multi:
            # Whose GPU or dataset is asked is said by the question's other words ("... to train the diffusive
            # RNN"): of the retrieved papers, only those holding the most of them answer.
            rest = info.words - stems(info.kind) - {stem(info.kind.lower().rstrip("s"))}
            # A word written in capitals ("the BASE model") is held where the text writes it so, not "base".
            caps = {w for w in capitals(question) if stem(w.lower()) in rest}
            rest -= {stem(w.lower()) for w in caps}
            held = {p.paper_id: len(rest & stems(p.text)) + sum(_cased_in(w, p.text) for w in caps) for p in pool}
            most = max(held.values(), default=0)
            cands = [x for x in cands if held.get(x.paper.paper_id, 0) == most]
        if info.kind:
            # A name written beside the asked noun ("the Multiface dataset", "V100 GPUs") is of the asked kind.
            beside = [x for x in cands if x.prob >= c.abstain_below and info.attribute <= stems(x.sentence)
                      | stems(x.paper.label) and _names_kind(x.sentence, info.kind, x.paper.label, vocab, question)]
            named = beside[0] if beside else None
            caps = [w for w in capitals(question) if not _noun_re(info.kind).fullmatch(w)
                    and _norm(w) not in _norm(named.paper.label)] if named else []
            if caps and not all(_cased_in(w, named.sentence) for w in caps):
                # "What hardware was the LARGE model trained on?": of a paper's sentences naming GPUs, the one
                # that, with the two before it, writes the question's capitalised name ("The LARGE model contains
                # 24 blocks ... we train on 128 V100 GPUs"), not the likelier one about another model.
                text = {(x.paper.paper_id, x.index): x.sentence for x in scored}

                def about(x: Candidate, names: list[str]) -> bool:
                    near = " ".join(text.get((x.paper.paper_id, x.index - k), "") for k in range(CONTEXT_BEFORE + 1))
                    return all(_cased_in(w, near) for w in names)

                # no sentence about all of them: the name written last, which in a chat's follow-up ("..., and
                # the LARGE model?") is the one the new turn asks about
                named = next((x for x in beside if x.paper is named.paper and about(x, caps)), None) \
                    or next((x for x in beside if x.paper is named.paper and about(x, caps[-1:])), named)
            if named is None:
                # So is a name the question's own words govern through its preposition ("In which library was the
                # method implemented?": "we implement the entire method in Theano"), the noun written elsewhere.
                own = info.words - {stem(w.lower()) for n in (*kind_nouns(info.kind), *kind_phrase(question, info.kind))
                                    for w in (n, n + "s")} - info.attribute - focus_terms
                caps = {w for w in capitals(question) if stem(w.lower()) in own}
                own -= {stem(w.lower()) for w in caps}
                prep = asked_preposition(question)
                named = next((x for x in cands if x.prob >= c.abstain_below
                              and _governed_name(x.sentence, own - stems(x.paper.label) - stems(x.paper.title),
                                                 caps, prep, x.paper.label, vocab)), None)
            # Otherwise, in a full text, a name in a sentence that has the noun elsewhere is of another kind ("CPC
            # features ... on a single GPU"), and a paper that never uses the noun does not say which one it used.
            # (An abstract is too short to tell: "we present PerturbRM, a large language model".)
            cands = [x for x in cands if not _full_text(x.paper)
                     or not _has_noun(x.sentence, info.kind) and _has_noun(x.paper.text, info.kind)]
        # The likeliest sentence that has the asked attribute and names something (the cheaper test first); in a
        # full text, something the paper writes beside the asked noun elsewhere ("the Multiface dataset").
        def of_kind(x: Candidate) -> bool:
            if not info.kind or not _full_text(x.paper):
                return True
            if x.paper.paper_id not in kind_names:
                kind_names[x.paper.paper_id] = _kind_names(x.paper.text, info.kind, x.paper.label, vocab, question)
            return _names_one_of(x.sentence, kind_names[x.paper.paper_id])

        named = named or next((x for x in cands if info.attribute <= stems(x.sentence) | stems(x.paper.label)
                               and _names_something(x.sentence, "" if not focus else x.paper.label, vocab, question)
                               and of_kind(x)), None)
        if named is None and not info.strict_names:
            # Parts, kinds, mechanisms are described in ordinary words: the likeliest sentence that has the asked
            # noun, or (for parts) lists several things.
            named = next((x for x in cands if info.attribute and info.attribute <= stems(x.sentence)
                          or (info.parts and parts_span(x.sentence))), None)
        if named is None or named.prob < c.abstain_below:
            return Draft([], _no_names((cands or scored)[0].paper))
        return Draft([Quote(named.paper, named.sentence)])

    best = cands[0]
    if not focus:
        words = list(info.words)
        if foreign(question, vocab):
            # Mostly words the corpus never uses and no paper named (a question in another language): the
            # embedding model is English, so the nearest sentence is near by chance, not evidence.
            return _abstain(_no_match([x.paper for x in cands]), cands)
        if words and len(words) <= SHORT_QUESTION_WORDS and not info.multi and info.shape != "claim":
            # A short topic question ("paper on quantum machine learning") must find its rarest word.
            idf = vocab.idf(words)
            top = max(idf.values())
            rarest = {w for w in words if idf[w] == top}  # ties: any of them (never set order)
            if not rarest & (stems(best.paper.text) | stems(best.paper.label) | stems(best.paper.title)):
                return _abstain(_no_match([x.paper for x in cands]), cands)
        if best.prob < c.abstain_below:
            return _abstain(_no_match([x.paper for x in cands]), cands)

    if len(focus) >= 2 and not info.multi:
        # Each named paper on the asked aspect: its two likeliest sentences, in its abstract's order.
        quotes = []
        for p in focus:
            own = [Quote(p, x.sentence) for x in (aspect or cands) if x.paper is p][:MAX_SENTENCES]
            quotes += _in_order(own, cands) if own else []
        best = _best_of(cands, focus[0])
        return Draft(quotes, best=best)
    if focus:
        return _about_paper(info, cands, focus[0], names.get(focus[0].paper_id, ""), c)
    if info.multi:
        return _multi(info, cands, c)
    return _cited(info, cands, papers, c)


def _best_of(cands: list[Candidate], paper: PaperHit) -> Quote | None:
    own = [x for x in cands if x.paper is paper]
    return Quote(paper, own[0].sentence) if own else None


def _about_paper(info: QuestionInfo, cands: list[Candidate], paper: PaperHit, name: str, c: Constants) -> Draft:
    """A question about one named paper: its definition, its contribution, or its best evidence."""
    own = [x for x in cands if x.paper is paper]
    if info.shape == "definition" and name:
        defining = [x for x in own if defines(x.sentence, name)]
        if defining:
            return Draft([Quote(paper, defining[0].sentence)])
    # A question about a named paper gets its two likeliest sentences (a lookup only its best): the second is
    # often the one that states the asked detail, and both are that paper's own words.
    n = 1 if info.lookup else MAX_SENTENCES
    quotes = [Quote(paper, x.sentence) for x in own[:n]]
    return Draft(_in_order(quotes, cands), best=quotes[0])


def _in_order(quotes: list[Quote], cands: list[Candidate]) -> list[Quote]:
    """Quotes of one paper read in the abstract's order."""
    pos = {(x.paper.paper_id, x.sentence): x.index for x in cands}
    return sorted(quotes, key=lambda q: (q.paper.paper_id != quotes[0].paper.paper_id,
                                         pos.get((q.paper.paper_id, q.sentence), 0)))


def _cited(info: QuestionInfo, cands: list[Candidate], papers: list[PaperHit], c: Constants) -> Draft:
    """The lead paper (the retriever's first, or the one its evidence favours when the fit chose that), then
    every further paper more likely relevant than not, in retrieval order, each with its best sentence (two
    when both are likely evidence). The retriever's first paper is always among them, so the answer never
    cites a relevant paper less often than citing the top result would."""
    probs = paper_probabilities(cands, c)
    ranked = [p for p in papers if p.paper_id in probs]
    lead = max(ranked, key=lambda p: probs[p.paper_id]) if c.primary_by_evidence else ranked[0]
    chosen = [lead] + [p for p in ranked if p is not lead and (p is ranked[0] or probs[p.paper_id] >= c.cite_paper_at)]
    if info.lookup or info.wants_number:
        chosen = chosen[:1] + [p for p in chosen[1:] if p is ranked[0] or probs[p.paper_id] >= c.cite_paper_at]
    quotes: list[Quote] = []
    for p in chosen:
        own = [x for x in cands if x.paper is p]
        quotes.append(Quote(p, own[0].sentence))
        if len(own) > 1 and own[1].prob >= c.second_sentence_at and not info.lookup:
            quotes.append(Quote(p, own[1].sentence))
    return Draft(quotes)


# Numbers that are not figures the sentence states: a citation ("(Kocetkov et al., 2022)", "[5,6,7]"), a list
# marker opening the sentence ("1) Predefined spans: ..."), a pointer to a part of the paper ("Section 4",
# "Table 2", "Eq. (3)") and the number in a name joined to it by a hyphen. A full text has them in most sentences.
_NOT_FIGURE_RE = re.compile(r"\((?:[^()]*?\bet al\.?|[A-Z][^()]*?)[, ]+(?:19|20)\d\d[a-z]?(?:[;,][^()]*)?\)"
                            r"|\[\d+(?:\s*[,–-]\s*\d+)*\]|^\(?\d{1,2}[.)]\s"
                            r"|\b(?:Sections?|Sec\.|Tables?|Tab\.|Figures?|Figs?\.|Eqs?\.|Equations?|Appendix|Algorithm"
                            r"|Lines?|§)\s*\(?[A-Z]?\d+(?:\.\d+)*\)?(?:\s*(?:and|,|–|-)\s*\(?[A-Z]?\d+(?:\.\d+)*\)?)*"
                            r"|\b[A-Za-z][A-Za-z]*(?:-\d[\w.]*)+"  # a name's number: "LLaMA-2-13B", "GPT-4"
                            # a bound in a formula ("w ≤ 1, ∀i", "x ∈ [0, 1]"): a term of an equation, no measure
                            r"|(?<![\w.])[A-Za-z]\w{0,2}\s*[≤≥∈]\s*[\[(]?[-+]?\d[\d.]*"
                            r"(?:\s*,\s*[-+]?\d[\d.]*[\])])?"
                            r"|[-+]?\d[\d.]*\s*,?\s*∀"
                            # a tensor's shape with a symbol for a factor ("R^{C/r×1×1}", "H×W×3"): a term of
                            # an equation, not a count of anything
                            r"|(?<![\w.])[A-Za-z]\w{0,2}(?:/[A-Za-z\d]+)?(?:\s*×\s*[\w/]+)+"
                            r"|(?<![\w.])\d+(?:\s*×\s*\d+)*\s*×\s*[A-Za-z]\w{0,2}(?![\w-])(?:\s*×\s*[\w/]+)*")


# Words a measured quantity is stated with when its name is left out: "takes 3 hours" states a time.
_MEASURE_UNITS = {stem(k): re.compile(v, re.I) for k, v in {
    # (a decade, "the 1990s", is no time)
    "time": r"(?<![\d.])(?!(?:1[5-9]|20)\d0s\b)\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds?|min|minutes?|h|hrs?|hours?|days?|"
            r"weeks?|GPU-hours?)\b",
    "memory": r"\d\s?(?:[KMGT]i?B|bytes?)\b", "size": r"\d\s?(?:[KMGT]i?B|bytes?)\b",
    "storage": r"\d\s?(?:[KMGT]i?B|bytes?)\b"}.items()}


_CONTINUES_RE = re.compile(r"^\W*(?:This|These|It|Its|Such|The latter|The former)\b")
_SIZE_RE = re.compile(r"\bhow (?:large|big)\b", re.I)
_BYTES_RE = re.compile(r"\d\s?[KMGTP]i?B\b")


def _states(sentence: str, quantity: set[str], acronyms: list[str] = ()) -> bool:
    """Does the sentence state every word of the asked quantity (an acronym's plural counts as it: "GPU" for
    "GPUs"; so does the acronym written out: "language models" for "LMs"), or, for a time or a size, a figure
    with its unit?"""
    have = stems(sentence)
    bare = {w.rstrip("s") for w in have}
    spelled = {a.lower() for a in acronyms if _spells_out(sentence, a)}
    return all(w in have or w.rstrip("s") in bare or w.rstrip("s") in spelled
               or (w in _MEASURE_UNITS and _MEASURE_UNITS[w].search(sentence)) for w in quantity)


def _counts(sentence: str, units: set[str], acronyms: list[str] = ()) -> bool:
    """Does one of the sentence's figures stand next to the counted noun (see lead.scored_number_span), or next
    to its acronym written out ("42 language models" for "how many LMs")?"""
    for a in acronyms:
        units = units | {stem(w.lower()) for run in _spelled_out(sentence, a) for w in run}
    found = scored_number_span(_NOT_FIGURE_RE.sub(" ", sentence), units)
    return found is not None and found[0] > 0


def figures(sentence: str) -> frozenset[str]:
    """The numbers a sentence states, citations and list markers left out."""
    return numbers(_NOT_FIGURE_RE.sub(" ", sentence))


def _numeric(info: QuestionInfo, cands: list[Candidate], focus_terms: set[str], c: Constants) -> Draft:
    """A number is asked for: only a sentence that gives one (for the thing asked about) can answer."""
    with_numbers = [x for x in cands if figures(x.sentence)]
    asked = info.units or (info.content - focus_terms)
    if asked:
        with_numbers = [x for x in with_numbers if asked & (stems(x.sentence) | stems(x.paper.label))
                        or any(_spells_out(x.sentence, a) for a in info.unit_acronyms)]
    if len(info.units) > 1:
        # "How many different speakers": a figure stated with every word of the asked quantity is of that
        # quantity; one stated with a part of it ("differ in ...") is of something else.
        whole = [x for x in with_numbers if info.units <= stems(x.sentence) | stems(x.paper.label)]
        with_numbers = whole or with_numbers
    if info.quantity:
        # The sentence must state what is asked ("learning rate", "time"): a figure beside other words is
        # another quantity's.
        with_numbers = [x for x in with_numbers if _states(x.sentence, info.quantity, info.unit_acronyms)]
    if info.counts:
        # "How many parameters does X have?": the figure must count the asked thing, standing beside its noun in
        # its own clause ("25.9M parameters", "the number of parameters is 25.9M"); a sentence that mentions
        # parameters and gives "the other two factors" counts something else.
        with_numbers = [x for x in with_numbers if _counts(x.sentence, info.units, info.unit_acronyms)]
    what = f"“{_as_written(info.text, info.units)}”" if info.units else "what was asked"
    if not with_numbers:
        return Draft([], _no_figure(cands[0].paper, what))
    best = with_numbers[0]
    if best.prob < c.abstain_below and not (asked and asked <= stems(best.sentence)):
        return Draft([], _no_figure(best.paper, what))
    setting = _setting(info.text) - focus_terms
    if setting and not setting <= stems(best.sentence):
        # "what latency on the conveyor-belt sorting task?": a figure stated for another setting does not answer.
        own = [x for x in with_numbers if x.paper is best.paper and setting <= stems(x.sentence)]
        if own:
            best = own[0]
        elif any(setting <= stems(x.sentence) for x in cands if x.paper is best.paper):
            return Draft([], _no_figure(best.paper, f"“{_as_written(info.text, setting)}”"))
    if info.units and _full_text(best.paper):
        # "How many GPUs were used to train the audio model?": in a full text the same count is often given for
        # each experiment, in its own section ("3.1 Audio", "3.2 Vision"); the section heading holding more of
        # the question's other words says which experiment's figure is asked (ties: the likeliest).
        rest = info.content - info.units - focus_terms - stems(best.paper.label) - stems(best.paper.title)

        def headed(x: Candidate) -> int:
            return len(rest & stems(section_of(x.paper.text, x.paper.layout or "", x.sentence)))

        top = max((x for x in with_numbers if x.paper is best.paper), key=headed)
        best = top if headed(top) > headed(best) else best
    sized = [x for x in with_numbers if x.paper is best.paper and _BYTES_RE.search(x.sentence)] \
        if _SIZE_RE.search(info.text) else []
    if sized:
        # "How large is the datastore?": of the paper's figures for it, a size in bytes, where one is given
        # ("a datastore with a size of 27GB" rather than "2.7M samples as the datastore"); of several sizes, the
        # one whose sentence (with the sentence a "This ..." opening continues) holds most of the question's
        # words ("Datastores For CodeLlama, we ... This dataset ... 27GB").
        before = {(x.paper.paper_id, x.index): x.sentence for x in cands}

        def said(x: Candidate) -> int:
            text = x.sentence
            if _CONTINUES_RE.match(x.sentence):
                text = before.get((x.paper.paper_id, x.index - 1), "") + " " + text
            return len(asked & stems(text))

        best = max(sized, key=said)
    elif not info.units:
        # Asked "how long does the calibration of X take?", the words that name the paper (its title's and
        # label's) say whose figure is asked, not which one: of the paper's figures, the one whose sentence
        # holds most of the question's other words answers it (ties: the likeliest).
        # Of sentences holding as many, the one that repeats the question's phrasing ("reduced the number of
        # hallucinated examples" for "reduce the number of hallucinated examples") states the asked figure.
        phrasing = _word_pairs(info.text)

        def told(x: Candidate) -> tuple[int, int]:
            whose = stems(x.paper.title) | stems(x.paper.label) | stems(_label_continued(info.text, x.paper.label))
            pairs = {p for p in phrasing & _word_pairs(x.sentence) if not set(p) <= whose}
            return len((asked - whose) & stems(x.sentence)), len(pairs)

        best = max((x for x in with_numbers if x.paper is best.paper), key=told)
    quotes = [Quote(best.paper, best.sentence)]
    for x in with_numbers[:MAX_SENTENCES]:
        if x is not best and x.paper is best.paper and x.prob >= c.second_sentence_at and len(quotes) < MAX_SENTENCES:
            quotes.append(Quote(x.paper, x.sentence))
    return Draft(quotes)


def _word_pairs(text: str) -> set[tuple[str, str]]:
    """Stems of the consecutive content words of each clause ("reduce the number of examples": (reduc, number),
    (number, exampl)): how a text phrases what it says."""
    out: set[tuple[str, str]] = set()
    for clause in re.split(r"[,;:()\[\]?!]|[.](?:\s|$)", text):
        words = [stem(w.lower()) for w in re.findall(r"[A-Za-z][\w'-]*", clause) if w.lower() not in STOPWORDS]
        out |= set(zip(words, words[1:]))
    return out


def _label_continued(question: str, label: str) -> str:
    """The capitalised words the question writes right after the paper's label ("Guided Decoding" in "Lookback Lens
    Guided Decoding"): the name of one of the paper's methods, which says whose figure is asked, as the label does."""
    m = re.search(r"(?<![\w-])" + re.escape(label) + r"((?:\s+[A-Z][\w-]*)+)", question) if label else None
    return m.group(1) if m else ""


_SETTING_RE = re.compile(r"(?<=\w)\s+(?:on|under|during)\s+(?:the\s+|a\s+|an\s+)?([\w\-–.+]+(?:\s+[\w\-–.+]+){0,3})",
                         re.IGNORECASE)


def _setting(question: str) -> set[str]:
    """The stems of where a figure is asked for: the object of "on / under / during" after the question has
    begun ("what latency ... on the conveyor-belt sorting task" -> conveyor-belt, sort, task), up to a function
    word. ("In the fMRI study, ..." opening a question says which paper, not the figure's setting.)"""
    out: set[str] = set()
    for m in _SETTING_RE.finditer(question):
        words = []
        for w in m.group(1).split():
            if w.lower() in STOPWORDS:
                break
            words.append(w)
        out |= stems(" ".join(words)) - QUANTITY_NOUNS
    return out


def _spelled_out(sentence: str, acronym: str) -> list[list[str]]:
    """The runs of consecutive words of the sentence whose initials are the acronym's letters ("language
    models" for "LMs")."""
    letters = acronym.lower()
    words = re.findall(r"[A-Za-z][\w-]*", sentence)
    n = len(letters)
    return [words[i:i + n] for i in range(len(words) - n + 1)
            if "".join(w[0].lower() for w in words[i:i + n]) == letters]


def _spells_out(sentence: str, acronym: str) -> bool:
    """The sentence writes an acronym of the question out ("LMs" -> "language models")."""
    return bool(_spelled_out(sentence, acronym))


def _multi(info: QuestionInfo, cands: list[Candidate], c: Constants) -> Draft:
    """Every retrieved paper whose evidence passes, not just the first: likely relevant (the fitted list
    threshold), or holding every name the question lists by ("which papers use GRPO?")."""
    probs = paper_probabilities(cands, c)
    best_per_paper: dict[str, Candidate] = {}
    for x in cands:
        best_per_paper.setdefault(x.paper.paper_id, x)
    key_terms = specific_tokens(info.text)  # names, however common: they are the list's criterion
    quotes = []
    for x in sorted(best_per_paper.values(), key=lambda x: x.rank):
        has_key = bool(key_terms) and all(_present(t, [x.paper]) for t in key_terms)
        if x.rank == 0 or has_key or probs[x.paper.paper_id] >= c.multi_paper_at:
            quotes.append(Quote(x.paper, x.sentence))
    summary = "Matching papers" if len(quotes) > 1 else None
    return Draft(quotes, summary=summary)


def evidence_for(question: str, retrieval: Retrieval, vocab: Vocabulary, constants: Constants | None = None,
                 embed: Callable[[list[str]], list[list[float]]] | None = None) -> list[Candidate]:
    """Every sentence of the retrieved papers scored as evidence for a query (citation lookup)."""
    c = constants or current_constants()
    qt = question_terms(question, retrieval.papers, vocab, False, {})
    return candidates(question, retrieval.papers, vocab, qt, c, embed, retrieval.query_vector)

