"""What handing the written chunks to the local index saves: the read-back an ingest used to do, timed on a store.

    python benchmarks/handoff.py DATA_DIR [--papers 1 50 500]

Times `read_chunks` (every chunk's text, metadata and vector from Chroma) for the whole store, as a fresh
ingest's index build read it back, and for the chunks of N papers, as an update that touched N papers did;
beside each, building the index from those rows (tokenising and indexing), measured in the same run. Since the
ingest hands its written chunks over, the read is no longer part of either.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("--papers", type=int, nargs="*", default=[1, 50, 500])
    args = ap.parse_args()
    import numpy as np

    from rag.index.snapshot import _index, read_chunks
    from rag.index.store import Store
    from rag.settings import load_settings

    store = Store.open(load_settings(data_dir=args.data_dir))
    catalog = store.catalog()
    ids = sorted(catalog)
    t = time.perf_counter()
    rows = read_chunks(store)
    read_all = time.perf_counter() - t
    t = time.perf_counter()
    _index(*rows[:4], np.concatenate(rows[4]), catalog)
    build_all = time.perf_counter() - t
    print(f"whole store: {len(rows[0]):,} chunks of {len(ids):,} papers: read back {read_all:.2f} s, "
          f"index build {build_all:.2f} s (the read was {read_all / (read_all + build_all):.0%} of a fresh build)")
    for n in args.papers:
        pick = ids[:: max(1, len(ids) // n)][:n]
        t = time.perf_counter()
        got = read_chunks(store, pick)
        print(f"{n} papers: read back {len(got[0]):,} chunks in {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
