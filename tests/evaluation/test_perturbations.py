"""The citation check on the perturbation set built from the seed abstracts (eval/perturbations.py): invented
clauses, negations, swapped comparisons and changed figures are never accepted; quotes, parts and rephrasings are."""

from __future__ import annotations

import random

from llama_index.core.base.embeddings.base import BaseEmbedding

from eval.perturbations import measure, negations, part, rephrased, seed_cases, swap


def test_generators_make_what_they_say() -> None:
    s = "On MerRec, RecMem uses 5.6x fewer decoder-side tokens than full attention, while keeping most recall."
    assert swap(s) == "On MerRec, Full attention uses 5.6x fewer decoder-side tokens than RecMem, while keeping " \
                      "most recall."
    assert part(s) == "On MerRec, RecMem uses 5.6x fewer decoder-side tokens than full attention."
    assert rephrased(s, "RecMem") is not None and "employs" in rephrased(s, "RecMem")
    assert any(" not " in n or n.startswith("It is") for n in negations(s))


def test_the_check_on_the_seed_perturbation_set(embedder: BaseEmbedding) -> None:
    cases = seed_cases(random.Random(7))
    figures = measure(cases, embedder.get_text_embedding_batch)
    assert sum(f["cases"] for f in figures.values()) >= 200
    for kind in ("clause", "negation", "swap", "number"):
        assert figures[kind]["accepted"] == 0.0, (kind, figures[kind])
    for kind in ("quote", "part", "rephrased"):
        assert figures[kind]["accepted"] >= 0.95, (kind, figures[kind])
