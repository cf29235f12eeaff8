"""The package as users install it: a wheel built from a clean copy of the tracked files, installed into a new
environment where the source tree is not importable, ingests papers and answers with citations. Editable
installs hide missing subpackages and data files; only this shows them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, write_jsonl

pytestmark = pytest.mark.slow


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    out = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    assert out.returncode == 0, f"{args}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the built wheel installed (its dependencies from this environment's site-packages through
    a plain path entry, so this environment's editable install of the checkout is not seen)."""
    tmp = tmp_path_factory.mktemp("wheel")
    files = _run(["git", "ls-files"], cwd=ROOT).stdout.split()
    copy = tmp / "src"
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
          str(copy)])
    wheel = next((tmp / "dist").glob("papers_qa-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("rag/answer/fitted/evidence.json", "rag/answer/fitted/retrieval.json", "rag/answer/fitted/lookup.json",
                   "rag/answer/fitted/grid.json", "rag/corpus/readers/pdf.py",
                   "rag/frontends/mcp_server.py", "ui/app.css", "eval/questions.jsonl"):
        assert needed in names, needed
    env_dir = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install", "--no-deps", "-q",
          str(wheel)])
    return env_dir


def test_the_installed_wheel_ingests_and_answers(installed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERS_", "PYTHON"))}
    env |= {"HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "PAPERS_DATA_DIR": str(tmp_path / "data"),
            "PAPERS_ENV_FILE": os.devnull}
    python, papers = str(installed / "bin" / "python"), str(installed / "bin" / "papers")
    where = _run([python, "-c", "import rag, eval, ui; print(rag.__file__, eval.__file__, ui.__file__)"], env=env,
                 cwd=tmp_path).stdout
    assert str(ROOT) not in where and str(installed) in where
    assert _run([papers, "--version"], env=env, cwd=tmp_path).stdout.startswith("papers 0.")
    assert "eval" in _run([python, "-m", "rag", "--help"], env=env, cwd=tmp_path).stdout
    corpus = write_jsonl(tmp_path / "papers.jsonl", [
        {"title": "Glacier soil microbes", "abstract": "We introduce Frostline Metagenomic Profiling (FMP), a "
         "sequencing protocol that tracks microbial turnover across thaw depth. FMP recovers 3,400 microbial "
         "genomes from twelve permafrost cores."},
        {"title": "Fungal networks", "abstract": "We describe Rootweave, an isotope tracing method that follows "
         "carbon moving through fungal networks. Rootweave shows that seedlings in shade receive 18% of their "
         "carbon from older trees."}])
    _run([papers, "ingest", str(corpus)], env=env, cwd=tmp_path)
    out = json.loads(_run([papers, "ask", "--json", "How many microbial genomes does FMP recover?"], env=env,
                          cwd=tmp_path).stdout)
    assert out["citations"][0]["label"] == "FMP" and "3,400" in out["lead"] and not out["abstained"]
    found = json.loads(_run([papers, "cite", "--json", "Frostline Metagenomic Profiling"], env=env,
                            cwd=tmp_path).stdout)  # strength from the fitted lookup model
    assert found["results"][0]["label"] == "FMP" and found["results"][0]["strength"] in ("strong", "weak"), found
    grid = json.loads(_run([papers, "grid", "--format", "json", "--column", "method"], env=env, cwd=tmp_path).stdout)
    assert grid["rows"] and grid["rows"][0]["cells"], grid  # the fitted grid model
