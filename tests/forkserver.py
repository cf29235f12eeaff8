"""Real `papers` processes without paying the library imports each time: a server process imports torch,
sentence-transformers and llama-index once, then forks one child per command.

A child is a separate process running `rag.frontends.cli.main()` with its own argv and environment, exactly what the
`papers` console script runs, so it can be really SIGKILLed; only the ~10-30 s of imports it would spend on
this machine are shared, and the embedding model's weights. The server never opens a Chroma client or runs
the model before forking (nothing multi-threaded is started in it), and torch is limited to one thread, so
forked children are safe.

Protocol (one JSON object per line on stdin, one reply per line on stdout):
  {"cli": [args...], "env": {...}, "cwd": "...", "out": "file"}  -> {"signal": n | null, "code": n | null}
  {"call": "module:function", "kwargs": {...}, "out": "file"}     -> the same; the function's JSON in `out`
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD_TIMEOUT_S = 240  # a child that hangs is ended by SIGALRM (reported as signal 14)


def _child(cmd: dict[str, Any]) -> None:
    signal_mod = __import__("signal")
    signal_mod.alarm(CHILD_TIMEOUT_S)
    out = os.open(cmd["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.update(cmd.get("env") or {})
    if cmd.get("cwd"):
        os.chdir(cmd["cwd"])
    code = 0
    try:
        if "cli" in cmd:
            from rag.frontends.cli import main

            sys.argv = ["papers", *cmd["cli"]]
            main()
        else:
            import importlib

            module, _, name = cmd["call"].partition(":")
            result = getattr(importlib.import_module(module), name)(**cmd.get("kwargs", {}))
            Path(cmd["result"]).write_text(json.dumps(result))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import torch

    torch.set_num_threads(1)
    import bm25s  # noqa: F401
    import chromadb  # noqa: F401  (imported only: no client, no threads)
    import llama_index.core  # noqa: F401
    import llama_index.embeddings.huggingface  # noqa: F401
    import llama_index.vector_stores.chroma  # noqa: F401
    import onnxruntime  # noqa: F401
    import sentence_transformers  # noqa: F401

    import rag.frontends.cli  # noqa: F401
    import rag.index.ingest  # noqa: F401
    from rag.index.embed import embedder_for
    from rag.settings import load_settings

    embedder_for(load_settings(_env_file=None))  # weights loaded once (no inference runs before a fork)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(cmd)
        _, status = os.waitpid(pid, 0)
        reply = {"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                 "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}
        print(json.dumps(reply), flush=True)


class ForkServer:
    """Start with `with ForkServer(root) as fs:`; `fs.run(...)` runs one command in a fresh child."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.log = log
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> ForkServer:
        env = dict(os.environ, PYTHONPATH=str(self.root))
        self.proc = subprocess.Popen([sys.executable, "-c", "from tests.forkserver import serve; serve()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log, "w"),  # noqa: SIM115
                                     text=True, cwd=self.root, env=env)
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"fork server did not start:\n{self.log.read_text()[-3000:]}")
        return self

    def run(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"fork server died:\n{self.log.read_text()[-3000:]}")
        return json.loads(reply)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
