"""The web UI in headless Chromium: citation chips, per-answer evidence, reset, scope, upload, escaping of paper
text, LaTeX and CJK, the phone layout. One UI server for the module, on its own index (the seed corpus plus papers
written to attack or stress the page), so uploads here never change the shared corpus index.

Screenshots go to test-artifacts/ui-*.png.
"""

from __future__ import annotations

import csv
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rag.schema import LookupHit
from rag.service import Assistant
from ui.app import build_app

from tests.conftest import CORPUS, ROOT, free_port, make_settings, write_jsonl
from tests.ui.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, served  # noqa: F401 - re-exported

pytestmark = pytest.mark.slow

WAIT = 60_000
RECMEM_Q = "Over how many test steps does RecMem stay stable?"
CORF_Q = "What speedup does CoRF report?"


class Beacon:
    """A local HTTP server that counts every request: an image or link in a paper must never reach it."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        beacon = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                beacon.requests.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def hostile_papers(base: str) -> list[dict]:
    """Papers whose title, authors and abstract carry HTML, Markdown, CSS and script; one with LaTeX; one in CJK."""
    sentence = (f"BeaconNet reaches 97% recall <img src=\"{base}/beacon.png\"> on the TagSoup benchmark, see "
                f"[the docs]({base}/md-link) and <a href=\"{base}/a-link\">this link</a>. "
                "<style>body{display:none}</style><span style=\"display:none\">hidden words</span> "
                f"<script>fetch('{base}/script')</script> costs ${{7*7}} and {{{{value}}}} units.")
    return [
        {"title": f"Beacon <img src=\"{base}/title.png\"> markup", "authors": f"<b>Mallory</b> [x]({base}/author)",
         "abstract": "We propose BeaconNet, a detector of hostile markup in abstracts. " + sentence},
        {"title": "Value bounds for optimal stopping",
         "abstract": "We study StopNet, a solver for optimal stopping problems. StopNet bounds the value "
                     "C^\\star(x) and the gap C^\\star(y) - C(y) below 0.5 on all benchmarks."},
        {"title": "多模态检索的中文基准", "authors": "李雷, 韩梅梅", "year": "2026",
         "abstract": "We present HanziBench (中文基准), a benchmark of 2,000 Chinese retrieval questions. HanziBench "
                     "shows that multilingual encoders lose 12 points on 古文 queries."},
    ]


@pytest.fixture(scope="module")
def beacon() -> Iterator[Beacon]:
    server = Beacon()
    yield server
    server.close()


@pytest.fixture(scope="module")
def ui_settings(tmp_path_factory: pytest.TempPathFactory, beacon: Beacon, embedder):  # noqa: ANN001, ANN201
    from rag.index.ingest import ingest

    extra = tmp_path_factory.mktemp("ui-extra")
    write_jsonl(extra / "hostile.jsonl", hostile_papers(beacon.base))
    settings = make_settings(tmp_path_factory.mktemp("ui-index"), corpus_paths=[CORPUS, extra])
    report = ingest(settings, embedder=embedder, progress=False)
    assert report.total_papers == 41 and not report.problems, report.problems
    return settings


@pytest.fixture(scope="module")
def ui_url(ui_settings) -> Iterator[str]:  # noqa: ANN001
    with served(build_app(ui_settings, Assistant(ui_settings))) as url:
        yield url


@pytest.fixture()
def page(browser, ui_url: str):  # noqa: ANN001, ANN201
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui_url.rstrip("/"))
    pg = context.new_page()
    pg.goto(ui_url, wait_until="domcontentloaded")
    pg.locator("#question textarea").wait_for(timeout=WAIT)
    yield pg
    context.close()


def ask(page, question: str, answers_before: int | None = None):  # noqa: ANN001, ANN201
    """Type a question, press Enter, wait for the checked answer (not the streaming one); return its element."""
    done = page.locator("#chat .answer:not(.streaming)")
    before = done.count() if answers_before is None else answers_before
    box = page.locator("#question textarea")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function(f"document.querySelectorAll('#chat .answer:not(.streaming)').length > {before}",
                           timeout=WAIT)
    page.locator("#status").get_by_text("Answered by").wait_for(timeout=WAIT)
    return done.nth(before)


def select_scope(page, label: str) -> None:  # noqa: ANN001
    inp = page.locator("#scope input").first
    inp.click()
    inp.fill(label)
    page.get_by_role("option", name=label).first.click()
    page.keyboard.press("Escape")
    page.locator("#scope-banner .scope-active").wait_for(timeout=WAIT)


def in_viewport(page, locator) -> bool:  # noqa: ANN001
    box = locator.bounding_box()
    size = page.viewport_size
    return bool(box) and box["y"] >= 0 and box["y"] + min(box["height"], 40) <= size["height"] and box["x"] >= 0


# --- tests ------------------------------------------------------------------------------------------------

def test_chip_hover_shows_source_and_click_highlights_its_card(page) -> None:  # noqa: ANN001
    answer = ask(page, RECMEM_Q)
    chip = answer.locator("a.cite-chip").first
    assert chip.inner_text().startswith("[1]")
    tip = chip.locator(".cite-tip")
    assert not tip.is_visible()
    chip.hover()
    tip.wait_for(state="visible", timeout=5_000)
    assert "RecMem" in tip.inner_text() and "1,800 test steps" in tip.inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-chip-hover.png"))

    page.mouse.move(0, 0)
    chat = page.locator("#chat")
    assert "Sources (" not in chat.inner_text()  # no second copy of the quotes under the answer
    assert chat.inner_text().count("remains stable over 1,800 test steps") == 1
    assert "\n1,800 test steps [1]\n" in chat.inner_text()  # the direct answer leads, then its quote

    chip.click()
    card = page.locator("#evidence .evidence-card.flash")
    card.wait_for(timeout=5_000)
    assert card.get_attribute("id") == "ev-0-1" and "RecMem" in card.inner_text()
    assert "1,800 test steps" in card.locator("mark").first.inner_text()
    page.wait_for_timeout(600)  # smooth scrolling
    assert in_viewport(page, card)
    page.screenshot(path=str(ARTIFACTS / "ui-chip-click.png"))


def test_older_answer_chip_shows_its_own_evidence_and_copy_answer(page) -> None:  # noqa: ANN001
    first = ask(page, RECMEM_Q)
    ask(page, CORF_Q)
    active = page.locator("#evidence .turn-evidence.active")
    assert "CoRF" in active.inner_text() and "RecMem" not in active.locator(".evidence-card").first.inner_text()

    first.locator("a.cite-chip").first.click()
    card = page.locator("#evidence .evidence-card.flash")
    card.wait_for(timeout=5_000)
    assert card.get_attribute("id") == "ev-0-1" and "RecMem" in card.inner_text()
    active = page.locator("#evidence .turn-evidence.active")
    assert active.get_attribute("data-turn") == "0" and page.locator("#evidence .turn-evidence.active").count() == 1
    page.screenshot(path=str(ARTIFACTS / "ui-older-answer-evidence.png"))

    active.get_by_role("button", name="Copy answer").click()
    page.wait_for_timeout(300)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("1,800 test steps [1]\nRecMem [1]") and "1,800" in copied and "\n\nReferences\n[1] " in copied
    assert not any(x in copied for x in ("<", "**", "`", "&#"))


def test_one_control_resets_chat_memory_evidence_and_scope(page) -> None:  # noqa: ANN001
    ask(page, RECMEM_Q)
    ask(page, "And how does it compare to the baselines?")
    status = page.locator("#status").inner_text()
    assert "searched for" in status and "RecMem" in status  # memory: the follow-up was rewritten
    select_scope(page, "CoRF")

    page.locator("#reset-button").click()
    page.wait_for_function("!document.querySelector('#chat .answer')", timeout=WAIT)
    page.wait_for_function("!document.querySelector('#scope-banner .scope-active')", timeout=WAIT)
    assert "Evidence for an answer appears here" in page.locator("#evidence").inner_text()
    assert page.locator("#scope .token, #scope [class*='token']").count() == 0
    assert page.locator("#status").inner_text().strip() == ""
    page.screenshot(path=str(ARTIFACTS / "ui-reset.png"))

    ask(page, "And how does it compare to the baselines?", answers_before=0)
    assert "RecMem" not in page.locator("#status").inner_text()  # no memory of the RecMem turn ("And" is dropped)
    assert page.locator("#evidence .turn-evidence").count() == 1


def test_chat_trash_icon_resets_like_new_chat(page) -> None:  # noqa: ANN001
    """The chat's own trash icon once cleared only what is shown and kept the memory; now it is the same reset."""
    ask(page, RECMEM_Q)
    page.locator("#chat").hover()
    trash = page.locator("#chat button[aria-label='Clear'], #chat button[title='Clear']")
    assert trash.count() == 1
    trash.first.click()
    page.wait_for_function("!document.querySelector('#chat .answer')", timeout=WAIT)
    page.locator("#evidence").get_by_text("Evidence for an answer appears here").wait_for(timeout=WAIT)
    ask(page, "And how does it compare to the baselines?", answers_before=0)
    assert "RecMem" not in page.locator("#status").inner_text()


