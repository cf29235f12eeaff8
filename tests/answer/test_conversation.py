"""Chat turns: which depend on earlier turns and on what (rules from grammar, rag/answer/conversation.py), and whole
chats over the synthetic corpus through the service's Conversation (what the UI, `papers chat` and /v1 use)."""

from __future__ import annotations

import pytest

from rag.answer.conversation import Resolution, TurnRecord, acceptable_rewrite, resolve, strip_filler
from rag.answer.lead import expansion_span, names_span, number_span, parts_span, yes_no
from rag.answer.naming import LabelIndex, tokens
from rag.text import stems

from tests.synthetic import synthetic_assistant

LABELS = {"a": "RecMem", "b": "CoRF", "c": "PotARCin", "d": "Realtime-VLA FLASH"}


def named(text: str) -> list[str]:
    """A stand-in for the index's label lookup: whole-token matches of the labels above."""
    index = LabelIndex.build({pid: type("E", (), {"label": label})() for pid, label in LABELS.items()})
    return list(dict.fromkeys(pid for pid, _, _ in index.matches(text)))


def ask(question: str, *earlier: tuple[str, list[str]]) -> Resolution:
    history = [TurnRecord(q, q, ids) for q, ids in earlier]
    return resolve(question, history, named, LABELS.get,
                   lambda pid, noun: pid == "c" and noun == "benchmark")


def test_a_question_that_names_its_paper_is_sent_as_typed() -> None:
    r = ask("And which RL algorithm does CoRF use?", ("What does RecMem do?", ["a"]))
    assert r.question == "Which RL algorithm does CoRF use?" and r.papers is None and not r.depends
    r = ask("How do RecMem and CoRF differ in what they compress?", ("What is PotARCin?", ["c"]))
    assert r.question == "How do RecMem and CoRF differ in what they compress?" and r.referents == ["a", "b"]


def test_fillers_and_preambles_refer_to_nothing() -> None:
    assert strip_filler("Okay, switching topics: which paper studies glaciers?", lambda s: False) == \
        "Which paper studies glaciers?"
    assert strip_filler("So switching gears, which paper studies moss?", lambda s: False) == \
        "Which paper studies moss?"
    # a preamble that names papers is the question's subject, not a filler
    assert strip_filler("Compare RecMem and CoRF: what do they save?", lambda s: bool(named(s))) == \
        "Compare RecMem and CoRF: what do they save?"
    r = ask("Also, which paper works on glaciers?", ("What does RecMem do?", ["a"]))
    assert r.question == "Which paper works on glaciers?" and not r.depends


def test_a_pronoun_means_the_last_paper() -> None:
    r = ask("how much memory does it save?", ("What speedup does CoRF report?", ["b"]))
    assert r.question == "how much memory does CoRF save?" and r.papers == ["b"] and r.how == "reference"
    r = ask("what is its main limitation?", ("What does RecMem do?", ["a"]))
    assert r.question == "what is RecMem's main limitation?"
    r = ask("what benchmark do they evaluate on?", ("What does RecMem do?", ["a"]))  # they = its authors
    assert r.papers == ["a"] and "RecMem" in r.question


def test_a_possessive_bound_inside_the_question_is_no_reference() -> None:
    chat = ("What does CoRF speed up?", ["b"])
    r = ask("which of the 17 text models disclosed its identity most reliably?", chat)
    assert r.papers is None and "CoRF" not in r.question and not r.depends  # "its": the model's own identity
    r = ask("which benchmark is used in its evaluation?", chat)  # the wh-phrase is not the subject: CoRF's
    assert r.papers == ["b"] and "CoRF's evaluation" in r.question
    r = ask("which variant of it halves its memory use?", chat)  # another reference ("it") still refers back
    assert r.papers == ["b"]


