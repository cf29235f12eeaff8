"""A chat exported as a Markdown file: every question, its answer and the answer's numbered references.

Answers quote paper text, and paper text is untrusted: in the file it is escaped for Markdown and for HTML, so a
Markdown viewer shows it literally (no link, image, emphasis or tag can come from a paper).
"""

from __future__ import annotations

import re
import tempfile
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rag.schema import Answer, Citation
from rag.text import inert_text

EXPORT_DIR = "papers-ui-exports"  # under the system temp dir; Gradio serves the file from its own cache
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~$:])")  # links, images, emphasis, code, math, tables
_LINE_START = re.compile(r"^(\s*)([-+>=]|\d+[.)])")  # what starts a list, a quote or a heading underline
_HTML = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;"}


def md_escape(text: object) -> str:
    """Text for a Markdown file, shown literally: HTML characters as entities, Markdown punctuation escaped."""
    out = _MD_SPECIAL.sub(r"\\\1", inert_text(text if text is not None else "").translate(_HTML))
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2) if len(m.group(2)) == 1 else
                           m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], out)


def chat_markdown(turns: list[tuple[Answer, str | None]], reference: Callable[[Citation], str],
                  when: datetime | None = None) -> str:
    """The chat as Markdown: one section per answer (question, answer text, references)."""
    stamp = (when or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Paper Q&A chat", "", f"Exported {stamp}.", ""]
    for i, (a, shown) in enumerate(turns, 1):
        out += [f"## {i}. {md_escape(a.question)}", ""]
        text = (a.answer if shown is None else shown).strip()
        out += [md_escape(line) + "  " for line in text.split("\n") if line.strip()]
        if a.abstained:
            out += ["", "*No answer was found in the indexed papers.*"]
        if a.citations:
            out += ["", "**References**", ""]
            out += [f"{c.n}\\. {md_escape(reference(c))}" for c in a.citations]
        out.append("")
    if not turns:
        out += ["No questions were asked yet.", ""]
    return "\n".join(out)


def write_export(markdown: str) -> str:
    """The Markdown in a new file (one per export, so two sessions never share one); its path."""
    folder = Path(tempfile.gettempdir()) / EXPORT_DIR / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "paper-chat.md"
    path.write_text(markdown, encoding="utf-8")
    return str(path)
