"""Short human labels for papers: the name of the method or benchmark an abstract introduces.

Citations show labels ("RecMem [1]"), so a wrong label misattributes a claim. The extractor works on one
abstract at a time (labels never change because other papers were added) and tries, in order:

1. explicit naming: "we call X", "dubbed X", "termed X";
2. the object of an introducing verb ("we propose/introduce/present ... X"): a coined name ("RecMem"),
   "Expansion (ACRONYM)" ("Hamiltonian Causal Models (HCMs)"), "NAME (Expansion)" ("DyMoS (Dynamic ...)"),
   or a short phrase holding a coined token ("reasoning-aware IRT");
3. a coined name the authors own: "our CIB objective", "our ... beam search (CF-Beam)";
4. an acronym the abstract defines after its first sentence and then keeps using ("... Unit (GMU)");
5. otherwise a few words of the topic: a short emphasised phrase, else the abstract's most repeated
   distinctive word pair ("latent tokens").
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from rag.text import STOPWORDS, split_sentences, stem

_INTRO_VERBS = (r"(?:propose|proposes|introduce|introduces|present|presents|develop|develops|release|releases|"
                r"design|designs|build|builds)")
_NAMING = re.compile(
    r"\b(?:[Ww]e (?:call|term|dub|name)|dubbed|termed|called|named)\s+(?:(?:it|this|them|these)(?:\s+[a-z]+)?\s+)?"
    r"((?:[A-Z][\w'’\-–]*)(?:\s+[A-Z][\w'’\-–]*){0,3})"
)
_INTRO = re.compile(
    r"\b(?:we|this (?:paper|work)|our (?:paper|work))\s+(?:further\s+|also\s+|then\s+)?" + _INTRO_VERBS +
    r"\s+(?:(?:a|an|the)\s+)?(?:(?:new|novel|simple|general)\s+)?(.+)", re.IGNORECASE,
)
_TOKEN = r"[A-Za-z][\w'’]*(?:[-–][\w'’]+)*"
_PAREN_AFTER = re.compile(r"^(.{1,120}?)\s*\(([^()]{1,60})\)")


def is_coined(token: str) -> bool:
    """A token that reads as a coined name: inner capitals (RecMem, DyMoS, CF-Beam) or an acronym (RLRT)."""
    core = token.strip("()[],.;:").rstrip("s") if token.endswith("s") and token[:-1].isupper() else token
    core = core.strip("()[],.;:")
    if len(core) < 2:
        return False
    if not re.fullmatch(_TOKEN, core):
        return False
    uppers = sum(c.isupper() for c in core)
    return uppers >= 2 and not core.isdigit()


def initials_match(expansion: str, acronym: str) -> bool:
    """"Coupled Receptive Fields" ~ CoRF, "Dual Self-Training" ~ DuST: acronym letters appear in order."""
    letters = [c.lower() for c in acronym if c.isalpha()]
    words = re.findall(r"[A-Za-z]+", expansion)
    if not words or not letters:
        return False
    if words[0][0].lower() != letters[0]:
        return False
    text = "".join(w.lower() for w in words)
    pos = 0
    for c in letters:
        pos = text.find(c, pos)
        if pos < 0:
            return False
        pos += 1
    return True


def _capitalized_phrase(words: list[str]) -> bool:
    return bool(words) and all(w[0].isupper() or w.lower() in {"of", "for", "with", "and", "the", "via"}
                               for w in words)


def _from_parenthesis(obj: str, m: re.Match[str]) -> str | None:
    """The name in "NAME (Expansion)" or "Expansion (ACRONYM) [Word]", if the parenthesis gives one."""
    before, inside = m.group(1).strip(), m.group(2).strip()
    before_words = before.split()
    if before_words and is_coined(before_words[-1]) and len(before_words) == 1 \
            and initials_match(inside, before_words[-1]):
        return before_words[-1]
    if is_coined(inside) and " " not in inside:
        tail = re.match(r"\s*([A-Z][a-z]+)\b", obj[m.end():])
        after_words = [w for w in before_words if w[0].isupper()]
        if tail and after_words and tail.group(1) not in {"The", "We", "Our", "It", "This"}:
            return f"{inside} {tail.group(1)}"
        return inside
    if re.fullmatch(r"[A-Z][\w'’\-–]*(?:\s+[A-Z][\w'’\-–]*){0,4}", inside) and not before[:1].isupper():
        return inside  # "an algorithm (Entropy-Cut Metropolis–Hastings)"
    return None


def _from_head(obj: str) -> str | None:
    """The name heading the object: "NAME, a ..." / "NAME which ..." / "Realtime-VLA FLASH, a ..." /
    "reasoning-aware IRT, an ..."."""
    head = re.split(r",|;|:|\.\s|\s+(?:which|that|to|for|as|by|with|in|on|where|whose)\s", obj, maxsplit=1)[0]
    words = head.strip(" .").split()
    if 1 <= len(words) <= 3 and any(is_coined(w) for w in words):
        return " ".join(words)
    if 2 <= len(words) <= 3 and any(sum(c.isupper() for c in w) >= 2 for w in words):
        return " ".join(words)  # "reasoning-aware IRT": a field acronym made specific by a modifier
    if 2 <= len(words) <= 3 and "-" in words[0] and stem(words[-1].lower()) in _CONTRIBUTION_NOUNS:
        return " ".join(words)  # "trajectory-probing protocol"
    if len(words) == 1 and re.fullmatch(r"[A-Z][a-z]+[A-Za-z]*", words[0]) and words[0].lower() not in STOPWORDS:
        return words[0]  # "We propose Recon, which ..."
    return None


def _from_object(obj: str) -> str | None:
    """The name in the object of an introducing verb, if the object names one."""
    obj = obj.strip()
    m = _PAREN_AFTER.match(obj)
    if m:
        name = _from_parenthesis(obj, m)
        if name is not None:
            return name
    return _from_head(obj)


def _owned_coined(sentences: list[str]) -> str | None:
    """A coined name the authors call theirs: "our CIB objective", "our ... search (CF-Beam)"."""
    for s in sentences:
        for m in re.finditer(r"\b[Oo]ur\s+(" + _TOKEN + r")", s):
            if is_coined(m.group(1)):
                return m.group(1)
        for m in re.finditer(r"\b[Oo]ur\s+[^.()]{0,80}?\((" + _TOKEN + r")\)", s):
            if is_coined(m.group(1)):
                return m.group(1)
    return None


def _defined_acronym(sentences: list[str], text: str) -> str | None:
    """An acronym defined after the first sentence ("Generative Matching Unit (GMU)") and used again."""
    for s in sentences[1:]:
        for m in re.finditer(r"((?:[A-Z][\w\-–]*\s+){1,5})\((" + _TOKEN + r")\)", s):
            acro = m.group(2)
            if acro.endswith("s") and acro[:-1].isupper():
                continue  # "Large Reasoning Models (LRMs)": a plural names a kind of model, not the paper's own
            if is_coined(acro) and initials_match(m.group(1), acro) \
                    and len(re.findall(r"\b" + re.escape(acro.rstrip("s")) + r"s?\b", text)) >= 3:
                return acro
    return None


_CONTRIBUTION_NOUNS = frozenset(stem(w) for w in """protocol framework benchmark method algorithm dataset
    metric objective loss estimator sampler architecture test suite""".split())

_GENERIC = frozenset(stem(w) for w in """model models language large learning task tasks performance results
    framework benchmark data dataset training evaluation evaluations accuracy approach methods across
    existing recent state art show shows first key critical central important significant substantial
    strong high low better best improve improves improvement improvements gains effective efficient
    general generic standard simple multiple several various different diverse two three four five
    level process problem problems system systems time capabilities ability evidence signal signals
    experiments empirical analysis theoretical reasoning""".split())


def _emphasised(raw: str) -> str | None:
    for m in re.finditer(r"\\emph\{([^{}]+)\}|\\textit\{([^{}]+)\}|(?<![*\w])\*([^*\n]+)\*(?![*\w])", raw):
        phrase = next(g for g in m.groups() if g).strip()
        words = phrase.split()
        if 1 <= len(words) <= 4 and re.search(r"[A-Za-z]{3}", phrase) and phrase[0].isalpha():
            return phrase
    return None


def _key_pair(text: str) -> str | None:
    """The most repeated run of adjacent content words (two, or three when the third always follows).

    Pairs of two generic words ("language models") are skipped; ties go to the pair whose words are
    most frequent in the abstract, then to the earliest.
    """
    tokens = re.findall(r"[A-Za-z][A-Za-z\-]*", text)
    lows = [t.lower() for t in tokens]
    keys = [stem(t) for t in lows]
    freq = Counter(keys)
    spans: dict[tuple[str, str], list[int]] = {}
    for i in range(len(tokens) - 1):
        la, lb = lows[i], lows[i + 1]
        if la in STOPWORDS or lb in STOPWORDS or len(la) < 3 or len(lb) < 3 or la.endswith("ly"):
            continue
        key = (keys[i], keys[i + 1])
        if key[0] in _GENERIC and key[1] in _GENERIC:
            continue
        spans.setdefault(key, []).append(i)
    if not spans:
        return None
    key, where = max(spans.items(), key=lambda kv: (len(kv[1]), freq[kv[0][0]] + freq[kv[0][1]], -kv[1][0]))
    if len(where) < 2:
        return None
    i = where[0]
    phrase = [tokens[i], tokens[i + 1]]
    if all(j + 2 < len(tokens) for j in where) and len({keys[j + 2] for j in where}) == 1 \
            and lows[i + 2] not in STOPWORDS:
        phrase.append(tokens[i + 2])
    elif all(j > 0 for j in where) and len({keys[j - 1] for j in where}) == 1 and lows[i - 1] not in STOPWORDS:
        phrase.insert(0, tokens[i - 1])
    return " ".join(phrase)


def _sentence_case(phrase: str) -> str:
    words = phrase.split()
    if words and not any(c.isupper() for c in words[0][1:]):
        words[0] = words[0][0].upper() + words[0][1:]
    return " ".join(words)


def extract_label(text: str, title: str = "", raw: str | None = None, max_words: int = 5) -> str:
    """The label users see for a paper: its introduced name, else a few words of its topic (never empty)."""
    sentences = split_sentences(text)
    candidates: list[str | None] = []
    for s in sentences:
        m = _NAMING.search(s)
        if m:
            candidates.append(m.group(1))
            break
    for s in sentences:
        m = _INTRO.search(s)
        if m:
            name = _from_object(m.group(1))
            if name:
                candidates.append(name)
                break
    candidates.append(_owned_coined(sentences))
    candidates.append(_defined_acronym(sentences, text))
    for name in candidates:
        if name:
            return name.strip(" .,;:")
    if title:
        m = re.match(r"\s*([^:]{2,40}):", title)
        if m and len(m.group(1).split()) <= 3:
            return m.group(1).strip()  # "RecMem: Recurrent Memory ..." -> "RecMem"
        words = title.split()
        return " ".join(words[:max_words]) + ("…" if len(words) > max_words else "")
    topic = _emphasised(raw or "") or _key_pair(text)
    if topic:
        return _sentence_case(topic)
    words = [w for w in re.findall(r"[A-Za-z][\w\-]*", sentences[0] if sentences else text)
             if w.lower() not in STOPWORDS]
    return _sentence_case(" ".join(words[:4])) or "Untitled abstract"


# --- a paper named in a question ------------------------------------------------------------------------

@lru_cache(maxsize=65536)
def label_keys(label: str) -> tuple[str, ...]:
    """Ways a question may name a paper: its whole label, or a coined word of it ("FLASH", "SLG")."""
    keys = [label]
    keys += [w for w in re.split(r"\s+", label) if is_coined(w) and len(w) >= 3]
    return tuple(k for k in keys if k)


def _whole_word_in(key: str, text: str) -> bool:
    """`key` occurs in `text` not inside a longer word or hyphenated name (both lower-cased). A plain scan:
    compiling a pattern for every retrieved label of every question cost more than the matching."""
    start = text.find(key)
    while start >= 0:
        end = start + len(key)
        if (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_-")) and \
                (end == len(text) or not (text[end].isalnum() or text[end] in "_-")):
            return True
        start = text.find(key, start + 1)
    return False


def mentions(question: str, label: str) -> bool:
    return bool(name_used(question, label))


def name_used(question: str, label: str) -> str:
    q = question.lower()
    return next((k for k in label_keys(label) if _whole_word_in(k.lower(), q)), "")
