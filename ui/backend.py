"""What every tab of the UI shares: the assistant (opened on first use), the indexed papers of the index version
answers come from now, the message a failure shows in place of a traceback, and the shape of an event listener
that several tabs attach (`Listener`)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

from gradio.blocks import Block

from rag.corpus.sections import abstract_of
from rag.errors import PapersError, QuestionError
from rag.index.store import CatalogEntry
from rag.schema import Answer
from rag.service import Assistant, AssistantHolder
from rag.settings import Settings
from ui.strength import Strength, Strengths

log = logging.getLogger(__name__)

UPLOAD_DIR = "uploads"  # under PAPERS_DATA_DIR: uploaded files are kept there and ingested like any corpus path
FIRST_WORDS = 8  # words of the abstract that name an untitled paper in the scope picker


class Listener(TypedDict):
    """An event listener's arguments, given to several events as `event(**listener)` or `.then(**listener)`."""

    fn: Callable[..., Any]
    inputs: Sequence[Block]
    outputs: Block | Sequence[Block]
    api_visibility: Literal["public", "private", "undocumented"]


def first_words(text: str, n: int = FIRST_WORDS) -> str:
    """The opening words of an abstract, to tell apart papers that have no title."""
    words = (text or "").split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def choice_label(e: CatalogEntry) -> str:
    """A paper as the scope picker lists it: its label and its title, or the first words of its abstract."""
    title = getattr(e, "title", "") or ""
    if title and title != e.label:
        return f"{e.label} — {title}"
    opening = first_words(abstract_of(e.text, getattr(e, "layout", "") or ""))
    return f"{e.label} — {opening}" if opening else e.label


@dataclass
class Catalog:
    """The indexed papers of one index version, and that version's key (what a session last drew)."""

    version: str
    papers: list[CatalogEntry]

    def choices(self) -> list[tuple[str, str]]:
        return [(choice_label(e), e.paper_id) for e in self.papers]


class Backend:
    """The shared assistant (opened on first use, so the UI starts and says why even without an index) and what
    the UI's sessions share besides it."""

    def __init__(self, settings: Settings, assistant: Assistant | None = None) -> None:
        self.settings = settings
        self.holder = AssistantHolder(settings, assistant)
        self.ingest_lock = threading.Lock()  # one upload ingest at a time per process
        self._catalog_lock = threading.Lock()
        self._catalog: Catalog | None = None
        self._catalog_index: object = None  # the local index version the catalog was read from
        self._versions = 0
        self._strengths = Strengths()

    def assistant(self) -> Assistant:
        return self.holder.get()

    def catalog(self) -> Catalog:
        """The papers of the index version questions are answered from now, read once per version.

        Every session's header, scope picker and Papers table are drawn from this, so a paper uploaded in one
        browser shows in every other one (and after a reload), not only in the tab that uploaded it.
        """
        try:
            assistant = self.assistant()
            index = assistant.retriever.local_index
        except PapersError:
            return Catalog("none", [])
        with self._catalog_lock:
            if self._catalog is None or self._catalog_index is not index:
                self._versions += 1
                self._catalog = Catalog(str(self._versions), assistant.papers())
                self._catalog_index = index
            return self._catalog

    def papers(self) -> list[CatalogEntry]:
        return self.catalog().papers

    @property
    def roots(self) -> tuple[Path, ...]:
        """The folders papers are read from (the corpus paths and the upload folder), as absolute paths."""
        paths = [*self.settings.corpus_paths, Path(self.settings.data_dir) / UPLOAD_DIR]
        return tuple(Path(os.path.abspath(p)) for p in paths)

    def strengths(self, a: Answer) -> dict[str, Strength]:
        """How strongly each paper the answer retrieved carries what was searched ({} without an index)."""
        try:
            assistant = self.assistant()
        except PapersError:
            return {}
        ids = [r.paper_id for r in a.retrieved] or [c.paper_id for c in a.citations]
        return self._strengths.of(assistant, self.catalog().version, a.rewritten or a.question, ids)

    def paper_choices(self) -> list[tuple[str, str]]:
        return self.catalog().choices()

    def entries(self, paper_ids: list[str]) -> dict[str, CatalogEntry]:
        try:
            return self.assistant().retriever.store.get_papers(list(dict.fromkeys(paper_ids)))
        except Exception:  # the evidence falls back to what the answer carries
            log.exception("could not read paper records")
            return {}


def friendly(error: Exception) -> str:
    """What a failed question, lookup or paper view says in the page (never a traceback)."""
    if isinstance(error, QuestionError):
        return f"⚠ {error}"
    if isinstance(error, PapersError):
        return f"⚠ The paper index is not available: {error}"
    log.exception("unexpected error in the UI")
    return f"⚠ Something went wrong ({type(error).__name__}). Please try again."
