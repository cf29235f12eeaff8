"""Text utilities shared by ingestion, retrieval, answering and the citation check, and the lexicon.

Abstracts arrive with LaTeX and Markdown markup (``\\emph{}``, ``$\\times$``, ``**CORE**``). Users see and
quote the cleaned text, so every stage works on the same cleaned form; ids are computed from the raw text so
that a change in cleaning never changes an id.

The lexicon (the last section) is every English word list and shared word pattern the answer stage reads, each
defined once: word shapes, whole-word matching, citation markers, closed-class words, quantities, comparisons,
lookups. A new word list goes there, not into a module of rag/answer.
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
_LATEX_WRAPPER_RE = re.compile(r"\\(?:textbf|textit|texttt|textsc|emph|mathrm|mathbf|mathit|mathcal|text|underline)"
                               r"\{([^{}]*)\}")
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
# The control characters (Unicode category Cc: U+0000-U+001F, U+007F-U+009F) and the bidi controls, as one class:
# a regex pass, since every string of every record leaving the project goes through it (`inert_data`).
_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_UNSHOWN_RE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_UNSHOWN_ONE_LINE_RE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def inert_text(text: object, one_line: bool = False) -> str:
    """Text from papers (or a model that read them) as it leaves the project (a terminal, /v1, MCP, an export):
    escape sequences removed, other control characters and bidi controls shown as U+FFFD; newlines and tabs
    kept, unless `one_line` (a field of a one-line row: a file name holding a newline must not split it)."""
    s = _ESCAPES_RE.sub("", str(text))
    return (_UNSHOWN_ONE_LINE_RE if one_line else _UNSHOWN_RE).sub("\ufffd", s)


def inert_data(data: object) -> object:
    """JSON-ready data (dicts, lists, strings, numbers) with `inert_text` applied to every string in it, keys
    included: a record leaves as a whole, so no field (a title, a quote, a notice, a grid column) can be missed."""
    if isinstance(data, str):
        return inert_text(data)
    if isinstance(data, dict):
        return {inert_data(k): inert_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [inert_data(v) for v in data]
    return data


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


# --- the lexicon ----------------------------------------------------------------------------------------
# Every English word list the answer stage reads, and every word pattern two of its modules (or two of its
# patterns) share, is defined here once; rag/answer imports them. A grammar pattern one module alone reads stays
# in that module, built from these lists. The words are English function words and academic phrasing, never a
# corpus's vocabulary (what a collection's common words are comes from its index: rag/answer/evidence.py
# `Vocabulary`). Where two modules read one concept differently, each reading has its own name here and a
# comment saying how it differs: merging them would change answers.


def one_of(words: Iterable[str]) -> str:
    """A non-capturing alternation of regex fragments, in their order: `one_of(("is", "are"))` -> "(?:is|are)"."""
    return "(?:" + "|".join(words) + ")"


def _stemmed(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


# Word shapes: how the rules cut a text into words and names (`terms` above is the tokenizer for scoring). Each
# shape is one rule's notion of a word; they differ in what a word may hold (digits first, dots, "@", "+").
WORD_RE = re.compile(r"[A-Za-z][\w-]*")             # a word, hyphenated kept whole: "decoder-side", "GPT-4"
WORD_APOS_RE = re.compile(r"[A-Za-z][\w'-]*")       # ... with an apostrophe: "model's"
WORD_CURLY_RE = re.compile(r"[A-Za-z][\w'’-]*")     # ... straight or curly: the words an expansion is read from
WORD_AT_RE = re.compile(r"[A-Za-z][\w@-]*")         # ... with "@": "Recall@10", a metric beside its figure
LETTERS_RE = re.compile(r"[A-Za-z]+")               # a run of ASCII letters
LETTERS2_RE = re.compile(r"[A-Za-z]{2,}")           # ... of two or more: the words of a name
ALNUM2_RE = re.compile(r"[A-Za-z0-9]{2,}")          # letters and digits, two or more: the words of a label
LETTER_WORDS_RE = re.compile(r"[^\W\d_]{2,}")       # letters of any script, two or more: prose has words
LONG_LETTER_WORDS_RE = re.compile(r"[^\W\d_]{4,}")  # ... four or more: the words a language shows in
NAME_TOKEN_RE = re.compile(r"[A-Za-z][\w.+\-]*[\w+]")  # a name: "GPT-4o", "C++", "v2.1" (not its full stop)
TOKEN_RE = re.compile(r"[A-Za-z0-9][\w.\-]*[\w]")   # a name or number that may start with a digit: "V100", "2080Ti"
TOKEN_OR_LETTER_RE = re.compile(TOKEN_RE.pattern + r"|[A-Za-z]")  # ... or a single letter
LETTER_TOKEN_RE = re.compile(r"[A-Za-z][\w.\-]*[\w]")  # ... starting with a letter: a question's own words
SPECIFIC_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w.\-+]*[\w+]|[A-Za-z0-9]")  # what a question may name: "GPT-4o", "7B"
FRAGMENT_WORD_RE = re.compile(r"[A-Za-z][\w@.+-]*[\w+]|[A-Za-z]")  # the words a chat fragment adds: "R@1", "C++"
QUESTION_WORD_RE = re.compile(r"[A-Za-z0-9][\w'’\-]*[\w]|[A-Za-z0-9]")  # a question's words as the user wrote them
PHRASE_WORD_RE = re.compile(r"[A-Za-z][\w'-]*|[?.!,;:]")  # a word, or the punctuation that ends a noun phrase
NUMBER_OR_WORD_RE = re.compile(r"[-+]?\d[\d,.]*\d|\d|[A-Za-z][\w-]*")  # a figure ("1,800", "-3.5") or a word
WH_PHRASE_WORD_RE = re.compile(r"[\w'-]+")          # the words after what/which, digits and all: "3D", "F1"
LABEL_WORD_RE = re.compile(r"[\w-]+")               # the words of a paper's label
LOWER_WORD_RE = re.compile(r"[a-z0-9]+(?:'t)?")     # a lower-cased word with its "n't": "doesn't" (negations)
CUE_WORD_RE = re.compile(r"[a-z][a-z'-]+|\d+(?:\.\d+)?%?")  # a lower-cased word or a figure: grid cue words
NONSPACE_RE = re.compile(r"\S+")                    # a whitespace-delimited token, punctuation attached

_NOT_ALNUM_RE = re.compile(r"[^a-z0-9]")


@lru_cache(maxsize=65536)
def alnum(text: str) -> str:
    """Lower-cased letters and digits only ("GPT-4o" -> "gpt4o"): how names, labels and quotes are compared
    (cached: an answer sentence is compared with every sentence of its sources, which recur across answers)."""
    return _NOT_ALNUM_RE.sub("", text.lower())


def word_stems(text: str) -> set[str]:
    """Stems of a text's whole words (`WORD_RE`: hyphenated words kept whole, not split as `stems` splits them;
    no numbers), stopwords left out: the words a paper's label and title are known by."""
    return {stem(w.lower()) for w in WORD_RE.findall(text) if w.lower() not in STOPWORDS}