def test_scope_banner_and_out_of_scope_message(page) -> None:  # noqa: ANN001
    assert page.locator("#scope").is_visible()  # not hidden in a collapsed accordion
    select_scope(page, "CoRF")
    banner = page.locator("#scope-banner")
    assert "Scope active" in banner.inner_text() and "CoRF" in banner.inner_text()
    answer = ask(page, RECMEM_Q)
    assert "RecMem is indexed but outside the selected papers" in answer.inner_text()
    assert "don't say anything" not in answer.inner_text()
    assert "Closest papers" in page.locator("#evidence .turn-evidence.active").inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-scope.png"))
    page.locator("#scope-clear").click()
    page.wait_for_function("!document.querySelector('#scope-banner .scope-active')", timeout=WAIT)


def test_paper_text_is_shown_as_text_and_fetches_nothing(page, beacon: Beacon) -> None:  # noqa: ANN001
    beacon.requests.clear()
    answer = ask(page, "What recall does BeaconNet reach on TagSoup?")
    answer.locator("a.cite-chip").first.hover()
    page.wait_for_timeout(300)
    literal = f"<img src=\"{beacon.base}/beacon.png\">"
    for where in (answer, page.locator("#evidence .turn-evidence.active")):
        text = where.inner_text()
        assert literal in text and f"[the docs]({beacon.base}/md-link)" in text
        assert f"<a href=\"{beacon.base}/a-link\">this link</a>" in text and "hidden words" in text
        assert "<style>body{display:none}</style>" in text and "<script>fetch(" in text
        assert "costs ${7*7} and {{value}} units" in text  # no template evaluation either
    card = page.locator("#evidence .turn-evidence.active .evidence-card").first
    assert "<b>Mallory</b>" in card.inner_text() and f"<img src=\"{beacon.base}/title.png\">" in card.inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-escaping.png"))

    page.get_by_role("tab", name="Papers").click()
    page.locator("#paper-table").get_by_text("BeaconNet").first.click()
    view = page.locator("#paper-view")
    view.get_by_text("hidden words", exact=False).wait_for(timeout=WAIT)
    assert literal in view.inner_text()
    page.wait_for_timeout(1000)
    assert page.locator("img[src*='127.0.0.1'], a[href*='" + beacon.base + "']").count() == 0
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    assert beacon.requests == []


