"""Paper text built to attack whoever reads the answers, through the real front ends: `/v1` (plain and streamed),
the MCP tools and resources, and `papers ask --json`.

- Markdown that a client would act on (an image fetched with no click, a tag, a link), backslash-escaped
  forms included: `\\<img` and `\\![u](...)` came out of the first escaping as `\\\\<img` and `\\\\![`, a
  backslash followed by a real image.
- Terminal escape sequences (ESC, OSC 0 and OSC 8), the bidi override U+202E and the C1 CSI U+009B in titles and
  abstracts: `/v1` citations, MCP get_paper / list_papers / cite text and `--json` printed them as they were.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from rag.frontends.cli import app as cli_app
from rag.frontends.mcp_server import build_server
from rag.frontends.openai_api import create_app
from rag.service import Assistant
from rag.settings import Settings
from tests.conftest import ABSTRACTS, make_settings, write_jsonl

EVIL = "http://evil.example"
MD_PAPER = {
    "id": "hostile-md", "authors": "Eve Mallory",
    "title": f"Beacon paper \\![t]({EVIL}/title.png) [click]({EVIL}/title-link)",
    "url": f"{EVIL}/u\\![u]({EVIL}/url.png)",
    "abstract": f"We propose BeaconNet, a method for testing renderers. Plain image ![a]({EVIL}/plain.png) here. "
                f"Escaped image \\![b]({EVIL}/esc.png) here. Tag <img src={EVIL}/tag.png> and escaped tag "
                f"\\<img src={EVIL}/esctag.png>. A link [click]({EVIL}/link) too. BeaconNet improves accuracy by 3%.",
}
ESC_PAPER = {
    "id": "hostile-esc", "authors": "Mallory \u202eEve",
    "title": "Escape \x1b]0;PWNED\x07 title \u202eTXT.EXE \x9b2J",
    "abstract": "We propose EscNet, a method with terminal escapes \x1b[31mRED\x1b[0m and "
                f"\x1b]8;;{EVIL}/osc\x1b\\hyperlink\x1b]8;;\x1b\\ and a bidi override \u202egnp.exe and C1 "
                "\x9b31mcsi \x85 next. EscNet clears the screen \x1b[2J\x1b[H and improves accuracy by 7%.",
}
MD_Q, ESC_Q = "What does BeaconNet improve?", "What does EscNet improve?"
# What must never leave: C0 controls but newline and tab, DEL, C1 controls, bidi controls.
UNSHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def active(markdown: str) -> list[str]:
    """What a CommonMark client (raw HTML on) would fetch or follow in `markdown`: images, links, raw tags."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(markdown)
    return re.findall(r"<(?:img|a|script)\b[^>]*>", html)


def assert_inert(text: str, where: str) -> None:
    assert not UNSHOWN.search(text), (where, UNSHOWN.findall(text), text[:600])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, embedder) -> Settings:  # noqa: ANN001
    from rag.index.ingest import ingest

    root = tmp_path_factory.mktemp("hostile")
    write_jsonl(root / "hostile.jsonl", [MD_PAPER, ESC_PAPER, {"abstract": ABSTRACTS[0]}, {"abstract": ABSTRACTS[1]}])
    settings = make_settings(root / "data")
    report = ingest(settings, [root / "hostile.jsonl"], embedder=embedder, progress=False)
    assert report.total_papers == 4 and not report.problems
    return settings


@pytest.fixture(scope="module")
def v1(hostile: Settings) -> Iterator[object]:
    from starlette.testclient import TestClient

    with TestClient(create_app(hostile, Assistant(hostile))) as client:
        yield client


def ask_v1(client, question: str) -> tuple[dict, str, dict]:  # noqa: ANN001
    """(the plain reply, the streamed content, the streamed reply's last choice chunk)."""
    body = {"model": "papers", "messages": [{"role": "user", "content": question}]}
    plain = client.post("/v1/chat/completions", json=body).json()
    chunks = [json.loads(line[6:]) for line in client.post("/v1/chat/completions", json=body | {"stream": True})
              .text.splitlines() if line.startswith("data: {")]
    streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    return plain, streamed, chunks[-1]


