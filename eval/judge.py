"""Judges that decide whether a statement is supported by some source passages.

Two judges share one interface, so every score in a run comes from the same place and the report can name it:
- `OfflineJudge`: deterministic, no model call beyond the embedding model. It runs the assistant's own
  citation check (rag/answer/cite.py: numbers, method/benchmark names, verbatim quote) on the statement as if it
  cited the sources, then a stricter meaning test (see the class). Fast and repeatable; its agreement with
  hand labels is measured on eval/labels/judge_labels.jsonl.
- `LLMJudge`: RAGAS-style, through the configured OpenAI-compatible endpoint (rag.answer.llm.complete): the answer is
  split into standalone claims by the LLM and each claim is verified against the passages by the LLM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rag.answer.cite import SEMANTIC_MIN, UNSUPPORTED_MARK, SourceText, check_answer, names_paper, strip_citations
from rag.text import split_sentences
from rag.settings import redact

if TYPE_CHECKING:
    from rag.settings import Settings

Embed = Callable[[list[str]], list[list[float]]]
LABELS_PATH = Path(__file__).resolve().parent / "labels" / "judge_labels.jsonl"


@dataclass
class Verdict:
    """A judge's decision on one statement; `supported` is None when the judge could not decide."""

    supported: bool | None
    reason: str
    evidence: str = ""


@dataclass
class Claim:
    """A statement to verify, with the paper ids its sentence cited (empty for LLM-extracted claims)."""

    text: str
    cited: list[str] = field(default_factory=list)


class Judge(Protocol):
    """What scoring needs from a judge: claims to verify, and a verdict on one claim against passages."""

    name: str

    @property
    def description(self) -> str: ...

    def claims(self, sentences: list[Claim]) -> list[Claim]: ...

    def supports(self, statement: str, sources: Sequence[SourceText]) -> Verdict: ...


class CachedEmbed:
    """Embeds each distinct text once: the judge asks about the same sentences for recall, precision and
    faithfulness, and the labelled set repeats whole abstracts."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._cache: dict[str, list[float]] = {}

    def __call__(self, texts: list[str]) -> list[list[float]]:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            self._cache.update(zip(todo, self._embed(todo)))
        return [self._cache[t] for t in texts]


def clean_statement(text: str) -> str:
    """The statement without citation markers or the check's unsupported mark."""
    return strip_citations(text.replace(UNSUPPORTED_MARK, " ")).strip()


class OfflineJudge:
    """A statement is supported by some passages when the assistant's citation check (rag/answer/cite.py) passes it
    with all of them cited: its numbers and names must be in one passage (or in several it names), it must not
    name another paper it does not rely on, and it must quote a passage sentence or be close in meaning to one
    (cosine >= SEMANTIC_MIN on the bare sentences). The eval judges with the same rules users get, plus one:
    a statement naming any indexed paper (`known_labels`) that the passages never mention is unsupported.
    """

    name = "offline"

    def __init__(self, embed: Embed, known_labels: Iterable[str] = ()) -> None:
        self.embed = embed if isinstance(embed, CachedEmbed) else CachedEmbed(embed)
        self.known_labels = list(dict.fromkeys(known_labels))

    @property
    def description(self) -> str:
        return ("offline: the citation check of rag/answer/cite.py (numbers and names in one source, no uncited paper "
                f"named, then a verbatim quote or cosine >= {SEMANTIC_MIN} to a source sentence)")

    def claims(self, sentences: list[Claim]) -> list[Claim]:
        """The answer's own sentences are its claims (no model to rewrite them)."""
        return sentences

    def supports(self, statement: str, sources: Sequence[SourceText]) -> Verdict:
        if not sources:
            return Verdict(False, "no passage to check against")
        passages = " ".join(s.text for s in sources)
        given = {s.label for s in sources}
        foreign = [label for label in self.known_labels
                   if label not in given and names_paper(statement, label) and not names_paper(passages, label)]
        if foreign:
            return Verdict(False, "names a paper that is not among the sources: " + ", ".join(foreign))
        numbered = [SourceText(i, s.label, s.sentences) for i, s in enumerate(sources, 1)]
        marker = "[" + ", ".join(str(s.n) for s in numbered) + "]"
        pieces = split_sentences(clean_statement(statement))
        if not pieces:
            return Verdict(False, "empty statement")
        result = check_answer("\n".join(f"{marker} {p}" for p in pieces), numbered, "mark", embed=self.embed)
        for check in result.checks:
            if not check.supported:
                return Verdict(False, check.reason, check.evidence)
        return Verdict(True, result.checks[0].reason, result.checks[0].evidence)


# --- LLM judge ----------------------------------------------------------------------------------------------

CLAIMS_SYSTEM = """You split an answer about research papers into short standalone factual statements.
Rules:
1. One statement per line, no numbering, no bullets.
2. Each statement must be understandable alone: replace pronouns with the names they stand for.
3. Keep every number, name and qualifier exactly as the answer gives it. Add nothing the answer does not say.
4. Leave out sentences that state no fact (greetings, "The answer is:")."""

CLAIMS_USER = """Answer:
{answer}

Statements:"""

VERIFY_SYSTEM = """You check whether a statement is supported by passages from research-paper abstracts.
Reply "yes" if the passages state or directly imply everything in the statement (numbers, names and which
paper did what must match). Reply "no" otherwise. Reply with one word: yes or no."""

VERIFY_USER = """Passages:
{passages}

Statement: {statement}

Supported (yes or no):"""