def test_latex_and_cjk_show_sensibly(page) -> None:  # noqa: ANN001
    answer = ask(page, "Which value does StopNet bound below 0.5?")
    text = answer.inner_text()
    assert "C^*(x)" in text and "C^*(y)" in text and "C^(x)" not in text
    assert "C^*(y)" in page.locator("#evidence .turn-evidence.active").inner_text()

    answer = ask(page, "How many points do multilingual encoders lose on HanziBench?")
    card = page.locator("#evidence .turn-evidence.active .evidence-card").first
    assert "多模态检索的中文基准" in card.inner_text() and "李雷" in card.inner_text()
    assert page.evaluate("document.fonts.check('16px \"Noto Sans CJK SC\"', '中文基准')")
    assert "Noto Sans CJK" in page.evaluate("getComputedStyle(document.querySelector('#evidence')).fontFamily")
    page.screenshot(path=str(ARTIFACTS / "ui-latex-cjk.png"))

    page.get_by_role("tab", name="Papers").click()  # the table is searchable, by title too
    table = page.locator("#paper-table")
    page.locator("#paper-search textarea, #paper-search input").first.fill("中文基准")
    page.wait_for_function("!document.querySelector('#paper-table').innerText.includes('RecMem')", timeout=WAIT)
    assert "HanziBench" in table.inner_text() and "BeaconNet" not in table.inner_text()


