"""The UI's Papers tab: upload files to index, search the indexed papers, see one paper's card, and remove it.

Uploads are copied under PAPERS_DATA_DIR/uploads and ingested like any corpus path, one file at a time, one
ingest per process at a time; a paper's text is escaped before it reaches the page.
"""

from __future__ import annotations

import filecmp
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from rag.errors import PapersError
from rag.index.store import CatalogEntry
from rag.settings import Settings
from ui.backend import UPLOAD_DIR, Backend, Listener, friendly
from ui.cards import paper_card, paper_meta
from ui.escape import esc

VERSION_WAIT_S = 3.0  # after an upload, how long to wait for the retriever to load the new index version
PAPER_HEADERS = ["label", "title", "authors", "year", "venue", "id"]
# Fixed widths: on a phone the table scrolls sideways instead of squeezing the title to a letter per line.
PAPER_COLUMN_WIDTHS: list[str | int] = ["130px", "260px", "170px", "60px", "120px", "120px"]


def upload_target(folder: Path, name: str, source: Path) -> Path:
    """Where an uploaded file is kept: its own name, unless an earlier upload of other content has it, then
    "name (2).ext", "name (3).ext", ... An upload never replaces another (whose papers would be removed); the
    same content uploaded again is found under the name it has."""
    stem, suffix = Path(name).stem, Path(name).suffix
    for n in range(1, 10_000):
        target = folder / (name if n == 1 else f"{stem} ({n}){suffix}")
        if not target.exists() or filecmp.cmp(target, source, shallow=False):  # compared in blocks, bounded
            return target
    raise PapersError(f"{name}: too many uploads with this name")


def copy_uploads(files: list[str], dest: Path) -> tuple[list[Path], list[str]]:
    """Copy the dropped files into the upload folder; returns the files to ingest and what to tell about the
    others (hidden or unnamed: skipped; uploaded before: ingested again from the copy kept, which changes
    nothing)."""
    lines: list[str] = []
    copied: list[Path] = []
    for f in files:
        name = Path(str(f)).name
        if not name or name.startswith("."):
            lines.append(f"skipped: {name or '(no name)'}: hidden or unnamed file")
            continue
        target = upload_target(dest, name, Path(str(f)))
        if target.exists():  # the same file uploaded before: ingesting it again changes nothing
            lines.append(f"{name}: already uploaded as {target.name}")
        else:
            shutil.copyfile(str(f), target)
        copied.append(target)
    return copied, lines


def search_papers(entries: list[CatalogEntry], query: str) -> list[CatalogEntry]:
    """The papers whose label, title, authors, year, venue, id or abstract hold every word of the query."""
    words = (query or "").casefold().split()
    if not words:
        return entries
    out = []
    for e in entries:
        meta = paper_meta(e)
        hay = " ".join([e.label, e.paper_id, *meta.values(), e.text]).casefold()
        if all(w in hay for w in words):
            out.append(e)
    return out


def paper_rows(entries: list[CatalogEntry]) -> list[list[Any]]:
    return [[e.label, paper_meta(e)["title"], paper_meta(e)["authors"], paper_meta(e)["year"],
             paper_meta(e)["venue"], e.paper_id] for e in entries]


def ingest_lines(report: Any) -> list[str]:
    """The same per-file messages and summary as `papers ingest`."""
    lines = [f"skipped: {x}" for x in report.problems] + [f"note: {x}" for x in report.warnings + report.duplicates]
    lines.append(f"{report.papers_seen} papers read; {len(report.added)} added, {len(report.reembedded)} "
                 f"re-embedded, {len(report.relocated)} moved, {len(report.removed)} removed, "
                 f"{report.unchanged} unchanged; {report.chunks_embedded} chunks embedded; "
                 f"{report.total_papers} papers indexed ({report.seconds:.1f} s)")
    return lines


def report_html(lines: list[str]) -> str:
    """An upload's or removal's messages, one line each (file names come from users: escaped)."""
    return "<div class='upload-report'>" + "".join(f"<div>{esc(x)}</div>" for x in lines) + "</div>"


@dataclass
class PapersTab:
    """The Papers tab's components."""

    upload_box: gr.File
    upload_log: gr.HTML
    paper_query: gr.Textbox
    table: gr.Dataframe
    paper_view: gr.HTML
    shown_paper: gr.State
    remove_btn: gr.Button


