"""The code's layers hold: imports point one way (import-linter's contracts in pyproject.toml), no module is in an
import cycle, and nothing outside eval/ reads eval/'s files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grimp

from tests.conftest import ROOT


def test_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and done.stdout.count("KEPT") >= 2


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan). grimp answers "is there a chain from A
    to B", not "which modules form cycles", so the components are found here."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(m: str) -> None:
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for n in sorted(graph.find_modules_directly_imported_by(m) & modules):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = []
            while True:
                n = stack.pop()
                on_stack.discard(n)
                component.append(n)
                if n == m:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("rag", "ui", "eval")
    modules = set(graph.modules)
    assert {"rag.service", "rag.answer.retrieve", "rag.index.store", "rag.corpus.records"} <= modules
    assert _cycles(graph, modules) == []


def test_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a graph with a two-module cycle is reported."""
    graph = grimp.ImportGraph()
    for m in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(m)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph, {"a.x", "a.y", "a.z"}) == [["a.x", "a.y"]]


def test_product_code_reads_no_eval_files() -> None:
    """Files owned by eval/ (questions, labels, runs) are never read by rag/ or ui/: fitted constants ship in
    rag/answer/fitted/."""
    eval_path = re.compile(r"""["'/]eval/|/\s*["']eval["']""")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for folder in ("rag", "ui") for p in sorted((ROOT / folder).rglob("*.py"))
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if eval_path.search(line) and not line.lstrip().startswith("#")]
    assert offenders == []
