"""The answer every front end receives (CLI `--json`, UI, API, eval). Field names are a stable contract."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Citation:
    """What `[n]` in an answer points to."""

    n: int
    paper_id: str
    label: str
    source: str
    position: int
    quote: str
    reference: str = ""
    # Bibliographic metadata kept from the input ("" / None when the input had none).
    title: str = ""
    authors: str = ""
    year: str = ""
    venue: str = ""
    doi: str = ""
    url: str = ""
    key: str = ""            # the input's citation key (BibTeX key, CSL id, RIS ID)
    page: int | None = None  # page of the quote, for papers read from PDFs
    section: str = ""  # section heading the quote is in ("4.2 Datasets", "Abstract"), for full texts
    passage: str = ""  # the paragraph the quote is in, for full texts (PDF, Markdown, HTML); "" for an abstract


@dataclass
class Retrieved:
    paper_id: str
    label: str
    score: float
    source: str = ""
    position: int = 0
    title: str = ""
    authors: str = ""
    year: str = ""
    venue: str = ""
    doi: str = ""
    url: str = ""
    key: str = ""


@dataclass
class SentenceCheck:
    """The citation check's verdict on one answer sentence, with the source sentence that supports it."""

    sentence: str
    citations: list[int]
    supported: bool
    reason: str = ""
    evidence: str = ""        # best-supporting sentence of the cited sources
    evidence_n: int | None = None
    similarity: float = 0.0
    # Set when the check re-attributed the sentence to the one source it is about (rag/answer/cite.py, repair):
    # "from [2] to [1]", "from none to [1]"; numbers as the answer shows them (a source the answer no
    # longer cites is named by its label). Empty when the sentence was not changed.
    repaired: str = ""


@dataclass
class Answer:
    question: str
    answer: str
    abstained: bool
    mode: str
    citations: list[Citation] = field(default_factory=list)
    retrieved: list[Retrieved] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    unsupported: list[dict[str, Any]] = field(default_factory=list)
    removed_citations: list[int] = field(default_factory=list)
    checks: list[SentenceCheck] = field(default_factory=list)
    notice: str | None = None
    error: str | None = None
    rewritten: str | None = None  # what was searched when it differs from the question (a chat turn resolved)
    lead: str | None = None  # the direct answer in one short line (a span of the first quote), when one exists
    outside_scope: list[str] = field(default_factory=list)  # labels of named papers outside the chosen scope
    raw_answer: str | None = None  # what the LLM wrote, before the citation check

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["timings_ms"] = {k: round(v, 1) for k, v in self.timings_ms.items()}
        for r in d["retrieved"]:
            r["score"] = round(r["score"], 4)
        for c in d["checks"]:
            c["similarity"] = round(c["similarity"], 3)
        return d


@dataclass
class StreamEvent:
    """What `Assistant.stream` yields: text as it arrives ('token'), 'reset' when the text so far is
    withdrawn (the LLM failed mid-answer, or its answer gave way to the extractive one: `text` then says why),
    and one 'final' event carrying the checked Answer."""

    kind: str
    text: str = ""
    answer: Answer | None = None


@dataclass
class LookupHit:
    """A citation-lookup result (`papers cite`): a paper, its sentence that best matches the query, and how
    strongly it matches."""

    paper_id: str
    label: str
    source: str
    position: int
    score: float
    sentence: str
    reference: str
    strength: str = "none"  # how well the best sentence carries the query: 'strong', 'weak' or 'none'
    evidence: float = 0.0   # the evidence scorer's probability for that sentence
    match: float = 0.0      # the lookup model's probability that this is the paper asked for (sets `strength`)
    title: str = ""
    authors: str = ""
    year: str = ""
    venue: str = ""
    doi: str = ""
    url: str = ""
    key: str = ""


@dataclass
class PaperRecord:
    """An indexed paper as every front end shows it (`papers list --json`, MCP list_papers / get_paper, the UI)."""

    paper_id: str
    label: str
    source: str
    position: int
    title: str = ""
    authors: str = ""
    year: str = ""
    venue: str = ""
    doi: str = ""
    arxiv: str = ""
    url: str = ""
    key: str = ""
    collection: str = ""
    full_text: bool = False  # read from a PDF: `text` below is then its abstract, the rest is in sections
    abstract: str = ""


@dataclass
class GridCell:
    """One cell of the papers grid: a paper's sentence for a column (with its direct-answer span), or "not stated"."""

    column: str
    paper_id: str
    text: str                  # the quoted sentence, or "not stated"
    not_stated: bool
    lead: str | None = None    # the direct-answer span of the sentence, when one exists
    sentence: int | None = None  # index of the sentence in the paper's abstract
    probability: float = 0.0   # the column model's (or evidence scorer's) probability for it
    supported: bool = True     # the citation check's verdict on the quote
    reason: str = ""


@dataclass
class GridRow:
    """One paper of the grid with its cells, in column order."""

    paper_id: str
    label: str
    title: str = ""
    year: str = ""
    url: str = ""
    reference: str = ""
    cells: list[GridCell] = field(default_factory=list)


@dataclass
class Grid:
    """Papers as rows, questions as columns (`papers grid`, MCP `grid`, the UI's grid tab)."""

    columns: list[str]
    questions: list[str]
    rows: list[GridRow] = field(default_factory=list)
    lookup: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)


def record(obj: Any) -> dict[str, Any]:
    """The one serialiser of answers, citations, lookup hits, papers and grids: plain JSON-ready dicts, with the
    same fields in every front end (rounded scores and timings)."""
    if isinstance(obj, Answer):
        return obj.to_dict()
    d = asdict(obj)
    if isinstance(obj, LookupHit):
        d["score"], d["evidence"] = round(obj.score, 4), round(obj.evidence, 4)
    if isinstance(obj, Grid):
        d["timings_ms"] = {k: round(v, 1) for k, v in obj.timings_ms.items()}
        for row in d["rows"]:
            for cell in row["cells"]:
                cell["probability"] = round(cell["probability"], 4)
    return d
