"""A chat in the web UI as a researcher has it, in headless Chromium: a question about one paper, a switch to a
named paper, a comparison across the two turns ("how do they differ"), then a question about a paper outside the
chosen scope. Screenshots: test-artifacts/ui-chat-switch.png, ui-chat-comparison.png, ui-chat-out-of-scope.png.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag.service import Assistant
from ui.app import build_app

from tests.ui.conftest import ARTIFACTS, served
from tests.ui.test_ui_browser import WAIT, ask, select_scope

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chat_url(corpus_settings) -> Iterator[str]:  # noqa: ANN001
    with served(build_app(corpus_settings, Assistant(corpus_settings))) as url:
        yield url


@pytest.fixture()
def chat_page(browser, chat_url: str):  # noqa: ANN001, ANN201
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    pg = context.new_page()
    pg.goto(chat_url, wait_until="domcontentloaded")
    pg.locator("#question textarea").wait_for(timeout=WAIT)
    yield pg
    context.close()


def cited_labels(answer) -> set[str]:  # noqa: ANN001
    """The papers an answer element quotes ("RecMem [1]: “…”" lines)."""
    labels = set()
    for line in answer.inner_text().splitlines():
        head, sep, _ = line.partition(" [")
        if sep and "]: “" in line:
            labels.add(head.strip())
    return labels


def test_switch_then_comparison_across_turns_quotes_both_papers(chat_page) -> None:  # noqa: ANN001
    page = chat_page
    first = ask(page, "What does RecMem compress?")
    assert cited_labels(first) == {"RecMem"}, first.inner_text()

    switched = ask(page, "And what about CIB?")
    status = page.locator("#status").inner_text()
    assert "searched for" in status and "CIB" in status, status
    assert "CIB" in cited_labels(switched) and "RecMem" not in cited_labels(switched), switched.inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-chat-switch.png"))

    both = ask(page, "How do they differ in what they compress?")
    status = page.locator("#status").inner_text()
    assert "RecMem" in status and "CIB" in status, status  # "they" is both earlier papers
    assert cited_labels(both) >= {"RecMem", "CIB"}, both.inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-chat-comparison.png"))


def test_a_paper_outside_the_scope_is_named_as_such(chat_page) -> None:  # noqa: ANN001
    page = chat_page
    select_scope(page, "CoRF")
    answer = ask(page, "How many scalar parameters does DyMoS introduce?")
    text = answer.inner_text()
    assert "DyMoS is indexed but outside the selected papers" in text, text
    assert cited_labels(answer) <= {"CoRF"}, text  # never another paper's figure
    follow = ask(page, "And what speedup does CoRF report?")  # back inside the scope
    assert "CoRF" in cited_labels(follow), follow.inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-chat-out-of-scope.png"))
