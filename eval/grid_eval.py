"""Measure the papers grid on the hand labels of the seed papers (eval/labels/grid_labels.jsonl), which no
fitted constant has seen: 38 papers x 5 default columns, each labelled with the sentences (indexes into the
abstract's sentences) that state it, or "not stated".

    python eval/grid_eval.py --data DATA_DIR   # a data dir whose index holds corpus/

Figures: cell right = the grid quotes one of the labelled sentences, over cells labelled as stated;
not stated right = the grid's stated / not-stated call matches the label, over all cells; also per column.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LABELS = ROOT / "eval" / "labels" / "grid_labels.jsonl"


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(labels: list[dict[str, Any]], cells: dict[tuple[str, str], Any]) -> dict[str, Any]:
    """Cell right and not-stated right, overall and per column, of grid cells keyed by (paper id, column)."""
    out: dict[str, Any] = {"per_column": {}}
    tot = {"right": 0, "stated": 0, "ns_right": 0, "cells": 0}
    for column in dict.fromkeys(d["column"] for d in labels):
        c = {"right": 0, "stated": 0, "ns_right": 0, "cells": 0}
        for d in (x for x in labels if x["column"] == column):
            cell = cells[(d["paper_id"], column)]
            c["cells"] += 1
            c["ns_right"] += cell.not_stated == d["not_stated"]
            if not d["not_stated"]:
                c["stated"] += 1
                c["right"] += (not cell.not_stated) and cell.sentence in d["sentences"]
        for k in tot:
            tot[k] += c[k]
        out["per_column"][column] = {"cell_right": round(c["right"] / c["stated"], 4) if c["stated"] else None,
                                     "not_stated_right": round(c["ns_right"] / c["cells"], 4),
                                     "stated_cells": c["stated"], "cells": c["cells"]}
    out["cell_right"] = round(tot["right"] / tot["stated"], 4)
    out["not_stated_right"] = round(tot["ns_right"] / tot["cells"], 4)
    out["stated_cells"], out["cells"] = tot["stated"], tot["cells"]
    return out


def evaluate(data_dir: Path | None = None, assistant: Any = None, model_text: str | None = None,
             labels_path: Path = LABELS) -> dict[str, Any]:
    """Build the default grid over the labelled papers and score it (`model_text`: a grid.json other than the
    shipped one, as the fitting script measures the model it just fitted)."""
    from rag.answer import grid as grid_mod

    if assistant is None:
        from rag.service import Assistant
        from rag.settings import load_settings

        assistant = Assistant(load_settings(_env_file=None, data_dir=data_dir))
    labels = load_labels(labels_path)
    ids = list(dict.fromkeys(d["paper_id"] for d in labels))
    columns = list(dict.fromkeys(d["column"] for d in labels))
    if model_text is None:
        g = assistant.grid(columns, ids)
        cells = {(c.paper_id, c.column): c for row in g.rows for c in row.cells}
    else:
        model = grid_mod.load_model(model_text)
        cells = {}
        for pid in ids:
            e = assistant.paper(pid)
            row = grid_mod.GridPaper(pid, e.label, e.title, grid_mod.paper_sentences(e.text))
            for col in columns:
                cells[(pid, col)] = grid_mod.default_cell(col, row, model=model)
    return score(labels, cells)


def print_figures(result: dict[str, Any]) -> None:
    print(f"seed grid labels: cell right {result['cell_right']:.3f} ({result['stated_cells']} stated cells), "
          f"not stated right {result['not_stated_right']:.3f} ({result['cells']} cells)")
    for column, m in result["per_column"].items():
        cr = "n/a" if m["cell_right"] is None else f"{m['cell_right']:.3f}"
        print(f"  {column:<11} cell right {cr} ({m['stated_cells']})  not stated right {m['not_stated_right']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="data dir whose index holds corpus/")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = evaluate(args.data)
    print(json.dumps(result, indent=1)) if args.json else print_figures(result)


if __name__ == "__main__":
    main()
