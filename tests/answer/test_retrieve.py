"""Retrieval on the real corpus: the right paper for hand-written questions, in every mode; scoping."""

from __future__ import annotations

import pytest

from eval.metrics import retrieval_scores

from tests.conftest import load_questions


@pytest.fixture(scope="module")
def answerable() -> list[dict]:
    return [q for q in load_questions("dev_questions.jsonl") if q["gold"]]


@pytest.mark.parametrize("mode,min_hit1,min_hit5", [("hybrid", 0.85, 0.95), ("dense", 0.65, 0.85),
                                                    ("bm25", 0.7, 0.85)])
def test_dev_questions_find_their_papers(assistant, answerable: list[dict], mode: str, min_hit1: float,
                                         min_hit5: float) -> None:
    hit1 = hit5 = 0.0
    for q in answerable:
        res = assistant.retriever.retrieve(q["question"], k=5, mode=mode)
        scores = retrieval_scores([p.paper_id for p in res.papers], set(q["gold"]))
        hit1 += scores["hit@1"]
        hit5 += scores["hit@5"]
    n = len(answerable)
    assert hit1 / n >= min_hit1 and hit5 / n >= min_hit5, (mode, hit1 / n, hit5 / n)


def test_results_are_grouped_per_paper(assistant) -> None:
    res = assistant.retriever.retrieve("Over how many test steps does RecMem stay stable?", k=5)
    ids = [p.paper_id for p in res.papers]
    assert len(ids) == len(set(ids)) == 5
    top = res.papers[0]
    assert top.label == "RecMem" and not top.complete
    best = max(top.chunks, key=lambda c: c.cosine)
    assert "1,800 test steps" in best.text and best.cosine > 0.5
    assert [p.score for p in res.papers] == sorted((p.score for p in res.papers), reverse=True)
    # complete() gives every paper all its chunks, in order, with the same cosines
    before = {c.chunk_id: c.cosine for c in top.chunks}
    assistant.retriever.complete(res)
    assert top.complete and " ".join(c.text for c in top.chunks) == top.text
    assert all(abs(c.cosine - before[c.chunk_id]) < 1e-3 for c in top.chunks if c.chunk_id in before)


def test_scope_restricts_to_given_papers(assistant) -> None:
    papers = {e.label: e.paper_id for e in assistant.papers()}
    scope = [papers["DyMoS"], papers["CoRF"]]
    for mode in ("hybrid", "dense", "bm25"):
        res = assistant.retriever.retrieve("Over how many test steps does RecMem stay stable?", k=5,
                                           paper_ids=scope, mode=mode)
        assert {p.paper_id for p in res.papers} <= set(scope)


def test_label_is_searchable(assistant) -> None:
    res = assistant.retriever.retrieve("PotARCin", k=3, mode="bm25")
    assert res.papers[0].label == "PotARCin"


# --- paper-level rankings and their fusion ------------------------------------------------------------------

def test_weighted_rrf_on_hand_made_rankings() -> None:
    from rag.answer.retrieve import weighted_rrf

    fused = weighted_rrf({"a": ["x", "y"], "b": ["y", "z"], "off": ["w"]}, {"a": 1.0, "b": 2.0, "off": 0.0}, 10)
    assert fused == pytest.approx({"x": 1 / 11, "y": 1 / 12 + 2 / 11, "z": 2 / 12})
    assert "w" not in fused


def test_fit_file_is_read_and_checked(tmp_path) -> None:  # noqa: ANN001
    from rag.answer import fitted
    from rag.answer.retrieve import load_fusion

    shipped = load_fusion(str(fitted.source_path(fitted.RETRIEVAL)))
    assert shipped.weights and all(w >= 0 for w in shipped.weights.values()) and shipped.k > 0
    custom = tmp_path / "fit.json"
    custom.write_text('{"k": 5, "weights": {"bm25_title": 1, "dense_paper": 0}}')
    fusion = load_fusion(str(custom))
    assert fusion.active("hybrid") == {"bm25_title": 1.0}
    assert fusion.active("dense") == {"chunks": 1.0}  # no fitted list of that mode: the chunk-level fusion
    bad = tmp_path / "bad.json"
    bad.write_text('{"k": 5, "weights": {"title_vectors": 1}}')
    with pytest.raises(ValueError, match="title_vectors"):
        load_fusion(str(bad))


