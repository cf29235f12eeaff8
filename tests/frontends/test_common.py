"""rag/frontends/common.py: the reference list every integration appends, and Markdown neutralising."""

from __future__ import annotations

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
    assert "\\![beacon]" in shown and "\\<img" in shown and "![beacon]" not in shown.replace("\\![", "")


def test_query_string_secrets_are_redacted() -> None:
    from rag.settings import redact

    assert redact("https://x.azure.com/v1?api-key=S3CRET&deployment=a") == "https://x.azure.com/v1?api-key=***&deployment=a"
    assert redact("http://u:p@h/v1?sig=abc") == "http://***@h/v1?sig=***"
    assert redact("model=gpt-4o") == "model=gpt-4o"
