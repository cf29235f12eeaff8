"""Constants fitted by the scripts in eval/ (`eval/fit_evidence.py` writes evidence.json, `eval/fit_retrieval.py`
writes retrieval.json, `eval/fit_grid.py` writes grid.json, `eval/fit_lookup.py` writes lookup.json,
`eval/fit_answer.py` answer.json). They are package data: read through importlib.resources, so an installed wheel
finds them; the fit scripts write them here, in the source tree."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

EVIDENCE = "evidence.json"
RETRIEVAL = "retrieval.json"
GRID = "grid.json"
LOOKUP = "lookup.json"
ANSWER = "answer.json"


def read(name: str) -> str:
    """The text of a shipped fitted file (an installed package's data or the checkout's file)."""
    return (files(__name__) / name).read_text(encoding="utf-8")


def source_path(name: str) -> Path:
    """Where a fit script writes `name`: beside this module in the source tree."""
    return Path(__file__).resolve().parent / name
