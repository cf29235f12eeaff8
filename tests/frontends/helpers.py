"""Running `papers` commands as separate processes against a test index, and waiting for their servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from rag.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def papers_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment of a `papers` process that uses this test index and ignores any .env."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PAPERS_DATA_DIR=str(settings.data_dir), PAPERS_ENV_FILE=os.devnull,
               HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    env.update(extra)
    return env


def papers_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rag.frontends.cli", *args]


def seed_questions(n: int = 10) -> list[str]:
    """n questions spread over the hand-written set (every type, the unanswerable ones included)."""
    rows = [json.loads(x) for x in (ROOT / "eval/questions.jsonl").read_text(encoding="utf-8").splitlines() if x]
    step = max(1, len(rows) // n)
    return [r["question"] for r in rows[::step][:n]]


def start(args: list[str], env: dict[str, str], url: str, log: Path, headers: dict[str, str] | None = None,
          timeout: float = 180, new_session: bool = False) -> subprocess.Popen:
    """Start a server process and wait until `url` answers (any HTTP status counts as up)."""
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=open(log, "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            start_new_session=new_session)
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=2).read()
            return proc
        except urllib.error.HTTPError:
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc)
                raise RuntimeError(f"{args} did not start:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.3)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
