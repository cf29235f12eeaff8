"""`papers`: ingest, remove, ask, cite, grid, list, chat, ui, mcp, serve and eval from the terminal.

Heavy libraries (torch, chromadb, llama-index, gradio) and the modules that load them (the service, settings,
ingest, the servers) are imported inside the commands that need them, so `papers --help` and argument errors
are instant; only the error and record types are imported here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import typer

from rag.errors import PapersError, QuestionError
from rag.schema import record
from rag.text import inert_text

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from rag.index.ingest import IngestReport
    from rag.schema import Answer, StreamEvent
    from rag.service import Assistant
    from rag.settings import Settings

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Ask questions about paper abstracts and get answers that cite the papers.")


def _show_version(value: bool) -> None:
    if value:
        from rag import __version__

        typer.echo(f"papers {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Ask questions about paper abstracts and get answers that cite the papers."""


def terminal_safe(text: object) -> str:
    """Text from papers (and LLM replies) as the terminal may show it (rag.text.inert_text: escape sequences
    removed, control and bidi characters shown as U+FFFD). Only the output is cleaned: the stored text stays as
    it was read."""
    return inert_text(text)


def _echo(text: object = "", *, nl: bool = True, err: bool = False) -> None:
    typer.echo(terminal_safe(text), nl=nl, err=err)


def _json_line(obj: object) -> str:
    """A `--json` line: the data through `outgoing`, the serialiser every front end shares (escape sequences,
    control and bidi characters made inert in every string: json would print U+202E and C1 controls as is)."""
    from rag.frontends.common import outgoing

    return json.dumps(outgoing(obj), ensure_ascii=False, default=lambda o: inert_text(str(o)))


def _report_refused(key: str, text: str, error: Exception, json_out: bool) -> None:
    """One refused question or query of a batch: a JSON line (`{key: text, "error": ...}`) or an error line."""
    if json_out:
        typer.echo(_json_line({key: text, "error": str(error)}))
    else:
        _echo(f"error: {error}", err=True)


def _fail(message: str, code: int = 1) -> NoReturn:
    from rag.settings import redact

    typer.echo(f"error: {terminal_safe(redact(message))}", err=True)
    raise typer.Exit(code)


def _settings(**overrides: object) -> Settings:
    from rag.settings import load_settings

    try:
        return load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except PapersError as e:
        _fail(str(e), e.exit_code)


def _assistant(settings: Settings) -> Assistant:
    from rag.service import open_assistant

    try:
        return open_assistant(settings)
    except PapersError as e:
        _fail(str(e), e.exit_code)


def _print_answer(answer: Answer, body: bool = True) -> None:
    from rag.corpus.sections import place

    if body:
        _echo(answer.answer)
    if answer.rewritten:
        _echo(f"(searched for: {answer.rewritten})")
    if answer.citations:
        _echo("\nSources:")
        for c in answer.citations:
            where = place(c.page, getattr(c, "section", ""))
            page = f", {where}" if where else ""
            _echo(f"[{c.n}] {c.label} — id {c.paper_id} — {c.source}#{c.position}{page}")
            if c.title:
                _echo(f"    {c.reference}")
            _echo(f"    “{c.quote}”")
    for u in answer.unsupported:
        _echo(f"⚠ unsupported: {u['sentence']} ({u['reason']})")
    for check in answer.checks:
        if check.repaired:  # the check re-attributed the sentence: say so next to it
            _echo(f"↻ citation repaired {check.repaired}: {check.sentence}")
    if answer.removed_citations:
        _echo(f"\n(removed citations to sources that were not given: {answer.removed_citations})")
    if answer.notice:
        _echo(f"\nnote: {answer.notice}")
    total = answer.timings_ms.get("total_ms", 0.0)
    _echo(f"\n({answer.mode} · {total:.0f} ms)")


def _print_checked(answer: Answer) -> None:
    """After a streamed answer: the checked version when the citation check changed it, then the sources."""
    # (an extractive fallback was streamed after the reset: it is already on screen)
    if answer.raw_answer is not None and answer.mode == "llm" and answer.answer.strip() != answer.raw_answer.strip():
        _echo("\nAfter the citation check:\n" + answer.answer)
    _print_answer(answer, body=False)


@app.command()
def ingest(
    paths: list[Path] | None = typer.Argument(None, help="Files or folders (default: PAPERS_CORPUS_PATHS)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Start a new index (the old local store is kept aside)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    progress: bool | None = typer.Option(None, "--progress/--no-progress",
                                            help="Show the progress bar (default: when stderr is a terminal)."),
) -> None:
    """Add, update and remove papers so the index matches the files (Ctrl-C stops; run it again to resume)."""
    from rag.index.ingest import ingest as run_ingest

    _run_ingest(lambda settings: run_ingest(settings, paths or None, rebuild=rebuild, progress=progress), json_out)