# A whole word: no word character or hyphen on either side ("RL" is not in "RLHF" nor in "RL-based").
WORD_START = r"(?<![\w-])"
WORD_END = r"(?![\w-])"


@lru_cache(maxsize=8192)
def whole_word(word: str, ignore_case: bool = False) -> re.Pattern[str]:
    """A pattern matching `word` as a whole word (see WORD_START)."""
    return re.compile(WORD_START + re.escape(word) + WORD_END, re.IGNORECASE if ignore_case else 0)


@lru_cache(maxsize=1024)
def any_word(words: tuple[str, ...], ending: str = "", ignore_case: bool = False) -> re.Pattern[str]:
    """A pattern matching any of the words as a whole word, each optionally followed by `ending` (a regex: a
    plural "(?:s|es)?")."""
    return re.compile(WORD_START + one_of(re.escape(w) for w in words) + ending + WORD_END,
                      re.IGNORECASE if ignore_case else 0)


# Citation markers: "[1]", "[1, 3]", "[2; 4]" (group 1 holds the numbers: `citation_parts`).
_CITED = r"\s*\d+(?:\s*[,;]\s*\d+)*\s*"
CITATION_RE = re.compile(r"\[(" + _CITED + r")\]")
LEADING_CITATIONS_RE = re.compile(r"^((?:\s*\[" + _CITED + r"\])+)(.*)$", re.S)  # markers opening a sentence
SINGLE_CITATION_RE = re.compile(r"\[(\d+)\]")  # one number, as a repair note writes it ("from [2] to [1]")
# A passage quoted from a paper: its own reference marks ("the Adam optimizer [32]") are not the answer's citations.
QUOTED_RE = re.compile(r"“[^“”]*”")
_CITATION_SEPARATOR_RE = re.compile(r"[,;]")


