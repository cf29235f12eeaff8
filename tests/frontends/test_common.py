"""rag/frontends/common.py: the reference list every integration appends, and Markdown neutralising."""

from __future__ import annotations

import pytest

from rag.frontends.common import MarkdownSafeStream, markdown_safe, with_references
from rag.schema import Answer, Citation

HOSTILE = "Ignore this ![pixel](http://tracker.example/p.png) and <img src=x onerror=alert(1)> <script>x</script>."


def test_reference_list_follows_the_answer() -> None:
    answer = Answer(question="q", answer="A [1] and B [2].", abstained=False, mode="extractive",
                    citations=[Citation(1, "id1", "A", "f.txt", 1, "quote a", "A. f.txt#1. id id1"),
                               Citation(2, "id2", "B", "f.txt", 2, "quote b", "")])
    text = with_references(answer)
    assert text.startswith("A [1] and B [2].\n\nReferences:\n")
    assert text.splitlines()[-2:] == ["[1] A. f.txt#1. id id1 — “quote a”", "[2] B — “quote b”"]
    abstained = Answer(question="q", answer="The indexed abstracts don't say this.", abstained=True, mode="x")
    assert with_references(abstained) == abstained.answer


def test_markdown_that_a_client_would_act_on_is_neutralised() -> None:
    safe = markdown_safe(HOSTILE)
    assert "![" not in safe.replace("\\![", "") and "<img" not in safe.replace("\\<img", "")
    assert "<script" not in safe.replace("\\<script", "")
    assert safe.replace("\\", "") == HOSTILE  # only backslashes were added
    assert markdown_safe("p < 0.05, 3 > 2, wow!") == "p < 0.05, 3 > 2, wow!"


def test_streamed_pieces_are_neutralised_across_boundaries() -> None:
    for cut in range(1, len(HOSTILE)):
        for step in (1, 3, 7):
            pieces = [HOSTILE[:cut]] + [HOSTILE[i:i + step] for i in range(cut, len(HOSTILE), step)]
            stream = MarkdownSafeStream()
            assert "".join(stream.feed(p) for p in pieces) + stream.flush() == markdown_safe(HOSTILE)


def test_a_paper_resource_is_inert_markdown() -> None:
    """An image or tag inside an abstract reaches a Markdown-rendering MCP client escaped (nothing fetched)."""
    from rag.frontends.mcp_server import paper_markdown
    from rag.index.store import CatalogEntry

    entry = CatalogEntry(paper_id="p1", label="X", source="a.jsonl", position=1, content_hash="h", n_chunks=1,
                         chunking="c", source_key="/a.jsonl", title="T",
                         text="We study X. ![beacon](http://evil.example/x.png) <img src=http://evil.example/y.png>")
    shown = paper_markdown(entry)
    assert "\\![beacon\\](" in shown and "\\<img" in shown and "![beacon]" not in shown.replace("\\![", "")


# Paper text that a Markdown renderer would turn into an image (fetched with no click), a tag, or a link. Each
# backslash-escaped form is what broke the first escaping: `\\<img` came out as `\\\\<img`, a backslash then a tag.
HOSTILE_MARKDOWN = [
    "plain ![a](http://evil.example/plain.png) image",
    "escaped \\![b](http://evil.example/esc.png) image",
    "doubly escaped \\\\![b](http://evil.example/esc2.png) image",
    "tag <img src=http://evil.example/tag.png> here",
    "escaped tag \\<img src=http://evil.example/esctag.png> here",
    "url http://evil.example/u\\![u](http://evil.example/url.png)",
    "a link [click](http://evil.example/link) and \\[escaped](http://evil.example/link2)",
    "an autolink <http://evil.example/auto> and <a@evil.example>",
    "[r]: http://evil.example/def.png\n\n![c][r] and [r] and [c][r]",
    "  [r]: http://evil.example/def2.png 'title'\n![r][]",
    "\\[r]: http://evil.example/def3.png\n\n[r]: http://evil.example/def4.png\n[r]",
    "<script>alert(1)</script> <!-- c --> <![CDATA[x]]> <?php ?> </div>",
    "![nested [brackets](http://evil.example/n)](http://evil.example/n.png)",
    "[x](<http://evil.example/angle>) [y]( http://evil.example/space ) [z][ r ]\n\n[ r ]: http://evil.example/z",
    "a line ending in a backslash\\\n![i](http://evil.example/br.png) \\",
]


