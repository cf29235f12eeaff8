"""Aggregate per-question records into a summary, and write the run folder: results.jsonl, summary.json,
report.md and scores.png. Also compares two runs and checks the --min-* gates."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.metrics import percentile

METRICS: list[tuple[str, str]] = [
    ("hit@1", "hit@1"), ("hit@5", "hit@5"), ("mrr", "MRR"), ("ndcg@5", "nDCG@5"), ("recall@5", "recall@5"),
    ("citation_recall", "cit. recall"), ("citation_precision", "cit. precision"), ("cites_gold", "cites gold"),
    ("cites_only_gold", "only gold"), ("faithfulness", "faithful"), ("correctness", "correct"),
    ("abstention", "abstention"), ("lead", "lead"),
]
# What makes a question bad, for the "worst questions" list: retrieval rank, citations, support, facts, abstention.
QUESTION_SCORE_KEYS = ("mrr", "citation_recall", "citation_precision", "faithfulness", "correctness", "abstention")
WORST_N = 10
RESULTS, SUMMARY, REPORT, PLOT = "results.jsonl", "summary.json", "report.md", "scores.png"


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values; None when no question defines the metric."""
    got = [v for v in values if v is not None]
    return round(sum(got) / len(got), 4) if got else None


def aggregate(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean of every metric over the records, their count, and latency percentiles."""
    out: dict[str, Any] = {"n": len(records)}
    for key, _ in METRICS:
        out[key] = mean([r["scores"].get(key) for r in records])
    latencies = [r["latency_ms"] for r in records if r.get("latency_ms") is not None]
    out["latency_p50_ms"] = round(percentile(latencies, 50), 1) if latencies else None
    out["latency_p95_ms"] = round(percentile(latencies, 95), 1) if latencies else None
    return out


def summarise(records: Sequence[Mapping[str, Any]], info: Mapping[str, Any],
              judge_check: Mapping[str, Any] | None = None, seconds: float | None = None) -> dict[str, Any]:
    """The run's summary: configuration, scores overall and per question type, and how answers were made."""
    types = list(dict.fromkeys(r["type"] for r in records))
    overall = aggregate(records)
    unanswerable = [r for r in records if not r["gold"] and r["scores"]["abstention"] is not None]
    answerable = [r for r in records if r["gold"] and r["scores"]["abstention"] is not None]
    overall["abstain_on_unanswerable"] = mean([r["scores"]["abstention"] for r in unanswerable])
    overall["answer_on_answerable"] = mean([r["scores"]["abstention"] for r in answerable])
    modes = Counter(r.get("mode") or "error" for r in records)
    return {
        "run": dict(info), "seconds": round(seconds, 1) if seconds is not None else None,
        "answers_by_mode": dict(modes),
        "fallbacks": sum(1 for r in records if r.get("notice")),
        "errors": sum(1 for r in records if r.get("error")),
        "undecided_verdicts": sum(1 for r in records for x in [*r.get("sentences", []), *r.get("claims", [])]
                                  if x["supported"] is None),
        "judge_agreement": dict(judge_check) if judge_check else None,
        "overall": overall,
        "by_type": {t: aggregate([r for r in records if r["type"] == t]) for t in types},
    }


# --- per question ------------------------------------------------------------------------------------------

def question_score(record: Mapping[str, Any]) -> float | None:
    """One number per question for ranking the worst: the mean of its defined headline scores."""
    return mean([record["scores"].get(k) for k in QUESTION_SCORE_KEYS])


def problems(record: Mapping[str, Any]) -> list[str]:
    """What went wrong with one question, in words."""
    s = record["scores"]
    out = []
    if record.get("error"):
        out.append(f"error: {record['error']}")
    if s.get("abstention") == 0:
        out.append("abstained on an answerable question" if record["gold"] else
                   "answered a question the abstracts cannot answer")
    if s.get("hit@5") == 0:
        out.append("no gold paper in the top 5")
    elif s.get("mrr") is not None and s["mrr"] < 1:
        out.append(f"first gold paper at rank {round(1 / s['mrr'])}")
    if record.get("missing_facts"):
        out.append("missing key facts: " + ", ".join(record["missing_facts"]))
    unsupported = [x for x in record.get("sentences", []) if x["supported"] is False]
    if unsupported:
        out.append(f"{len(unsupported)} sentence(s) not supported by their citations ({unsupported[0]['reason']})")
    unfaithful = [x for x in record.get("claims", []) if x["supported"] is False]
    if unfaithful:
        out.append(f"{len(unfaithful)} claim(s) not supported by the retrieved abstracts "
                   f"({unfaithful[0]['reason']})")
    off = [c["label"] for c in record.get("citations", []) if not c["gold"]]
    if off and record["gold"]:
        out.append("cites papers outside the gold set: " + ", ".join(off))
    if record.get("notice"):
        out.append(record["notice"])
    return out


def worst(records: Sequence[Mapping[str, Any]], n: int = WORST_N) -> list[Mapping[str, Any]]:
    """The n questions with the lowest question score (ties by id, so the list is stable)."""
    scored = [r for r in records if question_score(r) is not None or r.get("error")]
    return sorted(scored, key=lambda r: (question_score(r) or 0.0, r["id"]))[:n]


# --- writing -----------------------------------------------------------------------------------------------

def fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def score_table(summary: Mapping[str, Any]) -> str:
    """Markdown table: one row for all questions, then one per question type."""
    head = ["type", "n"] + [title for _, title in METRICS] + ["p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = [("**all**", summary["overall"])] + list(summary["by_type"].items())
    for name, agg in rows:
        cells = [name, str(agg["n"])] + [fmt(agg[k]) for k, _ in METRICS]
        cells += [fmt(agg["latency_p50_ms"], 0), fmt(agg["latency_p95_ms"], 0)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]], title: str) -> str:
    """The human-readable report: configuration, score tables, abstention, latency, the worst questions."""
    run, overall = summary["run"], summary["overall"]
    n_unans = sum(1 for r in records if not r["gold"])
    lines = [
        f"# Eval run {title}", "",
        f"{run['n_questions']} questions, answered in **{run['mode']}** mode, k = {run['k']}; "
        f"scored by the **{run['judge']}** judge — {run['judge_description']}.",
    ]
    if summary.get("seconds") is not None:
        lines[-1] += f" Run time {summary['seconds']:.0f} s."
    if run["mode"] == "llm":
        lines += ["", "Generated answers are judged as the LLM wrote them, before the citation check marked or "
                      "dropped any sentence; correctness and abstention are judged on the answer as shown."]
    agreement = summary.get("judge_agreement")
    if agreement:
        lines += ["", f"Judge agreement with the hand labels (eval/labels/judge_labels.jsonl): "
                      f"**{agreement['agreement']:.2f}** ({agreement['agreed']}/{agreement['total']}; "
                      f"supported kept {agreement['supported_kept']}, unsupported caught "
                      f"{agreement['unsupported_caught']})."]
    if summary.get("fallbacks") or summary.get("errors"):
        lines += ["", f"**{summary['fallbacks']} answer(s) fell back** from the LLM to the extractive answerer "
                      f"and {summary['errors']} question(s) failed; answers by mode: {summary['answers_by_mode']}."]
    if summary.get("undecided_verdicts"):
        lines += ["", f"The judge gave no verdict on {summary['undecided_verdicts']} sentence(s) or claim(s); they "
                      "are left out of the scores (see results.jsonl)."]
    lines += ["", "## Scores", "", score_table(summary), "",
              f"Abstained on {_share(overall['abstain_on_unanswerable'], n_unans)} unanswerable questions and "
              f"answered {_share(overall['answer_on_answerable'], len(records) - n_unans)} answerable ones. "
              f"Latency per question (answer only, judge excluded): p50 {fmt(overall['latency_p50_ms'], 0)} ms, "
              f"p95 {fmt(overall['latency_p95_ms'], 0)} ms.", "",
              f"![per-type scores]({PLOT})", "",
              "Retrieval scores count answerable questions only; citation and faithfulness scores count answers "
              "that state something; correctness counts questions with key facts (an abstention gives none).",
              "", "## Configuration", "", "| setting | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in run.items() if k not in ("judge_description",)]
    lines += ["", f"## Worst {WORST_N} questions", ""]
    for i, r in enumerate(worst(records), 1):
        lines += _worst_entry(i, r)
    return "\n".join(lines) + "\n"


def _share(rate: float | None, n: int) -> str:
    return "–" if rate is None else f"{round(rate * n)}/{n}"


def _worst_entry(i: int, r: Mapping[str, Any]) -> list[str]:
    answer = (r.get("answer") or "").strip()
    quoted = "\n".join("> " + line for line in answer.splitlines()) or "> (no answer)"
    cites = "; ".join(f"[{c['n']}] {c['label']} ({c['paper_id']}{', gold' if c['gold'] else ''})"
                      for c in r.get("citations", [])) or "none"
    return [f"### {i}. {r['id']} ({r['type']}) — score {fmt(question_score(r), 2)}", "",
            f"**Question:** {r['question']}", "", quoted, "",
            f"**Citations:** {cites}", "",
            "**What went wrong:** " + ("; ".join(problems(r)) or "nothing flagged"), ""]


def plot(summary: Mapping[str, Any], path: Path, title: str) -> None:
    """A heatmap of every score per question type (and overall), written as PNG with the Agg canvas."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [("all", summary["overall"])] + list(summary["by_type"].items())
    values = np.array([[np.nan if agg[k] is None else agg[k] for k, _ in METRICS] for _, agg in rows])
    fig = Figure(figsize=(13, 1.2 + 0.55 * len(rows)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    cmap = _colormap()
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(METRICS)), [t for _, t in METRICS], rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), [f"{name} ({agg['n']})" for name, agg in rows])
    for (y, x), v in np.ndenumerate(values):
        dark = not np.isnan(v) and (v > 0.85 or v < 0.15)
        ax.text(x, y, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=9,
                color="white" if dark else "black")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.02)
    fig.savefig(path, dpi=110)


def _colormap():  # noqa: ANN202 - a matplotlib Colormap
    from matplotlib import colormaps

    return colormaps["RdYlGn"].with_extremes(bad="#dddddd")


def write_run(folder: Path, records: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> dict[str, Path]:
    """Write the four files of a run folder and return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    title = folder.name
    paths = {name: folder / name for name in (RESULTS, SUMMARY, REPORT, PLOT)}
    paths[RESULTS].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    paths[SUMMARY].write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[REPORT].write_text(markdown(summary, records, title), encoding="utf-8")
    run = summary["run"]
    plot(summary, paths[PLOT], f"{title}: {run['mode']} mode, {run['judge']} judge")
    return paths


def console_table(summary: Mapping[str, Any]) -> str:
    """A fixed-width table of the scores for the terminal."""
    head = ["type", "n"] + [t for _, t in METRICS] + ["p50ms", "p95ms"]
    rows = [("all", summary["overall"])] + list(summary["by_type"].items())
    table = [head] + [[name, str(a["n"])] + [fmt(a[k]) for k, _ in METRICS]
                      + [fmt(a["latency_p50_ms"], 0), fmt(a["latency_p95_ms"], 0)] for name, a in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in table)


# --- comparing two runs ------------------------------------------------------------------------------------

def load_run(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run's summary and records, from its folder or its summary.json."""
    folder = path if path.is_dir() else path.parent
    summary_path = path if path.is_file() else folder / SUMMARY
    if not summary_path.exists():
        raise FileNotFoundError(f"{path} is not an eval run (no {SUMMARY})")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    results = folder / RESULTS
    records = ([json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x.strip()]
               if results.exists() else [])
    return summary, records


def delta(a: float | None, b: float | None, digits: int = 3) -> str:
    if a is None or b is None:
        return ""
    d = b - a
    return "0" if round(d, digits) == 0 else f"{d:+.{digits}f}"


def compare(path_a: Path, path_b: Path, max_questions: int = 25) -> str:
    """The differences between two runs: settings, every score overall and per type, changed questions."""
    (sa, ra), (sb, rb) = load_run(path_a), load_run(path_b)
    lines = [f"A: {path_a}  ({_describe(sa['run'])})", f"B: {path_b}  ({_describe(sb['run'])})"]
    differ = [f"{k}: {sa['run'].get(k)} -> {sb['run'].get(k)}" for k in dict.fromkeys([*sa["run"], *sb["run"]])
              if k != "judge_description" and sa["run"].get(k) != sb["run"].get(k)]
    lines += ["settings that differ: " + ("; ".join(differ) if differ else "none"), ""]
    keys = [(k, t) for k, t in METRICS] + [("latency_p50_ms", "p50 ms"), ("latency_p95_ms", "p95 ms")]
    width = max(len(t) for _, t in keys)
    lines.append(f"{'metric':<{width}}  {'A':>8}  {'B':>8}  {'B-A':>8}")
    for k, t in keys:
        digits = 0 if k.startswith("latency") else 3
        a, b = sa["overall"].get(k), sb["overall"].get(k)
        lines.append(f"{t:<{width}}  {fmt(a, digits):>8}  {fmt(b, digits):>8}  {delta(a, b, digits):>8}")
    lines += ["", "by type (B-A, changed scores only):"]
    for typ in dict.fromkeys([*sa["by_type"], *sb["by_type"]]):
        ta, tb = sa["by_type"].get(typ), sb["by_type"].get(typ)
        if ta is None or tb is None:
            lines.append(f"  {typ}: only in {'A' if tb is None else 'B'}")
            continue
        changed = [f"{t} {delta(ta[k], tb[k])}" for k, t in METRICS if delta(ta[k], tb[k]) not in ("", "0")]
        lines.append(f"  {typ} (n {ta['n']}/{tb['n']}): " + (", ".join(changed) if changed else "no change"))
    lines += [""] + _question_changes(ra, rb, max_questions)
    return "\n".join(lines)


def _describe(run: Mapping[str, Any]) -> str:
    return (f"{run.get('mode')} mode, k={run.get('k')}, judge {run.get('judge')}, {run.get('n_questions')} questions"
            + (f", commit {run['commit']}" if run.get("commit") else ""))


def _question_changes(ra: Sequence[Mapping[str, Any]], rb: Sequence[Mapping[str, Any]], limit: int) -> list[str]:
    """Per-question score changes between the runs, largest question-score change first."""
    a_by, b_by = {r["id"]: r for r in ra}, {r["id"]: r for r in rb}
    shared = [i for i in a_by if i in b_by]
    out = []
    if set(a_by) != set(b_by):
        out.append(f"the runs answered different questions: {len(shared)} shared, "
                   f"{len(set(a_by) - set(b_by))} only in A, {len(set(b_by) - set(a_by))} only in B")
    changes = []
    for qid in shared:
        a, b = a_by[qid], b_by[qid]
        diffs = [f"{t} {fmt(a['scores'].get(k), 2)} -> {fmt(b['scores'].get(k), 2)}" for k, t in METRICS
                 if a["scores"].get(k) != b["scores"].get(k)]
        if diffs:
            qa, qb = question_score(a), question_score(b)
            change = abs((qb or 0) - (qa or 0))
            changes.append((change, qid, f"  {qid} ({a['type']}): " + "; ".join(diffs)))
    out.append(f"questions whose scores changed: {len(changes)} of {len(shared)}")
    changes.sort(key=lambda c: (-c[0], c[1]))
    out += [line for _, _, line in changes[:limit]]
    if len(changes) > limit:
        out.append(f"  ... and {len(changes) - limit} more (see results.jsonl of both runs)")
    return out


# --- gates -------------------------------------------------------------------------------------------------

def check_gates(summary: Mapping[str, Any], minimums: Mapping[str, float | None],
                max_p95_ms: float | None = None) -> list[str]:
    """One line per gate the run fails: a score below its minimum, a score the run did not measure, or a p95
    latency above its maximum."""
    failures = []
    measured = dict(summary["overall"])
    if summary.get("judge_agreement"):
        measured["judge_agreement"] = summary["judge_agreement"]["agreement"]
    for key, minimum in minimums.items():
        if minimum is None:
            continue
        value = measured.get(key)
        if value is None:
            failures.append(f"{key}: not measured in this run (minimum {minimum:g})")
        elif value < minimum:
            failures.append(f"{key}: {value:.4f} is below the minimum {minimum:g}")
    p95 = measured.get("latency_p95_ms")
    if max_p95_ms is not None and (p95 is None or p95 > max_p95_ms):
        failures.append(f"latency p95: {fmt(p95, 0)} ms is above the maximum {max_p95_ms:g} ms")
    return failures
