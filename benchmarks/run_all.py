"""Every benchmark in one go. `--small` (what `make bench` runs) keeps to sizes that take a few minutes.

    python benchmarks/run_all.py --small      # ingest, query (embedded and server), 1k-chunk scale, cold start,
                                              # retrieval modes, citation-check cost
    python benchmarks/run_all.py              # also 10k and 100k chunks (the first run embeds ~100k texts) and
                                              # the SciFact quality guard (embeds ~43k chunks with two runtimes)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str) -> None:
    print(f"\n## {script} {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, str(HERE / script), *args], check=True, cwd=HERE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args()
    run("ingest_bench.py", "--papers", "200" if args.small else "500")
    # Real text (../shared/scifact): ingest with the chosen runtime against both encode floors; the quality
    # guard embeds all ~43k SciFact chunks twice (an hour or more on 2 cores), so only the full run does it.
    if (HERE.parent.parent / "shared" / "scifact").exists() or Path("/work/shared/scifact").exists():
        run("ingest_scifact.py", "speed", "--papers", "200" if args.small else "1000")
        if not args.small:
            run("ingest_scifact.py", "guard")
    run("query_bench.py", "--rounds", "2" if args.small else "3")
    run("scale.py", "--sizes", *(["1000"] if args.small else ["1000", "10000", "100000"]))
    run("cold_start.py", "--runs", "3" if args.small else "5")
    run("retrieval_modes.py")
    run("check_cost.py")


if __name__ == "__main__":
    main()
