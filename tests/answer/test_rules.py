"""The rule helpers the answer stage is built from, each on hand-made sentences and papers: no index, no model,
milliseconds. (The lexicon they read is tested in tests/test_text.py.)"""

from __future__ import annotations

import pytest

from rag.answer.calibration import AnswerConstants
from rag.answer.cite import SourceText
from rag.answer.evidence import Candidate, QuestionTerms, Vocabulary, current_constants
from rag.answer.intent import NumberAsk, read_intent
from rag.answer.retrieve import Chunk, PaperHit
from rag.answer.types.context import Context
from rag.text import stems

RECMEM = SourceText(1, "RecMem", ["We propose RecMem, a recurrent compression framework.",
                                  "RecMem uses 5.6x fewer decoder-side tokens than full attention.",
                                  "It stays stable over 1,800 test steps."])
RECON = SourceText(2, "Recon", ["Recon reaches a 54.7% win rate against the baseline."])
SOURCES = [RECMEM, RECON]
BY_N = {s.n: s for s in SOURCES}
ALL_TEXT = " ".join(s.text + " " + s.label for s in SOURCES)


def _paper(pid: str, label: str, sentences: list[str], title: str = "") -> PaperHit:
    chunks = [Chunk(f"{pid}:{i}", s, 0.5) for i, s in enumerate(sentences)]
    return PaperHit(pid, label, "", 0, 1.0, " ".join(sentences), title=title or label, chunks=chunks, complete=True)


# --- the citation check, one sentence at a time ------------------------------------------------------------------

@pytest.mark.parametrize("sentence, supported, reason, pending", [
    ("The indexed abstracts don't say this.", True, "abstention", None),
    ("RecMem is fast.", False, "no citation", None),
    ("RecMem is fast [7].", False, "no citation (cited a source that was not given)", None),
    ("RecMem uses 3.4x fewer tokens.", False, "no citation; number in no source: 3.4", None),
    ("Recon reaches a 54.7% win rate [1].", False, "names a paper it does not cite: Recon", None),
    ("RecMem [1]: “It stays stable over 1,800 test steps.”", True, "quoted", None),
    ("1,800 test steps [1]", True, "quoted part", None),
    ("RecMem [1]: “It stays stable over 1,800 test steps.” It was later retracted.", False, "", None),
    ("RecMem compresses histories into few memory slots [1].", False, "pending", ["1"]),
])
def test_check_sentence(sentence: str, supported: bool, reason: str, pending: list[str] | None) -> None:
    from rag.answer.cite import _check_sentence, cited_numbers

    check, left = _check_sentence(sentence, cited_numbers(sentence), SOURCES, BY_N, ALL_TEXT)
    assert check.supported is supported
    if reason:
        assert check.reason.startswith(reason), check.reason
    assert (None if left is None else [str(n) for n in left[1]]) == pending


def test_a_number_from_another_cited_paper_does_not_support_the_sentence() -> None:
    from rag.answer.cite import _check_cited

    clean = "RecMem keeps a 54.7% win rate over 1,800 steps."
    check, left = _check_cited(clean, clean, [1, 2], [RECMEM, RECON], BY_N)
    assert not check.supported and check.reason.startswith("number not in cited source") and left is None


# --- the lead line -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sentence, figure, end", [
    ("It stays stable over 1,800 test steps on LIBERO.", "1,800", "1,800 test steps"),
    ("RecMem uses 5.6x fewer decoder-side tokens than full attention.", "5.6x", "5.6x fewer decoder-side tokens"),
    ("A gain of +8.5pp accuracy, the best.", "+8.5pp", "+8.5pp accuracy"),
    ("It reaches 54.7%.", "54.7%", "54.7%"),
])
def test_unit_end(sentence: str, figure: str, end: str) -> None:
    from rag.answer.lead import _unit_end

    at = sentence.index(figure)
    assert sentence[at:_unit_end(sentence, at + len(figure))] == end


@pytest.mark.parametrize("sentence, figure, asked, shown", [
    ("The error drops below 30% here.", "30%", "error", "below 30%"),
    ("It is up to 5.9× faster.", "5.9×", "faster", "up to 5.9×"),
    ("The probe raises AUROC from chance to 0.812.", "0.812", "auroc", "AUROC from chance to 0.812"),
    ("Noise, then 0.812.", "0.812", "auroc", "0.812"),  # the asked word is not in the figure's clause
])
def test_span_start(sentence: str, figure: str, asked: str, shown: str) -> None:
    from rag.answer.lead import _span_start

    at = sentence.index(figure)
    end = at + len(figure)
    assert sentence[_span_start(sentence, at, end, stems(asked)):end] == shown


