"""The web UI: the documented API through gradio_client, and the real page in headless Chromium."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client

from ui.app import CSS, build_app

from .conftest import ROOT, free_port, make_settings

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
ANSWER_FIELDS = {"question", "answer", "abstained", "mode", "citations", "retrieved", "timings_ms"}


def launch(demo) -> str:  # noqa: ANN001
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, css=CSS)
    return f"http://127.0.0.1:{port}/"


@pytest.fixture(scope="module")
def ui_url(corpus_settings, assistant) -> Iterator[str]:  # noqa: ANN001
    demo = build_app(corpus_settings, assistant)
    url = launch(demo)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def client(ui_url: str) -> Client:
    return Client(ui_url, verbose=False)


def test_api_ask_returns_the_cli_fields(client: Client) -> None:
    d = client.predict("Over how many test steps does RecMem stay stable?", "auto", 5, None, api_name="/ask")
    assert ANSWER_FIELDS <= set(d) and d["citations"][0]["label"] == "RecMem" and "1,800" in d["answer"]
    assert {"n", "paper_id", "label", "source", "position", "quote"} <= set(d["citations"][0])


def test_api_scope_and_k(client: Client, assistant) -> None:  # noqa: ANN001
    ids = {e.label: e.paper_id for e in assistant.papers()}
    d = client.predict("What speedup does it report?", "extractive", 2, [ids["CoRF"]], api_name="/ask")
    assert [r["label"] for r in d["retrieved"]] == ["CoRF"] and "5.9" in d["answer"]


def test_api_lookup(client: Client) -> None:
    hits = client.predict("Dynamic Motion Slider", 3, api_name="/lookup")
    assert hits[0]["label"] == "DyMoS" and "Dynamic Motion Slider" in hits[0]["sentence"]
    assert hits[0]["paper_id"] in hits[0]["reference"]


@pytest.mark.parametrize("question,message", [("", "empty question"), ("   \n ", "empty question"),
                                              ("x" * 20_000, "question too long")])
def test_api_errors_are_messages(client: Client, question: str, message: str) -> None:
    d = client.predict(question, "auto", 5, None, api_name="/ask")
    assert message in d["error"] and "Traceback" not in d["error"]


def test_missing_index_is_a_friendly_message(tmp_path: Path) -> None:
    demo = build_app(make_settings(tmp_path / "no-index"))
    url = launch(demo)
    try:
        d = Client(url, verbose=False).predict("anything?", "auto", 5, None, api_name="/ask")
        assert "run `papers ingest` first" in d["error"]
    finally:
        demo.close()


@pytest.mark.slow
def test_browser_chat_evidence_and_lookup(ui_url: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 950})
        page.goto(ui_url, wait_until="domcontentloaded")
        box = page.locator("#question textarea")
        box.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "ui-empty.png"))

        box.fill("Over how many test steps does RecMem stay stable?")
        t0 = time.perf_counter()
        box.press("Enter")
        chat = page.locator("#chat")
        chat.get_by_text("RecMem [1]", exact=False).first.wait_for(timeout=60_000)
        first_token = time.perf_counter() - t0
        page.locator("#evidence mark").first.wait_for(timeout=60_000)
        full = time.perf_counter() - t0
        assert "1,800" in chat.inner_text()
        evidence = page.locator("#evidence")
        assert "RecMem" in evidence.inner_text() and "55250314894d" in evidence.inner_text()
        assert "1,800 test steps" in page.locator("#evidence mark").first.inner_text()
        page.locator("#status").get_by_text("Answered by").wait_for(timeout=30_000)
        assert "extractive" in page.locator("#status").inner_text()
        page.screenshot(path=str(ARTIFACTS / "ui-answer.png"))

        box.fill("")  # an empty question is a message in the chat, not an error page
        page.locator("#ask-button").click()
        try:
            chat.get_by_text("empty question").first.wait_for(timeout=30_000)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "ui-empty-question-failure.png"))
            raise AssertionError(chat.inner_text()) from None

        page.get_by_role("tab", name="Citation lookup").click()
        query = page.locator("#lookup-query textarea")
        query.fill("Dynamic Motion Slider")
        page.locator("#lookup-button").click()
        results = page.locator("#lookup-results")
        results.get_by_text("DyMoS").first.wait_for(timeout=30_000)
        assert results.inner_text().strip().startswith("1. DyMoS")
        assert "Dynamic Motion Slider" in results.locator("mark").first.inner_text()
        page.screenshot(path=str(ARTIFACTS / "ui-lookup.png"))

        page.get_by_role("tab", name="Papers").click()
        page.locator("#paper-table").get_by_text("HCMs").first.wait_for(timeout=30_000)
        page.locator("#paper-table").get_by_text("HCMs").first.click()
        page.get_by_text("Causal modeling of physical temporal phenomena").first.wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "ui-papers.png"))
        browser.close()
    (ARTIFACTS / "ui-timings.json").write_text(json.dumps(
        {"enter_to_first_token_s": round(first_token, 3), "enter_to_full_answer_s": round(full, 3)}))
