"""`papers`: ingest, ask, cite, list, chat, ui and eval from the terminal.

Heavy libraries (torch, chromadb, llama-index, gradio) are imported inside the commands that need them, so
`papers --help` and argument errors are instant.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

if TYPE_CHECKING:
    from rag.qa import Assistant
    from rag.schema import Answer
    from rag.settings import Settings

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Ask questions about paper abstracts and get answers that cite the papers.")


def _fail(message: str, code: int = 1) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _settings(**overrides: object) -> Settings:
    from rag.settings import SettingsError, load_settings

    try:
        return load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except SettingsError as e:
        _fail(str(e), 2)
        raise  # unreachable


def _assistant(settings: Settings) -> Assistant:
    from rag.llm import LLMConfigError
    from rag.qa import Assistant
    from rag.store import StoreError

    try:
        return Assistant(settings)
    except LLMConfigError as e:
        _fail(f"configuration: {e}", 2)
        raise
    except StoreError as e:
        _fail(str(e))
        raise


def _print_answer(answer: Answer, body: bool = True) -> None:
    if body:
        typer.echo(answer.answer)
    if answer.rewritten:
        typer.echo(f"(searched for: {answer.rewritten})")
    if answer.citations:
        typer.echo("\nSources:")
        for c in answer.citations:
            typer.echo(f"[{c.n}] {c.label} — id {c.paper_id} — {c.source}#{c.position}")
            typer.echo(f"    “{c.quote}”")
    for u in answer.unsupported:
        typer.echo(f"⚠ unsupported: {u['sentence']} ({u['reason']})")
    if answer.removed_citations:
        typer.echo(f"\n(removed citations to sources that were not given: {answer.removed_citations})")
    if answer.notice:
        typer.echo(f"\nnote: {answer.notice}")
    total = answer.timings_ms.get("total_ms", 0.0)
    typer.echo(f"\n({answer.mode} · {total:.0f} ms)")


def _print_checked(answer: Answer) -> None:
    """After a streamed answer: the checked version when the citation check changed it, then the sources."""
    if answer.raw_answer is not None and answer.answer.strip() != answer.raw_answer.strip():
        typer.echo("\nAfter the citation check:\n" + answer.answer)
    _print_answer(answer, body=False)


@app.command()
def ingest(
    paths: Optional[list[Path]] = typer.Argument(None, help="Files or folders (default: PAPERS_CORPUS_PATHS)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Start a new index (the old local store is kept aside)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Add, update and remove papers so the index matches the files."""
    from rag.embed import EmbeddingModelError
    from rag.ingest import ingest as run_ingest
    from rag.store import StoreError

    settings = _settings()
    try:
        report = run_ingest(settings, paths or None, rebuild=rebuild)
    except (StoreError, EmbeddingModelError) as e:
        _fail(str(e))
        return
    for line in report.problems:
        typer.echo(f"skipped: {line}", err=True)
    for line in report.warnings + report.duplicates:
        typer.echo(f"note: {line}", err=True)
    if json_out:
        d = {k: v for k, v in report.__dict__.items()}
        typer.echo(json.dumps(d, default=str))
    else:
        typer.echo(f"{report.papers_seen} papers read; {len(report.added)} added, {len(report.reembedded)} "
                   f"re-embedded, {len(report.relocated)} moved, {len(report.removed)} removed, "
                   f"{report.unchanged} unchanged; {report.chunks_embedded} chunks embedded; "
                   f"{report.total_papers} papers indexed ({report.seconds:.1f} s)")
        if report.moved_aside:
            typer.echo(f"the previous store was moved to {report.moved_aside}")
    if report.problems and not report.papers_seen:
        raise typer.Exit(1)


def _stream_to_terminal(events) -> Answer:  # noqa: ANN001 - iterator of StreamEvent
    """Print tokens as they arrive; on a mid-answer LLM failure, start the fallback answer on a new line."""
    answer = None
    for event in events:
        if event.kind == "token":
            typer.echo(event.text, nl=False)
        elif event.kind == "reset":
            typer.echo("\n[the LLM failed mid-answer; falling back]")
        elif event.kind == "final":
            answer = event.answer
    typer.echo("")
    assert answer is not None
    return answer


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question, or - to read one question per line from stdin."),
    k: Optional[int] = typer.Option(None, "--k", min=1, max=50, help="Papers to retrieve (default PAPERS_TOP_K)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object per answer."),
    stream: bool = typer.Option(False, "--stream", help="Print the answer as it is generated."),
    mode: Optional[str] = typer.Option(None, "--mode", help="extractive, llm or auto (default PAPERS_ANSWER_MODE)."),
    paper: Optional[list[str]] = typer.Option(None, "--paper", help="Restrict to these paper ids (repeatable)."),
) -> None:
    """Answer a question from the indexed abstracts, citing the papers."""
    from rag.qa import QuestionError

    settings = _settings()
    assistant = _assistant(settings)
    questions = [line for line in sys.stdin.read().splitlines() if line.strip()] if question == "-" else [question]
    failed = False
    for q in questions:
        try:
            if stream and not json_out:
                answer = _stream_to_terminal(assistant.stream(q, k=k, paper_ids=paper, mode=mode))
                _print_checked(answer)
                continue
            answer = assistant.ask(q, k=k, paper_ids=paper, mode=mode)
        except QuestionError as e:
            failed = True
            if json_out:
                typer.echo(json.dumps({"question": q, "error": str(e)}, ensure_ascii=False))
            else:
                typer.echo(f"error: {e}", err=True)
            continue
        if json_out:
            typer.echo(json.dumps(answer.to_dict(), ensure_ascii=False))
        else:
            if len(questions) > 1:
                typer.echo(f"Q: {q}")
            _print_answer(answer)
            if len(questions) > 1:
                typer.echo("")
    if failed and len(questions) == 1:
        raise typer.Exit(2)