def test_empty_and_too_long_questions(page) -> None:  # noqa: ANN001
    ask(page, RECMEM_Q)
    bubbles = page.locator("#chat .message-row, #chat [data-testid='user'], #chat [data-testid='bot']").count()
    page.locator("#question textarea").fill("   ")
    page.locator("#ask-button").click()
    page.locator("#status").get_by_text("Type a question first").wait_for(timeout=WAIT)
    assert page.locator("#chat .message-row, #chat [data-testid='user'], #chat [data-testid='bot']").count() == bubbles

    long_question = "Why " + "really " * 400 + "?"
    page.locator("#question textarea").fill(long_question)
    page.locator("#ask-button").click()
    page.locator("#chat").get_by_text("question too long").wait_for(timeout=WAIT)
    assert page.locator("#question textarea").input_value() == long_question  # kept, to be shortened
    evidence = page.locator("#evidence")
    assert "Not answered" in evidence.inner_text() and evidence.locator(".evidence-card:visible").count() == 0
    page.screenshot(path=str(ARTIFACTS / "ui-refused.png"))


def test_lookup_shows_strength_not_raw_scores(page) -> None:  # noqa: ANN001
    page.get_by_role("tab", name="Citation lookup").click()
    page.locator("#lookup-query textarea").fill("Dynamic Motion Slider")
    page.locator("#lookup-button").click()
    results = page.locator("#lookup-results")
    results.get_by_text("DyMoS").first.wait_for(timeout=WAIT)
    assert results.inner_text().strip().startswith("1. DyMoS")
    assert "score 0." not in results.inner_text()
    if "strength" in LookupHit.__dataclass_fields__:
        assert results.locator(".strength").first.inner_text() in ("match: strong", "match: weak", "match: none")
    else:
        assert results.locator(".strength").count() == 0
    page.screenshot(path=str(ARTIFACTS / "ui-lookup.png"))


def test_evidence_cards_say_strength_and_retrieved_papers_open(page) -> None:  # noqa: ANN001
    ask(page, RECMEM_Q)
    active = page.locator("#evidence .turn-evidence.active")
    card = active.locator(".evidence-card").first
    badge = card.locator(".card-head .strength")
    assert badge.inner_text() == "evidence: strong"
    assert "fitted citation-lookup model" in badge.get_attribute("title")
    meta = card.locator(".meta").last.inner_text()
    assert "corpus/neurips2026_list_" in meta and str(ROOT) not in meta and not meta.startswith("id /")
    assert "score 0." not in active.inner_text() and "score 1." not in active.inner_text()
    badge.hover()
    page.screenshot(path=str(ARTIFACTS / "ui-evidence-strength.png"))

    others = active.locator(".also-retrieved details.retrieved-paper")
    assert others.count() >= 1
    first = others.first
    assert first.locator("summary .strength").inner_text() in ("evidence: strong", "evidence: weak", "evidence: none")
    assert not first.locator(".evidence-card .abstract").is_visible()
    first.locator("summary").click()
    opened = first.locator(".evidence-card .abstract")
    opened.wait_for(state="visible", timeout=5_000)
    assert len(opened.inner_text()) > 100  # the paper's abstract
    opened.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui-evidence-retrieved-open.png"))