def test_they_after_two_papers_means_both() -> None:
    chat = (("What does RecMem do?", ["a"]), ("What does CoRF speed up?", ["b"]))
    for q in ("How do they differ?", "do both of them use GRPO?", "which of the two is training-free?",
              "which baseline do they both compare to?"):
        r = ask(q, *chat)
        assert r.papers == ["a", "b"] and "RecMem" in r.question and "CoRF" in r.question, q
    # a question whose answer named two papers: "these" are those two
    r = ask("which of these uses RL?", ("Which papers compress memory?", ["a", "b"]))
    assert r.papers == ["a", "b"]


def test_the_benchmark_means_the_paper_that_has_one() -> None:
    r = ask("which dimensions does the benchmark assess?", ("What is PotARCin?", ["c"]), ("And CoRF?", ["b"]))
    assert r.papers == ["c"] and "PotARCin's benchmark" in r.question


def test_ellipsis_continues_the_last_question() -> None:
    r = ask("And on LIBERO?", ("What latency does FLASH get?", ["d"]))
    assert r.question == "What latency does FLASH get on LIBERO?" and r.how == "ellipsis" and r.papers == ["d"]
    r = ask("what about memory?", ("How big a speedup does CoRF report?", ["b"]))
    assert r.how == "ellipsis" and r.emphasis == ["memory"] and "CoRF" in r.question
    r = ask("what about RecMem?", ("What speedup does CoRF report?", ["b"]))  # a switch: the same, about another
    assert r.question == "What speedup does RecMem report?" and r.papers == ["a"] and r.how == "switch"


def test_a_new_topic_or_lookup_is_not_tied_to_the_last_paper() -> None:
    for q in ("which paper works on glaciers?", "is there any work on forecasting event sequences?",
              "Which papers study test-time scaling?"):
        r = ask(q, ("What does RecMem do?", ["a"]))
        assert r.question == q and r.papers is None, q
    assert ask("What does RecMem do?").referents == ["a"]  # a first turn: as typed, about the paper it names


def test_an_llm_rewrite_must_keep_the_users_papers_and_add_none() -> None:
    history = [TurnRecord("What does CoRF do?", "What does CoRF do?", ["b"])]
    assert acceptable_rewrite("How much memory does CoRF save?", "and how much memory does it save?", history,
                              named, 400)
    assert not acceptable_rewrite("How much memory does PotARCin save?", "and how much memory does it save?",
                                  history, named, 400)  # a paper the conversation never named
    assert not acceptable_rewrite("How much memory is saved?", "How much memory does RecMem save?", history,
                                  named, 400)  # drops the paper the user named
    assert not acceptable_rewrite("x" * 500, "and it?", history, named, 400)
    assert not acceptable_rewrite("How much memory does it save?", "and how much memory does it save?", history,
                                  named, 400, ["b"])  # still "it": names none of the papers the turn refers to
    assert acceptable_rewrite("How much memory does CoRF save?", "and how much memory does it save?", history,
                              named, 400, ["b"])


def test_label_index_matches_whole_tokens() -> None:
    assert tokens("FLASH's latency (on LIBERO)?") == ["flash", "latency", "on", "libero"]
    assert named("What does Realtime-VLA FLASH do?") == ["d"]
    assert named("how fast is FLASH?") == ["d"]  # a coined word of the label names the paper
    assert named("flashy results on corfu") == []


