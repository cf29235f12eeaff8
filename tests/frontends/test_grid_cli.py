"""`papers grid`: Markdown, CSV and JSON tables of the papers grid, and its errors."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from rag.frontends.cli import app


@pytest.fixture()
def cli(corpus_settings, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PAPERS_DATA_DIR", str(corpus_settings.data_dir))
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, list(args))
    return run


def test_grid_json_matches_the_service(cli, assistant) -> None:
    ids = [e.paper_id for e in assistant.papers()][:3]
    r = cli("grid", "--format", "json", *[x for i in ids for x in ("--paper", i)], "--column", "problem",
            "--column", "What speedup is reported?")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["columns"] == ["problem", "What speedup is reported?"] and [x["paper_id"] for x in d["rows"]] == ids
    expected = assistant.grid(["problem", "What speedup is reported?"], ids)
    assert [[c["text"] for c in row["cells"]] for row in d["rows"]] == \
        [[c.text for c in row.cells] for row in expected.rows]


def test_grid_markdown_and_csv(cli, assistant) -> None:
    r = cli("grid")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "| paper | problem | method | data | result | limitation |" and len(lines) == 2 + 38
    r = cli("grid", "--format", "csv", "--lookup", "Dynamic Motion Slider", "--column", "method")
    assert r.exit_code == 0, r.output
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["paper_id", "label", "method"] and rows[1][1] == "DyMoS"


def test_grid_errors(cli) -> None:
    r = cli("grid", "--format", "html")
    assert r.exit_code == 2 and "unknown --format" in r.output
    r = cli("grid", "--paper", "no-such-paper")
    assert r.exit_code == 2 and "no-such-paper" in r.output
