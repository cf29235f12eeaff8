"""The default answerer on the real corpus: cites the right paper, names labels, spans papers, abstains."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.prompts import ABSTAIN_PREFIX

from tests.conftest import ROOT, load_questions


def cited_labels(answer) -> list[str]:  # noqa: ANN001
    return [c.label for c in answer.citations]


def test_recmem_fact(assistant) -> None:
    a = assistant.ask("Over how many test steps does RecMem stay stable?")
    assert not a.abstained and cited_labels(a) == ["RecMem"]
    assert "1,800" in a.answer and "[1]" in a.answer and "1,800" in a.citations[0].quote


@pytest.mark.parametrize("question,label", [
    ("Which paper proposes a training-free method to make image-to-video models less static?", "DyMoS"),
    ("who reports a 54.7% win rate over Backward Synthesis?", "Recon"),
    ("Which paper introduces a benchmark extending ARC to five dimensions?", "PotARCin"),
    ("which paper uses speculative inference for diffusion vision-language-action models?", "Realtime-VLA FLASH"),
])
def test_lookup_names_the_label(assistant, question: str, label: str) -> None:
    a = assistant.ask(question)
    assert not a.abstained and cited_labels(a)[0] == label
    assert a.answer.startswith(label)


def test_multi_paper_question_cites_several(assistant) -> None:
    a = assistant.ask("which papers study test-time scaling?")
    labels = set(cited_labels(a))
    assert len(labels) >= 3 and {"SLG Search", "DuST"} <= labels
    assert a.answer.startswith("Matching papers:")


@pytest.mark.parametrize("question", [
    "How many parameters does RecMem have?",
    "How many GPUs was RecMem trained on?",
    "What FID does DyMoS get on UCF-101?",
    "Which paper proposes a protein folding model?",
    "is there a paper on summarizing legal documents?",
])
def test_abstains_when_the_abstracts_do_not_say(assistant, question: str) -> None:
    a = assistant.ask(question)
    assert a.abstained and a.answer.startswith(ABSTAIN_PREFIX) and not a.citations


def test_never_cites_a_paper_that_was_not_retrieved(assistant) -> None:
    for q in load_questions("dev_questions.jsonl"):
        a = assistant.ask(q["question"], k=3)
        retrieved = {r.paper_id for r in a.retrieved}
        assert {c.paper_id for c in a.citations} <= retrieved
        assert len(a.retrieved) <= 3


def test_dev_set_answers_and_abstentions(assistant) -> None:
    """On the dev questions: cites a gold paper when answerable, abstains when not (>= 85% right)."""
    right = 0
    questions = load_questions("dev_questions.jsonl")
    for q in questions:
        a = assistant.ask(q["question"])
        if q["gold"]:
            right += (not a.abstained) and bool({c.paper_id for c in a.citations} & set(q["gold"]))
        else:
            right += a.abstained
    assert right / len(questions) >= 0.85, right / len(questions)


def test_every_extractive_sentence_passes_the_citation_check(assistant) -> None:
    for q in load_questions("dev_questions.jsonl")[:20]:
        a = assistant.ask(q["question"])
        assert not a.unsupported and not a.removed_citations


# --- question shapes on the seed papers (the examples among them) ---------------------------------

def test_comparison_quotes_both_papers(assistant) -> None:
    a = assistant.ask("Compare RSPO and RICE-PO")
    assert not a.abstained and set(cited_labels(a)) == {"RSPO", "RICE-PO"}
    assert all(c.quote for c in a.citations)


def test_difference_question_is_a_comparison(assistant) -> None:
    a = assistant.ask("How does PTRM differ from GRAM?")
    assert set(cited_labels(a)) == {"PTRM", "GRAM"}


def test_definition_quotes_the_expansion(assistant) -> None:
    a = assistant.ask("What does RSPO stand for?")
    assert cited_labels(a) == ["RSPO"] and "Reasoning-Supervised Policy Optimization (RSPO)" in a.answer
    assert "6.7%" not in a.answer


def test_contribution_quotes_what_the_method_does(assistant) -> None:
    a = assistant.ask("What does ReLoop do?")
    assert cited_labels(a) == ["ReLoop"]
    assert "four-stage reasoning chain" in a.answer or "Behavioral verification" in a.answer


def test_limitation_question(assistant) -> None:
    a = assistant.ask("What is the limitation of standard ARC evaluation according to PotARCin?")
    assert cited_labels(a) == ["PotARCin"] and "single capability" in a.answer


def test_list_question_cites_every_paper_using_the_name(assistant) -> None:
    a = assistant.ask("Which papers use GRPO?")
    assert {"RLRT", "RTCBench", "RECAP", "DuST"} <= set(cited_labels(a))


def test_paraphrase_with_a_word_no_abstract_uses_is_answered(assistant) -> None:
    a = assistant.ask("Which paper uses next-token entropy to decide where to resample when doing MCMC over "
                      "reasoning chains?")
    assert not a.abstained and cited_labels(a)[0] == "Entropy-Cut Metropolis–Hastings"


def test_claim_finds_the_supporting_paper(assistant) -> None:
    a = assistant.ask("Quantization increases overthinking errors in reasoning models")
    assert not a.abstained and cited_labels(a)[0] == "Quantized models" and "overthinking" in a.answer


def test_abstention_names_the_closest_papers(assistant) -> None:
    from rag.prompts import ABSTAIN_CLOSEST

    a = assistant.ask("Compare AlphaFold and RoseTTAFold")
    assert a.abstained and a.answer.startswith(ABSTAIN_PREFIX) and ABSTAIN_CLOSEST in a.answer


@pytest.mark.slow
def test_answers_do_not_depend_on_the_process(corpus_settings) -> None:  # noqa: ANN001
    """Every hand-written question answered in two fresh processes with different string hashing (set and
    dict order of strings) gets the same answer: no decision may rest on the order a set is iterated in."""
    exe = Path(sys.executable).with_name("papers")
    questions = [q["question"] for f in ("questions.jsonl", "questions_heldout.jsonl") for q in load_questions(f)]
    answers = []
    for seed in ("0", "1"):
        env = dict(os.environ, PAPERS_DATA_DIR=str(corpus_settings.data_dir), PYTHONHASHSEED=seed)
        out = subprocess.run([str(exe), "ask", "-", "--json", "--mode", "extractive"], input="\n".join(questions),
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        answers.append([json.loads(line)["answer"] for line in out.stdout.splitlines() if line.strip()])
    assert len(answers[0]) == len(questions)
    differ = [q for q, a, b in zip(questions, *answers) if a != b]
    assert not differ, differ


def test_a_bound_in_a_formula_is_not_a_figure() -> None:
    from rag.answer.types.number import figures

    assert figures("It follows, where the inequality holds since w ≤ 1, ∀i.") == frozenset()
    assert figures("Each weight lies in x ∈ [0, 1] by construction.") == frozenset()
    assert figures("The decay factor is γ = 0.9 in every run.") == {"0.9"}


def test_a_figure_sentence_states_the_asked_quantity() -> None:
    from rag.answer.types.number import states as _states

    assert _states("The tagger is trained with a learning rate of 0.01.", {"learn", "rate"})
    assert not _states("We use Scikit-Learn 1.2 for the probe.", {"learn", "rate"})  # "learn" alone
    assert _states("The solver takes 3 hours on one machine.", {"time"})  # a time given by its unit
    assert not _states("The bound holds for w ≤ 2 when computed exactly.", {"time"})
    assert not _states("Methods of the 1990s were slower to compute.", {"time"})  # a decade is no time
    assert _states("One epoch takes 120s on a laptop.", {"time"})
    assert _states("We trained on 8 GPU nodes.", {"gpus"})
    assert _states("We rank 42 language models.", {"lms"}, ["LM"])


def test_a_name_of_the_asked_kind_is_written_beside_its_noun() -> None:
    from rag.answer.evidence import Vocabulary
    from rag.answer.types.names import names_kind as _names_kind, names_of_kind as _kind_names

    vocab = Vocabulary(None)
    assert _names_kind("We run all models on Zorp X900 (48GB) and K80 (12GB) GPUs.", "GPUs", "", vocab, "")
    assert _names_kind("We evaluate on data from the public Facewave dataset [12].", "dataset", "", vocab, "")
    assert _names_kind("Each crop is then encoded by the GridNet-v2 encoder.", "encoder", "", vocab, "")
    # a name elsewhere in a sentence that has the noun is of another kind
    assert not _names_kind("For the probe trained on FooNet features we use one GPU.", "GPU", "", vocab, "")
    # the word opening a sentence is not a name for being capitalised
    assert _kind_names("Datasets are split evenly. Public datasets help.", "datasets", "", vocab, "") == set()


def _full_text(pid: str, label: str, sentences: list[str], cosines: dict[str, float]):  # noqa: ANN202
    """A paper read from a PDF (two sections, so a layout) whose sentences are its chunks."""
    from rag.answer.retrieve import Chunk, PaperHit

    half = len(sentences) // 2
    text = " ".join(sentences)
    layout = json.dumps([[0, 1, "Abstract"], [len(" ".join(sentences[:half])) + 1, 5, "4 Experiments"]])
    chunks = [Chunk(f"{pid}:{i}", s, cosines.get(s, 0.3)) for i, s in enumerate(sentences)]
    return PaperHit(pid, label, "", 0, 1.0, text, title=label, chunks=chunks, complete=True, layout=layout)


def _draft(question: str, papers: list) -> object:  # noqa: ANN001
    from rag.answer.evidence import Vocabulary
    from rag.answer.extractive import draft_answer
    from rag.answer.retrieve import Retrieval

    return draft_answer(question, Retrieval(question, papers, None, {}, "hybrid"), vocab=Vocabulary(None))


TAGGER = ["We present Zeta, a tagger for field notes.", "Zeta labels every line of a note.",
          "We train Zeta with the Quokka toolkit on lichen notes.", "Training takes two days for Zeta."]


def test_a_full_text_that_never_uses_the_asked_noun_names_none_of_its_kind() -> None:
    paper = _full_text("z", "Zeta", TAGGER, {TAGGER[2]: 0.8})
    draft = _draft("What GPUs were used to train Zeta?", [paper])
    assert draft.abstention and not draft.quotes  # "Quokka" is named, but the paper never speaks of GPUs
    with_gpu = _full_text("z", "Zeta", TAGGER + ["Zeta is trained on four Vexa R9 GPUs."], {TAGGER[2]: 0.8})
    draft = _draft("What GPUs were used to train Zeta?", [with_gpu])
    assert [q.sentence for q in draft.quotes] == ["Zeta is trained on four Vexa R9 GPUs."]


def test_a_name_in_a_sentence_whose_noun_stands_apart_is_of_another_kind() -> None:
    s = "For the Quokka probe trained on Zeta features we use a single GPU."
    paper = _full_text("z", "Zeta", TAGGER + [s], {s: 0.9})
    assert _draft("What GPU was used to train the Zeta tagger?", [paper]).abstention


def test_whose_gpu_is_asked_is_said_by_the_questions_other_words() -> None:
    mine = _full_text("z", "Zeta", TAGGER + ["The lichen tagger is trained on one Vexa R9 GPU."], {})
    other = _full_text("o", "Orca", ["We present Orca, a whale-song counter.", "Orca counts songs in recordings.",
                                     "Orca runs on a Kryo K7 GPU.", "Songs are counted hourly."],
                       {"Orca runs on a Kryo K7 GPU.": 0.9})
    third = _full_text("p", "Puma", ["We present Puma, a bird-call filter.", "Puma filters calls.",
                                     "Puma needs no GPU at all.", "Calls are kept."], {})
    draft = _draft("What GPU was the lichen tagger trained on?", [other, mine, third])
    assert [q.paper.label for q in draft.quotes] == ["Zeta"]


def test_a_shape_with_a_symbol_is_no_figure() -> None:
    from rag.answer.types.number import figures

    assert figures("The hidden activation size is set to R C/r×1×1 , where r is the reduction ratio.") == frozenset()
    assert figures("Each map has size H×W×3 before pooling.") == frozenset()
    assert figures("We run 8×A100 GPUs and see a 3.04× speedup.") == {"8", "3.04"}


def test_how_many_needs_a_figure_that_counts_the_asked_thing() -> None:
    mentions = ("Grouping saves the total number of parameters and gives more power than the other two factors: "
                "depth and width.")
    paper = _full_text("z", "Zeta", TAGGER + [mentions], {mentions: 0.95})
    draft = _draft("How many parameters does Zeta have?", [paper])
    assert not draft.quotes  # "two factors" counts no parameters: abstained
    counted = "Zeta has 28.09M parameters in all."
    paper = _full_text("z", "Zeta", TAGGER + [mentions, counted], {mentions: 0.95, counted: 0.5})
    assert _draft("How many parameters does Zeta have?", [paper]).quotes[0].sentence == counted
    from rag.answer.types.number import counts as _counts

    assert _counts("On the leaderboard we rank 42 language models.", {"lms"}, ["LM"])  # "how many LMs"
    assert not _counts("We read 2 leaderboards, and each of them ranks language models.", {"lms"}, ["LM"])


def test_how_large_prefers_a_size_in_bytes() -> None:
    a, b = "The index built from the archive holds 2.7M passages.", "Stored on disk, the index takes 27GB."
    paper = _full_text("z", "Zeta", TAGGER + [a, b], {a: 0.95, b: 0.4})
    draft = _draft("How large is the index built from the archive?", [paper])
    assert draft.quotes[0].sentence == b


def test_of_several_sizes_the_one_whose_sentence_continues_the_asked_subject() -> None:
    intro, size = "For the archive we build an index of field notes.", "This index takes 27GB on disk."
    other = "The index of bird calls built for the archive takes 12GB."
    paper = _full_text("z", "Zeta", TAGGER + [other, intro, size], {other: 0.9, intro: 0.5, size: 0.3})
    draft = _draft("How large is the index of field notes built for the archive?", [paper])
    assert draft.quotes[0].sentence == size


def test_of_a_count_given_per_experiment_the_section_named_by_the_question_answers() -> None:
    from rag.answer.retrieve import Chunk, PaperHit

    # neither figure's sentence names its experiment, and the other one's shares more words with the question
    lichen = ["Zeta tags lichen notes with a small encoder.", "We use 8 GPUs with a batch of 64 notes."]
    moss = ["Zeta also tags moss notes with a larger encoder.", "The model is trained on 32 GPUs for a day."]
    sentences = TAGGER + lichen + moss
    text = " ".join(sentences)
    marks = [[0, 1, "Abstract"], [len(" ".join(TAGGER)) + 1, 4, "3.1 Lichen"],
             [len(" ".join(TAGGER + lichen)) + 1, 6, "3.2 Moss"]]
    cos = {lichen[1]: 0.4, moss[1]: 0.6}
    paper = PaperHit("z", "Zeta", "", 0, 1.0, text, title="Zeta", complete=True, layout=json.dumps(marks),
                     chunks=[Chunk(f"z:{i}", s, cos.get(s, 0.3)) for i, s in enumerate(sentences)])
    draft = _draft("How many GPUs were used to train the lichen model of Zeta?", [paper])
    assert draft.quotes[0].sentence == lichen[1]  # the moss figure is likelier, but its section is another's
    draft = _draft("How many GPUs were used to train the moss model of Zeta?", [paper])
    assert draft.quotes[0].sentence == moss[1]


NOTES = ["We present Zeta, a tagger for field notes.", "Zeta labels every line of a note.",
         "A toolkit of this kind is described in the appendix.", "Training takes a while for Zeta."]


def test_hardware_is_answered_by_a_named_gpu() -> None:
    gpu = "Zeta is trained on four Vexa-R9 GPUs for a day."
    paper = _full_text("z", "Zeta", NOTES + [gpu], {NOTES[1]: 0.9})
    draft = _draft("What hardware was the Zeta tagger trained on?", [paper])
    assert [q.sentence for q in draft.quotes] == [gpu]  # the paper never writes "hardware"


def test_a_word_written_in_capitals_matches_where_the_text_writes_it_so() -> None:
    from rag.answer.types.words import cased_in as _cased_in

    assert _cased_in("BASE", "Our BASE tagger has four layers.") and _cased_in("GPUs", "on 8 GPUs")
    assert not _cased_in("BASE", "a strong base tagger") and not _cased_in("BASE", "the DATABASE")
    mine = _full_text("z", "Zeta", NOTES + ["The BASE tagger has four layers.", "It is trained on one Vexa-R9 GPU."],
                      {})
    other = _full_text("o", "Orca", ["We present Orca, a whale-song counter.", "Orca builds on a base tagger of songs.",
                                     "Orca is trained on a Kryo-K7 GPU.", "Songs are counted hourly."],
                       {"Orca is trained on a Kryo-K7 GPU.": 0.9})
    draft = _draft("What hardware was the BASE tagger trained on?", [other, mine])
    assert [q.paper.label for q in draft.quotes] == ["Zeta"]  # Orca's "base" is an ordinary word


def test_a_name_governed_by_the_questions_verb_answers_without_the_kind_noun() -> None:
    built = "We implement the whole tagger in Quokka, and the code is public."
    paper = _full_text("z", "Zeta", NOTES + [built], {NOTES[1]: 0.9})
    draft = _draft("In which toolkit was the Zeta tagger implemented?", [paper])
    assert [q.sentence for q in draft.quotes] == [built]
    # without the preposition the question's words do not govern a name: the toolkit is not named beside its noun
    assert _draft("What toolkit was used for the Zeta tagger?", [paper]).abstention
    # nor do they when the sentence leaves out one of the question's other words
    other = "We describe the whole tagger in Quokka notation."
    assert _draft("In which toolkit was the Zeta tagger implemented?",
                  [_full_text("z", "Zeta", NOTES + [other], {NOTES[1]: 0.9})]).abstention


def _numeric_pick(question: str, sentences: list[str], probs: list[float]) -> str:
    """The figure sentence `_numeric` quotes first, of one paper's sentences scored as given."""
    from rag.answer.evidence import Candidate, current_constants
    from rag.answer.intent import read_intent
    from rag.answer.types.number import numeric as _numeric

    paper = _full_text("z", "Zeta", TAGGER + sentences, {})
    cands = [Candidate(paper, 0, i, s, {"cosine": 0.5}, p) for i, (s, p) in enumerate(zip(sentences, probs))]
    return _numeric(read_intent(question), cands, {"zeta"}, current_constants()).quotes[0].sentence


