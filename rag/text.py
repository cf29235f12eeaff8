"""Text utilities shared by ingestion, retrieval, answering and the citation check.

Abstracts arrive with LaTeX and Markdown markup (``\\emph{}``, ``$\\times$``, ``**CORE**``). Users see and
quote the cleaned text, so every stage works on the same cleaned form; ids are computed from the raw text so
that a change in cleaning never changes an id.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache

# --- cleaning -------------------------------------------------------------------------------------------

_LATEX_SYMBOLS = {
    r"\times": "×", r"\%": "%", r"\textasciitilde": "~", r"\sim": "~", r"\approx": "≈",
    r"\alpha": "α", r"\beta": "β", r"\gamma": "γ", r"\delta": "δ", r"\epsilon": "ε", r"\theta": "θ",
    r"\lambda": "λ", r"\mu": "μ", r"\sigma": "σ", r"\Omega": "Ω", r"\omega": "ω", r"\pi": "π",
    r"\star": "*", r"\mid": "|", r"\leq": "≤", r"\geq": "≥", r"\le": "≤", r"\ge": "≥", r"\cdot": "·",
    r"\pm": "±", r"\infty": "∞", r"\to": "→", r"\rightarrow": "→", r"\&": "&", r"\_": "_", r"\#": "#",
    r"\,": " ", r"\;": " ", r"\!": "", r"\ ": " ",
}
_LATEX_SYMBOL_RE = re.compile(
    "|".join(re.escape(k) + (r"(?![A-Za-z])" if k[-1].isalpha() else "")
             for k in sorted(_LATEX_SYMBOLS, key=len, reverse=True))
)
# \textbf{x}, \emph{x}, \mathrm{x}, ... -> x (innermost first, repeated for nesting)
_LATEX_WRAPPER_RE = re.compile(r"\\(?:textbf|textit|texttt|textsc|emph|mathrm|mathbf|mathit|mathcal|text|underline)\{([^{}]*)\}")
_LATEX_CMD_RE = re.compile(r"\\[A-Za-z]+")
_MD_BOLD_RE = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_MD_ITALIC_RE = re.compile(r"(?<![\w*^_])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])")


def _strip_math(m: re.Match[str]) -> str:
    body = m.group(1)
    body = body.replace("{", "").replace("}", "")
    return body


def clean_markup(raw: str) -> str:
    """Turn LaTeX/Markdown-flavoured abstract text into the plain text users read and quote.

    Each pattern runs only on text holding the character it needs (LaTeX a backslash, math a dollar, Markdown
    an asterisk or underscore), tested on the text as it is by then: most abstracts hold none, and running every
    pattern on every abstract was most of a re-ingest (1.0 of the 1.3 s spent scanning 5k SciFact abstracts)."""
    text = unicodedata.normalize("NFC", raw)
    text = text.replace("``", "“").replace("''", "”")
    for _ in range(3):
        if "\\" in text:
            text = _LATEX_WRAPPER_RE.sub(r"\1", text)
    if "\\" in text:
        text = _LATEX_SYMBOL_RE.sub(lambda m: _LATEX_SYMBOLS[m.group(0)], text)
    if "$" in text:
        text = re.sub(r"\$([^$]*)\$", _strip_math, text)
    if "\\" in text:
        text = _LATEX_CMD_RE.sub("", text)
    if "**" in text or "__" in text:
        text = _MD_BOLD_RE.sub(lambda m: m.group(1) or m.group(2), text)
    if "*" in text:
        text = _MD_ITALIC_RE.sub(r"\1", text)
    text = text.replace("---", "—").replace("--", "–")
    text = text.replace("\u00a0", " ").replace("\u2011", "-")
    return collapse_whitespace(text)


# Terminal escape sequences (colours, window titles, cursor moves) and the characters that reorder what a reader
# sees (bidi overrides and isolates: U+202E shows "txt.exe" as "exe.txt"): stored text keeps them, shown text never.
_ESCAPES_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|\x9b[0-?]*[ -/]*[@-~]"
                         r"|\x9d[^\x07\x9c]*[\x07\x9c]?")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def inert_text(text: object, one_line: bool = False) -> str:
    """Text from papers (or a model that read them) as it leaves the project (a terminal, /v1, MCP, an export):
    escape sequences removed, other control characters and bidi controls shown as U+FFFD; newlines and tabs
    kept, unless `one_line` (a field of a one-line row: a file name holding a newline must not split it)."""
    s = _ESCAPES_RE.sub("", str(text))
    keep = "" if one_line else "\n\t"
    return "".join(ch if ch in keep or (unicodedata.category(ch) != "Cc" and ch not in _BIDI) else "\ufffd"
                   for ch in s)


def collapse_whitespace(text: str) -> str:
    r"""Runs of whitespace as one space, none at the ends: what `re.sub(r"\s+", " ", text).strip()` gives
    (`str.split` and the regex `\s` share Python's definition of whitespace), in a fifth of the time."""
    return " ".join(text.split())


def normalize_for_id(raw: str) -> str:
    """The form of a text that decides its identity: Unicode-normalised, whitespace collapsed."""
    return collapse_whitespace(unicodedata.normalize("NFC", raw))


def stable_id(raw: str, length: int = 12) -> str:
    """Content-derived paper id: the same abstract gets the same id on every ingest, on every machine."""
    return hashlib.sha1(normalize_for_id(raw).encode("utf-8")).hexdigest()[:length]


# --- sentences ------------------------------------------------------------------------------------------
# A regex splitter rather than the NLTK punkt splitter that llama-index uses by default: punkt breaks
# scientific abstracts after "vs.", "et al." and "Fig.", and misses breaks after a capital ("... X. We").

_ABBREVIATIONS = {
    "e.g", "i.e", "vs", "cf", "al", "fig", "figs", "eq", "eqs", "sec", "no", "approx", "resp", "etc",
    "dr", "prof", "mr", "ms", "st", "ref", "refs", "tab", "app", "ch", "vol", "pp", "ca", "viz",
}
_BOUNDARY_RE = re.compile(r"([.!?]+[\"”’)\]]*)\s+(?=[\"“‘(\[]*[A-Z0-9$\\])")


def split_with_spaces(text: str) -> list[str]:
    """Sentences with their trailing whitespace, so that joining them gives back `text` exactly.

    This is the form llama-index's SentenceSplitter expects from a `chunking_tokenizer_fn`.
    """
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        candidate = text[start:m.end(1)]
        last_word = re.search(r"([A-Za-z.]+)[.!?]+[\"”’)\]]*$", candidate)
        # "et al.", "e.g.", "Fig." do not end a sentence.
        if last_word and last_word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
            continue
        pieces.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def split_sentences(text: str) -> list[str]:
    """Split cleaned text into sentences, keeping decimals, abbreviations and model names intact."""
    return [s for s in (p.strip() for p in split_with_spaces(text.strip())) if s]


@lru_cache(maxsize=65536)
def sentences_of(text: str) -> tuple[str, ...]:
    """`split_sentences`, kept for the texts questions return to: every answer splits the chunks and abstracts
    of its papers again, and the same papers come back for many questions (ingest splits each text once and
    calls `split_sentences`, which leaves this cache to the query path)."""
    return tuple(split_sentences(text))


# --- terms and numbers ----------------------------------------------------------------------------------

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto over under about as is are was
    were be been being do does did done doing have has had having it its it's this that these those there their
    they them we our us you your he she his her i me my which who whom whose what when where why how than so
    such not no nor can could should would may might must will shall also very more most much many any some
    each every all both either neither one other another same own just only up down out off again further once
    here while during before after above below between through against among per via versus vs etc e.g i.e
    paper papers abstract abstracts work study studies studied propose proposes proposed introduce introduces
    introduced present presents presented report reports reported show shows shown use uses used using
    method methods approach approaches new novel based tell say says said does doing way ways
    like kind find found give gives given let make makes made get gets got""".split()
)

# A contribution statement: the authors say what they propose ("We propose X", "This paper introduces ...").
# English academic phrasing, not any corpus's words: the grid's method column and the lookup's "proposes" feature.
CONTRIBUTION_RE = re.compile(
    r"\b(?:we|our\s+(?:work|paper)|this\s+(?:paper|work|article|study))\s+(?:\w+\s+){0,2}?"
    r"(?:propose|introduce|present|develop|design|describe|formulate)s?\b", re.IGNORECASE)
_TERM_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'’][A-Za-z0-9]+)*|\d+(?:[.,]\d+)*")
# Numbers as written in abstracts and answers: 1,800 / 54.7 / 5.6x / 3.04× / 88–97% / +6.2
_NUMBER_RE = re.compile(r"(?<![A-Za-z0-9.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?![\d])")


def terms(text: str) -> list[str]:
    """Lower-cased word tokens of a text, stopwords removed; hyphenated words kept whole and split."""
    out: list[str] = []
    text = text.lower()
    if "’" in text:
        text = text.replace("’", "'")
    for low in _TERM_RE.findall(text):
        if low in STOPWORDS or (len(low) < 2 and not low.isdigit()):
            continue
        out.append(low)
        if "-" in low:
            out.extend(p for p in low.split("-") if len(p) > 1 and p not in STOPWORDS)
    return out


@lru_cache(maxsize=1)
def stemmer():
    import Stemmer  # PyStemmer, the Snowball stemmer bm25s uses too

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball stem of a lower-cased word, so "studies"/"study" and "compressing"/"compression" meet."""
    return stemmer().stemWord(word)


class _WordStems(dict):
    """Lower-cased word (whitespace-delimited, punctuation attached) -> the stems `terms` + `stem` make of it
    (computed by them, once per word). Tokens never span whitespace, so
    a text's stems are its words' in order, and stemming a sentence is a split and a dict lookup per word
    (SciFact sentences: ~3x faster than `terms` then `stem`)."""

    LIMIT = 1_000_000  # distinct words kept (numbers make the set open-ended); cleared beyond it

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= self.LIMIT:
            self.clear()
        self[word] = got = _stems_of_word(word)
        return got


_WORD_STEMS = _WordStems()


def _stems_of_word(word: str) -> tuple[str, ...]:
    return tuple(stem(t) for t in terms(word))


def _words(text: str) -> list[str]:
    """The table's keys in a text: lower-cased, curly apostrophes made straight, split at whitespace."""
    text = text.lower()
    if "’" in text:
        text = text.replace("’", "'")
    return text.split()


def term_stems(text: str) -> tuple[str, ...]:
    """Stemmed content terms of a text in order, repeats kept: `tuple(map(stem, terms(text)))`, faster."""
    table = _WORD_STEMS
    return tuple([s for word in _words(text) for s in table[word]])


def word_stem_table(texts: Iterable[str], known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every distinct word of the texts -> its stems joined by spaces (stems never hold one), beside `known`.

    Saved with the local index: a question then never stems a corpus word for the first time, which was most
    of its sentence scoring (2.9 of 4.5 ms per SciFact claim). A word's stems depend on the word alone, so a
    table is never stale, only short of words (which are stemmed when met)."""
    out = dict(known) if known else {}
    seen: set[str] = set()
    for text in texts:
        seen.update(_words(text))
    for word in seen.difference(out):
        out[word] = " ".join(_stems_of_word(word))
    return out


def prime_word_stems(table: Mapping[str, str]) -> None:
    """Fill `term_stems`' word table from a saved one (not past the table's limit)."""
    if len(_WORD_STEMS) + len(table) <= _WordStems.LIMIT:
        _WORD_STEMS.update({w: tuple(s.split()) for w, s in table.items()})


def stems(text: str) -> set[str]:
    """Set of stemmed content terms of a text."""
    return set(term_stems(text))


_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000",
                      "million": "1000000", "billion": "1000000000", "dozen": "12", "twice": "2",
                      "double": "2", "triple": "3", "half": "0.5"})
del _NUMBER_WORDS["zero"], _NUMBER_WORDS["one"]  # "one of", "zero-shot": words, not quantities
_NUMBER_WORDS["order of magnitude"] = "10"
_NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


@lru_cache(maxsize=8192)
def numbers(text: str) -> frozenset[str]:
    """Numbers in a text, normalised ("1,800" -> "1800", "+6.2" -> "6.2", "70.0" -> "70", "three" -> "3").

    Cached: the citation check asks it of the same source texts and labels for every answer sentence."""
    out: set[str] = {_NUMBER_WORDS[w.lower()] for w in _NUMBER_WORD_RE.findall(text)}
    for m in _NUMBER_RE.findall(text):
        value = m.lstrip("+-").replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value or "0")
    return frozenset(out)