CHARS_PER_TOKEN = 4
VERIFY_MAX_TOKENS = 8
CLAIMS_MAX_TOKENS = 300


class LLMJudge:
    """RAGAS-style judge through the configured OpenAI-compatible endpoint."""

    name = "llm"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def description(self) -> str:
        where = redact(self.settings.openai_base_url or "api.openai.com")
        return f"llm: {self.settings.llm_model} at {where} (claims extracted, then each verified, yes/no)"

    def _ask(self, system: str, user: str, max_tokens: int) -> str:
        from llama_index.core.llms import ChatMessage, MessageRole

        from rag.answer.llm import complete

        return complete(self.settings, [ChatMessage(role=MessageRole.SYSTEM, content=system),
                                        ChatMessage(role=MessageRole.USER, content=user)], max_tokens=max_tokens)

    def claims(self, sentences: list[Claim]) -> list[Claim]:
        """Claims extracted by the LLM; the answer's sentences when the LLM fails or returns none."""
        from rag.answer.llm import LLMUnavailable

        answer = " ".join(clean_statement(s.text) for s in sentences)
        if not answer:
            return []
        try:
            reply = self._ask(CLAIMS_SYSTEM, CLAIMS_USER.format(answer=answer), CLAIMS_MAX_TOKENS)
        except LLMUnavailable:
            return sentences
        lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip() for line in reply.splitlines()]
        found = [Claim(line) for line in lines if re.search(r"\w", line)]
        return found or sentences

    def supports(self, statement: str, sources: Sequence[SourceText]) -> Verdict:
        """One yes/no question to the LLM; None when it fails or answers neither."""
        from rag.answer.llm import LLMUnavailable

        if not sources:
            return Verdict(False, "no passage to check against")
        budget = max(1000, (self.settings.llm_context_window - 300) * CHARS_PER_TOKEN)
        passages = "\n\n".join(f"[{s.label}] {s.text}" for s in sources)[:budget]
        try:
            reply = self._ask(VERIFY_SYSTEM, VERIFY_USER.format(passages=passages,
                                                                statement=clean_statement(statement)),
                              VERIFY_MAX_TOKENS)
        except LLMUnavailable as e:
            return Verdict(None, f"judge failed: {e.reason}")
        return parse_verdict(reply)


def parse_verdict(reply: str) -> Verdict:
    """Read a yes/no reply; anything else is no verdict rather than a guess."""
    first = re.findall(r"[a-z]+", reply.lower())[:1]
    if first == ["yes"]:
        return Verdict(True, "LLM judge: yes")
    if first == ["no"]:
        return Verdict(False, "LLM judge: no")
    return Verdict(None, f"LLM judge gave no verdict: {reply[:60]!r}")


def make_judge(kind: str, settings: Settings, embed: Embed, known_labels: Iterable[str] = ()) -> Judge:
    """The judge named on the command line; 'llm' needs a configured endpoint."""
    if kind == "offline":
        return OfflineJudge(embed, known_labels)
    if kind == "llm":
        if not settings.llm_configured:
            raise ValueError("--judge llm needs OPENAI_BASE_URL or OPENAI_API_KEY to be configured")
        return LLMJudge(settings)
    raise ValueError(f"unknown judge {kind!r} (use offline or llm)")


# --- agreement with hand labels -----------------------------------------------------------------------------

@dataclass
class LabelledSentence:
    """A hand-labelled sentence and the source passages it is judged against."""

    id: str
    sentence: str
    sources: list[SourceText]
    supported: bool
    origin: str


@dataclass
class Agreement:
    """How a judge's verdicts compare with the hand labels, per class, with the items it got wrong."""

    supported_kept: int        # labelled supported, judged supported
    supported_total: int
    unsupported_caught: int    # labelled unsupported, judged unsupported
    unsupported_total: int
    wrong: list[tuple[LabelledSentence, Verdict]]

    @property
    def total(self) -> int:
        return self.supported_total + self.unsupported_total

    @property
    def agreed(self) -> int:
        return self.supported_kept + self.unsupported_caught

    @property
    def rate(self) -> float:
        return self.agreed / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"agreement": round(self.rate, 4), "agreed": self.agreed, "total": self.total,
                "supported_kept": f"{self.supported_kept}/{self.supported_total}",
                "unsupported_caught": f"{self.unsupported_caught}/{self.unsupported_total}",
                "disagreements": [item.id for item, _ in self.wrong]}


def load_labels(path: Path = LABELS_PATH) -> list[LabelledSentence]:
    """Read the labelled set; each line: id, sentence, label (supported|unsupported), sources, origin."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if d["label"] not in ("supported", "unsupported"):
            raise ValueError(f"{path}: {d['id']}: label must be supported or unsupported, got {d['label']!r}")
        sources = [SourceText(s["n"], s["label"], s["sentences"]) for s in d["sources"]]
        out.append(LabelledSentence(d["id"], d["sentence"], sources, d["label"] == "supported", d["origin"]))
    return out


def agreement(judge: Judge, labels: Sequence[LabelledSentence]) -> Agreement:
    """Judge every labelled sentence against its sources; an undecided verdict counts as a disagreement."""
    kept = caught = n_supported = 0
    wrong = []
    for item in labels:
        verdict = judge.supports(item.sentence, item.sources)
        n_supported += item.supported
        if verdict.supported is item.supported:
            kept += item.supported
            caught += not item.supported
        else:
            wrong.append((item, verdict))
    return Agreement(kept, n_supported, caught, len(labels) - n_supported, wrong)
