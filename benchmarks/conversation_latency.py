"""What a chat turn costs beyond the question itself: a follow-up, resolved against the conversation, beside
the same question typed standalone in a fresh chat, interleaved in one run.

    python benchmarks/conversation_latency.py [--data-dir DIR] [--rounds 5]

For each development conversation (eval/conversations.jsonl), every later turn is timed twice per round: as a
follow-up (the chat's earlier turns asked first, then this turn through `Conversation.ask`) and fresh (a new
chat asked the question the follow-up was resolved into, restricted to the same papers). Only the turn itself
is timed. Prints p50 and mean of both and their ratio (goal: follow-up ≤ 1.2× fresh).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from common import ROOT, bench_settings

from eval.conversations import load_conversations
from rag.service import Assistant


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data")
    ap.add_argument("--conversations", type=Path, default=ROOT / "eval" / "conversations.jsonl")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    assistant = Assistant(bench_settings(args.data_dir, answer_mode="extractive"))
    cases = load_conversations(args.conversations)
    assistant.ask(cases[0].turns[0].q)  # warm: models, index, caches
    follow: list[float] = []
    fresh: list[float] = []
    for _ in range(args.rounds):
        for case in cases:
            chat = assistant.conversation()
            for i, turn in enumerate(case.turns):
                t = time.perf_counter()
                answer = chat.ask(turn.q, paper_ids=turn.scope)
                ms = (time.perf_counter() - t) * 1000
                if i == 0:
                    continue
                follow.append(ms)
                searched, within = chat.turns[-1].searched, chat.turns[-1].referents or None
                t = time.perf_counter()
                assistant.ask(searched, paper_ids=turn.scope, within=within if answer.rewritten else None)
                fresh.append((time.perf_counter() - t) * 1000)
    p50f, p50s = statistics.median(follow), statistics.median(fresh)
    print(f"follow-up turns: {len(follow)} timings ({args.rounds} rounds, interleaved with the fresh ones)")
    print(f"| | p50 ms | mean ms |\n|---|---|---|\n| follow-up (resolved in the chat) | {p50f:.1f} | "
          f"{statistics.mean(follow):.1f} |\n| the same question, fresh | {p50s:.1f} | {statistics.mean(fresh):.1f} |")
    print(f"ratio follow-up / fresh: p50 {p50f / p50s:.2f}×, mean {statistics.mean(follow) / statistics.mean(fresh):.2f}×")


if __name__ == "__main__":
    main()
