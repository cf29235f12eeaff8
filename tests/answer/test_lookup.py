"""Citation-lookup strength (rag/answer/lookup.py) on a corpus it was never fitted on (the synthetic one), the
shipped fitted file, and the fit script run end to end on a small sample."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.answer.lookup import LOOKUP_FEATURES, load_lookup, probability, strength
from rag.schema import record

from tests.conftest import ROOT, write_jsonl
from tests.synthetic import SYNTHETIC, synthetic_assistant


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return synthetic_assistant(tmp_path_factory.mktemp("synthetic-lookup"))


def _id_of(assistant, fragment: str) -> str:  # noqa: ANN001
    return next(e.paper_id for e in assistant.papers() if fragment in e.text)


def test_fitted_file_loads_with_every_feature_and_ordered_thresholds() -> None:
    c = load_lookup()
    assert set(c.weights) == set(LOOKUP_FEATURES)
    assert 0.0 < c.weak_at < c.strong_at <= 1.0
    assert c.meta["fitted_by"] == "eval/fit_lookup.py" and c.meta["cross_validated"]["after"]["scifact"]
    assert strength(1.0) == "strong" and strength(0.0) == "none"
    assert strength(1.0, by_chance=True) == "none"  # a foreign query is never a match
    assert strength((c.weak_at + c.strong_at) / 2) == "weak"


@pytest.mark.parametrize("query", ["soil microbes in the human gut", "battery life of phone photographs",
                                   "mountain ranges of the moon", "carbon pricing for trees in cities"])
def test_an_off_topic_query_in_the_corpus_words_has_no_strong_hit(synthetic, query: str) -> None:  # noqa: ANN001
    """Words the corpus uses, put to a question none of its papers is about: no hit a reviewer would cite."""
    hits = synthetic.cite(query)
    assert hits and not any(h.strength == "strong" for h in hits)


def test_a_method_name_and_a_paraphrased_claim_are_strong_for_their_paper(synthetic) -> None:  # noqa: ANN001
    hits = synthetic.cite("Frostline Metagenomic Profiling")
    assert hits[0].paper_id == _id_of(synthetic, "Frostline Metagenomic Profiling (FMP), a sequencing")
    assert hits[0].strength == "strong"
    hits = synthetic.cite("isotope tracing of carbon through fungal networks")
    assert hits[0].paper_id == _id_of(synthetic, "Rootweave, an isotope") and hits[0].strength == "strong"
    assert [h.strength for h in hits[1:]].count("strong") == 0


def test_hits_follow_the_fitted_probability_when_reordered(synthetic) -> None:  # noqa: ANN001
    """With `rerank`, hits are shown in the order of the model's probability; strength follows that order."""
    from rag.answer.lookup import lookup_rows

    q = "pigment density of lichens from photographs"
    retrieval = synthetic.retriever.complete(synthetic.retriever.retrieve(q))
    rows, _ = lookup_rows(q, retrieval, synthetic.vocabulary())
    probs = [r.prob for r in rows]
    assert probs == [probability(r.features) for r in rows]
    if load_lookup().rerank:
        assert probs == sorted(probs, reverse=True)
    hits = synthetic.cite(q)
    assert [h.paper_id for h in hits] == [r.paper.paper_id for r in rows]
    assert {"strength", "evidence"} <= set(record(hits[0]))


def test_fit_script_runs_on_a_small_sample(synthetic, tmp_path: Path) -> None:  # noqa: ANN001
    """Claims written for the synthetic corpus stand in for SciFact; the script asks them and the seed lookups,
    cross-validates and prints its table, without writing the shipped file."""
    folder = tmp_path / "scifact"
    folder.mkdir()
    claims = []
    for n, (title, abstract) in enumerate(SYNTHETIC * 2):
        pid = _id_of(synthetic, abstract[:60])
        claims.append({"id": n, "claim": abstract.split(". ")[n % 2 + 1].rstrip("."), "evidence": {},
                       "cited_doc_ids": [pid]})
    write_jsonl(folder / "claims_train.jsonl", claims)
    data = str(synthetic.settings.data_dir)
    shipped = (ROOT / "rag/answer/fitted/lookup.json").read_text()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PAPERS_ENV_FILE": os.devnull}
    r = subprocess.run([sys.executable, str(ROOT / "eval/fit_lookup.py"), "--seed-data", data, "--scifact-data",
                        data, "--scifact", str(folder), "--cache", str(tmp_path / "cache.json")],
                       check=False, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| scifact | after |" in r.stdout and r.stdout.count("fold ") >= 5
    cached = json.loads((tmp_path / "cache.json").read_text())
    assert {d["set"] for d in cached} == {"scifact", "seed", "off_sci", "off_seed"}
    assert (ROOT / "rag/answer/fitted/lookup.json").read_text() == shipped


def test_a_scoped_lookup_scores_only_the_chosen_papers_and_refuses_unknown_ids(synthetic) -> None:  # noqa: ANN001
    """The UI's evidence panel words an answer's retrieved papers through `cite(..., paper_ids=...)`."""
    from rag.errors import QuestionError

    q = "isotope tracing of carbon through fungal networks"
    every = synthetic.cite(q)
    chosen = [h.paper_id for h in every[:2]]
    scoped = synthetic.cite(q, k=len(chosen), paper_ids=chosen)
    assert {h.paper_id for h in scoped} == set(chosen)
    assert all(h.strength == strength(h.match) for h in scoped) and scoped[0].match > 0.0
    with pytest.raises(QuestionError, match="no-such-paper"):
        synthetic.cite(q, paper_ids=["no-such-paper"])
