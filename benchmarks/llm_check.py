"""Generated answers from a real OpenAI-compatible model: record them once, then replay the citation check.

    python benchmarks/llm_check.py --base-url URL [--model NAME] [--limit 20]      live: flagged share, timings
    python benchmarks/llm_check.py --record FILE --base-url URL [--model NAME]     ask eval/questions.jsonl, save
    python benchmarks/llm_check.py --replay FILE [--data-dir DIR] [--eval]         no LLM: check, repair, fallback

--replay re-runs what happens after generation (rag/service.py `Assistant._finish_llm`: the citation check, citation
repair, and the extractive fallback) on recorded answers, without any model. It needs the texts of the recorded
sources and the extractive answer, so it opens the index in --data-dir (default data/replay; --record and the
live statistics use it too), building it from --corpus (default corpus/) when there is none; the recorded paper
ids must be in that index. For each question
it prints what repair and fallback changed against the check alone, then two summary lines, `before:` (the
check alone) and the last line, after:

    replayed=M false_abstentions=N repaired=R repaired_wrong=W fallback=F unsupported_kept=U

false_abstentions: answers that end as the abstention on a question whose extractive answer cites a gold paper;
repaired: sentences whose citation the check re-attributed; repaired_wrong: repairs to a paper outside the
question's gold papers; fallback: answers replaced by the extractive answer; unsupported_kept: unsupported
sentences still shown (always with the ⚠ mark). --eval adds `papers eval`-style scores (offline judge) before
and after, on the text as shown (⚠-marked sentences left out) and as `papers eval --mode llm` scores it.

The recorded file (JSON Lines, one object per question, as --record writes it) needs these fields:
    id, question        the question (id is any unique string)
    gold                paper ids that answer it ([] for an unanswerable question; used for the counts only)
    type                optional, the eval question type
    sources             the papers the model was given, in prompt order: [{"n": 1, "paper_id": ..., "label": ...}]
    raw_answer          the model's text, unchanged (numbered as `sources`); null when the LLM failed
--record also writes what the project made of it at recording time (answer, abstained, mode, notice, checks,
unsupported, removed_citations) and the extractive answer (extractive: answer, abstained, cited), for reference;
the replay recomputes them. To record your own model, point --base-url at its OpenAI-compatible endpoint (for
Ollama http://127.0.0.1:11434/v1, for llama.cpp http://127.0.0.1:8080/v1) and give --model its name.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.answer.cite import UNSUPPORTED_MARK, strip_citations  # noqa: E402
from rag.prompts import is_abstention  # noqa: E402
from rag.settings import load_settings  # noqa: E402

if TYPE_CHECKING:
    from rag.service import Assistant
    from rag.answer.retrieve import Retrieval
    from rag.schema import Answer

QUESTIONS = ROOT / "eval/questions.jsonl"


class ReplayError(ValueError):
    """The recorded file cannot be replayed (bad line, papers missing from the index); the message says why."""


# --- recording --------------------------------------------------------------------------------------------

def record_of(q: dict[str, Any], answer: Answer, extractive: Answer) -> dict[str, Any]:
    """One line of the recorded file: the question, what the model was given and wrote, what was shown."""
    return {
        "id": q["id"], "question": q["question"], "type": q.get("type", ""), "gold": q.get("gold", []),
        "sources": [{"n": i, "paper_id": r.paper_id, "label": r.label} for i, r in enumerate(answer.retrieved, 1)],
        "raw_answer": answer.raw_answer,
        "answer": answer.answer, "abstained": answer.abstained, "mode": answer.mode, "notice": answer.notice,
        "checks": [asdict(c) for c in answer.checks], "unsupported": answer.unsupported,
        "removed_citations": answer.removed_citations,
        "extractive": {"answer": extractive.answer, "abstained": extractive.abstained,
                       "cited": [c.paper_id for c in extractive.citations]},
    }


def record(assistant: Assistant, questions: list[dict[str, Any]], k: int, path: Path) -> int:
    """Ask every question in LLM mode and write the recorded file; returns how many answers the LLM gave."""
    lines, answered = [], 0
    for q in questions:
        answer = assistant.ask(q["question"], k=k, mode="llm")
        extractive = assistant.ask(q["question"], k=k, mode="extractive")
        answered += answer.raw_answer is not None
        if answer.raw_answer is None:
            print(f"{q['id']}: no model answer ({answer.notice})")
        lines.append(json.dumps(record_of(q, answer, extractive), ensure_ascii=False) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return answered


# --- replay -----------------------------------------------------------------------------------------------

def load_records(path: Path) -> list[dict[str, Any]]:
    """The recorded answers, refusing lines without the fields the replay needs."""
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            for key in ("id", "question", "sources"):
                r[key]  # noqa: B018 - presence check
            [(s["n"], s["paper_id"]) for s in r["sources"]]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ReplayError(f"{path}:{i}: not a recorded answer ({type(e).__name__}: {e})") from None
        out.append(r)
    return out


def retrieval_for(assistant: Assistant, r: dict[str, Any]) -> Retrieval:
    """The recorded sources as a Retrieval, in prompt order, with every chunk scored against the question."""
    ids = [s["paper_id"] for s in sorted(r["sources"], key=lambda s: s["n"])]
    retrieval = assistant.retriever.retrieve(r["question"], k=len(ids), paper_ids=ids)
    by_id = {p.paper_id: p for p in retrieval.papers}
    missing = [pid for pid in ids if pid not in by_id]
    if missing:
        raise ReplayError(f"{r['id']}: papers {missing} are not in the index: replay against the corpus the "
                          "answers were recorded on")
    retrieval.papers = [by_id[pid] for pid in ids]
    return assistant.retriever.complete(retrieval)


@dataclass
class Counts:
    """The replay's counters, over one way of finishing the recorded answers."""

    replayed: int = 0
    false_abstentions: int = 0
    repaired: int = 0
    repaired_wrong: int = 0
    fallback: int = 0
    unsupported_kept: int = 0
    unmarked: int = 0  # unsupported sentences shown without the mark: must stay 0
    repairs: list[tuple[str, str, str, str]] = field(default_factory=list)  # (id, sentence, repaired, paper)

    def line(self) -> str:
        return (f"replayed={self.replayed} false_abstentions={self.false_abstentions} repaired={self.repaired} "
                f"repaired_wrong={self.repaired_wrong} fallback={self.fallback} "
                f"unsupported_kept={self.unsupported_kept}")