@app.command()
def remove(
    paper_ids: list[str] = typer.Argument(..., help="Ids of the papers to take out (`papers list` shows them)."),
    undo: bool = typer.Option(False, "--undo", help="Bring papers removed earlier back."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Take papers out of the index; their files are left as they are, and later ingests keep them out."""
    from rag.index.ingest import remove as run_remove

    _run_ingest(lambda settings: run_remove(settings, paper_ids, undo=undo, progress=False), json_out)


def _run_ingest(run: Callable[[Settings], IngestReport], json_out: bool) -> None:
    """Run an ingest (or a removal, which is one) and print its report as `papers ingest` does."""
    settings = _settings()
    try:
        report = run(settings)
    except PapersError as e:
        _fail(str(e), e.exit_code)
    except KeyboardInterrupt:  # a second Ctrl-C, or one before embedding began: the store is still consistent
        typer.echo("interrupted; run `papers ingest` again to resume (papers already written are kept)", err=True)
        raise typer.Exit(130) from None
    for line in report.problems:
        _echo(f"skipped: {line}", err=True)
    for line in report.warnings + report.duplicates:
        _echo(f"note: {line}", err=True)
    if json_out:
        d = {k: v for k, v in report.__dict__.items()}
        typer.echo(_json_line(d))
    else:
        typer.echo(f"{report.papers_seen} papers read; {len(report.added)} added, {len(report.reembedded)} "
                   f"re-embedded, {len(report.relocated)} moved, {len(report.removed)} removed, "
                   f"{report.unchanged} unchanged; {report.chunks_embedded} chunks embedded; "
                   f"{report.total_papers} papers indexed ({report.seconds:.1f} s)")
        if report.moved_aside:
            typer.echo(f"the previous store was moved to {report.moved_aside}")
    if report.interrupted:
        typer.echo(f"interrupted: {report.not_embedded} papers not embedded yet; run `papers ingest` again "
                   "to resume", err=True)
        raise typer.Exit(130)
    if report.problems and not report.papers_seen:
        raise typer.Exit(1)


def _stream_to_terminal(events: Iterable[StreamEvent]) -> Answer:
    """Print tokens as they arrive; on a mid-answer LLM failure, say so and print the fallback answer after."""
    from rag.service import StreamView

    view = StreamView()
    for event in events:
        if text := view.feed(event):
            _echo(text, nl=False)
    typer.echo("")
    assert view.answer is not None
    return view.answer


@app.command()
def ask(
    question: str | None = typer.Argument(None, help="The question, or - to read one question per line from stdin."),
    k: int | None = typer.Option(None, "--k", min=1, max=50, help="Papers to retrieve (default PAPERS_TOP_K)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object per answer."),
    stream: bool = typer.Option(False, "--stream", help="Print the answer as it is generated."),
    mode: str | None = typer.Option(None, "--mode", help="extractive, llm or auto (default PAPERS_ANSWER_MODE)."),
    paper: list[str] | None = typer.Option(None, "--paper", help="Restrict to these paper ids (repeatable)."),
    conversation: Path | None = typer.Option(
        None, "--conversation", help="Ask a chat from a file: one turn per line (text), or JSON Lines of turns "
                                     "{\"q\", \"scope\"} or of conversations {\"id\", \"turns\": [...]}."),
) -> None:
    """Answer a question from the indexed abstracts, citing the papers."""

    if conversation is not None:
        return _ask_conversations(conversation, k, json_out, mode, paper)
    if question is None:
        _fail("give a question (or - to read questions from stdin, or --conversation FILE)", 2)
    settings = _settings()
    assistant = _assistant(settings)
    questions = [line for line in sys.stdin.read().splitlines() if line.strip()] if question == "-" else [question]
    failed = False
    for q in questions:
        chat = assistant.conversation()  # every question on its own: no earlier turns
        try:
            if stream and not json_out:
                answer = _stream_to_terminal(chat.stream(q, k=k, paper_ids=paper, mode=mode))
                _print_checked(answer)
                continue
            answer = chat.ask(q, k=k, paper_ids=paper, mode=mode)
        except QuestionError as e:
            failed = True
            if len(questions) == 1 and not json_out:
                _fail(str(e), e.exit_code)
            _report_refused("question", q, e, json_out)
            continue
        except PapersError as e:
            _fail(str(e), e.exit_code)
        if json_out:
            typer.echo(_json_line(record(answer)))
        else:
            if len(questions) > 1:
                _echo(f"Q: {q}")
            _print_answer(answer)
            if len(questions) > 1:
                typer.echo("")
    if failed and len(questions) == 1:
        raise typer.Exit(2)


class _Chat(NamedTuple):
    """One conversation of a file: its id and its turns, each a dict with "q" and optional "scope" (paper ids)."""

    cid: str
    turns: list[dict[str, Any]]


def _conversation_file(path: Path) -> list[_Chat]:
    """The conversations of a conversation file."""
    from rag.corpus.records import read_text

    try:
        text = read_text(path, 16 * 2**20)
    except Exception as e:
        _fail(f"{path}: {e}", 2)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].lstrip().startswith("{"):
        return [_Chat(path.stem, [{"q": line.strip()} for line in lines])]
    chats: list[_Chat] = []
    loose: list[dict[str, Any]] = []
    for n, line in enumerate(lines, 1):
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            _fail(f"{path}:{n}: invalid JSON ({e.msg} at column {e.colno})", 2)
        if not isinstance(d, dict):
            _fail(f"{path}:{n}: expected a JSON object (a turn with \"q\", or a conversation with \"turns\")", 2)
        if "turns" in d:
            turns = d["turns"]
            if not isinstance(turns, list) or not all(isinstance(x, dict) and isinstance(x.get("q"), str)
                                                      for x in turns):
                _fail(f"{path}:{n}: \"turns\" must be a list of objects with a \"q\" string", 2)
            chats.append(_Chat(str(d.get("id") or f"line{n}"), turns))
        elif isinstance(d.get("q") or d.get("question"), str):
            loose.append({"q": d.get("q") or d.get("question"), "scope": d.get("scope")})
        else:
            _fail(f"{path}:{n}: a turn needs a \"q\" string", 2)
    return chats + ([_Chat(path.stem, loose)] if loose else [])


def _ask_conversations(path: Path, k: int | None, json_out: bool, mode: str | None,
                       paper: list[str] | None) -> None:
    """`papers ask --conversation FILE`: every chat of the file, turn after turn, as the UI would ask it."""

    chats = _conversation_file(path)
    assistant = _assistant(_settings())
    failed = False
    for cid, turns in chats:
        chat = assistant.conversation()
        if not json_out:
            _echo(f"## {cid}")
        for i, turn in enumerate(turns, 1):
            scope = turn.get("scope") or paper or None
            try:
                answer = chat.ask(turn["q"], k=k, paper_ids=scope, mode=mode)
            except QuestionError as e:
                failed = True
                _report_refused("question", turn["q"], e, json_out)
                continue
            except PapersError as e:
                _fail(str(e), e.exit_code)
            if json_out:
                typer.echo(_json_line({"conversation": cid, "turn": i, **record(answer)}))
            else:
                _echo(f"\n> {turn['q']}")
                _print_answer(answer)
    if failed:
        raise typer.Exit(2)


@app.command()
def cite(
    query: str = typer.Argument(..., help="A method name, claim or topic, or - to read one query per line from stdin."),
    k: int | None = typer.Option(None, "--k", min=1, max=50, help="How many papers to list."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object per query."),
    fmt: str | None = typer.Option(None, "--format",
                                      help="Print the matching papers as references: bibtex, ris, csl-json or text."),
) -> None:
    """Citation lookup: which papers match a method name, claim or topic, with how strongly each matches."""

    if fmt is not None and fmt not in REFERENCE_FORMATS:
        _fail(f"unknown --format {fmt!r} (use {', '.join(REFERENCE_FORMATS)})", 2)
    assistant = _assistant(_settings())
    queries = [line for line in sys.stdin.read().splitlines() if line.strip()] if query == "-" else [query]
    failed = False
    for q in queries:
        try:
            hits = assistant.cite(q, k=k)
        except QuestionError as e:
            failed = True
            _report_refused("query", q, e, json_out)
            continue
        except PapersError as e:
            _fail(str(e), e.exit_code)
        if fmt is not None:
            _echo(_references(assistant, [h.paper_id for h in hits], fmt), nl=False)
            continue
        if json_out:
            typer.echo(_json_line({"query": q, "results": [record(h) for h in hits]}))
            continue
        if len(queries) > 1:
            _echo(f"Q: {q}")
        for i, h in enumerate(hits, 1):
            _echo(f"{i}. {h.label} — id {h.paper_id} — {h.source}#{h.position} ({h.strength} match)")
            _echo(f"   “{h.sentence}”")
            _echo(f"   ref: {h.reference}")
        if len(queries) > 1:
            _echo("")
    if failed and len(queries) == 1:
        raise typer.Exit(2)


GRID_FORMATS = ("markdown", "csv", "json")


@app.command()
def grid(
    paper: list[str] | None = typer.Option(None, "--paper", help="Rows: these paper ids (repeatable; default all)."),
    lookup: str | None = typer.Option(None, "--lookup", help="Rows: the papers matching this lookup query."),
    column: list[str] | None = typer.Option(
        None, "--column", help="A column: problem, method, data, result, limitation, or any question (repeatable; "
                               "default the five)."),
    fmt: str = typer.Option("markdown", "--format", help="markdown, csv or json."),
) -> None:
    """The papers grid: papers as rows, questions as columns, each cell a quoted sentence or "not stated"."""
    from rag.answer.grid import grid_csv, grid_markdown

    if fmt not in GRID_FORMATS:
        _fail(f"unknown --format {fmt!r} (use {', '.join(GRID_FORMATS)})", 2)
    assistant = _assistant(_settings())
    try:
        table = assistant.grid(column or None, paper or None, lookup)
    except QuestionError as e:
        _fail(str(e), 2)
    except PapersError as e:
        _fail(str(e), e.exit_code)
    if fmt == "json":
        typer.echo(_json_line(record(table)))
    elif fmt == "csv":
        _echo(grid_csv(table), nl=False)
    else:
        _echo(grid_markdown(table), nl=False)


REFERENCE_FORMATS = ("bibtex", "ris", "csl-json", "text")


def _references(assistant: Assistant, paper_ids: list[str], fmt: str) -> str:
    """Papers (in the given order) as BibTeX, RIS, CSL-JSON (Zotero's import format) or a plain reference list."""
    from rag.corpus.references import catalog_records, to_bibtex, to_csl_json, to_ris, to_text

    records = catalog_records(assistant.retriever.store, paper_ids)
    return {"bibtex": to_bibtex, "ris": to_ris, "csl-json": to_csl_json, "text": to_text}[fmt](records)


@app.command("list")
def list_papers(json_out: bool = typer.Option(False, "--json", help="Print JSON Lines, one paper per line."),
                fmt: str | None = typer.Option(
                    None, "--format", help="Print every paper as a reference: bibtex, ris, csl-json or text.")
                ) -> None:
    """Every indexed paper with id, label, title, authors, year, venue, link, source, position and abstract."""
    from rag.service import paper_record

    if fmt is not None and fmt not in REFERENCE_FORMATS:
        _fail(f"unknown --format {fmt!r} (use {', '.join(REFERENCE_FORMATS)})", 2)
    assistant = _assistant(_settings())
    try:
        papers = assistant.papers()
    except PapersError as e:
        _fail(str(e), e.exit_code)
    if fmt is not None:
        _echo(_references(assistant, [p.paper_id for p in papers], fmt), nl=False)
        return
    for entry in papers:
        r = paper_record(entry)
        if json_out:
            typer.echo(_json_line(record(r)))
        else:
            _echo(f"{inert_text(entry.paper_id, True)}  {inert_text(entry.label, True):<32} "
                  f"{inert_text(entry.source, True)}#{entry.position}")
            described = " · ".join(p for p in (entry.title, entry.authors,
                                               " ".join(x for x in (entry.venue, entry.year) if x),
                                               f"doi:{entry.doi}" if entry.doi else entry.url) if p)
            if described:
                _echo(f"    {described}")
            _echo(f"    {r.abstract[:160]}{'…' if len(r.abstract) > 160 else ''}")


@app.command()
def chat(k: int | None = typer.Option(None, "--k", min=1, max=50, help="Papers to retrieve."),
         mode: str | None = typer.Option(None, "--mode", help="extractive, llm or auto.")) -> None:
    """Chat in the terminal; follow-up questions are understood (empty line or Ctrl-D to quit)."""

    conversation = _assistant(_settings()).conversation()
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
            _echo(f"error: {e}")


@app.command()
def doctor(repair: bool = typer.Option(False, "--repair", help="Fix what needs no re-embedding.")) -> None:
    """Check that the store, its catalog and the local index agree; say how to fix each problem."""
    from rag.index.doctor import diagnose
    from rag.index.doctor import repair as run_repair

    settings = _settings()
    checkup = diagnose(settings)
    _echo(f"store: {checkup.summary}")
    if repair and any(f.repairable for f in checkup.findings):
        from rag.index.store import writer_lock

        try:
            with writer_lock(settings):  # repairs write: not under a running UI or ingest
                for line in run_repair(settings, checkup):
                    _echo(f"repaired: {line}")
        except PapersError as e:
            _fail(str(e), e.exit_code)
        checkup = diagnose(settings)
    for f in checkup.findings:
        _echo(f.line())
    if checkup.findings:
        raise typer.Exit(1)
    _echo("no problems found")


@app.command()
def ui(host: str | None = typer.Option(None, help="Interface to bind (default PAPERS_UI_HOST, 127.0.0.1)."),
       port: int | None = typer.Option(None, help="Port (default PAPERS_UI_PORT, 7860).")) -> None:
    """Start the web UI: streaming cited chat, evidence panel, citation lookup, paper browser."""
    settings = _settings(ui_host=host, ui_port=port)
    _check_llm(settings)
    _check_host("PAPERS_UI_HOST", settings.ui_host, settings.ui_port)
    from ui.app import launch

    typer.echo(f"Paper Q&A UI on http://{settings.ui_host}:{settings.ui_port} (Ctrl-C to stop)")
    launch(settings)


@app.command()
def mcp(http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of "
                                                        "stdio (host PAPERS_MCP_HOST, 127.0.0.1)."),
        port: int | None = typer.Option(None, help="Port with --http (default PAPERS_MCP_PORT, 8765).")) -> None:
    """MCP server (Claude Desktop, Cursor, ...): tools ask, cite, list_papers, get_paper; papers:// resources."""
    settings = _settings(mcp_port=port)
    _check_llm(settings)
    if http:
        _check_host("PAPERS_MCP_HOST", settings.mcp_host, settings.mcp_port)
    from rag.frontends.mcp_server import run

    if http:  # stdout is the protocol channel in stdio mode: print nothing there
        typer.echo(f"MCP server on http://{settings.mcp_host}:{settings.mcp_port}/mcp (Ctrl-C to stop)", err=True)
    run(settings, http=http)


@app.command()
def serve(host: str | None = typer.Option(None, help="Interface to bind (default PAPERS_SERVE_HOST, 127.0.0.1)."),
          port: int | None = typer.Option(None, help="Port (default PAPERS_SERVE_PORT, 8000).")) -> None:
    """OpenAI-compatible endpoint: POST /v1/chat/completions (streaming or not), GET /v1/models."""
    settings = _settings(serve_host=host, serve_port=port)
    _check_llm(settings)
    _check_host("PAPERS_SERVE_HOST", settings.serve_host, settings.serve_port)
    from rag.frontends.openai_api import run

    if not settings.serve_api_key and settings.serve_host not in ("127.0.0.1", "localhost", "::1"):
        typer.echo(f"warning: {settings.serve_host} is reachable from the network and PAPERS_SERVE_API_KEY is not "
                   "set: anyone who can connect can use this endpoint", err=True)
    auth = "Bearer token required" if settings.serve_api_key else "no auth (set PAPERS_SERVE_API_KEY to require one)"
    typer.echo(f"OpenAI-compatible API on http://{settings.serve_host}:{settings.serve_port}/v1 ({auth}; "
               "Ctrl-C to stop)", err=True)
    run(settings)


def _check_host(variable: str, host: str, port: int) -> None:
    from rag.settings import check_host

    try:
        check_host(variable, host, port)
    except PapersError as e:
        _fail(str(e), e.exit_code)


def _check_llm(settings: Settings) -> None:
    from rag.answer.llm import check_llm_settings

    try:
        check_llm_settings(settings)
    except PapersError as e:
        _fail(str(e), e.exit_code)


PLUGIN_GROUP = "papers_qa.commands"


def _register_plugins() -> None:
    """Commands other packages add to `papers`: each entry point of the group `papers_qa.commands` is a
    function given the typer app. The evaluation harness adds `papers eval` this way (eval/cli.py), so the
    product never imports it; a plugin that fails to load is reported, and the other commands still work."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGIN_GROUP):
        try:
            ep.load()(app)
        except Exception as e:  # a broken plugin must not take the whole CLI down
            typer.echo(terminal_safe(f"warning: command plugin {ep.name!r} not loaded: {e}"), err=True)


_register_plugins()


def main() -> None:
    """Entry point: an unexpected failure is one line on stderr (PAPERS_DEBUG=1 shows the traceback)."""

    try:
        app()
    except PapersError as e:  # raised past a command's own handling: the message and its exit code
        typer.echo(terminal_safe(f"error: {e}"), err=True)
        sys.exit(e.exit_code)
    except Exception as e:  # the last line of defence: users see a message, not a stack trace
        if os.environ.get("PAPERS_DEBUG"):
            raise
        from rag.settings import redact

        typer.echo(terminal_safe(redact(f"error: {type(e).__name__}: {e} (set PAPERS_DEBUG=1 for the traceback)")),
                   err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
