"""Run the eval questions through the assistant and score each answer.

One record per question holds what was asked, what the assistant answered and cited, what it retrieved, the
judge's verdict on every sentence and claim, and the scores; `eval.report` aggregates the records.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.answer.cite import UNSUPPORTED_MARK, SourceText, cited_numbers, strip_citations
from rag.answer.intent import Asks, read_intent
from rag.prompts import is_abstention
from rag.settings import redact
from rag.text import split_sentences

from eval.judge import Claim, Judge, agreement, load_labels
from eval.metrics import retrieval_scores
from eval.scoring import abstention, citation_scores, correctness, fact_present, faithfulness, gold_citations

if TYPE_CHECKING:
    from rag.service import Assistant
    from rag.schema import Answer
    from rag.settings import Settings
    from rag.index.store import Store

QUESTIONS_PATH = Path(__file__).resolve().parent / "questions.jsonl"
RETRIEVAL_K = 5  # retrieval metrics are @5 whatever --k is, so runs with different k stay comparable
SCORE_KEYS = ("hit@1", "hit@5", "mrr", "ndcg@5", "recall@5", "citation_recall", "citation_precision",
              "cites_gold", "cites_only_gold", "faithfulness", "correctness", "abstention", "lead")


class QuestionsError(ValueError):
    """The questions file cannot be used; the message names the line and the problem."""


@dataclass
class Question:
    id: str
    question: str
    type: str
    gold: list[str] = field(default_factory=list)
    reference: str = ""
    key_facts: list[str] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


def load_questions(path: Path) -> list[Question]:
    """Read the questions file (JSON Lines), refusing malformed lines and repeated ids with the line number."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise QuestionsError(f"cannot read {path}: {e.strerror or e}") from None
    out: list[Question] = []
    seen: set[str] = set()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            q = Question(str(d["id"]), str(d["question"]), str(d["type"]), [str(g) for g in d.get("gold", [])],
                         str(d.get("reference", "")), [str(f) for f in d.get("key_facts", [])])
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise QuestionsError(f"{path}:{i}: not a question object ({type(e).__name__}: {e})") from None
        if q.id in seen:
            raise QuestionsError(f"{path}:{i}: id {q.id!r} is used twice")
        seen.add(q.id)
        out.append(q)
    if not out:
        raise QuestionsError(f"{path} holds no questions")
    return out


class PaperTexts:
    """Sentences of indexed papers, read from the store once per paper: the passages the judge checks."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[str, SourceText | None] = {}

    def get(self, paper_ids: Sequence[str]) -> dict[str, SourceText]:
        missing = [p for p in dict.fromkeys(paper_ids) if p and p not in self._cache]
        if missing:
            entries = self.store.get_papers(missing)
            for pid in missing:
                e = entries.get(pid)
                self._cache[pid] = SourceText(0, e.label, split_sentences(e.text)) if e else None
        return {p: s for p in paper_ids if (s := self._cache.get(p)) is not None}


def answer_claims(answer: Answer) -> list[Claim]:
    """The sentences the answerer wrote, each with the paper ids it cites.

    A generated answer is judged as the LLM wrote it (before the citation check marked or dropped anything),
    numbered as its sources were: the retrieved papers in order. An extractive answer is judged as shown.
    Abstention sentences and lines without words ('<<<', '1.') state nothing and are left out.
    """
    if answer.abstained and answer.mode == "extractive":
        return []  # an abstention states nothing; the closest papers it lists are pointers, not claims
    if answer.mode == "llm" and answer.raw_answer is not None:
        text = answer.raw_answer
        number_to_id = {n: r.paper_id for n, r in enumerate(answer.retrieved, 1)}
    else:
        text = answer.answer
        number_to_id = {c.n: c.paper_id for c in answer.citations}
    claims = []
    for line in text.splitlines():
        line = line.replace(UNSUPPORTED_MARK, " ").strip().lstrip("-*• ").strip()
        for sentence in split_sentences(line):
            clean = strip_citations(sentence)
            if not re.search(r"[^\W_]", clean) or is_abstention(clean):
                continue
            claims.append(Claim(sentence, [number_to_id.get(n, "") for n in cited_numbers(sentence)]))
    return claims


def _none_scores() -> dict[str, float | None]:
    return dict.fromkeys(SCORE_KEYS)


def score_answer(q: Question, answer: Answer, papers: PaperTexts, judge: Judge) -> dict[str, Any]:
    """Every score of one answered question, with the judge's verdicts behind them."""
    ranked = [r.paper_id for r in answer.retrieved]
    cited_ids = [c.paper_id for c in answer.citations]
    claims = answer_claims(answer)
    sources = papers.get(ranked + cited_ids + [pid for c in claims for pid in c.cited])
    retrieved = [sources[p] for p in ranked if p in sources]

    scores = _none_scores()
    if q.answerable:
        scores.update(retrieval_scores(ranked, set(q.gold), RETRIEVAL_K))
    cit = citation_scores(claims, sources.get, judge)
    faith, claim_scores = faithfulness(judge.claims(claims), retrieved, sources.get, judge)
    correct, missing = correctness(q.key_facts, answer.answer, answer.abstained)
    scores["citation_recall"], scores["citation_precision"] = cit.recall, cit.precision
    scores["cites_gold"], scores["cites_only_gold"] = gold_citations(cited_ids, q.gold)
    scores["faithfulness"], scores["correctness"] = faith, correct
    scores["abstention"] = abstention(answer.abstained, q.answerable)
    scores["lead"] = lead_score(q, answer)
    return {"scores": scores, "lead": answer.lead, "missing_facts": missing,
            "sentences": [asdict(s) for s in cit.sentences], "claims": [asdict(c) for c in claim_scores]}


