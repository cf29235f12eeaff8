"""Escaping of untrusted text (paper titles, abstracts, questions) for the UI's HTML, in one place.

Paper text reaches the page through Gradio's HTML components, which also render Markdown and template syntax,
so `html.escape` is not enough: every character HTML or Markdown gives a meaning to becomes a numeric entity, in
one pass (escaping twice would show the first pass's entities as text).
"""

from __future__ import annotations

import html

# Characters HTML or Markdown give a meaning to, as numeric entities: paper text can never become a tag, a link,
# emphasis, code, math or a template placeholder, wherever it is shown.
_ESCAPES = {ord(ch): f"&#{ord(ch)};" for ch in "&<>\"'[]()*_`$\\{}~|#!:"}
_TEMPLATE_ESCAPES = {ord(ch): f"&#{ord(ch)};" for ch in "${}"}


def esc(text: object) -> str:
    """Untrusted text for HTML text or a quoted attribute: shown literally, never interpreted."""
    return str(text if text is not None else "").translate(_ESCAPES)


def esc_plain(text: object) -> str:
    """Text for an HTML element that renders no Markdown (the status line): tags and template syntax only."""
    return html.escape(str(text if text is not None else ""), quote=False).translate(_TEMPLATE_ESCAPES)