def test_every_ranking_is_computed_from_one_lookup(assistant) -> None:  # noqa: ANN001
    from rag.answer.retrieve import LISTS, FusionWeights

    papers = {e.label: e.paper_id for e in assistant.papers()}
    sig = assistant.retriever.signals("PotARCin", fusion=FusionWeights(dict.fromkeys(LISTS, 1.0)))
    assert set(sig.rankings) == set(LISTS)
    assert sig.rankings["bm25_title"][0] == papers["PotARCin"]  # untitled papers: the label is the title field
    level = assistant.retriever.local_index.papers_index
    assert set(level.paper_ids) == set(papers.values())
    norms = [float((v ** 2).sum()) for v in level.vectors]
    assert min(norms) == pytest.approx(1.0, abs=1e-4) and max(norms) == pytest.approx(1.0, abs=1e-4)
    q = "Over how many test steps does RecMem stay stable?"
    dense = assistant.retriever.signals(q, fusion=FusionWeights(dict.fromkeys(LISTS, 1.0)))
    assert dense.rankings["dense_paper"][0] == papers["RecMem"] == dense.rankings["bm25_paper"][0]
    scoped = assistant.retriever.signals(q, paper_ids=[papers["CoRF"]], fusion=FusionWeights(dict.fromkeys(LISTS, 1.0)))
    assert all(set(r) <= {papers["CoRF"]} for r in scoped.rankings.values())


def test_papers_found_only_by_paper_rankings_carry_their_chunks(corpus_settings, tmp_path) -> None:  # noqa: ANN001
    from rag.service import Assistant

    fit = tmp_path / "fit.json"
    fit.write_text('{"k": 60, "weights": {"bm25_paper": 1.0}}')
    # One chunk per chunk lookup: most of the five papers have no candidate chunk of their own.
    a = Assistant(corpus_settings.model_copy(update={"retrieval_fit": fit, "candidates": 1}))
    res = a.retriever.retrieve("Over how many test steps does RecMem stay stable?", k=5)
    assert res.papers[0].label == "RecMem" and all(p.ranks.keys() == {"bm25_paper"} for p in res.papers)
    assert [p.ranks["bm25_paper"] for p in res.papers] == [1, 2, 3, 4, 5]
    assert sum(p.complete for p in res.papers) >= 3
    for p in res.papers:
        assert p.chunks and all(-1.0 <= c.cosine <= 1.0 for c in p.chunks)
        if p.complete:
            assert " ".join(c.text for c in p.chunks) == p.text


def test_paper_vector_ranking_from_the_paper_collection_equals_the_scan(corpus_settings, answerable) -> None:  # noqa: ANN001
    """Above PAPERS_PAPER_SCAN_LIMIT papers, the ranking by mean vector comes from Chroma's paper collection:
    on 38 papers (HNSW is exact at this size) it is the in-memory scan's ranking, question for question, and a
    scoped question still scans only its papers."""
    from rag.service import Assistant
    from rag.answer.retrieve import LISTS, FusionWeights

    every = FusionWeights(dict.fromkeys(LISTS, 1.0))
    scan = Assistant(corpus_settings).retriever
    query = Assistant(corpus_settings.model_copy(update={"paper_scan_limit": 0})).retriever
    calls = []
    real = query.store.papers.query

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the ranking's lookups (the load probe has no distances)
        if kwargs.get("include"):
            calls.append(kwargs)
        return real(*args, **kwargs)

    query.store.papers.query = counted
    for q in [x["question"] for x in answerable[:12]]:
        a, b = scan.signals(q, fusion=every), query.signals(q, fusion=every)
        assert a.rankings["dense_paper"] == b.rankings["dense_paper"], q
        assert len(b.rankings["dense_paper"]) == 38
    assert len(calls) == 12
    some = a.rankings["dense_paper"][:3]
    scoped = query.signals("Over how many test steps does RecMem stay stable?", paper_ids=some, fusion=every)
    assert set(scoped.rankings["dense_paper"]) == set(some) and len(calls) == 12


def test_two_closest_chunks_ranking_equals_a_brute_force_one() -> None:
    """`_top2` orders papers by the float32 mean of their two best chunk cosines (a one-chunk paper: that
    chunk's twice), ties in pool order; papers without rows are left out. Checked against sorting each paper's
    cosines, on small-integer vectors (exact products, so many ties) and papers of 1 to 6 chunks."""
    from types import SimpleNamespace

    import numpy as np

    from rag.answer.retrieve import _top2

    rng = np.random.default_rng(7)
    for trial in range(30):
        sizes = rng.integers(1, 7, size=12)
        rows_of, start = {}, 0
        for i, n in enumerate(sizes):
            rows_of[f"p{i}"] = list(range(start, start + int(n)))
            start += int(n)
        matrix = rng.integers(-2, 3, size=(start, 8)).astype(np.float32)
        q = rng.integers(-2, 3, size=8).astype(np.float32)
        local = SimpleNamespace(rows_of_paper=rows_of, matrix=matrix)
        pool = [f"p{i}" for i in rng.permutation(12)] + ["absent"]
        scores = {}
        for p in pool:
            if p in rows_of:
                sims = sorted((matrix[rows_of[p]] @ q).tolist(), reverse=True)
                two = np.float32(sims[1] if len(sims) > 1 else sims[0])
                scores[p] = (np.float32(sims[0]) + two) / np.float32(2)
        expected = sorted(scores, key=lambda p: -scores[p])  # stable: ties keep pool order
        assert _top2(local, pool, q) == expected
