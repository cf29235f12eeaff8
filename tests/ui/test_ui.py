"""The web UI: the documented API through gradio_client, and the HTML the page is built from.

The real page in headless Chromium is tested in test_ui_browser.py."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client

from rag.schema import Answer, Citation, Retrieved, SentenceCheck
from ui.app import CSS, Backend, answer_html, build_app, esc, evidence_html, lookup_html, plain_answer, safe_url

from tests.conftest import free_port, make_settings

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


# --- the HTML the page is built from ---------------------------------------------------------------------

HOSTILE = ('<img src="http://127.0.0.1:9/b.png"> [t](http://x.y) **bold** $x$ {{v}} ${v} `c` '
           '<style>p{display:none}</style><script>alert(1)</script> javascript:alert(1)')


def test_esc_leaves_no_html_or_markdown_syntax() -> None:
    out = esc(HOSTILE)
    assert not any(ch in out for ch in "<>[]()*$`{}\"'") and "javascript:" not in out
    assert html.unescape(out) == HOSTILE  # shown exactly as written


def test_safe_url_keeps_only_http_links() -> None:
    assert safe_url("https://doi.org/10.1/x") == "https://doi.org/10.1/x"
    for bad in ("javascript:alert(1)", "data:text/html,x", "//evil.example/x", "/relative", "http://a b"):
        assert safe_url(bad) == ""


def _answer(**kw: object) -> Answer:
    c = Citation(1, "p1", "FooNet", "a.jsonl", 1, 'FooNet cuts memory by 40% <img src="http://127.0.0.1:9/q.png">.')
    values = dict(question="How much memory does FooNet save?", answer=f"FooNet [1]: “{c.quote}”", abstained=False,
                  mode="llm", citations=[c], retrieved=[Retrieved("p1", "FooNet", 0.033), Retrieved("p2", "BarBench",
                                                                                                    0.016)])
    values.update(kw)
    return Answer(**values)


def test_answer_html_has_chips_repair_marks_and_the_rejected_draft() -> None:
    a = _answer()
    check = SentenceCheck(a.answer, [1], True, evidence=a.citations[0].quote, evidence_n=1)
    check.repaired = "from [2] to [1]"  # the i16 citation repair's field, read with getattr
    a.checks = [check]
    out = answer_html(a, 3, {})
    assert "<a class='cite-chip' href='#ev-3-1'>[1]" in out and "class='cite-tip'" in out
    assert "repaired-mark" in out and "from &#91;2&#93; to &#91;1&#93;" in out
    assert "<img" not in out and "&#60;img" in out
    assert "details class='draft'" not in out  # a supported answer has no draft to show

    rejected = _answer(abstained=True, citations=[], answer="The indexed abstracts don't say this.",
                       raw_answer='FooNet [2] is <b>great</b>.')
    out = answer_html(rejected, 0, {})
    assert "details class='draft'" in out and "unsupported" in out and "&#60;b&#62;great" in out
    assert "cite-chip" not in out


def test_a_reference_mark_inside_a_quote_is_not_a_chip() -> None:
    c = Citation(1, "p1", "FooNet", "a.jsonl", 1, "FooNet is trained with Adam [2].")
    a = _answer(answer=f"FooNet [1]: “{c.quote}”", citations=[c, Citation(2, "p2", "BarBench", "b.jsonl", 1, "x.")])
    out = answer_html(a, 0, {})
    assert "href='#ev-0-1'" in out and "href='#ev-0-2'" not in out and "Adam &#91;2&#93;" in out


def test_plain_answer_is_text_with_a_reference_list() -> None:
    a = _answer()
    a.citations[0].reference = "FooNet. a.jsonl#1. id p1"
    text = plain_answer(a, {})
    assert text.startswith("FooNet [1]: “FooNet cuts memory") and text.endswith("\n\nReferences\n[1] FooNet. a.jsonl#1. id p1")
    assert "&#" not in text and "**" not in text


def test_evidence_keeps_every_answer_and_lists_uncited_papers(corpus_settings, assistant) -> None:  # noqa: ANN001
    backend = Backend(corpus_settings, assistant)
    first, second = _answer(), _answer(question="second?")
    out = evidence_html([(first, None), (second, None)], backend)
    assert out.count("class='turn-evidence") == 2 and out.count("class='turn-evidence active'") == 1
    assert "class='turn-evidence active' data-turn='1'" in out  # the latest answer is shown
    assert "id='ev-0-1'" in out and "id='ev-1-1'" in out
    assert "Also retrieved (not cited)" in out and "BarBench" in out and not re.search(r"score \d", out)
    assert "<img" not in out

    abstained = _answer(abstained=True, citations=[], answer="The indexed abstracts don't say this.")
    out = evidence_html([(abstained, None)], backend)
    assert "Closest papers" in out and "FooNet" in out
    after_error = evidence_html([(first, None)], backend, note="Not answered: boom")
    assert "turn-evidence active' data-turn='note'" in after_error and "turn-evidence active' data-turn='0'" not in \
        after_error


def test_bibtex_buttons_only_with_the_references_module(corpus_settings, assistant) -> None:  # noqa: ANN001
    import importlib.util

    ids = {e.label: e.paper_id for e in assistant.papers()}
    a = assistant.ask("What speedup does CoRF report?", paper_ids=[ids["CoRF"]])
    out = evidence_html([(a, None)], Backend(corpus_settings, assistant))
    has_module = importlib.util.find_spec("rag.corpus.references") is not None
    assert ("Download .bib" in out) == has_module and "Copy answer" in out


def test_lookup_html_shows_strength_instead_of_scores(assistant) -> None:  # noqa: ANN001
    hits = assistant.cite("Dynamic Motion Slider", k=3)
    out = lookup_html(hits)
    assert "score" not in out and "DyMoS" in out
    strength = getattr(hits[0], "strength", None)
    assert (f"match: {strength}" in out) if strength else ("class='strength" not in out)


def test_outside_scope_names_the_indexed_paper(assistant) -> None:  # noqa: ANN001
    ids = {e.label: e.paper_id for e in assistant.papers()}
    question = "Over how many test steps does RecMem stay stable?"
    out = assistant.ask(question, paper_ids=[ids["CoRF"]])
    assert out.abstained and out.outside_scope == ["RecMem"] and "1,800" not in out.answer
    assert out.answer.startswith("RecMem is indexed but outside the selected papers")
    inside = assistant.ask(question, paper_ids=[ids["RecMem"], ids["CoRF"]])
    assert not inside.abstained and inside.outside_scope == [] and "1,800" in inside.answer
    assert assistant.ask("What does ZorbleNet compute?", paper_ids=[ids["CoRF"]]).outside_scope == []


def test_paper_metadata_from_optional_fields() -> None:
    from types import SimpleNamespace

    from ui.app import meta_line, paper_meta

    cite = SimpleNamespace(title="", authors=["Ada Byron", "Alan Turing"], year=2026)
    entry = SimpleNamespace(title="QuillNet", venue="ACL", doi="10.1000/xyz", url="javascript:alert(1)")
    meta = paper_meta(cite, entry, None)
    assert meta["title"] == "QuillNet" and meta["authors"] == "Ada Byron, Alan Turing" and meta["year"] == "2026"
    line = meta_line(meta)
    assert "href='https&#58;//doi.org/10.1000/xyz'" in line and "javascript" not in line
    assert paper_meta(SimpleNamespace()) == dict.fromkeys(("title", "authors", "year", "venue", "doi", "url",
                                                           "page"), "")


def test_evidence_says_how_strong_each_paper_is_and_where_its_file_is(corpus_settings, assistant) -> None:  # noqa: ANN001
    """Strength words from the fitted lookup scorer instead of fused scores, the same word `cite` gives the paper;
    the file under the corpus folder."""
    from rag.answer.lookup import strength

    from ui.strength import Strengths

    backend = Backend(corpus_settings, assistant)
    a = assistant.ask("Over how many test steps does RecMem stay stable?")
    words = backend.strengths(a)
    assert set(words) == {r.paper_id for r in a.retrieved}
    cited = a.citations[0].paper_id
    assert words[cited].word == "strong" and words[cited].word == strength(words[cited].prob)
    ids = [r.paper_id for r in a.retrieved]
    assert {h.paper_id: h.strength for h in assistant.cite(a.question, k=len(ids), paper_ids=ids)} == \
        {p: s.word for p, s in words.items()}
    assert Strengths().of(assistant, "v", a.question, [r.paper_id for r in a.retrieved]) == words  # no cache effect
    out = evidence_html([(a, None)], backend)
    assert f"evidence: {words[cited].word}" in out and "fitted citation-lookup model" in out and not re.search(r"score \d", out)
    shown = html.unescape(out)
    assert "corpus/neurips2026_list_00" in shown and str(Path.cwd()) not in shown and "/tmp" not in shown
    # every uncited retrieved paper opens its own card, with its abstract
    assert out.count("<details class='retrieved-paper'>") == len(a.retrieved) - len({c.paper_id for c in a.citations})
    assert out.count("class='evidence-card paper-card'") == out.count("<details class='retrieved-paper'>")


def test_shown_source_never_gives_the_absolute_path(tmp_path: Path) -> None:
    from ui.app import shown_source

    corpus = tmp_path / "papers"
    assert shown_source(str(corpus / "sub" / "a.jsonl"), (corpus,)) == "papers/sub/a.jsonl"
    assert shown_source(str(tmp_path / "single.bib"), (tmp_path / "single.bib",)) == "single.bib"
    assert shown_source("/srv/secret/place/x.txt", (corpus,)) == "x.txt"


def test_chat_export_is_markdown_with_references_and_escaped_paper_text() -> None:
    from ui.export import chat_markdown, md_escape

    hostile = _answer(answer=f"FooNet [1]: {HOSTILE}")
    abstained = _answer(question="What about ZorbleNet?", abstained=True, citations=[],
                        answer="The indexed abstracts don't say this.")
    text = chat_markdown([(hostile, None), (abstained, None)], lambda c: f"{c.label}. {c.source}#{c.position}")
    assert text.startswith("# Paper Q&A chat\n")
    assert "## 1. How much memory does FooNet save?" in text and "## 2. What about ZorbleNet?" in text
    assert "**References**\n\n1\\. FooNet. a.jsonl\\#1" in text
    assert "No answer was found" in text.split("## 2.")[1]
    answer_part = text.split("## 1.")[1].split("**References**")[0]
    for raw in ("<img", "<script", "](http", "**bold**", "`c`", "${v}", "{{v}}"):
        assert raw not in answer_part, raw
    assert "FooNet \\[1\\]" in answer_part and "&lt;img src=" in answer_part
    assert md_escape("- item") == "\\- item" and md_escape("3. item") == "3\\. item"
