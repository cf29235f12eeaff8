"""The `papers` command: answer shape for scripts, stdin batches, citation lookup, listing, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag.frontends.cli import app
from tests.conftest import ROOT

ANSWER_FIELDS = {"question", "answer", "abstained", "mode", "citations", "retrieved", "timings_ms"}
CITATION_FIELDS = {"n", "paper_id", "label", "source", "position", "quote"}


@pytest.fixture()
def cli(corpus_settings, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PAPERS_DATA_DIR", str(corpus_settings.data_dir))
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None):
        return runner.invoke(app, list(args), input=stdin)
    return run


def test_ask_json_shape_and_recmem(cli) -> None:
    r = cli("ask", "--json", "Over how many test steps does RecMem stay stable?")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert set(d) >= ANSWER_FIELDS and d["mode"] == "extractive" and d["abstained"] is False
    assert all(set(c) >= CITATION_FIELDS for c in d["citations"])
    assert d["citations"][0]["label"] == "RecMem" and "1,800" in d["answer"]
    assert all({"paper_id", "label", "score"} <= set(r) for r in d["retrieved"])
    assert {"embed_ms", "total_ms"} <= set(d["timings_ms"])


def test_ask_text_output(cli) -> None:
    r = cli("ask", "Over how many test steps does RecMem stay stable?")
    assert r.exit_code == 0 and "Sources:" in r.stdout and "[1] RecMem" in r.stdout


def test_ask_reads_questions_from_stdin(cli) -> None:
    r = cli("ask", "-", "--json", stdin="What speedup does CoRF report?\n\nWhich paper proposes PotARCin?\n")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [d["citations"][0]["label"] for d in lines] == ["CoRF", "PotARCin"]


def test_cite_dynamic_motion_slider(cli) -> None:
    r = cli("cite", "--json", "Dynamic Motion Slider")
    d = json.loads(r.stdout)
    top = d["results"][0]
    assert top["label"] == "DyMoS" and "Dynamic Motion Slider" in top["sentence"]
    assert top["paper_id"] in top["reference"]
    assert top["source"].endswith("neurips2026_list_000.txt") and top["position"] == 5  # the image-to-video paper
    text = cli("cite", "Dynamic Motion Slider").stdout
    assert text.startswith("1. DyMoS") and "ref:" in text


def test_cite_reads_queries_from_stdin(cli) -> None:
    r = cli("cite", "-", "--json", "--k", "3",
            stdin="Dynamic Motion Slider\n\nconfidence-filtered beam search\n")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [d["query"] for d in lines] == ["Dynamic Motion Slider", "confidence-filtered beam search"]
    assert [d["results"][0]["label"] for d in lines] == ["DyMoS", "CF-Beam"]
    assert all(h["strength"] in ("strong", "weak", "none") and len(d["results"]) == 3
               for d in lines for h in d["results"])
    assert lines[0]["results"][0]["strength"] == "strong"
    text = cli("cite", "-", stdin="Dynamic Motion Slider\nCF-Beam\n").stdout
    assert text.count("Q: ") == 2 and "strong match" in text


def test_list_every_paper(cli) -> None:
    lines = [json.loads(x) for x in cli("list", "--json").stdout.splitlines()]
    assert len(lines) == 38 and {"paper_id", "label", "source", "position", "abstract"} <= set(lines[0])


@pytest.mark.parametrize("question,message", [("   ", "empty question"), ("x" * 20_000, "question too long"),
                                              ("?!?!", "no words")])
def test_bad_questions_are_clear_errors(cli, question: str, message: str) -> None:
    r = cli("ask", question)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_missing_index_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERS_DATA_DIR", str(tmp_path / "nothing"))
    r = CliRunner().invoke(app, ["ask", "anything?"])
    assert r.exit_code == 1 and "run `papers ingest` first" in r.output


def test_remove_reports_like_ingest_and_names_unknown_ids(tmp_path: Path, tiny_corpus: Path, counting_embedder,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.index.ingest import ingest
    from tests.conftest import make_settings

    s = make_settings(tmp_path / "data")
    ingest(s, [tiny_corpus], embedder=counting_embedder, progress=False)
    monkeypatch.setenv("PAPERS_DATA_DIR", str(s.data_dir))
    monkeypatch.setenv("PAPERS_ENV_FILE", os.devnull)
    listed = [json.loads(x) for x in CliRunner().invoke(app, ["list", "--json"]).stdout.splitlines()]
    r = CliRunner().invoke(app, ["remove", listed[0]["paper_id"]])
    assert r.exit_code == 0 and "1 removed" in r.stdout and f"{len(listed) - 1} papers indexed" in r.stdout, r.output
    left = CliRunner().invoke(app, ["list", "--json"]).stdout.splitlines()
    assert len(left) == len(listed) - 1 and listed[0]["paper_id"] not in "".join(left)
    r = CliRunner().invoke(app, ["remove", "nope"])
    assert r.exit_code == 2 and "no indexed paper has id 'nope'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["remove", "--undo", "nope"])
    assert r.exit_code == 2 and "not removed with `papers remove`" in r.output


def test_bad_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERS_TOP_K", "-3")
    r = CliRunner().invoke(app, ["ask", "anything?"])
    assert r.exit_code == 2 and "PAPERS_TOP_K" in r.output


@pytest.mark.slow
def test_installed_console_script(corpus_settings) -> None:
    """The real `papers` entry point in a fresh process, as users and scripts call it."""
    exe = Path(sys.executable).with_name("papers")
    env = dict(os.environ, PAPERS_DATA_DIR=str(corpus_settings.data_dir))
    out = subprocess.run([str(exe), "ask", "--json", "Over how many test steps does RecMem stay stable?"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["citations"][0]["label"] == "RecMem" and "1,800" in d["answer"]