def test_number_lead_takes_the_likeliest_quote_unless_another_is_clearly_nearer() -> None:
    from rag.answer.lead import _number_lead

    quotes = [("p", "RecMem", "RecMem", "RecMem keeps 4 memory slots and 1,800 steps."),
              ("p", "RecMem", "RecMem", "RecMem gives a 3.04× speedup in latency."),
              ("q", "Other", "Other", "Its 9× speedup in latency is the best.")]
    q = "What latency speedup does RecMem reach?"
    # two asked words right beside 3.04×: nearer than the likeliest quote's figure by more than the margin (and
    # the other paper's 9× is not the lead paper's)
    lead = _number_lead(q, stems("speedup latency"), frozenset(), quotes, ())
    assert lead is not None and (lead.text, lead.paper_id) == ("3.04× speedup", "p")
    # one asked word two words away is not enough: the likeliest quote's figure stays
    lead = _number_lead(q, stems("speedup"), frozenset(), quotes, ())
    assert lead is not None and lead.text == "4 memory slots"


def test_expansion_lead() -> None:
    from rag.answer.lead import _expansion_lead

    q = "What does DyMoS stand for?"
    s = "We propose the Dynamic Motion Slider (DyMoS) for video editing."
    assert _expansion_lead(q, read_intent(q), "p", s).text == "Dynamic Motion Slider (DyMoS)"
    assert _expansion_lead(q, read_intent(q), "p", "DyMoS edits videos.") is None


# --- a figure asked ----------------------------------------------------------------------------------------------

def _cands(paper: PaperHit, probs: list[float]) -> list[Candidate]:
    return [Candidate(paper, 0, i, c.text, {"cosine": 0.5}, p) for i, (c, p) in enumerate(zip(paper.chunks, probs))]


def test_stating_keeps_the_sentences_that_state_the_asked_quantity() -> None:
    from rag.answer.types.number import _stating

    paper = _paper("z", "Zeta", ["Zeta is trained on 64 V100 GPUs.", "Zeta has 25.9M parameters.",
                                 "Zeta cites 3 prior works (Lee et al., 2020).", "Zeta uses GPUs well."])
    cands = _cands(paper, [0.9, 0.8, 0.7, 0.6])
    gpus = NumberAsk(frozenset(stems("GPUs")), frozenset(), (), True)
    assert [x.sentence for x in _stating(cands, gpus, gpus.units)] == ["Zeta is trained on 64 V100 GPUs."]
    params = NumberAsk(frozenset(stems("parameters")), frozenset(stems("parameters")), (), True)
    assert [x.sentence for x in _stating(cands, params, params.units)] == ["Zeta has 25.9M parameters."]


def test_of_paper_prefers_a_size_in_bytes_when_size_is_asked() -> None:
    from rag.answer.types.number import _of_paper

    paper = _paper("z", "Zeta", ["The datastore holds 2.7M samples.", "This datastore has a size of 27GB."])
    cands = _cands(paper, [0.9, 0.5])
    q = "How large is the Zeta datastore?"
    intent = read_intent(q)
    num = intent.number or NumberAsk(frozenset(), frozenset(), (), False)
    best = _of_paper(intent, num, stems("datastore"), cands[0], cands, cands)
    assert best.sentence == "This datastore has a size of 27GB."


# --- evidence features -------------------------------------------------------------------------------------------

def _rows(papers: list[PaperHit]) -> list:
    from rag.answer.evidence import _sentences

    return _sentences(papers, None, None)


def test_sentences_are_placed_in_their_paper() -> None:
    a = _paper("a", "A", ["We study mountain glaciers.", "2.", "Ice flows downhill slowly."])  # "2." is no prose
    b = _paper("b", "B", ["Dunes move with the wind."])
    rows = _rows([a, b])
    assert [(r.paper.paper_id, r.rank, r.at, r.order, r.section, r.segment) for r in rows] == [
        ("a", 0, 0, 0, ("a", 0), -1), ("a", 0, 1, 1, ("a", 0), -1), ("b", 1, 0, 0, ("b", 0), -1)]


