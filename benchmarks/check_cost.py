"""What the citation check adds after a generated answer ends, with and without embedding the sources'
sentences while the LLM generates (the prefetch in rag/service.py), side by side in one run.

    python benchmarks/check_cost.py [--generation-s 2.0]

No LLM is needed: each answer is a paraphrase of the first sentence of every retrieved source, cited, so every
sentence reaches the check's semantic step (the costly one); generation is a sleep of --generation-s seconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import ROOT, bench_settings, table

from rag.answer.render import sources_for
from rag.service import Assistant

QUESTIONS = ["What does RecMem do with history segments?", "How does DyMoS change motion in image-to-video models?",
             "What is ReLoop about?", "Which benchmark tests physical reasoning?", "What does PotARCin measure?",
             "What speedup does CoRF report?", "What is RTCBench?", "How does ReasoningShield compare to LlamaGuard?"]


def paraphrase(assistant: Assistant, question: str) -> tuple[object, str]:
    retrieval = assistant.retriever.complete(assistant.retriever.retrieve(question, k=3))
    parts = []
    for src in sources_for(retrieval.papers):
        words = src.sentences[0].rstrip(".").split()
        parts.append("The authors write that " + " ".join(w for i, w in enumerate(words) if i % 4 != 2)
                     + f" [{src.n}].")
    return retrieval, " ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generation-s", type=float, default=2.0)
    args = ap.parse_args()
    from rag.index.ingest import ingest

    with tempfile.TemporaryDirectory() as tmp:
        settings = bench_settings(Path(tmp), corpus_paths=[ROOT / "corpus"])
        ingest(settings, progress=False)
        rows = []
        for name, prefetch in (("checked when the answer ends", False), ("sources embedded during generation", True)):
            assistant = Assistant(settings)  # a fresh sentence cache: every paper is new to the check
            assistant.retriever.warm_up()
            ms, semantic = [], 0
            for q in QUESTIONS:
                retrieval, text = paraphrase(assistant, q)
                future = assistant._prefetch(retrieval) if prefetch else None
                time.sleep(args.generation_s)
                answer = assistant._finish_llm(q, retrieval, text, future)
                ms.append(answer.timings_ms["check_ms"])
                semantic += sum(c.reason.startswith(("semantic", "not close")) for c in answer.checks)
            rows.append({"check after the answer": name, "answers": str(len(ms)), "semantic sentences": str(semantic),
                         "mean ms": f"{statistics.mean(ms):.0f}", "max ms": f"{max(ms):.0f}"})
    print(f"3 papers per answer, first time each paper is checked, generation simulated as {args.generation_s:g} s")
    print(table(rows, ["check after the answer", "answers", "semantic sentences", "mean ms", "max ms"]))


if __name__ == "__main__":
    main()