def unlisted_text(answer: Answer) -> str:
    """What the shown answer says beyond its supported sentences and its ⚠-marked ones (should be nothing but
    the abstention sentence)."""
    rest = answer.answer
    for c in sorted(answer.checks, key=lambda c: -len(c.sentence)):
        rest = rest.replace(f"{UNSUPPORTED_MARK} {c.sentence}" if not c.supported else c.sentence, " ")
    return " ".join(rest.split())


def unmarked_unsupported(answer: Answer) -> int:
    """Unsupported sentences that appear in the shown text without the ⚠ mark."""
    rest = answer.answer
    for c in answer.checks:
        if not c.supported:
            rest = rest.replace(f"{UNSUPPORTED_MARK} {c.sentence}", " ")
    supported = {c.sentence for c in answer.checks if c.supported}
    return sum(c.sentence in rest for c in answer.checks if not c.supported and c.sentence not in supported)


def count(counts: Counts, r: dict[str, Any], answer: Answer, extractive_gold: bool) -> None:
    gold = set(r.get("gold") or [])
    counts.replayed += 1
    counts.false_abstentions += answer.abstained and extractive_gold
    counts.fallback += answer.mode != "llm"
    counts.unsupported_kept += len(answer.unsupported)
    counts.unmarked += unmarked_unsupported(answer)
    paper_of = {c.n: c.paper_id for c in answer.citations}
    for c in answer.checks:
        if c.repaired:
            pid = paper_of.get(c.citations[0], "") if c.citations else ""
            counts.repaired += 1
            counts.repaired_wrong += pid not in gold
            counts.repairs.append((r["id"], c.sentence, c.repaired, pid))


def change(before: Answer, after: Answer) -> str:
    """What repair and fallback changed for one question, in one line."""
    if after.mode != "llm":
        cited = ", ".join(c.label for c in after.citations)
        return f"fallback to the extractive answer citing {cited} ({after.notice})"
    repairs = [f"{c.repaired}: {c.sentence}" for c in after.checks if c.repaired]
    if repairs:
        return "repaired " + " | ".join(repairs)
    if before.abstained and after.abstained:
        return "abstention stands (the extractive answerer abstains too)"
    return "unchanged"


