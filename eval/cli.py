"""`papers eval`: run the hand-written questions, score them, write a run folder, compare runs, gate CI.

Only typer is imported at module level, so `papers --help` stays instant; the assistant, the judge and
matplotlib are loaded inside the command.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

RUNS_DIR = Path("eval") / "runs"
MODES = ("extractive", "llm", "auto")
JUDGES = ("offline", "llm")


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _run_folder(out: Path | None, mode: str) -> Path:
    """The folder to write: --out, or eval/runs/<timestamp>-<mode>, never an existing run's."""
    if out is not None:
        return out
    base = RUNS_DIR / f"{time.strftime('%Y%m%d-%H%M%S')}-{mode}"
    folder, n = base, 1
    while folder.exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


def eval_command(
    questions: Optional[Path] = typer.Option(None, "--questions", help="Questions file, JSON Lines "
                                             "(default: eval/questions.jsonl)."),
    mode: str = typer.Option("auto", "--mode", help="extractive, llm or auto (the LLM when one is configured)."),
    k: Optional[int] = typer.Option(None, "--k", min=1, max=50, help="Papers retrieved per question "
                                    "(default PAPERS_TOP_K); retrieval scores are always @5."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run folder (default eval/runs/<timestamp>-<mode>)."),
    judge: str = typer.Option("offline", "--judge", help="offline (deterministic, rag/answer/cite.py rules) or llm "
                              "(the configured endpoint extracts and verifies claims)."),
    compare: Optional[tuple[Path, Path]] = typer.Option(None, "--compare", metavar="RUN_A RUN_B",
                                                        help="Print the differences between two run folders "
                                                        "and exit."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N questions."),
    check_judge: bool = typer.Option(True, "--check-judge/--no-check-judge", help="Measure the judge's "
                                     "agreement with eval/labels/judge_labels.jsonl in this run."),
    min_hit1: Optional[float] = typer.Option(None, "--min-hit1", min=0, max=1, help="Gate: minimum hit@1."),
    min_hit5: Optional[float] = typer.Option(None, "--min-hit5", min=0, max=1, help="Gate: minimum hit@5."),
    min_mrr: Optional[float] = typer.Option(None, "--min-mrr", min=0, max=1, help="Gate: minimum MRR."),
    min_ndcg5: Optional[float] = typer.Option(None, "--min-ndcg5", min=0, max=1, help="Gate: minimum nDCG@5."),
    min_recall5: Optional[float] = typer.Option(None, "--min-recall5", min=0, max=1,
                                                help="Gate: minimum recall@5."),
    min_citation_recall: Optional[float] = typer.Option(None, "--min-citation-recall", min=0, max=1,
                                                        help="Gate: minimum citation recall."),
    min_citation_precision: Optional[float] = typer.Option(None, "--min-citation-precision", min=0, max=1,
                                                           help="Gate: minimum citation precision."),
    min_cites_gold: Optional[float] = typer.Option(None, "--min-cites-gold", min=0, max=1,
                                                   help="Gate: minimum share of answers citing a gold paper."),
    min_faithfulness: Optional[float] = typer.Option(None, "--min-faithfulness", min=0, max=1,
                                                     help="Gate: minimum faithfulness."),
    min_correctness: Optional[float] = typer.Option(None, "--min-correctness", min=0, max=1,
                                                    help="Gate: minimum correctness (key facts found)."),
    min_abstention: Optional[float] = typer.Option(None, "--min-abstention", min=0, max=1,
                                                   help="Gate: minimum share of right answer/abstain decisions."),
    min_abstain_unanswerable: Optional[float] = typer.Option(
        None, "--min-abstain-unanswerable", min=0, max=1, help="Gate: minimum share of unanswerable questions "
        "abstained on."),
    min_judge_agreement: Optional[float] = typer.Option(None, "--min-judge-agreement", min=0, max=1,
                                                        help="Gate: minimum judge agreement with the labels."),
    max_p95_ms: Optional[float] = typer.Option(None, "--max-p95-ms", min=0, help="Gate: maximum p95 latency."),
    conversations: Optional[Path] = typer.Option(None, "--conversations", help="Chat conversations, JSON Lines "
                                                 "(default: eval/conversations.jsonl), asked turn by turn."),
    no_conversations: bool = typer.Option(False, "--no-conversations", help="Skip the conversation eval."),
    min_conv_cites_gold: Optional[float] = typer.Option(None, "--min-conv-cites-gold", min=0, max=1,
                                                        help="Gate: chat turns citing a gold paper (answerable)."),
    min_conv_facts: Optional[float] = typer.Option(None, "--min-conv-facts", min=0, max=1,
                                                   help="Gate: share of chat turns' facts stated."),
    min_conv_follow_up_right: Optional[float] = typer.Option(None, "--min-conv-follow-up-right", min=0, max=1,
                                                             help="Gate: follow-up turns answered right."),
    min_conv_abstain: Optional[float] = typer.Option(None, "--min-conv-abstain", min=0, max=1,
                                                     help="Gate: must-abstain chat turns that abstain."),
    max_conv_wrong_paper: Optional[float] = typer.Option(None, "--max-conv-wrong-paper", min=0, max=1,
                                                         help="Gate: answerable chat turns citing a non-gold paper."),
    max_conv_false_abstain: Optional[float] = typer.Option(None, "--max-conv-false-abstain", min=0, max=1,
                                                           help="Gate: answerable chat turns that abstain."),
    min_lead: Optional[float] = typer.Option(None, "--min-lead", min=0, max=1, help="Gate: number and "
                                             "definition turns whose lead line holds the expected answer."),
    qasper_file: Optional[Path] = typer.Option(None, "--qasper", help="Score QASPER instead (a qasper_*.jsonl "
                                               "file): each paper written as Markdown, ingested into --qasper-data, "
                                               "each question asked of its own paper (eval/qasper.py)."),
    qasper_papers: Optional[int] = typer.Option(None, "--qasper-papers", min=1, help="Only a fixed sample of this "
                                                "many papers (the same on every machine)."),
    qasper_fold: Optional[int] = typer.Option(None, "--qasper-fold", min=0, max=4, help="Only the papers of this "
                                              "fold (eval/qasper.py fold_of): held out by a reader trained "
                                              "without it."),
    qasper_data: Path = typer.Option(Path("data-qasper"), "--qasper-data", help="Data dir the QASPER papers are "
                                     "ingested into (kept between runs: only what changed is embedded)."),
    min_qasper_answer_f1: Optional[float] = typer.Option(None, "--min-qasper-answer-f1", min=0, max=1,
                                                         help="Gate: QASPER Answer-F1."),
    min_qasper_evidence_f1: Optional[float] = typer.Option(None, "--min-qasper-evidence-f1", min=0, max=1,
                                                           help="Gate: QASPER Evidence-F1."),
    max_qasper_false_abstain: Optional[float] = typer.Option(None, "--max-qasper-false-abstain", min=0, max=1,
                                                             help="Gate: answerable QASPER questions that abstain."),
) -> None:
    """Score answers to hand-written questions: retrieval, citations, faithfulness, correctness, abstention."""
    started = time.perf_counter()
    if qasper_file is not None:
        _qasper(qasper_file, qasper_papers, qasper_fold, qasper_data, out, {
            "answer_f1": min_qasper_answer_f1, "evidence_f1": min_qasper_evidence_f1},
            {"answerable_abstained": max_qasper_false_abstain})
        return
    if compare:
        from eval.report import compare as compare_runs

        try:
            typer.echo(compare_runs(*compare))
        except (FileNotFoundError, ValueError, KeyError) as e:
            _fail(str(e))
        return
    if mode not in MODES:
        _fail(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if judge not in JUDGES:
        _fail(f"--judge must be one of {', '.join(JUDGES)}, got {judge!r}")

    from eval.judge import make_judge
    from eval.report import check_gates, console_table, summarise, write_run
    from eval.run import (QUESTIONS_PATH, QuestionsError, judge_agreement, load_questions, missing_gold,
                          open_assistant, run_info, run_questions)
    from rag.errors import PapersError
    from rag.settings import load_settings

    questions_path = questions or QUESTIONS_PATH
    try:
        settings = load_settings()
        asked = load_questions(questions_path)[:limit]
        assistant = open_assistant(settings, _say)
        used_mode = assistant.resolve_mode(mode)
        scorer = make_judge(judge, settings, assistant.retriever.embedder.get_text_embedding_batch,
                            [e.label for e in assistant.papers()])
    except (QuestionsError, ValueError) as e:
        _fail(str(e))
        return
    except PapersError as e:
        _fail(str(e), e.exit_code)
        return
    absent = missing_gold(assistant, asked)
    if absent:
        _say(f"warning: {len(absent)} gold paper id(s) are not in the index (e.g. {absent[0]}): retrieval and "
             "citation scores will be low; were the questions written for another corpus?")

    records = run_questions(assistant, asked, used_mode, k, scorer, progress=sys.stderr.isatty())
    agreement = judge_agreement(scorer) if check_judge else None
    info = run_info(settings, used_mode, k, scorer, questions_path, len(asked)) | {"gold_not_indexed": len(absent)}
    summary = summarise(records, info, agreement, time.perf_counter() - started)
    paths = write_run(_run_folder(out, used_mode), records, summary)

    typer.echo(console_table(summary))
    if agreement:
        typer.echo(f"judge ({scorer.name}) agreement with hand labels: {agreement['agreement']:.3f} "
                   f"({agreement['agreed']}/{agreement['total']})")
    if summary["fallbacks"]:
        typer.echo(f"{summary['fallbacks']} answer(s) fell back from the LLM to the extractive answerer")
    typer.echo(f"report: {paths['report.md']}  plot: {paths['scores.png']}  ({summary['seconds']:.0f} s)")

    conv_failures: list[str] = []
    if not no_conversations and limit is None:
        from eval.conversations import (CONVERSATIONS_PATH, conversation_table, load_conversations,
                                        run_conversations, summarise_conversations)

        conv_path = conversations or CONVERSATIONS_PATH
        cases = load_conversations(conv_path)
        conv_records = run_conversations(assistant.conversation, cases, used_mode, k)
        conv_summary = summarise_conversations(conv_records)
        folder = paths["report.md"].parent
        (folder / "conversations.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                            for r in conv_records))
        (folder / "conversations_summary.json").write_text(json.dumps(conv_summary, indent=1))
        typer.echo(f"\nConversations ({conv_path}, {conv_summary['conversations']} chats):")
        typer.echo(conversation_table(conv_summary))
        measured = {"conv_cites_gold": conv_summary["all"]["cites_gold"], "conv_facts": conv_summary["all"]["facts"],
                    "conv_follow_up_right": conv_summary["follow_up"]["right"],
                    "conv_abstain": conv_summary["all"]["must_abstain_abstained"],
                    "lead": conv_summary["all"]["lead_ok_number_definition"]}
        for key, minimum in (("conv_cites_gold", min_conv_cites_gold), ("conv_facts", min_conv_facts),
                             ("conv_follow_up_right", min_conv_follow_up_right), ("conv_abstain", min_conv_abstain),
                             ("lead", min_lead)):
            if minimum is not None and (measured[key] is None or measured[key] < minimum):
                conv_failures.append(f"{key}: {measured[key]} is below the minimum {minimum:g}")
        for key, maximum, value in (("conv_wrong_paper", max_conv_wrong_paper, conv_summary["all"]["wrong_paper"]),
                                    ("conv_false_abstain", max_conv_false_abstain,
                                     conv_summary["all"]["answerable_abstained"])):
            if maximum is not None and (value is None or value > maximum):
                conv_failures.append(f"{key}: {value} is above the maximum {maximum:g}")

    failures = conv_failures + check_gates(summary, {
        "hit@1": min_hit1, "hit@5": min_hit5, "mrr": min_mrr, "ndcg@5": min_ndcg5, "recall@5": min_recall5,
        "citation_recall": min_citation_recall, "citation_precision": min_citation_precision,
        "cites_gold": min_cites_gold, "faithfulness": min_faithfulness, "correctness": min_correctness,
        "abstention": min_abstention, "abstain_on_unanswerable": min_abstain_unanswerable,
        "judge_agreement": min_judge_agreement,
    }, max_p95_ms)
    for line in failures:
        typer.echo(f"gate failed: {line}", err=True)
    if failures:
        raise typer.Exit(1)


def _qasper(path: Path, n_papers: int | None, fold: int | None, data: Path, out: Path | None,
            minimum: dict[str, float | None], maximum: dict[str, float | None]) -> None:
    """`papers eval --qasper FILE`: Answer-F1 and Evidence-F1 by the official definitions (eval/qasper.py)."""
    from eval import qasper
    from rag.errors import PapersError
    from rag.schema import record
    from rag.service import open_assistant
    from rag.settings import load_settings

    try:
        papers = qasper.load(path)
    except (OSError, ValueError, KeyError) as e:
        _fail(f"{path}: not a QASPER file ({e})")
        return
    if fold is not None:
        papers = [p for p in papers if qasper.fold_of(p.id) == fold]
    if n_papers is not None:
        papers = qasper.sample(papers, n_papers)
    try:
        settings = load_settings(data_dir=data)
        ids = qasper.ensure_ingested(settings, papers, data.parent / f"{data.name}-markdown",
                                     progress=sys.stderr.isatty())
        assistant = open_assistant(settings)
    except PapersError as e:
        _fail(str(e), e.exit_code)
        return

    def ask(question: str, paper_id: str) -> dict:
        return record(assistant.ask(question, paper_ids=[paper_id], mode="extractive"))

    records = qasper.run([p for p in papers if p.id in ids], ids, ask)
    summary = qasper.summarise(records)
    folder = _run_folder(out, "qasper")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qasper.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    (folder / "qasper_summary.json").write_text(json.dumps(summary, indent=1))
    typer.echo(qasper.table(summary))
    typer.echo(f"records: {folder / 'qasper.jsonl'}")
    failures = [f"qasper {k}: {summary[k]:.3f} is below the minimum {v:g}" for k, v in minimum.items()
                if v is not None and (summary[k] is None or summary[k] < v)]
    failures += [f"qasper {k}: {summary[k]:.3f} is above the maximum {v:g}" for k, v in maximum.items()
                 if v is not None and (summary[k] is None or summary[k] > v)]
    for line in failures:
        typer.echo(f"gate failed: {line}", err=True)
    if failures:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `papers eval` to the `papers` command (the entry point `papers_qa.commands: eval`)."""
    app.command("eval", help="Score answers to the hand-written questions; compare runs; gate CI.")(eval_command)