def test_chat_exports_as_markdown_with_references(page, beacon: Beacon) -> None:  # noqa: ANN001
    button = page.locator("#export-chat")
    assert button.is_disabled()  # nothing to export yet
    ask(page, RECMEM_Q)
    ask(page, "What recall does BeaconNet reach on TagSoup?")
    page.wait_for_function("!document.querySelector('#export-chat').disabled", timeout=WAIT)
    page.wait_for_timeout(500)  # the file of the second answer replaces the first's
    with page.expect_download(timeout=WAIT) as info:
        button.click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    page.screenshot(path=str(ARTIFACTS / "ui-export.png"))
    (ARTIFACTS / "ui-export.md").write_text(text, encoding="utf-8")
    assert info.value.suggested_filename.endswith(".md")
    assert text.startswith("# Paper Q&A chat") and f"## 1. {RECMEM_Q}" in text
    assert "## 2. What recall does BeaconNet reach on TagSoup?" in text
    first, second = text.split("## 2.")
    assert "1,800 test steps \\[1\\]" in first and "**References**\n\n1\\. RecMem" in first
    assert "neurips2026" in first and str(ROOT) not in text
    assert "**References**" in second and "Beacon" in second
    assert "<img" not in text and f"]({beacon.base}" not in text and "&lt;img src=" in second


def test_phone_layout_evidence_is_a_drawer(browser, ui_url: str) -> None:  # noqa: ANN001
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(ui_url, wait_until="domcontentloaded")
        page.locator("#question textarea").wait_for(timeout=WAIT)
        answer = ask(page, RECMEM_Q)
        toggle = page.locator("#evidence-toggle")
        assert toggle.is_visible() and in_viewport(page, toggle)
        assert not in_viewport(page, page.locator("#evidence"))  # closed: the chat has the screen
        page.screenshot(path=str(ARTIFACTS / "ui-phone-chat.png"))

        answer.locator("a.cite-chip").first.click()
        card = page.locator("#evidence .evidence-card.flash")
        card.wait_for(timeout=5_000)
        page.wait_for_timeout(600)
        assert in_viewport(page, card) and "RecMem" in card.inner_text()
        drawer = page.locator("#evidence-col").bounding_box()
        head = card.locator(".card-head").bounding_box()
        assert head["y"] >= drawer["y"] and head["y"] + head["height"] <= 844, (head, drawer)  # header visible
        mark = card.locator("mark").first.bounding_box()
        button = page.locator("#evidence-toggle").bounding_box()
        assert mark["y"] + mark["height"] <= 844 and mark["y"] >= drawer["y"]  # the quote is on screen ...
        overlap_x = min(mark["x"] + mark["width"], button["x"] + button["width"]) - max(mark["x"], button["x"])
        overlap_y = min(mark["y"] + mark["height"], button["y"] + button["height"]) - max(mark["y"], button["y"])
        assert overlap_x <= 0 or overlap_y <= 0, (mark, button)  # ... and not under the floating button
        page.screenshot(path=str(ARTIFACTS / "ui-phone-evidence.png"))
        assert page.locator("#evidence-toggle").inner_text() == "Hide evidence"
        page.locator("#evidence-toggle").click()
        page.wait_for_timeout(400)
        assert not in_viewport(page, page.locator("#evidence .evidence-card").first)

        page.get_by_role("tab", name="Papers").click()
        header = page.locator("#paper-table th").filter(has_text="title").first
        header.wait_for(timeout=WAIT)
        assert header.bounding_box()["width"] >= 150  # the title column keeps its width (the table scrolls)
        page.screenshot(path=str(ARTIFACTS / "ui-phone-papers.png"))
    finally:
        context.close()