def replay(assistant: Assistant, records: list[dict[str, Any]],
           say: Any = print) -> tuple[Counts, Counts, list[tuple[dict[str, Any], Answer, Answer]]]:
    """Finish every recorded answer twice, with the check alone and with repair and fallback; count both."""
    before, after = Counts(), Counts()
    done = []
    for r in records:
        if r.get("raw_answer") is None:
            say(f"{r['id']}: skipped (no model answer recorded)")
            continue
        retrieval = retrieval_for(assistant, r)
        extractive = assistant._extractive(r["question"], retrieval)
        extractive_gold = not extractive.abstained and bool({c.paper_id for c in extractive.citations}
                                                            & set(r.get("gold") or []))
        old = assistant._finish_llm(r["question"], retrieval, r["raw_answer"], salvage=False)
        new = assistant._finish_llm(r["question"], retrieval, r["raw_answer"])
        count(before, r, old, extractive_gold)
        count(after, r, new, extractive_gold)
        say(f"{r['id']}: {change(old, new)}")
        done.append((r, old, new))
    return before, after, done


# --- eval-style scores ------------------------------------------------------------------------------------

def shown_claims(answer: Answer) -> list[Any]:
    """The sentences a user is shown as supported (⚠-marked ones left out), with the paper ids they cite."""
    from eval.judge import Claim

    number_to_id = {c.n: c.paper_id for c in answer.citations}
    return [Claim(c.sentence, [number_to_id.get(n, "") for n in c.citations]) for c in answer.checks
            if c.supported and c.reason != "abstention" and not is_abstention(strip_citations(c.sentence))]


def eval_scores(assistant: Assistant, done: list[tuple[dict[str, Any], Answer, Answer]]) -> dict[str, Any]:
    """Mean citation recall/precision, faithfulness, cites-gold and abstention, before and after, judged
    offline (eval/judge.py) on the shown text and as `papers eval` scores an answer (eval/run.py)."""
    from eval.judge import make_judge
    from eval.run import PaperTexts, Question, score_answer
    from eval.scoring import abstention, citation_scores, faithfulness, gold_citations

    labels = [e.label for e in assistant.retriever.store.catalog().values()]
    judge = make_judge("offline", assistant.settings, assistant._embed_cached, labels)
    papers = PaperTexts(assistant.retriever.store)
    keys = ("citation_recall", "citation_precision", "faithfulness", "cites_gold", "abstention")
    sums: dict[str, dict[str, list[float]]] = {}
    for r, old, new in done:
        q = Question(r["id"], r["question"], r.get("type", ""), list(r.get("gold") or []))
        for when, answer in (("before", old), ("after", new)):
            eval_like = score_answer(q, answer, papers, judge)["scores"]
            claims = shown_claims(answer)
            ranked = [x.paper_id for x in answer.retrieved]
            sources = papers.get(ranked + [pid for c in claims for pid in c.cited])
            cit = citation_scores(claims, sources.get, judge)
            faith, _ = faithfulness(claims, [sources[p] for p in ranked if p in sources], sources.get, judge)
            cites_gold, _only = gold_citations([c.paper_id for c in answer.citations], q.gold)
            shown = dict(zip(keys, (cit.recall, cit.precision, faith, cites_gold,
                                    abstention(answer.abstained, q.answerable))))
            for kind, scores in (("shown", shown), ("papers eval", eval_like)):
                bucket = sums.setdefault(f"{when} ({kind})", {})
                for key in keys:
                    if scores.get(key) is not None:
                        bucket.setdefault(key, []).append(float(scores[key]))
    return {name: {key: round(statistics.mean(v), 3) if (v := b.get(key)) else None for key in keys}
            for name, b in sums.items()}


# --- live statistics (the original benchmark) ------------------------------------------------------------