def citation_parts(cited: str) -> list[str]:
    """The numbers of a citation marker (CITATION_RE's group 1) as written: "1, 3" -> ["1", "3"]."""
    return [x.strip() for x in _CITATION_SEPARATOR_RE.split(cited) if x.strip()]


# Terminal colour codes pasted along with a question: replaced by a space where a question is cleaned
# (rag/answer/question.py). Narrower than `_ESCAPES_RE` above, which removes every escape from text shown.
PASTED_ESCAPES_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")

# --- closed-class words

WH_WORDS = ("which", "what", "who", "whom", "whose", "how", "why", "when", "where")  # a question may open with
# The auxiliary verbs a question may open with ("Does X ...?", "Can it ...?").
AUXILIARIES = ("does", "do", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could", "would",
               "will", "should", "may", "might")
# An acronym followed by one of these is the whole asked noun ("which GPU was ..."): the auxiliaries without the
# modals should / may / might, as the rule was written.
VERB_AUX = frozenset(AUXILIARIES[:14])
# The auxiliaries, articles and prepositions that end or open a noun phrase after what/which.
AUX_WORDS = frozenset((*AUXILIARIES, *"the a an of in on for to by with from at".split()))
# A literal "Yes"/"No" lead (rag/answer/lead.py `yes_no`) is read only after these: the list it was written with,
# narrower than AUXILIARIES (had / should / may / might left out; widening it is not measured).
LITERAL_YES_NO_AUXILIARIES = tuple(w for w in AUXILIARIES if w not in ("had", "should", "may", "might"))
# Words that open a reference to one or all of several papers in a chat: "which of them", "each of these two".
PLURAL_REFERENCE_LEADS = ("which", "each", "either", "neither", "one")
POSSESSIVE_PRONOUNS = ("their", "theirs", "its")
# The preposition a question's asked name is the object of ("In which framework ...?", "... trained on?").
ASKED_PREPOSITIONS = ("in", "on", "with", "using", "by", "from", "at", "under", "via", "through")
# Words that frame a question rather than say what it is about (stemmed).
FRAME_WORDS = _stemmed("""which what who whom whose how does do did is are was were any anyone
    someone something there paper papers work works article study studies authors author propose proposes
    proposed introduce introduces introduced present presents report reports reported claim claims name
    named called call exactly tell know give gives mention mentions mentioned describe describes
    list show shows find finds found get gets result results one ones deal deals dealing talk talks discuss
    discusses cover covers address addresses tackle tackles focus focuses look looks""")
# Negations: English closed-class words that turn a statement into its denial (the citation check's rule 6).
NEGATIONS = frozenset("""not no never none nor neither cannot without false untrue incorrect wrong retracted
    refuted disproved debunked unfounded fails failed fail unable lacks lack""".split())
# The negations read right before a "-free" / "without" span of a literal "No" lead ("not training-free"): the
# plain ones that rule was written with, narrower than NEGATIONS (reading the others there is not measured).
PLAIN_NEGATIONS = ("not", "never", "no")
# Conjunctions of contrast or concession: they start a clause (the citation check reads a clause's negations).
CONTRAST_CONJUNCTIONS = ("but", "although", "though", "while", "whereas", "despite", "yet")
# A sentence opening with these states a contrast or concession (the grid's "contrast" feature): the
# conjunctions and the adverbs that open a sentence so.
CONTRAST_OPENERS = ("however", "but", "yet", "unfortunately", "despite", "although", "though", "while", "whereas",
                    "nevertheless", "nonetheless", "still")

# Stopword-like sets. STOPWORDS (above) is removed from every term; these say what one rule ignores, each
# narrower or otherwise different from STOPWORDS because that rule keeps some stopwords or drops other words.
# Words about a figure that say nothing of what it measures ("approximately", "the total"): with STOPWORDS, left
# out of the words that place a number in the citation check (rule 3).
VAGUE_WORDS = frozenset("""answer about approximately around roughly nearly almost total value result number figure
    reach reaches up""".split())
NUMBER_CONTEXT_STOPWORDS = STOPWORDS | VAGUE_WORDS
# The words of a sentence that only lists its sources ("Matching papers: A [1], B [2].").
SOURCE_LIST_WORDS = frozenset("matching papers paper see and or also relevant sources source the best match matches "
                              "closest".split())
# Words that end the unit written after a figure ("1,800 test steps [on LIBERO]"): function words, but not all
# stopwords ("more", "new" can be part of a unit: "5.6x more decoder-side tokens").
UNIT_STOP_WORDS = frozenset("""and or but than that which while with by on in at for from to of as when where whereas
    compared relative over under across per vs versus using via through into after before during a an the its their
    this these is are was were""".split())