def build_grid(page, columns: str | None = None, lookup: str = ""):  # noqa: ANN001, ANN201
    """Open the Grid tab, set its columns (None: the defaults) and lookup, build; return the table."""
    page.get_by_role("tab", name="Grid").click()
    if columns is not None:
        page.locator("#grid-columns textarea").fill(columns)
    page.locator("#grid-lookup textarea, #grid-lookup input").first.fill(lookup)
    page.locator("#grid-button").click()
    table = page.locator("#papers-grid-table")
    table.wait_for(timeout=WAIT)
    return table


def test_grid_tab_quotes_each_paper_per_column(page) -> None:  # noqa: ANN001
    """All 41 papers × the five default columns and a typed question; cells quote or say "not stated", paper
    markup stays text, and the CSV is offered."""
    from rag.answer.grid import COLUMNS

    table = build_grid(page, "\n".join([*COLUMNS, "How many test steps?"]))
    heads = table.locator("thead th").all_inner_texts()
    assert heads == ["paper", *COLUMNS, "How many test steps?"], heads
    assert table.locator("tbody tr").count() == 41
    assert table.locator("td.grid-cell").count() >= 41 and table.locator("td.grid-none").count() >= 1
    recmem = table.locator("tbody tr").filter(has=page.locator("th", has_text="RecMem")).first
    assert "1,800" in recmem.inner_text()  # its stability result, quoted
    shown = table.inner_text()
    assert table.locator("img").count() == 0 and "<img src=" in shown  # the hostile paper, as text ...
    assert "fetch('http" in shown and "&#" not in shown  # ... exactly as written, escaped once
    assert "papers × 6 columns" in page.locator("#grid-table .grid-summary").inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-grid.png"), full_page=False)
    with page.expect_download() as download:
        page.locator("#grid-csv a[download='papers-grid.csv']").click()
    with open(download.value.path(), newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["paper_id", "label", *COLUMNS, "How many test steps?"] and len(rows) == 42


def test_grid_tab_on_a_phone_scrolls_its_table_not_the_page(browser, ui_url: str) -> None:  # noqa: ANN001
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(ui_url, wait_until="domcontentloaded")
        page.locator("#question textarea").wait_for(timeout=WAIT)
        table = build_grid(page, lookup="recurrent memory for test-time adaptation")
        rows = table.locator("tbody tr").count()
        assert 1 <= rows < 41, rows  # the lookup's matching papers only
        box = page.locator("#grid-table .grid-scroll")
        sizes = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sizes[0] > sizes[1], sizes  # the table is wider than the phone and scrolls in its box ...
        assert page.evaluate("document.documentElement.scrollWidth") <= 391  # ... the page does not
        for th in table.locator("thead th").all()[1:]:
            assert th.bounding_box()["width"] >= 150  # columns keep a readable width (no vertical letters)
        cell = table.locator("td").first.bounding_box()
        assert cell["height"] < 600, cell
        page.screenshot(path=str(ARTIFACTS / "ui-grid-phone.png"))
    finally:
        context.close()


def test_fonts_have_real_bold_faces(page) -> None:  # noqa: ANN001
    ask(page, RECMEM_Q)
    family = page.evaluate("getComputedStyle(document.querySelector('#evidence .card-head')).fontFamily")
    assert "DejaVu Sans" in family and "Source Sans Pro" not in family, family
    weight = page.evaluate("getComputedStyle(document.querySelector('#evidence .card-head')).fontWeight")
    assert int(weight) >= 600
    # The face used has a bold of its own: bold text is wider than regular (a synthesised or missing bold of a
    # thin face barely changes the width).
    widths = page.evaluate("""() => { const c = document.createElement('canvas').getContext('2d');
        const f = getComputedStyle(document.querySelector('#evidence .card-head')).fontFamily;
        const w = (weight) => { c.font = `${weight} 16px ${f}`; return c.measureText('RecMem Recurrent memory').width; };
        return [w('normal'), w('bold')]; }""")
    assert widths[1] > widths[0] * 1.05, widths
    # What Chromium actually draws with (not only what the CSS asks for), for bold and regular text.
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    for selector in ("#evidence .turn-question", "#evidence .turn-head button", "#evidence .card-head",
                     "#evidence .abstract", "#chat .answer-line"):
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        assert {f["familyName"] for f in fonts} == {"DejaVu Sans"}, (selector, fonts)  # every glyph
    page.locator("#evidence .turn-head").first.screenshot(path=str(ARTIFACTS / "ui-font-bold.png"))


def test_upload_ingests_files_and_papers_are_answerable(page, ui_settings, tmp_path: Path) -> None:  # noqa: ANN001
    good = write_jsonl(tmp_path / "quill.jsonl", [{
        "title": "QuillNet: handwriting recognition for field notebooks", "authors": "Ada Byron", "year": "2026",
        "venue": "Workshop on Archives", "url": "https://example.org/quillnet",
        "abstract": "We present QuillNet, a handwriting recogniser for naturalists' field notebooks. QuillNet "
                    "transcribes 18th-century entries with a character error rate of 4.2%."}])
    # Enough papers that embedding takes a few seconds, so the progress bar can be seen (last test: these papers
    # would otherwise change what the other tests retrieve).
    bulk = write_jsonl(tmp_path / "bulk.jsonl", [{
        "title": f"Glacier survey {i}", "abstract": f"We survey glacier number {i} of the Zorvath range with drones. "
        f"Its tongue retreated {i % 17 + 3} metres per year between 2001 and 2024, measured by lidar."}
        for i in range(120)])
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"abstract": "We propose a method that is long enough to be read as an abstract here."}\n'
                   '{not json\n', encoding="utf-8")
    page.get_by_role("tab", name="Papers").click()
    page.locator("#upload input[type=file]").set_input_files([str(good), str(bulk), str(bad)])
    log = page.locator("#upload-log")
    steps: list[str] = []
    bars: list[int] = []
    deadline = time.monotonic() + 180
    while "papers indexed" not in log.inner_text() and time.monotonic() < deadline:
        levels = page.locator(".progress-level-inner")  # one bar, moving a step per file
        bars.append(page.locator(".progress-level").count())
        if levels.count():
            desc = levels.first.inner_text()
            if desc and (not steps or steps[-1] != desc):
                steps.append(desc)
                if "File 2 of 3" in desc:
                    page.screenshot(path=str(ARTIFACTS / "ui-upload-progress.png"))
        page.wait_for_timeout(100)
    assert max(bars) == 1, bars  # never stacked bars
    file_steps = [x for x in steps if x.startswith("File ")]
    # the per-file steps move forward (the first, small file may pass between two looks at the page)
    assert any("File 2 of 3: reading and embedding bulk.jsonl" in x for x in file_steps), steps
    numbers = [int(x.split()[1]) for x in file_steps]
    assert numbers == sorted(numbers) and len(set(numbers)) >= 2, steps
    assert "Embedding" not in " ".join(steps)  # no bars of the library internals
    text = log.inner_text()
    assert "skipped:" in text and "broken.jsonl:2: invalid JSON" in text and "163 papers indexed" in text
    assert (Path(ui_settings.data_dir) / "uploads" / "quill.jsonl").exists()
    page.locator("#paper-search textarea, #paper-search input").first.fill("QuillNet")
    page.wait_for_function("document.querySelector('#paper-table').innerText.includes('QuillNet: handwriting')",
                           timeout=WAIT)
    page.screenshot(path=str(ARTIFACTS / "ui-upload.png"))

    page.get_by_role("tab", name="Ask").click()
    time.sleep(2.1)  # the retriever checks the store version at most every 2 s
    answer = ask(page, "What character error rate does QuillNet reach?")
    assert "4.2%" in answer.inner_text() and answer.locator("a.cite-chip").count() >= 1
    card = page.locator("#evidence .turn-evidence.active .evidence-card").first
    assert "QuillNet: handwriting recognition" in card.inner_text() and "Ada Byron" in card.inner_text()
    assert card.locator("a[href='https://example.org/quillnet']").count() == 1
