"""The UI's Grid tab: the table it shows (escaped paper text), the CSV it offers, and its place in the app."""

from __future__ import annotations

import csv

from rag.schema import Grid, GridCell, GridRow
from rag.service import AssistantHolder
from ui.app import build_app
from ui.grid import grid_html, parse_columns, run_grid


def test_grid_html_escapes_paper_text() -> None:
    cells = [GridCell("problem", "p1", "<script>alert(1)</script> ${x} [a](b)", False, lead="<b>", sentence=0),
             GridCell("method", "p1", "not stated", True)]
    out = grid_html(Grid(["problem", "method"], ["q1", "q2"], [GridRow("p1", "<i>L</i>", cells=cells)]))
    assert "<script>" not in out and "<i>" not in out and "<b>" not in out and "${" not in out and "](" not in out
    assert "&lt;script&gt;" in out and "grid-none" in out and out.count("<tr>") == 2
    assert grid_html(Grid(["problem"], ["q"])) == "<p>No papers to show.</p>"


def test_parse_columns() -> None:
    assert parse_columns("  \n") is None
    assert parse_columns("problem\n How many tasks? \n") == ["problem", "How many tasks?"]


def test_run_grid_with_the_assistant(corpus_settings, assistant) -> None:  # noqa: ANN001
    holder = AssistantHolder(corpus_settings, assistant)
    ids = [e.paper_id for e in assistant.papers()][:2]
    page, path = run_grid(holder, "problem\nresult", ids, "")
    assert page.count("<tr>") == 3 and path
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["paper_id", "label", "problem", "result"] and [r[0] for r in rows[1:]] == ids
    page, path = run_grid(holder, "", ["no-such-paper"], "")
    assert "grid-error" in page and "no-such-paper" in page and path is None


def test_the_app_has_a_grid_tab(corpus_settings, assistant) -> None:  # noqa: ANN001
    demo = build_app(corpus_settings, assistant)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert {"grid-columns", "grid-button", "grid-table", "grid-csv"} <= ids
