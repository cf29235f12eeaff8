"""The soak harness (`benchmarks/soak.py`, run in full by `make soak`) on a short run: it starts `papers ui` and
`papers serve` as their own processes, 6 clients chat for a minute with no error, and the unauthenticated
100 MB bodies are refused without the servers' memory moving.

Memory flatness is not asserted here: one minute says nothing about a leak. `make soak` judges it over
2 + 10 minutes with 30 clients (figures in benchmarks/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag.settings import Settings
from tests.conftest import ROOT


@pytest.mark.slow
def test_a_short_soak_has_no_error_and_refuses_unauthenticated_bodies(corpus_settings: Settings,
                                                                       tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "soak.py"), "--clients", "6", "--warmup", "0.5",
                          "--warm-sessions", "0", "--minutes", "0.5", "--data-dir", str(corpus_settings.data_dir),
                          "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert out.exists(), run.stdout + run.stderr
    result = json.loads(out.read_text())
    assert result["errors"] == 0, result["first_errors"]
    assert set(result["calls"]) == {"ui chat", "ui ask", "ui lookup", "v1", "v1 stream"}, result["calls"]
    assert all(n > 0 for n in result["calls"].values()), result["calls"]
    for name, bodies in result["bodies"].items():
        assert set(bodies["replies"]) <= {"401", "413"}, (name, bodies)
        assert bodies["rss_peak_mb"] - bodies["rss_before_mb"] < 10, (name, bodies)
    assert all(len(samples) >= 6 for samples in result["samples_mb"].values()), result["samples_mb"]
    assert "errors 0 (goal 0)" in run.stdout and "papers serve: warm-up" in run.stdout, run.stdout
