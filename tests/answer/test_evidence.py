"""The evidence scorer and the answerer on a corpus they were never fitted on: synthetic abstracts about
invented methods in an invented field, ingested for real (real embedder, real Chroma, real local index)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from rag.answer.evidence import Constants, Vocabulary, current_constants, defines, load_constants
from rag.prompts import ABSTAIN_CLOSEST, ABSTAIN_PREFIX

from tests.conftest import ROOT
from tests.synthetic import SYNTHETIC, synthetic_assistant

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return synthetic_assistant(tmp_path_factory.mktemp("synthetic"))


def _cited_ids(answer) -> list[str]:  # noqa: ANN001
    return [c.paper_id for c in answer.citations]


def _id_of(assistant, fragment: str) -> str:  # noqa: ANN001
    return next(e.paper_id for e in assistant.papers() if fragment in e.text)


def test_definition_quotes_the_sentence_that_spells_the_name_out(synthetic) -> None:
    a = synthetic.ask("What does UPA stand for?")
    assert not a.abstained and _cited_ids(a)[0] == _id_of(synthetic, "Umbra Pigment Assay")
    assert "Umbra Pigment Assay (UPA)" in a.answer


def test_comparison_quotes_each_named_paper(synthetic) -> None:
    a = synthetic.ask("Compare Hydroleaf and Rootweave")
    assert not a.abstained
    assert set(_cited_ids(a)) == {_id_of(synthetic, "Hydroleaf"), _id_of(synthetic, "Rootweave")}
    # each paper on the aspect asked: its two likeliest sentences, in its abstract's order
    assert [c.quote.count(" … ") + 1 for c in a.citations] == [2, 2] and a.answer.count("“") == 4


def test_contribution_quotes_the_sentence_that_introduces_the_method(synthetic) -> None:
    # Sandmark's abstract names the method in a framing sentence; the next one says how it works.
    for question, paper, says in [("What does Rootweave do?", "Rootweave", "an isotope tracing method"),
                                  ("What does Sandmark do?", "Sandmark", "buried magnetic tags")]:
        a = synthetic.ask(question)
        assert not a.abstained and _cited_ids(a) == [_id_of(synthetic, paper)] and says in a.answer


def test_limitation_quotes_the_problem_the_abstract_states_before_its_method(synthetic) -> None:
    for question, paper, says in [
            ("What limitation of field measurements does Hydroleaf point out?", "Hydroleaf", "hard to measure"),
            ("What gap in dune surveys does Sandmark address?", "Sandmark", "existing surveys miss")]:
        a = synthetic.ask(question)
        assert not a.abstained and _cited_ids(a) == [_id_of(synthetic, paper)] and says in a.answer, a.answer


def test_list_question_cites_every_paper_holding_the_name(synthetic) -> None:
    a = synthetic.ask("Which papers use Frostline Metagenomic Profiling?")
    assert {_id_of(synthetic, "We introduce Frostline"), _id_of(synthetic, "Hydroleaf")} <= set(_cited_ids(a))


def test_claim_cites_the_paper_that_states_it(synthetic) -> None:
    a = synthetic.ask("Shaded seedlings get part of their carbon from older trees through fungi")
    assert not a.abstained and _cited_ids(a)[0] == _id_of(synthetic, "Rootweave")
    assert "18%" in a.answer


def test_terse_claim_without_function_words_is_answered(synthetic) -> None:
    # Claims are often written telegraphically; only a question whose words the corpus mostly never uses is
    # treated as another language.
    a = synthetic.ask("Moderate grazing increases topsoil carbon")
    assert not a.abstained and _cited_ids(a)[0] == _id_of(synthetic, "moderate grazing increased")


def test_question_in_another_language_abstains(synthetic) -> None:
    a = synthetic.ask("¿Cuántas visitas de abejorros perdieron las plantas tardías?")
    assert a.abstained and not a.citations


def test_off_topic_question_abstains_and_names_the_closest_papers(synthetic) -> None:
    a = synthetic.ask("Is there a paper about coral reefs?")
    assert a.abstained and a.answer.startswith(ABSTAIN_PREFIX) and not a.citations
    assert ABSTAIN_CLOSEST in a.answer and a.answer.count("\n- ") >= 1


def test_a_term_the_corpus_never_uses_is_not_answered(synthetic) -> None:
    a = synthetic.ask("What does ZentroNet stand for?")
    assert a.abstained and "ZentroNet" in a.answer


def test_lookup_strength_of_a_verbatim_claim(synthetic) -> None:
    hits = synthetic.cite("Heavy grazing reduced soil carbon in dry sites")
    assert hits[0].paper_id == _id_of(synthetic, "Heavy grazing") and hits[0].strength == "strong"
    assert all(h.strength in ("strong", "weak", "none") for h in hits)


def test_lookup_strength_of_an_off_topic_query(synthetic) -> None:
    """A query in words the corpus never uses is no match for any paper, however its closest sentence scores
    (the features are relative to the best sentence found); `ask` abstains on it."""
    far = synthetic.cite("quantum error correction on superconducting qubits")
    assert far and all(h.strength == "none" for h in far)
    assert synthetic.ask("quantum error correction on superconducting qubits").abstained
    near = synthetic.cite("soil carbon under heavy grazing in dry sites")
    assert near[0].strength == "strong"


def test_vocabulary_comes_from_the_index(synthetic) -> None:
    vocab = synthetic.vocabulary()
    assert vocab.paper_share("carbon") >= 2 / len(SYNTHETIC)
    assert vocab.paper_share("Rootweave") == pytest.approx(1 / len(SYNTHETIC))
    assert vocab.unseen("zentronet") and not vocab.unseen("rootweav")
    assert vocab.rarity("rootweav") > vocab.rarity("carbon")


def test_defines_recognises_expansions() -> None:
    assert defines("We propose Umbra Pigment Assay (UPA), a field assay.", "UPA")
    assert defines("We present Hydroleaf, a capacitive sensor.", "Hydroleaf")
    assert not defines("UPA correlates with spectrometry.", "UPA")


def test_constants_file_is_the_fitting_scripts_output() -> None:
    c = load_constants()
    assert isinstance(c, Constants) and c.meta.get("fitted_by") == "eval/fit_evidence.py"
    data = json.loads((ROOT / "rag" / "answer" / "fitted" / "evidence.json").read_text())
    from rag.answer.evidence import PAPER_FEATURES, SENTENCE_FEATURES

    assert set(data["sentence_weights"]) == set(SENTENCE_FEATURES)
    assert set(data["paper_weights"]) == set(PAPER_FEATURES)
    assert 0 <= c.abstain_below <= c.strong_at <= 1 and 0 < c.weak_at < c.strong_at
    assert current_constants() == c


def _seed_names() -> set[str]:
    """Coined names in the seed abstracts (RecMem, TRM, GRPO, ...): none may be vocabulary of rag/."""
    from rag.corpus.labels import is_coined

    text = " ".join(p.read_text(encoding="utf-8") for p in (ROOT / "corpus").glob("*.txt"))
    return {w for w in re.findall(r"[A-Za-z][\w\-]*[A-Za-z0-9]", text) if is_coined(w)}


def test_no_corpus_word_lists_in_rag() -> None:
    """A string literal listing words (five or more) must not hold the seed papers' names."""
    names = _seed_names()
    for path in (ROOT / "rag").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                words = node.value.split()
                if len(words) >= 5 and re.fullmatch(r"[\w\s@.\-]+", node.value):
                    found = {w for w in words if w in names or w.rstrip("s") in names}
                    assert len(found) < 2, f"{path.name}: word list with seed names {sorted(found)}"
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                found = {w for w in items if w in names}
                assert len(found) < 2, f"{path.name}: literal with seed names {sorted(found)}"


def test_the_word_list_check_would_catch_one() -> None:
    names = _seed_names()
    assert {"GRPO", "TRM", "RecMem"} <= names
    assert len({w for w in "AI ML GRPO PPO TRM IRT RecMem".split() if w in names}) >= 2


def test_vocabulary_without_an_index_calls_nothing_common() -> None:
    v = Vocabulary(None)
    assert not v.common("LLM") and v.paper_share("LLM") == 0.0 and not v.unseen("anything")


def test_paper_model_sees_every_retrieval_ranking() -> None:
    from rag.answer.evidence import RANKINGS
    from rag.answer.retrieve import LISTS

    assert tuple(LISTS) == RANKINGS