def test_of_equally_worded_figures_the_one_phrased_as_the_question_answers() -> None:
    from rag.answer.types.number import word_pairs as _word_pairs

    assert ("reduc", "number") in _word_pairs("It reduced the number of lines.")
    assert ("line", "drop") not in _word_pairs("Mislabelled lines, drop by 9%.")  # a clause ends at a comma
    loose, phrased = "Lines mislabelled by the old filter drop by 9% in number.", \
        "Zeta reduced the number of mislabelled lines from 50 to 40, a 20% reduction."
    # both hold four of the question's words; the likelier one does not say it as the question does
    assert _numeric_pick("By what percentage did the Zeta filter reduce the number of mislabelled lines?",
                         [loose, phrased], [0.9, 0.4]) == phrased


def test_capitalised_words_after_the_label_say_whose_figure_not_which() -> None:
    from rag.answer.types.number import label_continued as _label_continued

    assert _label_continued("By how much does Zeta Quick Tagging cut errors?", "Zeta").split() == ["Quick", "Tagging"]
    assert _label_continued("By how much does Zeta cut errors?", "Zeta") == ""
    own, moss = "Zeta Quick Tagging cuts errors by 9%.", "Errors of moss notes are cut by 20%."
    assert _numeric_pick("By what percentage does Zeta Quick Tagging cut the errors of moss notes?",
                         [own, moss], [0.9, 0.4]) == moss