# The words of a grid column's question that say nothing of its column: "state" and "main" too, while the
# column's own words are kept ("method", "approach", "propose": stopwords elsewhere, its cue words here).
COLUMN_QUESTION_STOPWORDS = frozenset("what which does do the a an of or and paper papers use state main is are "
                                      "to".split())
# Function words a chat fragment adds to the question it continues ("and on LIBERO?"): not its emphasis. Narrower
# than STOPWORDS: "new" and "method" in "what about the new method?" are what the fragment asks about.
FRAGMENT_FUNCTION_WORDS = frozenset("""a an the and or of on in for with at to by from what how about is are was
    were does do did its their it they them this that than compared versus vs""".split())

# --- numbers written as words

# Numbers written as words that read as a figure in a sentence ("three benchmarks").
SMALL_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
# ... and the words that count in a question's noun phrase ("what three components", "how many thousand ...").
COUNT_WORDS = frozenset((*SMALL_NUMBER_WORDS, "dozen", "hundred", "thousand", "million"))
# A count written before a device's name: "eight V100 GPUs" (as many devices as a machine holds).
DEVICE_COUNT_WORDS = ("one", "two", "four", "eight", "sixteen")

# --- quantities: what a figure is asked for and stated with
# Three readings, each deciding something else (merging them changes which questions ask for a figure):
# QUANTITY_NOUNS are the head nouns after what/which that ask for a value ("what noise scale"); the phrases
# after "what" / "what is the" below ask for a figure anywhere in a question (regex fragments: "speed-?up",
# "win rate"); METRIC_NOUNS are evaluation metrics ("what WER does X reach" asks for the metric's value).
QUANTITY_NOUNS = _stemmed("""percent percentage fraction share proportion number count
    speedup speed-up accuracy score rate size ratio error cost budget margin latency gain
    improvement reduction scale value amount length dimension temperature threshold coefficient""")
# Of those, the ones that say only that a figure is asked ("the number of codewords"), never written beside it.
GENERIC_QUANTITY_NOUNS = _stemmed("number count amount value total fraction share proportion percent percentage")
# Asks for a value in the singular ("what discount factor"), for parts in the plural ("what factors").
SINGULAR_QUANTITY_NOUNS = _stemmed("factor")
METRIC_NOUNS = _stemmed("""wer cer bleu rouge meteor chrf f1 auroc auc auprc map ndcg mrr psnr
    ssim lpips fid mse rmse mae mape perplexity ppl eer""")
# "what <phrase>" asks for a figure anywhere in a question; "what is the <phrase>" a narrower list (as written).
NUMERIC_AFTER_WHAT = ("percent", "percentage", "fraction", "share", "proportion", "number", "speed-?up", "accuracy",
                      "f1", "score", "win rate", "latency", "gain", "improvement", "reduction", "rate", "size",
                      "ratio", "auroc", "error", "cost", "budget", "margin")
NUMERIC_AFTER_WHAT_IS_THE = ("speed-?up", "accuracy", "f1", "score", "win rate", "latency", "gain", "improvement",
                             "reduction", "number", "percentage", "rate", "size", "ratio", "auroc", "error", "margin",
                             "max", "maximum", "minimum")
NUMERIC_AFTER_BY_WHAT = ("factor", "margin", "percent", "percentage")  # "by what margin"
NUMERIC_AFTER_HOW = ("large", "big", "fast", "long", "often", "far", "small", "high", "low", "well")  # "how fast"
# Units a measured quantity is stated with when its name is left out: "takes 3 hours" states a time (keys stemmed).
_BYTES = r"\d\s?(?:[KMGT]i?B|bytes?)\b"
MEASURE_UNITS = {stem(k): re.compile(v, re.I) for k, v in {
    # (a decade, "the 1990s", is no time)
    "time": r"(?<![\d.])(?!(?:1[5-9]|20)\d0s\b)\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds?|min|minutes?|h|hrs?|hours?|days?|"
            r"weeks?|GPU-hours?)\b",
    "memory": _BYTES, "size": _BYTES, "storage": _BYTES}.items()}

# --- comparisons
# A question asks to compare (question.py: its shape is "comparison"): the strict reading.
COMPARISON_RE = re.compile(r"\bcompar(?:e|es|ed|ing|ison)\b|\bdiffer(?:s|ence|ences)?\b|\bversus\b|\bvs\.?\s|"
                           r"\bcontrast\b|\bhow (?:do|does) .+ and .+ (?:relate|compare)\b", re.I)
