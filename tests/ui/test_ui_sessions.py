"""The web UI across browser sessions: what one browser adds to the index shows in every other one (header count,
scope picker, Papers table), after a reload and in a page that was already open. Own index and server (the upload
changes it). Screenshots go to test-artifacts/ui-sessions-*.png.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from rag.service import Assistant
from tests.conftest import CORPUS, make_settings, write_jsonl
from tests.ui.conftest import ARTIFACTS, served
from tests.ui.test_ui_browser import WAIT
from ui.app import build_app

pytestmark = pytest.mark.slow

QUILL = {"title": "QuillNet: handwriting recognition for field notebooks", "authors": "Ada Byron", "year": "2026",
         "abstract": "We present QuillNet, a handwriting recogniser for naturalists' field notebooks. QuillNet "
                     "transcribes 18th-century entries with a character error rate of 4.2%."}
UNTITLED = {"abstract": "We introduce FernLoop, a recurrent planner for greenhouse irrigation. FernLoop cuts water use "
                        "by 31% across four seasons of trials."}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[str]:
    from rag.index.ingest import ingest

    settings = make_settings(tmp_path_factory.mktemp("ui-sessions"), corpus_paths=[CORPUS])
    assert ingest(settings, embedder=embedder, progress=False).total_papers == 38
    with served(build_app(settings, Assistant(settings))) as address:
        yield address


def open_page(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    page = context.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#question textarea").wait_for(timeout=WAIT)
    return context, page


def header_count(page) -> int:
    m = re.search(r"(\d+) papers indexed", page.locator("body").inner_text())
    assert m, "no paper count in the header"
    return int(m.group(1))


def scope_options(page, typed: str, box: str = "#scope") -> list[str]:
    inp = page.locator(f"{box} input").first
    inp.click()
    inp.fill(typed)
    with contextlib.suppress(PlaywrightTimeout):  # no option matches: the list stays empty
        page.get_by_role("option").filter(has_text=typed).first.wait_for(timeout=3_000)
    names = page.get_by_role("option").filter(has_text=typed).all_inner_texts()
    inp.fill("")
    page.keyboard.press("Escape")
    inp.blur()
    return names


def papers_tab_rows(page, query: str, expect: str | None = None, gone: str | None = None) -> str:
    """The Papers table after searching `query`: once it shows `expect` (default: the query) and not `gone`, or
    after 10 s (a loaded machine redraws late; a row that should be gone is given that long to go)."""
    page.get_by_role("tab", name="Papers").click()
    table = page.locator("#paper-table")

    def wait_until(drawn: Callable[[str], bool]) -> None:
        deadline = time.monotonic() + 10
        while not drawn(table.inner_text()) and time.monotonic() < deadline:
            page.wait_for_timeout(250)

    wait_until(lambda text: (expect or query) in text)  # the tab's catch-up drawn before the search is typed
    page.locator("#paper-search textarea, #paper-search input").first.fill(query)
    wait_until(lambda text: (expect or query) in text and (gone is None or gone not in text))
    page.wait_for_timeout(500)  # a redraw still on its way (the row that should be gone)
    return table.inner_text()


def test_an_upload_shows_in_every_session(browser, url: str, tmp_path: Path) -> None:
    ctx_open, already_open = open_page(browser, url)  # open before the upload, left alone during it
    ctx_up, uploader = open_page(browser, url)
    try:
        assert header_count(already_open) == 38 and header_count(uploader) == 38
        assert scope_options(uploader, "QuillNet") == []

        uploader.get_by_role("tab", name="Papers").click()
        files = [write_jsonl(tmp_path / "quill.jsonl", [QUILL]), write_jsonl(tmp_path / "fern.jsonl", [UNTITLED])]
        uploader.locator("#upload input[type=file]").set_input_files([str(f) for f in files])
        uploader.locator("#upload-log").get_by_text("40 papers indexed").wait_for(timeout=180_000)
        uploader.wait_for_function("document.body.innerText.includes('40 papers indexed. Every answer')",
                                   timeout=WAIT)

        ctx_new, fresh = open_page(browser, url)  # a second browser, opened after the upload
        try:
            fresh.wait_for_function("document.body.innerText.includes('40 papers indexed')", timeout=WAIT)
            assert header_count(fresh) == 40
            options = scope_options(fresh, "QuillNet")
            assert options == ["QuillNet — QuillNet: handwriting recognition for field notebooks"], options
            fern = scope_options(fresh, "FernLoop")  # untitled: named by its first words, not its file
            assert fern == ["FernLoop — We introduce FernLoop, a recurrent planner for greenhouse …"], fern
            fresh.screenshot(path=str(ARTIFACTS / "ui-sessions-second-browser.png"))
            rows = papers_tab_rows(fresh, "QuillNet")
            assert "QuillNet: handwriting recognition" in rows and "Ada Byron" in rows
            fresh.screenshot(path=str(ARTIFACTS / "ui-sessions-second-browser-papers.png"))
        finally:
            ctx_new.close()

        # The page that was open all along catches up on its next interaction (here: opening the Papers tab).
        # the search covers the abstract
        rows = papers_tab_rows(already_open, "greenhouse irrigation", "FernLoop", gone="QuillNet")
        assert "FernLoop" in rows and "QuillNet" not in rows
        assert header_count(already_open) == 40
        already_open.screenshot(path=str(ARTIFACTS / "ui-sessions-open-page.png"))
        already_open.get_by_role("tab", name="Grid").click()  # the grid's paper picker, too
        grid_options = scope_options(already_open, "QuillNet", "#grid-papers")
        assert grid_options == ["QuillNet — QuillNet: handwriting recognition for field notebooks"], grid_options

        uploader.reload(wait_until="domcontentloaded")
        uploader.locator("#question textarea").wait_for(timeout=WAIT)
        uploader.wait_for_function("document.body.innerText.includes('40 papers indexed')", timeout=WAIT)
        assert "QuillNet — QuillNet: handwriting" in " ".join(scope_options(uploader, "Quill"))
    finally:
        ctx_up.close()
        ctx_open.close()


def test_a_paper_removed_in_one_session_is_gone_from_every_session(browser, url: str) -> None:
    ctx_a, remover = open_page(browser, url)
    ctx_b, other = open_page(browser, url)
    try:
        count = header_count(remover)
        rows = papers_tab_rows(remover, "RecMem")
        assert "RecMem" in rows
        remover.locator("#paper-table").get_by_text("RecMem").last.click()  # the first is the table's hidden copy
        button = remover.locator("#remove-paper")
        button.wait_for(timeout=WAIT)
        assert "RecMem" in button.inner_text()
        button.click()
        remover.locator("#upload-log").get_by_text("1 removed").wait_for(timeout=180_000)
        assert "papers remove --undo" in remover.locator("#upload-log").inner_text()
        remover.wait_for_function(f"document.body.innerText.includes('{count - 1} papers indexed. Every answer')",
                                  timeout=WAIT)
        assert "RecMem" not in papers_tab_rows(remover, "RecMem")
        remover.screenshot(path=str(ARTIFACTS / "ui-remove-paper.png"))
        assert "RecMem" not in papers_tab_rows(other, "RecMem")  # the other session redraws from the index
        assert header_count(other) == count - 1
        other.get_by_role("tab", name="Ask").click()
        assert scope_options(other, "RecMem") == []
    finally:
        ctx_a.close()
        ctx_b.close()
