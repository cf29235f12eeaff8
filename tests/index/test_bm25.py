"""The project's BM25 (rag/index/bm25.py) against its peer, bm25s building the same texts from scratch: the
incremental update, save and memory-mapped load, and the one-text query tokeniser give what bm25s gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.index.bm25 import TOKEN_PATTERN, bm25_index, load_bm25, save_bm25, tokenize, updated_bm25
from rag.text import stemmer
from tests.conftest import ABSTRACTS

QUERIES = ["FooNet accuracy", "benchmark licensing", "sparse attention memory", "retrieval augmented"]


def scratch_bm25(texts: list[str]):
    """The peer: bm25s itself indexing the texts from scratch, tokenised as the project tokenises them."""
    import bm25s

    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), token_pattern=TOKEN_PATTERN,
                            show_progress=False)
    bm25 = bm25s.BM25()
    bm25.index(tokens, show_progress=False)
    return bm25


def assert_same_bm25(ours, texts: list[str], queries: list[str]) -> None:
    """`ours` scores every row as bm25s indexing `texts` (the same rows, in order) from scratch: the same
    vocabulary and document frequencies, every document's score per query, and the same top-k."""
    peer = scratch_bm25(texts)
    assert ours.scores["num_docs"] == peer.scores["num_docs"] == len(texts)
    assert set(ours.vocab_dict) == set(peer.vocab_dict)
    df = lambda b, t: int(b.scores["indptr"][b.vocab_dict[t] + 1] - b.scores["indptr"][b.vocab_dict[t]])  # noqa: E731
    assert {t: df(ours, t) for t in peer.vocab_dict if t} == {t: df(peer, t) for t in peer.vocab_dict if t}
    for q in queries:
        tokens = [t for t in tokenize(q) if t in peer.vocab_dict]
        if not tokens:
            continue
        assert np.allclose(ours.get_scores(tokens), peer.get_scores(tokens), rtol=1e-6, atol=1e-7), q
        k = min(10, len(texts))
        mine = ours.retrieve([tokens], k=k, show_progress=False)
        theirs = peer.retrieve([tokens], k=k, show_progress=False)
        assert np.allclose(mine.scores, theirs.scores, rtol=1e-6, atol=1e-7), q
        positive = theirs.scores[0] > 0
        assert list(mine.documents[0][positive]) == list(theirs.documents[0][positive]), q


def test_incremental_bm25_equals_bm25s_from_scratch() -> None:
    """Rows kept, dropped (with the last uses of some terms), re-tokenised in place and added, over several
    updates each starting from the saved and memory-mapped result of the one before: always the index bm25s
    builds from the final rows."""
    import random

    rng = random.Random(7)
    vocab = " ".join(ABSTRACTS).split() + [f"unique{i}" for i in range(40)]
    doc = lambda: " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 40)))  # noqa: E731
    texts = [doc() for _ in range(120)] + ["", "the of and"]  # an empty document, one of stopwords only
    bm25 = bm25_index(texts)
    queries = QUERIES + ["unique3 unique7 memory", "BarBench chemists accuracy", "never seen words"]
    assert_same_bm25(bm25, texts, queries)
    import tempfile

    for step in range(4):
        keep = [i for i in range(len(texts)) if rng.random() > 0.2]
        new = [doc() + f" fresh{step}" for _ in range(rng.randint(1, 15))]
        reuse = np.array(keep + [-1] * len(new))
        final = [texts[i] for i in keep] + new
        moved = rng.sample(range(len(keep)), 3)  # rows whose text changed in place (a relabelled paper)
        for i in moved:
            final[i] = doc()
        reuse[moved] = -1
        fresh = [final[i] for i in np.flatnonzero(reuse < 0)]
        with tempfile.TemporaryDirectory() as tmp:
            save_bm25(bm25, Path(tmp))
            loaded = load_bm25(Path(tmp))
            assert loaded.term_counts is not None and len(loaded.term_counts) == len(loaded.scores["data"])
            bm25 = updated_bm25(loaded, reuse, fresh)
        assert bm25 is not None
        assert_same_bm25(bm25, final, queries + new[:2])
        texts = final
    # what the query path does: a mask restricting the search to some rows, after a save and a memory-mapped load
    with tempfile.TemporaryDirectory() as tmp:
        save_bm25(bm25, Path(tmp))
        loaded = load_bm25(Path(tmp))
        tokens = [t for t in tokenize("BarBench accuracy memory") if t in loaded.vocab_dict]
        mask = np.zeros(len(texts), dtype=np.float32)
        mask[::3] = 1.0
        docs, scores = loaded.retrieve([tokens], k=5, show_progress=False, weight_mask=mask)
        peer_docs, peer_scores = scratch_bm25(texts).retrieve([tokens], k=5, show_progress=False, weight_mask=mask)
        assert np.allclose(scores, peer_scores) and list(docs[0][scores[0] > 0]) == list(peer_docs[0][scores[0] > 0])


def test_query_tokens_equal_bm25s_tokenize() -> None:
    """`tokenize` is bm25s's tokeniser done for one text: the same tokens, in order, on punctuation, case,
    stopwords, digits, hyphens, non-ASCII letters and repeats."""
    import bm25s

    texts = ABSTRACTS + [
        "Which paper proposes RICE-PO, and does it beat GRPO's 54.7% on MATH-500?",
        "THE the The a an AND ñandú Straße naïve café 3D x 2x 10k GPT-4o l2-norm ι-ICL",
        "what do the papers say about the papers' papers", "", "?!", "over-fitting overfits overfitting",
    ]
    for text in texts:
        expected = bm25s.tokenize(text, stopwords="en", stemmer=stemmer(),
                                  token_pattern=TOKEN_PATTERN, return_ids=False, show_progress=False)[0]
        assert tokenize(text) == expected, text
