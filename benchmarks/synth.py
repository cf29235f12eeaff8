"""Seeded synthetic abstracts with the lengths and vocabulary of the real corpus, for scale benchmarks.

A word-level Markov chain (order 2) learnt from the sentences of corpus/ writes each sentence; every paper gets
a coined method name in its opening sentence and fresh numbers, so labels, BM25 and dense retrieval behave
as on real lists. The same seed always gives the same corpus.

    python benchmarks/synth.py --papers 1000 --out /tmp/synth.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.corpus.scan import scan  # noqa: E402
from rag.text import split_sentences  # noqa: E402

START = ("<s>", "<s>")


class Chain:
    """Order-2 word Markov chain over the real abstracts' sentences."""

    def __init__(self, sentences: list[str]) -> None:
        self.next: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.lengths = [len(s.split()) for s in sentences]
        for s in sentences:
            words = s.split()
            state = START
            for w in words + ["</s>"]:
                self.next[state].append(w)
                state = (state[1], w)

    def sentence(self, rng: random.Random, max_words: int = 60) -> str:
        state, words = START, []
        while len(words) < max_words:
            w = rng.choice(self.next[state])
            if w == "</s>":
                break
            words.append(w)
            state = (state[1], w)
        text = " ".join(words)
        return text if text.endswith((".", "?", "!")) else text + "."


def coined_name(rng: random.Random) -> str:
    """A method name like the real ones: 'RecMem', 'DyMoS', 'PotARCin', 'CF-Beam'."""
    parts = ["Re", "Dy", "Pot", "Cor", "Flux", "Gra", "Sy", "Neo", "Lum", "Tri", "Ver", "Hyp", "Mo", "Qu", "Zen"]
    tails = ["Mem", "Loop", "Net", "Bench", "Former", "Guard", "Search", "Flow", "Gen", "Mix", "Pilot", "Tune"]
    style = rng.random()
    if style < 0.5:
        return rng.choice(parts) + rng.choice(tails)
    if style < 0.8:
        return "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(3, 5)))
    return f"{rng.choice(string.ascii_uppercase)}{rng.choice(string.ascii_uppercase)}-{rng.choice(tails)}"


def _fresh_numbers(text: str, rng: random.Random) -> str:
    return re.sub(r"\d+(?:[.,]\d+)?", lambda m: f"{rng.uniform(1, 99):.1f}" if "." in m.group(0)
                  else str(rng.randint(2, 5000)), text)


def generate(n_papers: int, seed: int = 7) -> list[dict]:
    """`n_papers` abstracts as JSON Lines records (abstract and id)."""
    real = scan([ROOT / "corpus"], 2**26, 20_000).papers
    sentences = [s for p in real for s in split_sentences(p.text)]
    per_paper = [len(split_sentences(p.text)) for p in real]
    chain = Chain(sentences)
    rng = random.Random(seed)
    records = []
    for i in range(n_papers):
        name = coined_name(rng)
        body = [chain.sentence(rng) for _ in range(rng.choice(per_paper) - 1)]
        clause = chain.sentence(rng)
        opening = f"We propose {name}, a method in which {clause[0].lower()}{clause[1:]}"
        text = " ".join([body[0] if body else "", opening] + body[1:])
        records.append({"id": f"synth-{seed}-{i:06d}", "abstract": _fresh_numbers(text.strip(), rng)})
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    records = generate(args.papers, args.seed)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"wrote {len(records)} abstracts to {args.out}")


if __name__ == "__main__":
    main()
