"""NAMES: names of a kind of thing are asked ("which datasets", "what GPUs", "in which library"), or the parts
of something ("what three components"). The answer quotes the likeliest sentence that names something of the
asked kind: a name written beside the asked noun ("the Multiface dataset", "V100 GPUs"), or governed by the
question's verb and preposition ("we implement the method in Theano"); in a full text, a paper that never
writes the noun names none. Otherwise it says the paper names none. The names lead (rag/answer/lead.py).
"""

from __future__ import annotations

import re
from collections.abc import Set

from rag.answer.draft import Draft, Quote, full_text, no_names
from rag.answer.evidence import Candidate, Vocabulary
from rag.answer.intent import NamesAsk
from rag.answer.lead import parts_span
from rag.answer.question import asked_preposition, capitals, kind_nouns, kind_phrase
from rag.answer.types.context import Context
from rag.answer.types.named import each_named
from rag.answer.types.quotes import answer as quoted
from rag.answer.types.quotes import read_full_text
from rag.answer.types.words import cased_in, has_noun, name_token, names_something, noun_re
from rag.text import LETTER_TOKEN_RE, STOPWORDS, TOKEN_OR_LETTER_RE, TOKEN_RE, alnum, stem, stems, whole_word

KIND_WINDOW = 3  # words on either side of the asked noun a name of that kind is written within


def names_of_kind(text: str, noun: str, label: str, vocab: Vocabulary, question: str) -> set[str]:
    """The names written within a few words of the asked noun, in the same clause ("NVIDIA A6000 GPU", "the
    Multiface dataset [66]", "encoded by the ResNet-v2-101 encoder", "datasets such as BEIR")."""
    label_n = alnum(label)
    asked = {alnum(w) for w in LETTER_TOKEN_RE.findall(question)}
    out: set[str] = set()
    for m in noun_re(noun).finditer(text):
        # asides left out on the left ("V100 (32GB) GPUs", "ResNet v2 101 architecture [37]"), kept on the right
        # where they often are the name ("GPUs (V100)"); a clause ends at punctuation
        before = re.sub(r"\([^()]*\)|\[[^\]]*\]", " ", text[max(0, m.start() - 200):m.start()])
        opening = not re.search(r"[;:,(]", before) and (m.start() <= 200 or bool(re.search(r"[.!?]\s", before)))
        before = re.split(r"[;:,(]|[.!?]\s", before)[-1]
        after = re.split(r"[;,)]|[.!?](?:\s|$)", text[m.end():m.end() + 200])[0]
        left = TOKEN_RE.findall(before)[-KIND_WINDOW:]
        right = TOKEN_RE.findall(after)[:KIND_WINDOW]
        first = TOKEN_RE.findall(before)[:1] if opening else []
        for w in left + right:
            if alnum(w) in (label_n, *asked) or w.lower() in STOPWORDS:
                continue
            if name_token(w, vocab) or w[0].isupper() and w[1:].islower() and not vocab.common(w) and [w] != first:
                out.add(w)  # a capitalised word beside the noun, not opening its sentence: "Multiface dataset"
    return out

CONTEXT_BEFORE = 2  # sentences before a sentence that say what it is about ("The LARGE model ... We train ...")
GOVERNED_WINDOW = 6  # words from the question's word to the preposition whose object is the name


def governed_name(sentence: str, rest: Set[str], caps: Set[str], prep: str, label: str, vocab: Vocabulary) -> bool:
    """Does the sentence state every other word of the question and write, within a few words after one of them,
    the question's preposition with a name as its object ("We implement the entire method in Theano" for "In
    which software framework was the method implemented?")? The name answers though the kind noun is not beside
    it: the question's own verb and object govern it."""
    if not prep or not (rest or caps) or not rest <= stems(sentence) or not all(cased_in(w, sentence) for w in caps):
        return False
    words = TOKEN_OR_LETTER_RE.findall(sentence)
    own = [i for i, w in enumerate(words) if stems(w) & rest or w in caps]
    label_n = alnum(label)
    for i, w in enumerate(words):
        if w.lower() != prep or not any(0 < i - j <= GOVERNED_WINDOW for j in own):
            continue
        for n in words[i + 1:i + 3]:
            if alnum(n) != label_n and (name_token(n, vocab) or n[0].isupper() and n[1:].islower()
                                        and not vocab.common(n)):
                return True
            if n.lower() not in STOPWORDS:
                break
    return False


def names_one_of(sentence: str, names: set[str]) -> bool:
    return any(whole_word(n).search(sentence) for n in names)


def names_kind(sentence: str, noun: str, label: str, vocab: Vocabulary, question: str) -> bool:
    """Is a name of the asked kind written in the sentence, beside the asked noun (see `names_of_kind`)?"""
    return bool(names_of_kind(sentence, noun, label, vocab, question))