@app.command()
def cite(
    query: str = typer.Argument(..., help="A method name, claim or topic, or - to read one query per line from stdin."),
    k: Optional[int] = typer.Option(None, "--k", min=1, max=50, help="How many papers to list."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object per query."),
) -> None:
    """Citation lookup: which papers match a method name, claim or topic, with how strongly each matches."""
    from rag.qa import QuestionError

    assistant = _assistant(_settings())
    queries = [line for line in sys.stdin.read().splitlines() if line.strip()] if query == "-" else [query]
    failed = False
    for q in queries:
        try:
            hits = assistant.cite(q, k=k)
        except QuestionError as e:
            failed = True
            if json_out:
                typer.echo(json.dumps({"query": q, "error": str(e)}, ensure_ascii=False))
            else:
                typer.echo(f"error: {e}", err=True)
            continue
        if json_out:
            typer.echo(json.dumps({"query": q, "results": [h.__dict__ for h in hits]}, ensure_ascii=False))
            continue
        if len(queries) > 1:
            typer.echo(f"Q: {q}")
        for i, h in enumerate(hits, 1):
            typer.echo(f"{i}. {h.label} — id {h.paper_id} — {h.source}#{h.position} (score {h.score:.3f}, "
                       f"{h.strength} match)")
            typer.echo(f"   “{h.sentence}”")
            typer.echo(f"   ref: {h.reference}")
        if len(queries) > 1:
            typer.echo("")
    if failed and len(queries) == 1:
        raise typer.Exit(2)


@app.command("list")
def list_papers(json_out: bool = typer.Option(False, "--json", help="Print JSON Lines, one paper per line.")) -> None:
    """Every indexed paper with id, label, source, position and abstract."""
    assistant = _assistant(_settings())
    for e in assistant.papers():
        if json_out:
            typer.echo(json.dumps({"paper_id": e.paper_id, "label": e.label, "source": e.source,
                                   "position": e.position, "title": e.title, "abstract": e.text},
                                  ensure_ascii=False))
        else:
            typer.echo(f"{e.paper_id}  {e.label:<32} {e.source}#{e.position}")
            typer.echo(f"    {e.text[:160]}{'…' if len(e.text) > 160 else ''}")


@app.command()
def chat(k: Optional[int] = typer.Option(None, "--k", min=1, max=50, help="Papers to retrieve."),
         mode: Optional[str] = typer.Option(None, "--mode", help="extractive, llm or auto.")) -> None:
    """Chat in the terminal; follow-up questions are understood (empty line or Ctrl-D to quit)."""
    from rag.chat import Conversation
    from rag.qa import QuestionError

    conversation = Conversation(_assistant(_settings()))
    typer.echo("Ask about the papers; follow-ups work (empty line to quit).")
    while True:
        try:
            q = input("\n> ")
        except (EOFError, KeyboardInterrupt):
            typer.echo("")
            break
        if not q.strip():
            break
        try:
            answer = _stream_to_terminal(conversation.stream(q, k=k, mode=mode))
            _print_checked(answer)
        except QuestionError as e:
            typer.echo(f"error: {e}")


@app.command()
def ui(host: Optional[str] = typer.Option(None, help="Interface to bind (default PAPERS_UI_HOST, 127.0.0.1)."),
       port: Optional[int] = typer.Option(None, help="Port (default PAPERS_UI_PORT, 7860).")) -> None:
    """Start the web UI: streaming cited chat, evidence panel, citation lookup, paper browser."""
    settings = _settings(ui_host=host, ui_port=port)
    from rag.llm import LLMConfigError, check_llm_settings

    try:
        check_llm_settings(settings)
    except LLMConfigError as e:
        _fail(f"configuration: {e}", 2)
    from ui.app import launch

    typer.echo(f"Paper Q&A UI on http://{settings.ui_host}:{settings.ui_port} (Ctrl-C to stop)")
    launch(settings)


def _register_eval() -> None:
    """`papers eval` lives in eval/cli.py (its module imports only typer, so start-up stays fast)."""
    from eval.cli import eval_command

    app.command("eval", help="Score answers to the hand-written questions; compare runs; gate CI.")(eval_command)


_register_eval()


def main() -> None:
    """Entry point: an unexpected failure is one line on stderr (PAPERS_DEBUG=1 shows the traceback)."""
    try:
        app()
    except Exception as e:  # the last line of defence: users see a message, not a stack trace
        if os.environ.get("PAPERS_DEBUG"):
            raise
        typer.echo(f"error: {type(e).__name__}: {e} (set PAPERS_DEBUG=1 for the traceback)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
