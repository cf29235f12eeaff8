"""The web UI with a real LLM (llama.cpp serving SmolLM2-135M) in headless Chromium: a model answer that the
citation check rejects (or that a fallback replaces) stays available as an expandable draft marked unsupported.

SmolLM2-135M never cites its sources, so its drafts are rejected: that is the case tested here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag.service import Assistant
from ui.app import CSS, build_app

from tests.conftest import free_port, llm_settings
from .test_ui_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, WAIT, ask

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llm_ui_url(corpus_settings, llama_server) -> Iterator[str]:  # noqa: ANN001
    settings = llm_settings(corpus_settings, llama_server.url)
    demo = build_app(settings, Assistant(settings))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, css=CSS)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


def test_rejected_model_draft_is_expandable_and_marked(llm_ui_url: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 950})
            page.goto(llm_ui_url, wait_until="domcontentloaded")
            page.locator("#question textarea").wait_for(timeout=WAIT)
            answer = ask(page, "What speedup does CoRF report?")
            draft = answer.locator("details.draft")
            assert draft.count() == 1, answer.inner_html()
            summary = draft.locator("summary")
            assert "Model's draft" in summary.inner_text() and "unsupported" in summary.inner_text()
            assert not draft.locator(".draft-text").is_visible()
            summary.click()
            text = draft.locator(".draft-text")
            text.wait_for(state="visible", timeout=5_000)
            assert text.inner_text().strip()
            page.screenshot(path=str(ARTIFACTS / "ui-llm-draft.png"))
        finally:
            browser.close()