def live(assistant: Assistant, questions: list[dict[str, Any]]) -> None:
    """Share of answer sentences the check flagged, by reason, and the time each part takes."""
    reasons: Counter[str] = Counter()
    sentences = flagged = 0
    first, total, check = [], [], []
    for q in questions:
        final = None
        for event in assistant.stream(q["question"]):
            if event.kind == "final":
                final = event.answer
        assert final is not None
        if final.raw_answer is None:
            print(f"no model answer on {q['id']}: {final.notice}")
            continue
        first.append(final.timings_ms.get("first_token_ms", 0.0))
        total.append(final.timings_ms["total_ms"])
        check.append(final.timings_ms.get("check_ms", 0.0))
        for c in final.checks if final.mode == "llm" else []:
            sentences += 1
            if not c.supported:
                flagged += 1
                reasons[c.reason.split(":")[0].split(";")[0]] += 1
    n = len(first)
    print(f"answers: {n}   sentences: {sentences}   flagged: {flagged} ({flagged / max(1, sentences):.0%})")
    for reason, n_reason in reasons.most_common():
        print(f"  {n_reason:4d}  {reason}")
    if n:
        print(f"time to first token: p50 {statistics.median(first):.0f} ms   "
              f"total: p50 {statistics.median(total):.0f} ms")
        print(f"citation check per answer: mean {statistics.mean(check):.1f} ms, max {max(check):.1f} ms "
              f"({statistics.mean(check) / statistics.mean(total):.2%} of the answer time)")


def open_replay_assistant(data_dir: Path, corpus: Path, k: int) -> Assistant:
    """An assistant over the index in data_dir, built from the corpus first when there is none (no LLM)."""
    from eval.run import open_assistant

    settings = load_settings(data_dir=data_dir, corpus_paths=[corpus], top_k=k, answer_mode="extractive")
    return open_assistant(settings, lambda msg: print(msg, file=sys.stderr))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replay", type=Path, help="Replay a recorded file (no LLM needed).")
    ap.add_argument("--record", type=Path, help="Ask the questions through --base-url and write this file.")
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint for --record and the live statistics.")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--questions", type=Path, help="Questions (JSONL with id, question, gold); default: "
                    "eval/questions.jsonl for --record, tests/data/dev_questions.jsonl for the live statistics.")
    ap.add_argument("--limit", type=int, help="Only the first N questions.")
    ap.add_argument("--context", type=int, help="The model's context window (default PAPERS_LLM_CONTEXT_WINDOW).")
    ap.add_argument("--max-tokens", type=int, help="Answer length limit (default PAPERS_LLM_MAX_TOKENS).")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data/replay",
                    help="The index to answer from (built from --corpus when there is none).")
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpus", help="Corpus to index when there is none.")
    ap.add_argument("--eval", action="store_true", help="With --replay: eval-style scores before and after.")
    ap.add_argument("--quiet", action="store_true", help="With --replay: only the summary lines.")
    args = ap.parse_args(argv)

    if args.replay:
        records = load_records(args.replay)[:args.limit]
        assistant = open_replay_assistant(args.data_dir, args.corpus, args.k)
        before, after, done = replay(assistant, records, say=(lambda _m: None) if args.quiet else print)
        for qid, sentence, how, pid in after.repairs:
            print(f"repair {qid}: {how} -> {pid}: {sentence}")
        if args.eval:
            for name, scores in eval_scores(assistant, done).items():
                print(f"eval {name}: " + " ".join(f"{k}={v}" for k, v in scores.items()))
        print(f"unmarked unsupported sentences shown: before={before.unmarked} after={after.unmarked}")
        print("before: " + before.line())
        print(after.line())
        return 0

    if not args.base_url:
        ap.error("give --replay FILE, or --base-url URL (with --record FILE to record)")
    sizes = {"llm_context_window": args.context, "llm_max_tokens": args.max_tokens}
    settings = load_settings(openai_base_url=args.base_url, llm_model=args.model, top_k=args.k, answer_mode="llm",
                             llm_timeout_s=args.timeout, data_dir=args.data_dir, corpus_paths=[args.corpus],
                             **{k: v for k, v in sizes.items() if v is not None})
    from eval.run import open_assistant

    assistant = open_assistant(settings, lambda msg: print(msg, file=sys.stderr))
    assistant.retriever.warm_up()
    default = QUESTIONS if args.record else ROOT / "tests/data/dev_questions.jsonl"
    path = args.questions or default
    questions = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()][:args.limit]
    for i, q in enumerate(questions):
        q.setdefault("id", f"q{i + 1:03d}")
    if args.record:
        answered = record(assistant, questions, args.k, args.record)
        print(f"recorded {len(questions)} questions ({answered} answered by the model) to {args.record}")
    else:
        live(assistant, questions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
