"""Replaying a small model's recorded answers (benchmarks/llm_check.py --replay): no false abstention, every
repair towards the paper the sentence names or quotes, nothing unsupported shown unmarked, no prompt text.

The recorded set (Qwen2.5-Coder-0.5B on eval/questions.jsonl) lives in shared/llm-samples/ beside the clone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import llm_check
from rag import prompts
from rag.answer.cite import UNSUPPORTED_MARK, _verbatim, names_paper, strip_citations
from rag.answer.render import sources_for
from rag.text import numbers

from tests.conftest import ROOT

SAMPLE = "llm-samples/qwen2.5-coder-0.5b-eval.jsonl"
# shared/ sits beside the clone; a git worktree one folder further down (worktrees/NAME) finds it one level up.
CANDIDATES = [ROOT.parent / "shared" / SAMPLE, ROOT.parent.parent / "shared" / SAMPLE]
# What the recorded model copied from the prompt it was given (rag/prompts.py at the recording).
LEAKED = ["cuts memory use by 31% on long documents", "compresses user histories"]


def sample_path() -> Path:
    for path in CANDIDATES:
        if path.exists():
            return path
    pytest.skip(f"the recorded answers are not here (looked for {', '.join(map(str, CANDIDATES))})")


@pytest.fixture(scope="module")
def replayed(assistant):  # noqa: ANN001, ANN201
    records = llm_check.load_records(sample_path())
    before, after, done = llm_check.replay(assistant, records, say=lambda _m: None)
    return records, before, after, done


def test_replay_ends_no_answer_in_a_false_abstention(replayed) -> None:  # noqa: ANN001
    records, before, after, _ = replayed
    assert before.replayed == after.replayed == len(records) == 105
    assert before.false_abstentions > 50  # the check alone threw away answers the abstracts hold
    assert after.false_abstentions == 0 and after.fallback > 0 and after.repaired > 0


def test_every_repair_points_to_the_paper_the_sentence_is_about(replayed, assistant) -> None:  # noqa: ANN001
    _, _, after, done = replayed
    assert after.repaired_wrong == 0
    for r, _, answer in done:
        by_n = {c.n: c.paper_id for c in answer.citations}
        papers = llm_check.retrieval_for(assistant, r).papers
        for c in answer.checks:
            if not c.repaired:
                continue
            assert c.supported and len(c.citations) == 1 and c.repaired.endswith(f"to [{c.citations[0]}]")
            target = by_n[c.citations[0]]
            assert target in r["gold"], (r["id"], c.sentence)
            clean = strip_citations(c.sentence)
            named = [p.paper_id for p in papers if names_paper(clean, p.label)]
            if named:
                assert named == [target], (r["id"], c.sentence, named)
            else:  # no paper named: a verbatim quote of the target's abstract, and of no other retrieved one
                quoted = [p.paper_id for p, s in zip(papers, sources_for(papers))
                          if _verbatim(clean, [s.n], {s.n: s}) is not None]
                assert quoted == [target], (r["id"], c.sentence, quoted)


def test_nothing_unsupported_is_shown_unmarked(replayed) -> None:  # noqa: ANN001
    _, before, after, done = replayed
    assert before.unmarked == after.unmarked == 0
    for _, old, new in done:
        for answer in (old, new):
            rest = llm_check.unlisted_text(answer)  # beyond supported and marked sentences: the abstention only
            assert not rest or prompts.is_abstention(rest), (answer.question, rest)
            if answer.unsupported:
                assert answer.answer.count(UNSUPPORTED_MARK) == len(answer.unsupported), answer.answer


def test_fallback_keeps_the_model_text_and_says_why(replayed) -> None:  # noqa: ANN001
    _, _, after, done = replayed
    fallbacks = [(r, a) for r, _, a in done if a.mode != "llm"]
    assert len(fallbacks) == after.fallback
    for r, a in fallbacks:
        assert not a.abstained and a.citations and a.raw_answer == r["raw_answer"]
        said_no = prompts.ABSTAIN_PREFIX in r["raw_answer"]
        assert a.notice == (prompts.FALLBACK_MODEL_ABSTAINED if said_no else prompts.FALLBACK_UNTRACEABLE)
    # where the extractive answerer abstains too, the abstention stands
    stands = [a for r, _, a in done if a.abstained]
    assert stands and all(a.mode == "llm" for a in stands)


def prompt_ngrams(n: int = 5) -> set[str]:
    """Every run of n words of the answer prompt's fixed text (placeholders and the abstention the model is told
    to reply with left out)."""
    system = prompts.ANSWER_SYSTEM.replace(f'"{prompts.ABSTAIN_PREFIX} this."', " ")
    fixed = re.sub(r"\{\w+\}", " ", system + "\n" + prompts.ANSWER_USER)
    words = re.findall(r"[a-z]+", fixed.lower())
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_no_shown_answer_contains_prompt_text(replayed) -> None:  # noqa: ANN001
    """The example the recorded model copied never passes as an answer (it shows only ⚠-marked, as the
    model's rejected text, under an abstention); nothing of the current prompt's wording shows at all."""
    _, _, _, done = replayed
    grams = prompt_ngrams()
    for _, _, answer in done:
        words = " ".join(re.findall(r"[a-z]+", answer.answer.lower()))
        assert not any(g in words for g in grams), answer.answer
        for c in answer.checks:
            if c.supported:
                assert not any(leak in c.sentence.lower() for leak in LEAKED), c.sentence
        unmarked = answer.answer
        for c in answer.checks:
            unmarked = unmarked.replace(f"{UNSUPPORTED_MARK} {c.sentence}", " ")
        assert not any(leak in unmarked.lower() for leak in LEAKED), answer.answer


def test_prompt_has_no_figures_and_no_example_of_its_own() -> None:
    for text in (prompts.ANSWER_SYSTEM, prompts.ANSWER_USER):
        assert numbers(strip_citations(re.sub(r"\{\w+\}", " ", text))) == set(), text
        assert not any(leak in text for leak in LEAKED)
    assert "[2]" not in prompts.ANSWER_SYSTEM + prompts.ANSWER_USER  # nothing nudges towards [2]


def test_what_is_shown_is_faithful(replayed, assistant) -> None:  # noqa: ANN001
    """The offline judge (eval/judge.py) on every sentence shown as supported, after repair and fallback."""
    from eval.judge import make_judge
    from eval.run import PaperTexts
    from eval.scoring import faithfulness

    _, _, _, done = replayed
    labels = [e.label for e in assistant.retriever.store.catalog().values()]
    judge = make_judge("offline", assistant.settings, assistant._embed_cached, labels)
    papers = PaperTexts(assistant.retriever.store)
    supported = judged = 0
    for _, _, answer in done:
        claims = llm_check.shown_claims(answer)
        ranked = [x.paper_id for x in answer.retrieved]
        sources = papers.get(ranked + [pid for c in claims for pid in c.cited])
        _, scored = faithfulness(claims, [sources[p] for p in ranked if p in sources], sources.get, judge)
        judged += sum(s.supported is not None for s in scored)
        supported += sum(bool(s.supported) for s in scored)
    assert judged > 100 and supported / judged >= 0.99, (supported, judged)


def test_replay_command_prints_the_summary_last(corpus_settings, capsys: pytest.CaptureFixture[str]) -> None:
    path = sample_path()
    small = corpus_settings.data_dir.parent / "replay-sample.jsonl"
    small.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:6]), encoding="utf-8")
    assert llm_check.main(["--replay", str(small), "--data-dir", str(corpus_settings.data_dir), "--quiet"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"replayed=6 false_abstentions=0 repaired=\d+ repaired_wrong=0 fallback=\d+ "
                        r"unsupported_kept=\d+", last), last


def test_bad_recorded_line_is_refused_with_its_number(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "q", "sources": []}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(llm_check.ReplayError, match=r"bad.jsonl:2"):
        llm_check.load_records(bad)