def test_an_abstention_shows_the_questions_words_and_says_text_for_a_full_text() -> None:
    from rag.prompts import ABSTAIN_PREFIX_TEXTS, is_abstention

    paper = _full_text("z", "Zeta", NOTES, {})
    draft = _draft("How much wall-clock computation does Zeta need?", [paper])
    assert draft.abstention.startswith(ABSTAIN_PREFIX_TEXTS) and is_abstention(draft.abstention)
    assert "Zeta's text gives no figure for “wall-clock computation”" in draft.abstention
    from dataclasses import replace

    abstract = replace(paper, layout="")
    draft = _draft("How much wall-clock computation does Zeta need?", [abstract])
    assert "Zeta's abstract gives no figure for “wall-clock computation”" in draft.abstention


def test_of_sentences_naming_the_kind_the_one_after_the_questions_capitalised_name() -> None:
    base, large = "It is trained on one Vexa-R9 GPU.", "It is trained on eight Vexa-R9 GPUs."
    sentences = NOTES + ["The BASE tagger has four layers.", base, "The LARGE tagger has twelve layers.",
                         "Its notes are longer.", large]
    paper = _full_text("z", "Zeta", sentences, {base: 0.9, large: 0.3})
    assert [q.sentence for q in _draft("What hardware was the LARGE tagger trained on?", [paper]).quotes] == [large]
    assert [q.sentence for q in _draft("What hardware was the BASE tagger trained on?", [paper]).quotes] == [base]
    # a chat's follow-up, as the conversation layer rewrites it: the name the new turn adds is written last
    for follow_up, answer in (("What hardware was the BASE tagger trained on, and the LARGE tagger?", large),
                              ("What hardware was the LARGE tagger trained on, and the BASE tagger?", base)):
        assert [q.sentence for q in _draft(follow_up, [paper]).quotes] == [answer]
