"""Markdown and HTML full texts: title, abstract, sections and paragraphs, and what is left out (no index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.corpus.readers import html, markdown
from rag.corpus.readers.fulltext import FullText, Section, is_back_matter, label_of, to_record
from rag.corpus.scan import read_file
from rag.corpus.sections import abstract_of, place, segments, where_of

MARKER = """# Deep Things: A Study of Depth

Jane Doe, John Roe
University of Somewhere

**Abstract.** We study depth. Deeper models help on PDTB 2.0.

## 1 Introduction

We compare against the following baselines:

- BERT
- ELMo and GPT

Inline maths $k=5$ stays as text, a [link](http://example.org) keeps its words and ![a plot](plot.png) is dropped.

$$ E = mc^2 $$

| model | F1 |
|---|---|
| BERT | 80.1 |

### 1.1 Data

We use PDTB 2.0 [12] and our own corpus.

```
code is not prose
```

## References

[1] Someone. A paper. 2020.
"""


def test_markdown_full_text_keeps_sections_paragraphs_and_drops_non_prose() -> None:
    doc = markdown.parse(MARKER)
    assert doc is not None
    assert doc.title == "Deep Things: A Study of Depth"
    assert doc.abstract == ["We study depth. Deeper models help on PDTB 2.0."]
    assert [s.heading for s in doc.body()] == ["1 Introduction", "1.1 Data"]
    intro, data = doc.body()
    # the list is read with the sentence that introduces it, each item ended so sentences stay apart
    assert intro.paragraphs[0] == "We compare against the following baselines: BERT; ELMo and GPT."
    assert intro.paragraphs[1] == "Inline maths k=5 stays as text, a link keeps its words and is dropped."
    assert len(intro.paragraphs) == 2  # display maths and the table are no paragraphs
    assert data.paragraphs == ["We use PDTB 2.0 [12] and our own corpus."]  # code blocks and references left out


@pytest.mark.parametrize("text, is_full_text", [
    ("# A Title\n\nOne short abstract paragraph about a method.\n", False),  # an abstract, as before
    ("Just one paragraph of an abstract with no heading at all.\n", False),
    ("# T\n\nAbstract text here.\n\n## Method\n\nWe do things.\n", True),  # a heading below the title
    ("\n\n".join(["A long paragraph of words " * 60] * 5), True),  # longer than an abstract, no headings
])
def test_what_markdown_is_a_full_text(text: str, is_full_text: bool) -> None:
    assert (markdown.parse(text) is not None) is is_full_text


@pytest.mark.parametrize("heading, back", [
    ("References", True), ("REFERENCES", True), ("7 References", True), ("Bibliography", True),
    ("Acknowledgements", True), ("Acknowledgments", True), ("Related Work", False),
    ("Referencing schemes in citation graphs", False), ("Abstract", False),
])
def test_back_matter_is_known_by_its_name_only(heading: str, back: bool) -> None:
    assert is_back_matter(heading) is back


def test_front_matter_gives_title_authors_year() -> None:
    doc = markdown.parse("---\ntitle: Paper T\nauthor: Ada Lovelace and Alan Turing\ndate: 2021-05-01\n---\n\n"
                         "## Abstract\n\nWe propose X.\n\n## Method\n\nX works.\n")
    assert doc is not None
    assert (doc.title, doc.authors, doc.meta["year"]) == ("Paper T", ["Ada Lovelace", "Alan Turing"], "2021")
    assert doc.abstract == ["We propose X."]


ARXIV_HTML = """<!DOCTYPE html><html><head><title>arXiv</title>
<meta name="citation_author" content="Doe, Jane"><meta name="citation_doi" content="10.1234/abc">
<script>document.write('<p>injected</p>')</script><style>p {color: red}</style></head>
<body><nav>Home | About</nav><header>site header</header>
<article class="ltx_document"><h1 class="ltx_title ltx_title_document">Deep Things: A Study</h1>
<div class="ltx_authors"><span class="ltx_personname">Jane Doe</span></div>
<div class="ltx_abstract"><h6 class="ltx_title ltx_title_abstract">Abstract</h6>
<p class="ltx_p">We propose things with <math alttext="k=5"><mi>k</mi></math> heads. It works <b>well</b>.</p></div>
<section class="ltx_section"><h2 class="ltx_title ltx_title_section"><span class="ltx_tag">1 </span>Introduction</h2>
<div class="ltx_para"><p class="ltx_p">Intro cites <cite class="ltx_cite">[<a href="#b1">3</a>]</cite>.<span class="ltx_note ltx_role_footnote"><sup>1</sup>a footnote</span></p></div>
<figure class="ltx_table"><table><tr><td>1</td></tr></table><figcaption>Table 1: numbers</figcaption></figure>
<div class="ltx_para"><p class="ltx_p">Second paragraph.</p></div>
</section>
<section class="ltx_bibliography"><h2>References</h2><ul><li>Ref 1</li></ul></section>
</article><footer>copyright</footer></body></html>"""  # noqa: E501 - arXiv's HTML, one element per line however long


def test_arxiv_html_reads_title_abstract_sections_and_leaves_furniture_out() -> None:
    doc = html.parse(ARXIV_HTML)
    assert doc.title == "Deep Things: A Study"
    assert doc.authors == ["Jane Doe"]
    assert doc.meta["doi"] == "10.1234/abc"
    assert doc.abstract == ["We propose things with k=5 heads. It works well."]
    assert [(s.heading, s.paragraphs) for s in doc.body()] == [
        ("1 Introduction", ["Intro cites [3].", "Second paragraph."])]


def test_html_nested_thousands_deep_is_read_without_recursion() -> None:
    page = "<html><body><h1>Deep</h1>" + "<div>" * 5000 + "<p>A paragraph deep inside the page.</p>" + \
        "</div>" * 5000 + "</body></html>"
    doc = html.parse(page)
    assert doc.title == "Deep"
    assert [p for s in doc.body() for p in s.paragraphs] == ["A paragraph deep inside the page."]


def test_a_web_page_with_h2_sections_and_no_abstract_uses_its_first_paragraph() -> None:
    doc = html.parse("<html><head><title>t</title></head><body><article><h1>A Post</h1><p>First words.</p>"
                     "<h2>Part one</h2><p>More words.</p></article></body></html>")
    record = to_record(doc)
    assert record is not None
    layout = json.loads(record["layout"])
    assert [x[2] for x in layout] == ["Abstract", "Part one"]


def test_record_layout_has_one_segment_per_paragraph_and_sections_without_pages() -> None:
    doc = FullText(title="CoRF: Fast Things", abstract=["Abs one.", "Abs two."],
                   sections=[Section("2 Method", ["P one.", "P two."]), Section("References", ["[1] x"])])
    record = to_record(doc)
    assert record is not None
    text, layout = record["abstract"], record["layout"]
    assert [seg for _page, _section, seg in segments(text, layout)] == ["Abs one.", "Abs two.", "P one.", "P two."]
    assert abstract_of(text, layout) == "Abs one. Abs two."
    assert where_of(text, layout, "P two.") == (None, "2 Method", "P two.")
    assert record["label"] == "CoRF" == label_of("CoRF: Fast Things")


@pytest.mark.parametrize("page, section, shown", [
    (None, "4.2 Datasets", "§4.2 Datasets"), (None, "Abstract", "abstract"), (None, "", ""),
    (5, "4.2 Datasets", "p. 5, §4.2"), (1, "Abstract", "p. 1, abstract"),
])
def test_place_names_the_section_with_or_without_a_page(page: int | None, section: str, shown: str) -> None:
    assert place(page, section) == shown


def test_scanner_reads_markdown_and_html_files_as_full_texts(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(MARKER)
    (tmp_path / "b.html").write_text(ARXIV_HTML)
    for name in ("a.md", "b.html"):
        report = read_file(tmp_path / name, 10 * 2**20, 20_000)
        assert not report.problems
        [paper] = report.papers
        assert paper.layout and paper.title.startswith("Deep Things")
        assert "{" not in paper.text and "<" not in paper.text


def test_a_long_markdown_full_text_is_not_refused_as_a_long_abstract(tmp_path: Path) -> None:
    body = "\n\n".join(f"## Section {i}\n\n" + "This sentence is part of a long paper. " * 40 for i in range(30))
    (tmp_path / "long.md").write_text("# Long Paper\n\n## Abstract\n\nShort abstract.\n\n" + body)
    report = read_file(tmp_path / "long.md", 10 * 2**20, 20_000)
    assert not report.problems
    assert len(report.papers[0].text) > 20_000
