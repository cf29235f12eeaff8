"""Every answer of a question set as JSON Lines, so two versions of the code can be compared answer for answer.

    python benchmarks/answer_dump.py --data-dir DIR --questions eval/questions.jsonl [...] --out FILE
    python benchmarks/answer_dump.py --data-dir SCIFACT_STORE --scifact 400 --k 10 --out FILE
    python benchmarks/answer_dump.py --compare A.jsonl B.jsonl

A restructure must not change answers: dump with the old code (a checkout of it first on PYTHONPATH) and the
new, then `--compare`. Timings are left out (they differ run to run); everything else of `papers ask --json`
and of `papers cite` is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("PAPERS_ENV_FILE", os.devnull)

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "scifact"


def _assistant(data_dir: Path):  # noqa: ANN202 - either layout's Assistant
    from rag.settings import load_settings

    import importlib

    # The layout before rag/service.py first (an editable install of the newer layout would answer for it).
    for module in ("rag." + "qa", "rag.service"):
        try:
            Assistant = importlib.import_module(module).Assistant  # noqa: N806
            break
        except ImportError:
            continue
    return Assistant(load_settings(data_dir=data_dir))


def _questions(paths: list[Path], scifact: int) -> list[str]:
    out = []
    for p in paths:
        out += [json.loads(x)["question"] for x in p.read_text().splitlines() if x.strip()]
    if scifact:
        claims = [json.loads(x) for x in (SCIFACT / "claims_train.jsonl").read_text().splitlines() if x.strip()]
        out += [c["claim"] for c in claims[:scifact]]
    return out


def dump(data_dir: Path, questions: list[str], k: int | None, out: Path) -> None:
    assistant = _assistant(data_dir)
    with out.open("w") as f:
        for q in questions:
            a = assistant.ask(q, k=k, mode="extractive").to_dict()
            a.pop("timings_ms", None)
            hits = [{key: v for key, v in h.__dict__.items()} for h in assistant.cite(q, k=k)]
            f.write(json.dumps({"question": q, "answer": a, "cite": hits}, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{len(questions)} questions -> {out}")


def compare(a: Path, b: Path) -> int:
    left, right = a.read_text().splitlines(), b.read_text().splitlines()
    differ = [json.loads(x)["question"] for x, y in zip(left, right) if x != y]
    print(f"{len(left)} vs {len(right)} lines; identical {min(len(left), len(right)) - len(differ)}; "
          f"different {len(differ)}")
    for q in differ[:10]:
        print("  differs:", q)
    return 0 if not differ and len(left) == len(right) else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--questions", type=Path, nargs="*", default=[])
    ap.add_argument("--scifact", type=int, default=0, help="also the first N SciFact train claims")
    ap.add_argument("--k", type=int, default=None)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2)
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    dump(args.data_dir, _questions(args.questions, args.scifact), args.k, args.out)


if __name__ == "__main__":
    main()