def test_v1_message_content_renders_no_image_tag_or_link(v1) -> None:  # noqa: ANN001
    plain, streamed, _ = ask_v1(v1, MD_Q)
    content = plain["choices"][0]["message"]["content"]
    assert plain["citations"][0]["paper_id"] == "hostile-md" and "title.png" in content and "url.png" in content
    for where, text in (("content", content), ("stream", streamed)):
        assert active(text) == [], (where, active(text), text)
        assert "\\\\\\![u\\](" in text, text  # the url's `\![u](` shown literally


def test_v1_records_carry_no_control_or_bidi_characters(v1) -> None:  # noqa: ANN001
    plain, streamed, last = ask_v1(v1, ESC_Q)
    assert plain["citations"][0]["paper_id"] == "hostile-esc", plain["citations"]
    cited = plain["citations"][0]
    assert "PWNED" not in cited["title"] and "\ufffdTXT.EXE" in cited["title"] and "EscNet" in cited["quote"]
    for where, data in (("reply", plain), ("last chunk", last), ("stream", streamed)):
        assert_inert(json.dumps(data, ensure_ascii=False), where)


def test_mcp_resource_and_tools_are_inert(hostile: Settings) -> None:
    async def run() -> dict[str, object]:
        async with Client(build_server(hostile)) as client:
            out: dict[str, object] = {}
            for pid in ("hostile-md", "hostile-esc"):
                out[f"resource {pid}"] = (await client.read_resource(f"papers://{pid}")).contents[0].text
                out[f"get_paper {pid}"] = await client.call_tool("get_paper", {"paper_id": pid})
            out["resources"] = [r.model_dump_json() for r in (await client.list_resources()).resources]
            out["list_papers"] = await client.call_tool("list_papers", {})
            out["cite"] = await client.call_tool("cite", {"query": "EscNet terminal escapes", "k": 4})
            out["ask md"] = await client.call_tool("ask", {"question": MD_Q})
            out["ask esc"] = await client.call_tool("ask", {"question": ESC_Q})
            out["grid"] = await client.call_tool("grid", {"paper_ids": ["hostile-esc"], "columns": ["method"]})
            return out

    out = asyncio.run(run())
    resource = str(out["resource hostile-md"])
    assert "esctag.png" in resource and "url.png" in resource and active(resource) == [], resource
    assert "\\\\\\<img" in resource and "\\\\\\![u\\](" in resource, resource  # `\<img`, `\![u](` shown
    assert active(out["ask md"].content[0].text) == [], out["ask md"].content[0].text  # type: ignore[union-attr]
    for where, result in out.items():
        if isinstance(result, str | list):
            assert_inert(json.dumps(result, ensure_ascii=False), where)
            continue
        assert not result.is_error, (where, result)  # type: ignore[union-attr]
        assert_inert(result.content[0].text, f"{where} text")  # type: ignore[union-attr]
        assert_inert(json.dumps(result.structured_content, ensure_ascii=False), f"{where} structured")  # type: ignore[union-attr]
        text = result.content[0].text  # type: ignore[union-attr]
        assert active(text) == [], (where, active(text))  # a host may render a tool's text as Markdown
        if not where.startswith(("ask", "grid")):  # JSON text: the structured content, exactly
            assert json.loads(text) == result.structured_content, where  # type: ignore[union-attr]
    listed = out["list_papers"].structured_content["papers"]  # type: ignore[union-attr]
    assert any("\ufffdTXT.EXE" in p["title"] for p in listed), listed


@pytest.mark.parametrize("args", [["ask", "--json", ESC_Q], ["list", "--json"], ["cite", "--json", "EscNet"]])
def test_cli_json_is_inert(hostile: Settings, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERS_DATA_DIR", str(hostile.data_dir))
    monkeypatch.setenv("PAPERS_ENV_FILE", str(Path("/dev/null")))
    r = CliRunner().invoke(cli_app, args)
    assert r.exit_code == 0, r.output
    assert "EscNet" in r.stdout and "\ufffd" in r.stdout, r.stdout
    assert_inert(r.stdout, " ".join(args))
    for line in r.stdout.splitlines():
        json.loads(line)