def lead_score(q: Question, answer: Answer) -> float | None:
    """For an answerable number or definition question: does the direct-answer line hold a key fact?"""
    intent = read_intent(q.question)
    if not q.answerable or not q.key_facts or intent.asks not in (Asks.NUMBER, Asks.DEFINITION):
        return None
    return float(bool(answer.lead) and any(fact_present(f, answer.lead) for f in q.key_facts))


def evaluate_question(q: Question, assistant: Assistant, mode: str, k: int | None, papers: PaperTexts,
                      judge: Judge) -> dict[str, Any]:
    """Ask one question and return its record (an error record when the question is refused)."""
    from rag.errors import QuestionError

    record: dict[str, Any] = {"id": q.id, "type": q.type, "question": q.question, "gold": q.gold,
                              "key_facts": q.key_facts}
    try:
        answer = assistant.ask(q.question, k=k, mode=mode)
    except QuestionError as e:
        return record | {"error": str(e), "scores": _none_scores(), "latency_ms": None}
    t = time.perf_counter()
    scored = score_answer(q, answer, papers, judge)
    gold = set(q.gold)
    record |= {
        "mode": answer.mode, "answer": answer.answer, "abstained": answer.abstained,
        "raw_answer": answer.raw_answer, "notice": answer.notice, "error": answer.error,
        "citations": [{"n": c.n, "paper_id": c.paper_id, "label": c.label, "gold": c.paper_id in gold}
                      for c in answer.citations],
        "retrieved": [{"paper_id": r.paper_id, "label": r.label, "score": round(r.score, 4),
                       "gold": r.paper_id in gold} for r in answer.retrieved],
        "latency_ms": round(answer.timings_ms.get("total_ms", 0.0), 1),
        "judge_ms": round((time.perf_counter() - t) * 1000, 1),
    } | scored
    return record


def open_assistant(settings: Settings, say: Callable[[str], None]) -> Assistant:
    """The assistant over the configured index; a fresh clone has none, so the corpus is ingested first."""
    from rag.index.ingest import ingest
    from rag.service import Assistant
    from rag.index.store import store_exists

    if not store_exists(settings):
        say(f"no index at {settings.chroma_dir}: ingesting {', '.join(map(str, settings.corpus_paths))} first")
        report = ingest(settings)
        for line in report.problems:
            say(f"skipped: {line}")
    return Assistant(settings)


def missing_gold(assistant: Assistant, questions: Sequence[Question]) -> list[str]:
    """Gold paper ids the index does not hold: the questions were written for another corpus."""
    indexed = set(assistant.retriever.store.catalog())
    return sorted({g for q in questions for g in q.gold} - indexed)


def run_questions(assistant: Assistant, questions: Sequence[Question], mode: str, k: int | None, judge: Judge,
                  progress: bool | None = None) -> list[dict[str, Any]]:
    """Answer and score every question, with a progress bar on a terminal."""
    from tqdm import tqdm

    papers = PaperTexts(assistant.retriever.store)
    assistant.retriever.warm_up()  # the first question's latency should not include loading the models
    show = sys.stderr.isatty() if progress is None else progress
    return [evaluate_question(q, assistant, mode, k, papers, judge)
            for q in tqdm(questions, desc="eval", unit="q", disable=not show, file=sys.stderr)]


def judge_agreement(judge: Judge) -> dict[str, object]:
    """The judge's agreement with the hand-labelled sentences of eval/labels/judge_labels.jsonl."""
    return agreement(judge, load_labels()).to_dict()


def run_info(settings: Settings, mode: str, k: int | None, judge: Judge, questions_path: Path,
             n_questions: int) -> dict[str, Any]:
    """What a run was configured with, so two runs can be told apart and compared."""
    info: dict[str, Any] = {
        "mode": mode, "k": k or settings.top_k, "judge": judge.name, "judge_description": judge.description,
        "questions": _shown(questions_path), "questions_sha1": _sha1(questions_path), "n_questions": n_questions,
        "retrieval": settings.retrieval, "candidates": settings.candidates, "rrf_k": settings.rrf_k,
        "chunk_tokens": settings.chunk_tokens, "embed_model": settings.embed_model,
        "unsupported": settings.unsupported, "collection": settings.collection,
        "commit": _git_commit(),
    }
    if mode == "llm" or judge.name == "llm":
        info |= {"llm_model": settings.llm_model, "llm_base_url": redact(settings.openai_base_url or "api.openai.com"),
                 "llm_temperature": settings.llm_temperature, "llm_max_tokens": settings.llm_max_tokens}
    return info


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is under it (runs from two clones then match)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:12]


def _git_commit() -> str | None:
    """The commit of the code under evaluation ('-dirty' when it has uncommitted changes), from a checkout."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None
