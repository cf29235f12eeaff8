"""Every `python` and `bash` block in the README, docs/ and benchmarks/README.md runs as printed.

A block is run unless the line before it is `<!-- not run: reason -->`; blocks with another info string
(`console`, `json`, `text`) are shown, not run, and a block without an info string is refused, so a new block is
run by default. Each block runs in a fresh working directory against its own copy of the session's index of
`corpus/` (`PAPERS_DATA_DIR`), with `papers` and `python` on PATH as in the activated venv. A block that talks to
a server reads its port from the setting that server reads (`PAPERS_SERVE_PORT`, `PAPERS_MCP_PORT`,
`PAPERS_UI_PORT`), and the test starts that server on a free port; a block that uses an LLM on 127.0.0.1:8080
gets the test model (SmolLM2 on llama.cpp) there. Shown outputs of `$ papers ...` lines in `console` blocks
are compared with what the command prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import CORPUS, ROOT, LlamaServer, free_port
from .frontends.helpers import start, stop

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
RUN = {"python": "python", "bash": "bash", "sh": "bash"}
SHOWN = {"console", "json", "text"}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
LLM_URL = "127.0.0.1:8080"
SERVE_KEY = "change-me"  # the key the `papers serve` examples start the server with


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, with the `not run` reason of the comment just before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start_line, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        assert j < len(lines), f"{page}:{i + 1}: unclosed code block"
        before = next((lines[k] for k in range(start_line - 1, -1, -1) if lines[k].strip()), "")
        reason = NOT_RUN.search(before)
        found.append(Block(page, start_line + 1, lang, "\n".join(lines[i + 1:j]) + "\n",
                           reason.group(1) if reason else None))
        i = j + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]
RUNNABLE = [b for b in ALL if b.lang in RUN and b.not_run is None]


def test_every_block_says_whether_it_runs() -> None:
    """An info string on every block; a reason on every `not run`; a `not run` only before a runnable kind."""
    unlabeled = [b.id for b in ALL if not b.lang]
    assert not unlabeled, f"blocks without an info string (python, bash, console, json, text): {unlabeled}"
    unknown = [b.id for b in ALL if b.lang not in RUN and b.lang not in SHOWN]
    assert not unknown, unknown
    assert all(b.not_run for b in ALL if b.not_run is not None)
    assert not [b.id for b in ALL if b.not_run is not None and b.lang not in RUN]
    assert len(RUNNABLE) >= 10 and {b.page.name for b in RUNNABLE} >= {"README.md", "usage.md", "integrations.md"}


# --- running the blocks --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`papers` and `python` as the activated venv has them, running this checkout's code."""
    bin_dir = tmp_path_factory.mktemp("bin")
    for name, cmd in (("papers", f"{shlex.quote(sys.executable)} -m rag.frontends.cli"),
                      ("python", shlex.quote(sys.executable))):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec {cmd} "$@"\n')
        script.chmod(0o755)
    return bin_dir


@dataclass
class Workspace:
    cwd: Path
    env: dict[str, str]
    logs: Path


@pytest.fixture()
def workspace(corpus_settings, shims: Path, tmp_path: Path) -> Workspace:  # noqa: ANN001
    """A fresh working directory and a private copy of the corpus index."""
    data = tmp_path / "data"
    shutil.copytree(corpus_settings.data_dir, data, ignore=shutil.ignore_patterns(".store.lock", ".ingest.lock"))
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = dict(os.environ, PATH=f"{shims}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONPATH=str(ROOT),
               PAPERS_DATA_DIR=str(data), PAPERS_CORPUS_PATHS=json.dumps([str(CORPUS)]),
               PAPERS_ENV_FILE=os.devnull, HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    return Workspace(cwd, env, tmp_path)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def servers_for(block: Block, ws: Workspace) -> Iterator[None]:
    """Start the servers the block talks to, each on a free port given to the block through its setting."""
    papers = [sys.executable, "-m", "rag.frontends.cli"]
    wanted = [("PAPERS_SERVE_PORT", ["serve"], "/v1/models", {"PAPERS_SERVE_API_KEY": SERVE_KEY}),
              ("PAPERS_MCP_PORT", ["mcp", "--http"], "/mcp", {}),
              ("PAPERS_UI_PORT", ["ui"], "/", {})]
    with ExitStack() as stack:
        for setting, args, path, extra in wanted:
            if setting not in block.code:
                continue
            port = free_port()
            ws.env[setting] = str(port)
            env = dict(ws.env, **extra)
            proc = start([*papers, *args], env, f"http://127.0.0.1:{port}{path}", ws.logs / f"{args[0]}.log")
            stack.callback(stop, proc)
        if LLM_URL in block.code:
            if not _port_free(8080):
                pytest.skip("the block uses an LLM on 127.0.0.1:8080 and that port is taken on this machine")
            llm = LlamaServer(ws.logs)
            llm.port = 8080
            llm.start()
            stack.callback(llm.stop)
        yield


def run_block(block: Block, ws: Workspace) -> subprocess.CompletedProcess:
    script = ws.cwd / ("snippet.py" if RUN[block.lang] == "python" else "snippet.sh")
    script.write_text(block.code, encoding="utf-8")
    cmd = [sys.executable, script.name] if RUN[block.lang] == "python" else ["bash", "-eo", "pipefail", script.name]
    return subprocess.run(cmd, cwd=ws.cwd, env=ws.env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs_as_printed(block: Block, workspace: Workspace) -> None:
    with servers_for(block, workspace):
        out = run_block(block, workspace)
    assert out.returncode == 0, f"{block.id} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr[-3000:]
    assert out.stdout.strip(), f"{block.id} printed nothing"


# --- shown outputs ---------------------------------------------------------------------------------------------

def shown_commands(block: Block) -> list[tuple[str, str]]:
    """(`$ papers ...` command, the output printed under it) pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif pairs:
            pairs[-1][1].append(line)
    return [(cmd, "\n".join(lines).strip()) for cmd, lines in pairs if cmd.startswith("papers ") and lines]


def _timeless(text: str) -> str:
    """The output without its measured times (`(extractive · 41 ms)`), which differ on every run."""
    return re.sub(r"\d+(\.\d+)? ms\b", "N ms", text)


SHOWN_OUTPUTS = [(b, cmd, text) for b in ALL if b.lang == "console" for cmd, text in shown_commands(b)]


@pytest.mark.slow
@pytest.mark.parametrize(("block", "command", "shown"), SHOWN_OUTPUTS,
                         ids=[f"{b.id}:{cmd[:40]}" for b, cmd, _ in SHOWN_OUTPUTS])
def test_shown_output_is_what_the_command_prints(block: Block, command: str, shown: str,
                                                 workspace: Workspace) -> None:
    # The seed corpus's sources are shown as `corpus/...`: run from the checkout, as a reader would.
    out = subprocess.run(["bash", "-c", command], cwd=ROOT, env=workspace.env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert _timeless(out.stdout.strip()) == _timeless(shown)
