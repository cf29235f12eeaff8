"""Generated answers from a real OpenAI-compatible server, scored by the citation check.

    python benchmarks/llm_check.py --base-url http://127.0.0.1:8080/v1 [--model NAME] [--limit 20]
                                   [--record tests/data/smollm2_answers.jsonl]

Prints the share of answer sentences the check flagged (by reason), time to first token, total time and the
check's own cost per answer. With --record, writes each raw answer with the sources it was given, so the
check can be tested on real model output without the server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.qa import Assistant, sources_for  # noqa: E402
from rag.settings import load_settings  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--questions", type=Path, default=ROOT / "tests/data/dev_questions.jsonl")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--context", type=int, default=1536)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--record", type=Path)
    args = ap.parse_args()
    settings = load_settings(openai_base_url=args.base_url, llm_model=args.model, llm_context_window=args.context,
                             llm_max_tokens=args.max_tokens, top_k=args.k, answer_mode="llm", llm_timeout_s=300)
    assistant = Assistant(settings)
    assistant.retriever.warm_up()
    questions = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()][:args.limit]
    reasons: Counter[str] = Counter()
    sentences = flagged = 0
    first, total, check = [], [], []
    records = []
    for q in questions:
        final = None
        for event in assistant.stream(q["question"]):
            if event.kind == "final":
                final = event.answer
        assert final is not None
        if final.mode != "llm":
            print(f"fallback on {q['id']}: {final.notice}")
            continue
        first.append(final.timings_ms.get("first_token_ms", 0.0))
        total.append(final.timings_ms["total_ms"])
        check.append(final.timings_ms.get("check_ms", 0.0))
        for c in final.checks:
            sentences += 1
            if not c.supported:
                flagged += 1
                reasons[c.reason.split(":")[0].split(";")[0]] += 1
        if args.record:
            retrieval = assistant.retriever.retrieve(final.rewritten or q["question"], k=args.k)
            records.append({"question": q["question"], "raw_answer": final.raw_answer,
                            "sources": [{"n": s.n, "label": s.label, "sentences": s.sentences}
                                        for s in sources_for(retrieval.papers)]})
    n = len(first)
    print(f"answers: {n}   sentences: {sentences}   flagged: {flagged} ({flagged / max(1, sentences):.0%})")
    for reason, count in reasons.most_common():
        print(f"  {count:4d}  {reason}")
    if n:
        print(f"time to first token: p50 {statistics.median(first):.0f} ms   total: p50 {statistics.median(total):.0f} ms")
        print(f"citation check per answer: mean {statistics.mean(check):.1f} ms, max {max(check):.1f} ms "
              f"({statistics.mean(check) / statistics.mean(total):.2%} of the answer time)")
    if args.record:
        args.record.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        print(f"recorded {len(records)} answers to {args.record}")


if __name__ == "__main__":
    main()