def build_papers_tab(papers: list[CatalogEntry]) -> PapersTab:
    """The tab's layout, inside the caller's gr.Tabs, the table showing `papers`; the events are attached by
    `wire_papers` (and, for what redraws the table, by the app)."""
    with gr.Tab("Papers"):
        upload_box = gr.File(label="Add papers: drop files here (JSONL, JSON, text, BibTeX, CSL-JSON, RIS, "
                             "PDF)", file_count="multiple", type="filepath", elem_id="upload")
        upload_log = gr.HTML(elem_id="upload-log", js_on_load=None)
        paper_query = gr.Textbox(label="Search papers", placeholder="Words from a title, author or abstract",
                                 elem_id="paper-search", max_lines=1)
        table = gr.Dataframe(paper_rows(papers), headers=PAPER_HEADERS, interactive=False, wrap=True,
                             column_widths=PAPER_COLUMN_WIDTHS, elem_id="paper-table")
        paper_view = gr.HTML(elem_id="paper-view", js_on_load=None)
        shown_paper = gr.State("")  # the id of the paper whose card is shown
        remove_btn = gr.Button("Remove this paper from the index", variant="stop", visible=False,
                               elem_id="remove-paper")
    return PapersTab(upload_box=upload_box, upload_log=upload_log, paper_query=paper_query, table=table,
                     paper_view=paper_view, shown_paper=shown_paper, remove_btn=remove_btn)


class Shelf:
    """The Papers tab's handlers (bind `filter_papers` to a name once if two events share it: Gradio groups events
    for their concurrency limit by the identity of the function)."""

    def __init__(self, settings: Settings, backend: Backend) -> None:
        self.settings = settings
        self.backend = backend

    def filter_papers(self, query: str) -> Any:
        return gr.update(value=paper_rows(search_papers(self.backend.papers(), query)))

    def show_paper(self, evt: gr.SelectData) -> tuple[Any, ...]:
        try:
            pid = str(evt.row_value[-1])
            e = self.backend.entries([pid])[pid]
        except Exception as err:
            return f"<p>{esc(friendly(err))}</p>", "", gr.update(visible=False)
        return (paper_card(e, self.backend.roots), pid,
                gr.update(visible=True, value=f"Remove {e.label} from the index"))

    def remove_paper(self, pid: str) -> tuple[Any, ...]:
        """`papers remove` for the paper shown: the files are left as they are, later ingests keep it out."""
        if not pid:
            return gr.skip(), gr.skip(), "", gr.update(visible=False)
        from rag.index.ingest import remove

        with self.backend.ingest_lock:
            before = self.backend.catalog().version
            try:
                report = remove(self.settings, [pid], progress=False)
            except PapersError as e:
                return (f"<div class='upload-report'><div>error: {esc(e)}</div></div>", gr.skip(), "",
                        gr.update(visible=False))
            if report.removed:  # the retriever loads the new version
                self._await_new_version(before)
        lines = ingest_lines(report) + [f"`papers remove --undo {pid}` brings it back."]
        return report_html(lines), "", "", gr.update(visible=False)

    def upload(self, files: list[str] | None, progress: gr.Progress = gr.Progress()) -> Any:
        """Copy the dropped files under the data dir and ingest them one by one, so the one progress bar moves
        a step per file; new papers are answerable at once (the retriever follows the store version)."""
        if not files:
            return gr.skip()
        dest = Path(self.settings.data_dir) / UPLOAD_DIR
        with self.backend.ingest_lock:
            progress(0.0, desc="Copying files")
            dest.mkdir(parents=True, exist_ok=True)
            copied, lines = copy_uploads(files, dest)
            before = self.backend.catalog().version
            changed = self._ingest_each(copied, lines, progress)
            progress(1.0, desc="Loading the new index version")
            if changed:  # wait for the retriever to load the new version (it checks every few seconds)
                self._await_new_version(before)
        return report_html(lines)

    def _ingest_each(self, copied: list[Path], lines: list[str], progress: gr.Progress) -> bool:
        """Ingest the files one at a time, the progress bar a step per file, each file's messages added to
        `lines`; whether the index changed."""
        from rag.index.ingest import ingest

        changed = False
        for i, path in enumerate(copied):
            progress(i / max(1, len(copied)), desc=f"File {i + 1} of {len(copied)}: reading and embedding "
                                                    f"{path.name}")
            try:
                report = ingest(self.settings, [path], progress=False)
            except PapersError as e:
                lines.append(f"error: {path.name}: {e}")
                continue
            told = ingest_lines(report)
            lines += told[:-1] + [f"{path.name}: {told[-1]}"]
            changed = changed or bool(report.added or report.reembedded or report.relocated or report.removed)
        return changed

    def _await_new_version(self, before: str) -> None:
        """Wait (at most VERSION_WAIT_S) for the retriever to load an index version other than `before`."""
        deadline = time.monotonic() + VERSION_WAIT_S
        while self.backend.catalog().version == before and time.monotonic() < deadline:
            time.sleep(0.2)


def wire_papers(tab: PapersTab, shelf: Shelf, synced: Listener) -> None:
    """A click in the table shows that paper's card; removing it or uploading files redraws what depends on the
    index (`synced`)."""
    tab.table.select(shelf.show_paper, None, [tab.paper_view, tab.shown_paper, tab.remove_btn],
                     api_visibility="undocumented")
    tab.remove_btn.click(shelf.remove_paper, tab.shown_paper, [tab.upload_log, tab.paper_view, tab.shown_paper,
                                                               tab.remove_btn],
                         api_visibility="undocumented").then(**synced)
    tab.upload_box.upload(shelf.upload, tab.upload_box, tab.upload_log, api_visibility="undocumented").then(**synced)