def _rendered(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(text)  # CommonMark with raw HTML on, as chat clients render


def _active(html: str) -> list[str]:
    """The tags in rendered HTML that fetch or link (an image, a link, any raw HTML tag passed through)."""
    import re

    return [t for t in re.findall(r"<(/?[A-Za-z][^\s>/]*)", html) if t.lower().lstrip("/") not in
            {"p", "br", "code", "pre", "em", "strong", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
             "blockquote", "hr"}]


def _first_escaping(text: str) -> str:
    """The escaping this replaced (`![` and `<tag` only), to show each input defeats it."""
    import re

    return re.sub(r"!\[|<(?=[A-Za-z/!?])", lambda m: "\\" + m.group(0), text)


@pytest.mark.parametrize("text", HOSTILE_MARKDOWN)
def test_markdown_safe_leaves_nothing_active(text: str) -> None:
    assert _active(_rendered(text)) or _active(_rendered(_first_escaping(text))), "the premise: it is hostile"
    shown = markdown_safe(text)
    assert _active(_rendered(shown)) == [], (shown, _rendered(shown))
    assert _active(_rendered(f"# {shown}\n\n- {shown}\n\n{shown}")) == []  # as the MCP resource lays it out


def test_markdown_safe_on_random_markup() -> None:
    """Any input: strings drawn from the characters that make Markdown links, images and tags never render one."""
    import random

    pieces = ["\\", "!", "[", "]", "(", ")", "<", ">", ":", " ", "\n", "img src=x", "a", "http://e.x/p", "'", "`",
              "1", "- ", "1. ", "x [1]", "[1]: http://e.x/d\n", "[1]"]
    rng = random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 24)))
        shown = markdown_safe(text)
        assert _active(_rendered(shown)) == [], (text, shown, _rendered(shown))
        stream, step = MarkdownSafeStream(), rng.randint(1, 4)
        streamed = "".join(stream.feed(text[i:i + step]) for i in range(0, len(text), step)) + stream.flush()
        assert streamed == shown, (text, step)


def test_markdown_safe_keeps_plain_text_and_citations_readable() -> None:
    text = ("1,800 test steps [1]\nRecMem [1]: “It stays stable.”\nCoRF [2, 3]: “5% (p < 0.05)” -> wow! [1][2]"
            "\n\nReferences:\n[1] A — “q”\n[2] B — “r”")
    assert markdown_safe(text) == text
    # ... but a citation marker where a link definition can start is escaped (a line start, a quote, a list)
    for definition in ("[1]: http://evil.example/d", "> [1]: http://evil.example/d", "- [1]: http://evil.example/d",
                       "2. [1]: http://evil.example/d", "x\\ [1]: http://evil.example/d"):
        shown = markdown_safe(f"{definition}\n\nRecMem [1] and ![x][1]")
        assert "[1\\]:" in shown and _active(_rendered(shown)) == [], shown


@pytest.mark.parametrize("text", HOSTILE_MARKDOWN)
def test_hostile_markdown_streamed_in_pieces_is_escaped_as_a_whole(text: str) -> None:
    for step in (1, 2, 5):
        stream = MarkdownSafeStream()
        pieces = [text[i:i + step] for i in range(0, len(text), step)]
        assert "".join(stream.feed(p) for p in pieces) + stream.flush() == markdown_safe(text)


@pytest.mark.parametrize("url, shown", [
    ("https://x.azure.com/v1?api-key=S3CRET&deployment=a", "https://x.azure.com/v1?api-key=***&deployment=***"),
    ("http://u:p@h/v1?sig=abc", "http://***@h/v1?sig=***"),
    ("http://127.0.0.1:1/v1?api%2Dkey=PCTSECRET&jwt=JWTSECRET", "http://127.0.0.1:1/v1?api%2Dkey=***&jwt=***"),
    ("http://h/v1?JWTSECRET", "http://h/v1?***"),                        # a bare value
    ("http://h/v1?a=1;b=SECRET", "http://h/v1?a=***;b=***"),             # ; separates too
    ("http://h/v1#SECRET", "http://h/v1#***"),                           # the fragment
    ("http://h/v1?x=SECRET#FRAG", "http://h/v1?x=***#***"),
    ("HTTPS://H/v1?%6Bey=SECRET", "HTTPS://H/v1?%6Bey=***"),            # any name, any encoding, any case
    ("http://u:p@ss@h/v1", "http://***@h/v1"),                          # a raw @ in the password
    ("got 'http://h/v1?k=SECRET' back", "got 'http://h/v1?k=***' back"),  # repr quotes stay
    ("<http://h/v1?k=SECRET>.", "<http://h/v1?k=***>."),
    ("http://h/?next=http://i/?token=SECRET&z=1", "http://h/?next=***&z=***"),
    ("the LLM at http://127.0.0.1:8080/v1 is unreachable", "the LLM at http://127.0.0.1:8080/v1 is unreachable"),
    ("model=gpt-4o and mail alice@example.org", "model=gpt-4o and mail alice@example.org"),
])
def test_every_query_value_and_fragment_is_redacted(url: str, shown: str) -> None:
    from rag.settings import redact

    assert redact(url) == shown
