"""The UI's Grid tab: the table it shows (escaped paper text), the CSV it offers, and its place in the app."""

from __future__ import annotations

import csv
import html

from rag.schema import Grid, GridCell, GridRow
from rag.service import AssistantHolder
from ui.app import build_app
from ui.grid import grid_html, parse_columns, run_grid


def test_grid_html_escapes_paper_text() -> None:
    cells = [GridCell("problem", "p1", "<script>alert(1)</script> ${x} [a](b)", False, lead="<b>", sentence=0),
             GridCell("method", "p1", "not stated", True)]
    out = grid_html(Grid(["problem", "method"], ["q1", "q2"], [GridRow("p1", "<i>L</i>", cells=cells)]))
    assert "<script>" not in out and "<i>" not in out and "<b>" not in out and "${" not in out and "](" not in out
    assert "&#60;script&#62;" in out and "grid-none" in out and out.count("<tr>") == 2
    assert html.unescape(out).count("<script>alert(1)</script> ${x} [a](b)") == 1  # escaped once, shown as written
    assert grid_html(Grid(["problem"], ["q"])) == "<p>No papers to show.</p>"
    assert "1 papers × 2 columns: 1 of 2 cells quote the paper, 1 not stated." in out and "grid-scroll" in out


def test_a_cell_that_failed_the_citation_check_is_marked_with_its_reason() -> None:
    cells = [GridCell("result", "p1", "Accuracy rose to 93%.", False, sentence=2, supported=False,
                      reason="<not in the paper>")]
    out = grid_html(Grid(["result"], ["q"], [GridRow("p1", "L", cells=cells)]))
    assert "grid-unsupported" in out and "⚠ " in out and "failed the citation check" in out
    assert "<not" not in out and "data-sentence='2'" in out
    assert "did not find this quote in the paper: <not in the paper>" in html.unescape(out)


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