def test_bm25_counts_the_question_terms_a_sentence_holds() -> None:
    from rag.answer.evidence import _bm25

    rows = _rows([_paper("a", "A", ["Glacier ice flows downhill.", "Glacier melt feeds glacier lakes.",
                                    "Dunes move with wind."])])
    q_idf = [("glacier", 2.0), ("melt", 1.0)]
    hits = [frozenset(r.stems) & {"glacier", "melt"} for r in rows]
    scores = _bm25(rows, hits, q_idf, 3.0)
    assert scores[2] == 0.0 and scores[1] > scores[0] > 0.0


def test_introductions_mark_where_the_asked_method_is_named() -> None:
    from rag.answer.evidence import _introductions

    rows = _rows([_paper("a", "Zeta", ["Notes are hard to tag.", "We introduce Zeta, a tagger.",
                                       "Zeta labels lines."])])
    qt = QuestionTerms([], {}, set(), {"a"}, {"a": "Zeta"}, False, 0.0, asks_contribution=True)
    assert _introductions(rows, qt) == {("a", 0): 1}
    assert _introductions(rows, QuestionTerms([], {}, set(), {"a"}, {"a": "Zeta"}, False, 0.0)) == {}


def test_paper_rare_is_the_share_of_rare_terms_the_paper_holds() -> None:
    from rag.answer.evidence import _paper_rare, sentence_stems

    papers = [_paper("a", "Zeta", ["Glacier ice flows downhill."]),
              _paper("b", "Beta", ["Dunes move with wind."], title="Glacier dunes")]
    rows = _rows(papers)
    qt = QuestionTerms(["glacier", "dune"], {"glacier": 3.0, "dune": 1.0}, {"glacier", "dune"}, set(), {}, False, 0.0)
    hits = [frozenset(r.stems) & set(qt.stems) for r in rows]
    labels = {p.paper_id: set(sentence_stems(p.label)) for p in papers}
    got = _paper_rare(papers, rows, hits, qt, labels, ["glacier", "dune"], 4.0)
    assert got == {("a", 0): 0.75, ("b", 0): 1.0}  # b holds "dune" in its text and "glacier" in its title


def test_rank_fusion_ranks_rows_and_ids_alike() -> None:
    from rag.answer.retrieve import reciprocal_rank_fusion

    fused = reciprocal_rank_fusion([[3, 1], [1, 2]], 60)
    assert sorted(fused, key=lambda r: -fused[r]) == [1, 3, 2]
    assert reciprocal_rank_fusion([["a"]], 0) == {"a": 1.0}


# --- names asked -------------------------------------------------------------------------------------------------

def _context(question: str, papers: list[PaperHit], probs: dict[str, float]) -> Context:
    cands = [Candidate(p, 0, i, c.text, {"cosine": 0.5}, probs.get(c.text, 0.5))
             for p in papers for i, c in enumerate(p.chunks)]
    cands.sort(key=lambda x: x.prob, reverse=True)
    return Context(question, read_intent(question), [], set(), {}, papers, cands, papers, Vocabulary(None),
                   current_constants(), AnswerConstants())


def test_whose_keeps_the_papers_holding_most_of_the_question() -> None:
    from rag.answer.types.names import _whose

    a = _paper("a", "A", ["We train the diffusive RNN on 8 GPUs."])
    b = _paper("b", "B", ["We train a transformer on 64 GPUs."])
    ctx = _context("Which GPUs were used to train the diffusive RNN?", [a, b], {})
    assert {x.paper.paper_id for x in _whose(ctx, "GPUs", ctx.cands)} == {"a"}


def test_a_name_beside_the_asked_noun_or_governed_by_the_question() -> None:
    from rag.answer.types.names import _beside_noun, _governed

    a = _paper("a", "Zeta", ["We evaluate Zeta on the Multiface dataset.", "We implement the method in Theano."])
    ctx = _context("Which dataset is Zeta evaluated on?", [a], {})
    ask = ctx.intent.names
    assert ask is not None and ask.kind == "dataset"
    found = _beside_noun(ctx, ask, ctx.cands, ctx.cands)
    assert found is not None and found.sentence == "We evaluate Zeta on the Multiface dataset."
    ctx = _context("In which library was the method implemented?", [a], {})
    ask = ctx.intent.names
    assert ask is not None
    assert _beside_noun(ctx, ask, ctx.cands, ctx.cands) is None
    found = _governed(ctx, ask, ctx.cands)
    assert found is not None and found.sentence == "We implement the method in Theano."