def test_lead_spans_are_verbatim_parts_of_the_sentence() -> None:
    s = "It also remains stable over 1,800 test steps."
    assert number_span(s, stems("steps")) == "1,800 test steps"
    s = "CoRF achieves up to a 5.9× speedup and a 10.0× reduction in memory usage."
    assert number_span(s, stems("speedup")) == "5.9× speedup"
    assert number_span(s, stems("speedup"), prefer=stems("memory")) == "10.0× reduction"
    s = "Accuracy rises from 87.4% to 98.75% on Sudoku-Extreme with Claude Opus 4.6."
    assert number_span(s, stems("accuracy")) == "from 87.4% to 98.75%"
    s = "We train 1B and 3B parameters models; the 4B model is larger."
    assert number_span(s, stems("parameters"), given=frozenset({"4"})) == "1B and 3B parameters models"
    s = "We introduce Umbra Pigment Assay (UPA), a field assay."
    assert expansion_span(s, "UPA") == "Umbra Pigment Assay (UPA)"
    assert expansion_span("We present DyMoS (Dynamic Motion Slider), a method.", "DyMoS") == \
        "DyMoS (Dynamic Motion Slider)"
    assert names_span("On BRIGHT and BEIR, RICE-PO beats RL baselines.", "RICE-PO") == "BRIGHT and BEIR"
    s = "Ability depends on baseline ability, reasoning-budget responsiveness, and overthinking curvature."
    assert "baseline ability, reasoning-budget responsiveness, and overthinking curvature" in parts_span(s)
    assert yes_no("Does DyMoS need any extra training?", ["DyMoS is a training-free method."], []) == \
        ("No", "training-free")
    assert yes_no("Does DyMoS need any extra training?", ["DyMoS is not training-free."], []) is None
    assert yes_no("Do they use GRPO?", ["A augments GRPO.", "B trains with GRPO."], ["GRPO"]) == ("Yes", "GRPO")
    assert yes_no("What does DyMoS do?", ["It is training-free."], []) is None


# --- whole chats over the synthetic corpus -------------------------------------------------------------------

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return synthetic_assistant(tmp_path_factory.mktemp("synthetic-chat"))


def _id(assistant, name: str) -> str:  # noqa: ANN001
    return next(e.paper_id for e in assistant.papers() if name in e.text)


def test_a_follow_up_is_answered_about_the_paper_of_the_chat(synthetic) -> None:  # noqa: ANN001
    chat = synthetic.conversation()
    first = chat.ask("What does UPA stand for?")
    assert first.lead == "Umbra Pigment Assay (UPA)" and first.answer.startswith("Umbra Pigment Assay (UPA) [1]")
    second = chat.ask("and how many lichen samples did they test it on?")
    assert second.rewritten and "UPA" in second.rewritten and second.question.startswith("and how many")
    assert [c.label for c in second.citations] == ["UPA"] and second.lead and "210" in second.lead
    third = chat.ask("How many GPUs did they use?")
    assert third.abstained and not third.citations


def test_a_named_switch_and_a_comparison_across_turns(synthetic) -> None:  # noqa: ANN001
    chat = synthetic.conversation()
    chat.ask("What does Rootweave trace?")
    switched = chat.ask("Also, what does Hydroleaf log?")
    assert switched.rewritten == "What does Hydroleaf log?" and [c.label for c in switched.citations] == ["Hydroleaf"]
    chat.ask("How many beaches was Sandmark tested on?")
    both = chat.ask("how do they differ?")
    assert {c.label for c in both.citations} == {"Hydroleaf", "Sandmark"}
    assert "Hydroleaf" in both.rewritten and "Sandmark" in both.rewritten


def test_a_question_about_a_paper_outside_the_scope_is_told_so(synthetic) -> None:  # noqa: ANN001
    scope = [_id(synthetic, "Rootweave")]
    chat = synthetic.conversation()
    out = chat.ask("How many microbial genomes does FMP recover?", paper_ids=scope)
    assert out.abstained and out.outside_scope == ["FMP"] and "3,400" not in out.answer
    assert out.answer.startswith("FMP is indexed but outside the selected papers")
    topical = chat.ask("How many microbial genomes come from the twelve permafrost cores?", paper_ids=scope)
    assert topical.abstained and topical.outside_scope == ["FMP"] and "3,400" not in topical.answer
    assert topical.answer.startswith("The selected papers don't say this; FMP, outside the selection, does")
    inside = chat.ask("What share of carbon do shaded seedlings get from older trees?", paper_ids=scope)
    assert not inside.abstained and "18%" in (inside.lead or "") and inside.outside_scope == []
    with pytest.raises(ValueError, match="no indexed paper has id 'nope'"):
        chat.ask("What does Rootweave trace?", paper_ids=["nope"])