# A chat turn's they/them/their mean several papers when it compares them (conversation.py): broader, since in a
# follow-up "both", "each", "similar", "in common" compare the papers just discussed.
COMPARISON_CUE_RE = re.compile(r"\b(?:compar\w*|differ\w*|versus|vs\.?|contrast\w*|similar\w*|the\s+same|both|"
                               r"which\s+of|either|neither|whereas|in\s+common|each)\b", re.I)
# The pivot of a comparative statement (the citation check's rule 6): what stands before and after it is compared
# in one direction ("RecMem uses fewer tokens than full attention").
COMPARATIVE_PIVOT_RE = re.compile(r"\b(?:than|outperforms?|outperformed|surpass(?:es|ed)?|exceeds?|exceeded|beats?|"
                                  r"beat)\b", re.I)
# "how much shorter", "how many more": comparative words after which the number's unit is not in the question.
COMPARATIVES = frozenset("""more less fewer better worse faster slower shorter longer higher lower larger smaller
    greater bigger times time points max maximum minimum total overall exact exactly""".split())

# --- papers and the things they name
# A question asks which paper, method or benchmark (question.py): "which paper proposes X?", "is there a paper on
# X?". After a preposition the noun is where or with what something was done ("In which framework were the networks
# reproduced?"), not the paper that proposes it.
LOOKUP_RE = re.compile(
    r"(?<!\bin )(?<!\bon )(?<!\bat )(?<!\bwith )(?<!\bunder )(?<!\bthrough )"
    r"\b(which|what) (paper|work|method|approach|benchmark|framework|model|algorithm|study|one)\b|"
    r"\bwho (propose|introduce|present|report|claim|show|find|found|use|study|argue|release|develop)|"
    r"\bname of\b|\bis there (?:a |any )?(?:papers?|works?|methods?|benchmarks?)\b|\bany (paper|work) (on|about|that)|"
    r"\bwhat('s| is) (it|the method|the benchmark|the paper) called\b|\bwhich abstract\b", re.I)
# A chat turn that opens asking for a paper starts a new topic, whatever words it uses (conversation.py): only
# its opening is read, and more loosely than LOOKUP_RE ("which two studies ...", "who studied ...").
LOOKUP_OPENING_RE = re.compile(r"^\s*(?:which|what|any|is\s+there\s+a|are\s+there)\s+(?:\w+\s+){0,2}"
                               r"(?:papers?|works?|studies|study|methods?|approaches?|abstracts?)\b|^\s*who\s+\w+",
                               re.I)
# Nouns after "which" that make a question a lookup of a paper or method (stemmed): "which label-free RL method".
LOOKUP_NOUNS = _stemmed("paper method approach work framework technique algorithm")
# Nouns after what/which that ask for names (stemmed).
NAME_NOUNS = _stemmed("""benchmark benchmarks dataset datasets model models baseline
    baselines backbone backbones task domain language checkpoint architecture tool metric optimizer encoder
    decoder library toolkit hardware software accelerator""")
# Of those, the ones whose names are coined ("LIBERO", "Qwen3"): a task or a domain is named in ordinary words.
STRICT_NAME_NOUNS = NAME_NOUNS - _stemmed("task domain language tool")
# A kind of thing named by the kinds of thing that belong to it: a paper names its hardware as "64 V100 GPUs",
# seldom as "hardware", and its software as "the Theano library". ("Framework" is left out: in a paper it is
# mostly the method's own framework, "the StairNet framework", not software.)
KIND_MEMBERS = {stem("hardware"): ("GPU", "TPU", "CPU", "accelerator"),
                stem("software"): ("library", "toolkit", "package")}
# Nouns that ask for the parts of something: the answer lists them, in ordinary words (stemmed).
PART_NOUNS = _stemmed("""component components part parts stage stages step steps factor factors
    element elements dimension dimensions aspect aspects pillar pillars ingredient ingredients phase phases module
    modules""")
# Nouns any field writes for a body of data a study draws on (ML's datasets and benchmarks, medicine's cohorts
# and registries, the social sciences' surveys): a name written beside one of them names the data (the grid).
DATA_NOUNS = ("dataset", "data set", "data", "benchmark", "corpus", "corpora", "database", "cohort", "registry",
              "registries", "survey", "suite", "collection", "test set", "testbed")
# What a chat follow-up calls "the benchmark", "the dataset": a thing of the paper just discussed (conversation.py).
EVALUATION_NOUNS = ("benchmark", "dataset", "task", "suite", "environment", "testbed", "corpus")
