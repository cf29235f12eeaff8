"""The UI's Grid tab: papers as rows, questions as columns (Assistant.grid), shown as an HTML table and
downloadable as CSV.

Built by `build_grid_tab(holder, choices)` inside the app's Blocks, so the tab needs nothing from ui/app.py but
the assistant holder and the paper choices; every text from a paper is escaped before it reaches the page.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from rag.answer.grid import COLUMNS, NOT_STATED, grid_csv
from rag.errors import PapersError
from rag.schema import Grid
from rag.service import AssistantHolder
from ui.escape import esc

log = logging.getLogger(__name__)


def grid_html(grid: Grid) -> str:
    """The grid as an HTML table: one row per paper, a quote (its lead span first) or "not stated" per cell."""
    if not grid.rows:
        return "<p>No papers to show.</p>"
    head = "".join(f"<th scope='col' title='{esc(q)}'>{esc(c)}</th>" for c, q in zip(grid.columns, grid.questions))
    rows = []
    stated = unsupported = 0
    for row in grid.rows:
        cells = []
        for c in row.cells:
            stated += not c.not_stated
            unsupported += not c.not_stated and not c.supported
            cls = "grid-none" if c.not_stated else "grid-cell" if c.supported else "grid-cell grid-unsupported"
            why = "The citation check did not find this quote in the paper: " + (c.reason or "unsupported")
            tip = "" if c.supported or c.not_stated else f" title='{esc(why)}'"
            where = f" data-sentence='{c.sentence}'" if c.sentence is not None else ""
            body = esc(NOT_STATED) if c.not_stated else (
                (f"<span class='grid-lead'>{esc(c.lead)}</span>" if c.lead else "") + f"“{esc(c.text)}”")
            cells.append(f"<td class='{cls}'{tip}{where}>{'⚠ ' if tip else ''}{body}</td>")
        rows.append(f"<tr><th scope='row' title='{esc(row.reference)}'>{esc(row.label)}"
                    f"<br><code>{esc(row.paper_id)}</code></th>{''.join(cells)}</tr>")
    total = len(grid.rows) * len(grid.columns)
    summary = (f"<p class='grid-summary'>{len(grid.rows)} papers × {len(grid.columns)} columns: {stated} of "
               f"{total} cells quote the paper, {total - stated} not stated"
               + (f", {unsupported} failed the citation check (⚠)" if unsupported else "") + ".</p>")
    return (f"{summary}<div class='grid-scroll'><table class='papers-grid' id='papers-grid-table'><thead><tr>"
            f"<th scope='col'>paper</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def parse_columns(text: str) -> list[str] | None:
    """One column per line (a default column's name or a question); None for the default columns."""
    columns = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return columns or None


def run_grid(holder: AssistantHolder, columns_text: str, paper_ids: list[str] | None, lookup: str
             ) -> tuple[str, str | None]:
    """The grid's HTML and a CSV file to download, or an error message in place of the table."""
    try:
        grid = holder.get().grid(parse_columns(columns_text), paper_ids or None, (lookup or "").strip() or None)
    except PapersError as e:
        return f"<p class='grid-error'>{esc(e)}</p>", None
    path = Path(tempfile.mkdtemp(prefix="papers-grid-")) / "papers-grid.csv"
    path.write_text(grid_csv(grid), encoding="utf-8")
    return grid_html(grid), str(path)


def build_grid_tab(holder: AssistantHolder, choices: Callable[[], list[tuple[str, str]]]) -> dict[str, Any]:
    """The Grid tab's components and events, inside the caller's gr.Blocks; returns the components by name."""
    with gr.Tab("Grid") as tab:
        columns = gr.Textbox(label="Columns (one per line: a default column or any question)", lines=5,
                             value="\n".join(COLUMNS), elem_id="grid-columns")
        with gr.Row():
            papers = gr.Dropdown(choices=choices(), multiselect=True, label="Papers (empty: all)", scale=3,
                                 elem_id="grid-papers")
            lookup = gr.Textbox(label="…or the papers matching a lookup", scale=2, elem_id="grid-lookup")
        build = gr.Button("Build grid", variant="primary", elem_id="grid-button")
        table = gr.HTML(elem_id="grid-table")
        download = gr.File(label="CSV", interactive=False, elem_id="grid-csv")

    def go(columns_text: str, paper_ids: list[str] | None, query: str) -> tuple[str, str | None]:
        return run_grid(holder, columns_text, paper_ids, query)

    build.click(go, [columns, papers, lookup], [table, download], api_visibility="undocumented")
    # Papers added since start-up (an upload in any session) are choosable when the tab is opened.
    tab.select(lambda: gr.update(choices=choices()), None, papers, api_visibility="undocumented")
    return {"columns": columns, "papers": papers, "lookup": lookup, "button": build, "table": table,
            "csv": download}