def answer(ctx: Context) -> Draft:
    """The likeliest sentence naming something of the asked kind (the module docstring), or that the paper names
    none; each named paper's own names when the question names several."""
    if len(ctx.focus) >= 2:
        return each_named(ctx, answer)
    question, intent, focus, cands, c, vocab = ctx.question, ctx.intent, ctx.focus, ctx.cands, ctx.c, ctx.vocab
    ask = intent.names or NamesAsk("", frozenset(), False, False)
    scored, named = cands, None
    kind_names: dict[str, set[str]] = {}  # per paper: the names it writes beside the asked noun
    if ask.kind and not focus and not intent.every_paper:
        cands = _whose(ctx, ask.kind, cands)
    if ask.kind:
        named = _beside_noun(ctx, ask, cands, scored) or _governed(ctx, ask, cands)
        # Otherwise, in a full text, a name in a sentence that has the noun elsewhere is of another kind ("CPC
        # features ... on a single GPU"), and a paper that never uses the noun does not say which one it used.
        # (An abstract is too short to tell: "we present PerturbRM, a large language model".)
        cands = [x for x in cands if not full_text(x.paper)
                 or not has_noun(x.sentence, ask.kind) and has_noun(x.paper.text, ask.kind)]

    # The likeliest sentence that has the asked attribute and names something (the cheaper test first); in a
    # full text, something the paper writes beside the asked noun elsewhere ("the Multiface dataset").
    def of_kind(x: Candidate) -> bool:
        if not ask.kind or not full_text(x.paper):
            return True
        if x.paper.paper_id not in kind_names:
            kind_names[x.paper.paper_id] = names_of_kind(x.paper.text, ask.kind, x.paper.label, vocab, question)
        return names_one_of(x.sentence, kind_names[x.paper.paper_id])

    named = named or next((x for x in cands if ask.attribute <= stems(x.sentence) | stems(x.paper.label)
                           and names_something(x.sentence, "" if not focus else x.paper.label, vocab, question)
                           and of_kind(x)), None)
    if named is None and not ask.strict:
        # Parts, kinds, mechanisms are described in ordinary words: the likeliest sentence that has the asked
        # noun, or (for parts) lists several things.
        named = next((x for x in cands if ask.attribute and ask.attribute <= stems(x.sentence)
                      or (ask.parts and parts_span(x.sentence))), None)
    if named is None and read_full_text(ctx):
        # In a full text the reader has found a passage likely enough to answer (the checks before passed):
        # its words are the evidence, though no rule above could tell the names in it.
        return quoted(ctx)
    if named is None or named.prob < c.abstain_below:
        return Draft([], no_names((cands or scored)[0].paper))
    return Draft([Quote(named.paper, named.sentence)])


def _whose(ctx: Context, kind: str, cands: list[Candidate]) -> list[Candidate]:
    """Whose GPU or dataset is asked is said by the question's other words ("... to train the diffusive RNN"): of
    the retrieved papers, the sentences of those holding the most of them."""
    rest = ctx.intent.words - stems(kind) - {stem(kind.lower().rstrip("s"))}
    # A word written in capitals ("the BASE model") is held where the text writes it so, not "base".
    caps = {w for w in capitals(ctx.question) if stem(w.lower()) in rest}
    rest -= {stem(w.lower()) for w in caps}
    held = {p.paper_id: len(rest & stems(p.text)) + sum(cased_in(w, p.text) for w in caps) for p in ctx.pool}
    most = max(held.values(), default=0)
    return [x for x in cands if held.get(x.paper.paper_id, 0) == most]


def _beside_noun(ctx: Context, ask: NamesAsk, cands: list[Candidate], scored: list[Candidate]) -> Candidate | None:
    """The likeliest sentence with a name written beside the asked noun ("the Multiface dataset", "V100 GPUs"):
    a name of the asked kind."""
    c, vocab, question = ctx.c, ctx.vocab, ctx.question
    beside = [x for x in cands if x.prob >= c.abstain_below and ask.attribute <= stems(x.sentence)
              | stems(x.paper.label) and names_kind(x.sentence, ask.kind, x.paper.label, vocab, question)]
    if not beside:
        return None
    named = beside[0]
    caps = [w for w in capitals(question) if not noun_re(ask.kind).fullmatch(w)
            and alnum(w) not in alnum(named.paper.label)]
    if not caps or all(cased_in(w, named.sentence) for w in caps):
        return named
    # "What hardware was the LARGE model trained on?": of a paper's sentences naming GPUs, the one that, with the
    # two before it, writes the question's capitalised name ("The LARGE model contains 24 blocks ... we train on
    # 128 V100 GPUs"), not the likelier one about another model.
    text = {(x.paper.paper_id, x.index): x.sentence for x in scored}

    def about(x: Candidate, names: list[str]) -> bool:
        near = " ".join(text.get((x.paper.paper_id, x.index - k), "") for k in range(CONTEXT_BEFORE + 1))
        return all(cased_in(w, near) for w in names)

    # no sentence about all of them: the name written last, which in a chat's follow-up ("..., and the LARGE
    # model?") is the one the new turn asks about
    return next((x for x in beside if x.paper is named.paper and about(x, caps)), None) \
        or next((x for x in beside if x.paper is named.paper and about(x, caps[-1:])), named)


def _governed(ctx: Context, ask: NamesAsk, cands: list[Candidate]) -> Candidate | None:
    """The likeliest sentence with a name the question's own words govern through its preposition ("In which
    library was the method implemented?": "we implement the entire method in Theano"), the noun written
    elsewhere: also a name of the asked kind."""
    question = ctx.question
    own = ctx.intent.words - {stem(w.lower()) for n in (*kind_nouns(ask.kind), *kind_phrase(question, ask.kind))
                              for w in (n, n + "s")} - ask.attribute - ctx.focus_terms
    caps = {w for w in capitals(question) if stem(w.lower()) in own}
    own -= {stem(w.lower()) for w in caps}
    prep = asked_preposition(question)
    return next((x for x in cands if x.prob >= ctx.c.abstain_below
                 and governed_name(x.sentence, own - stems(x.paper.label) - stems(x.paper.title),
                                   caps, prep, x.paper.label, ctx.vocab)), None)
