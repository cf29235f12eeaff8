"""The web UI across browser sessions: what one browser adds to the index shows in every other one (header count,
scope picker, Papers table), after a reload and in a page that was already open. Own index and server (the upload
changes it). Screenshots go to test-artifacts/ui-sessions-*.png.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from rag.service import Assistant
from ui.app import CSS, build_app

from tests.conftest import CORPUS, free_port, make_settings, write_jsonl
from tests.ui.test_ui_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, WAIT

pytestmark = pytest.mark.slow

QUILL = {"title": "QuillNet: handwriting recognition for field notebooks", "authors": "Ada Byron", "year": "2026",
         "abstract": "We present QuillNet, a handwriting recogniser for naturalists' field notebooks. QuillNet "
                     "transcribes 18th-century entries with a character error rate of 4.2%."}
UNTITLED = {"abstract": "We introduce FernLoop, a recurrent planner for greenhouse irrigation. FernLoop cuts water use "
                        "by 31% across four seasons of trials."}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[str]:  # noqa: ANN001
    from rag.index.ingest import ingest

    settings = make_settings(tmp_path_factory.mktemp("ui-sessions"), corpus_paths=[CORPUS])
    assert ingest(settings, embedder=embedder, progress=False).total_papers == 38
    demo = build_app(settings, Assistant(settings))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, css=CSS)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, url: str):  # noqa: ANN001, ANN201
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    page = context.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#question textarea").wait_for(timeout=WAIT)
    return context, page


def header_count(page) -> int:  # noqa: ANN001
    m = re.search(r"(\d+) papers indexed", page.locator("body").inner_text())
    assert m, "no paper count in the header"
    return int(m.group(1))


def scope_options(page, typed: str) -> list[str]:  # noqa: ANN001
    inp = page.locator("#scope input").first
    inp.click()
    inp.fill(typed)
    with contextlib.suppress(PlaywrightTimeout):  # no option matches: the list stays empty
        page.get_by_role("option").filter(has_text=typed).first.wait_for(timeout=3_000)
    names = page.get_by_role("option").filter(has_text=typed).all_inner_texts()
    inp.fill("")
    page.keyboard.press("Escape")
    inp.blur()
    return names


def papers_tab_rows(page, query: str) -> str:  # noqa: ANN001
    page.get_by_role("tab", name="Papers").click()
    page.locator("#paper-search textarea, #paper-search input").first.fill(query)
    page.wait_for_timeout(800)
    return page.locator("#paper-table").inner_text()


def test_an_upload_shows_in_every_session(browser, url: str, tmp_path: Path) -> None:  # noqa: ANN001
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
        rows = papers_tab_rows(already_open, "greenhouse irrigation")  # the search covers the abstract
        assert "FernLoop" in rows and "QuillNet" not in rows
        assert header_count(already_open) == 40
        already_open.screenshot(path=str(ARTIFACTS / "ui-sessions-open-page.png"))

        uploader.reload(wait_until="domcontentloaded")
        uploader.locator("#question textarea").wait_for(timeout=WAIT)
        uploader.wait_for_function("document.body.innerText.includes('40 papers indexed')", timeout=WAIT)
        assert "QuillNet — QuillNet: handwriting" in " ".join(scope_options(uploader, "Quill"))
    finally:
        ctx_up.close()
        ctx_open.close()
