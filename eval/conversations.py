"""Chat evaluation: hand-written conversations asked turn by turn through `rag.service.Conversation` (the object
the UI, `papers chat` and `/v1` use), each turn scored, then summarised per turn kind and per position.

A conversation file has one JSON object per line: `{"id", "turns": [TURN, ...]}` with
TURN = `{"q", "kind", "gold": [paper ids], "cite_all": bool, "facts": [...], "abstain": bool,
"scope": null | [paper ids], "out_of_scope": [labels], "lead": optional}` (eval/conversations.jsonl).

Per turn: `cites_gold` (cites a gold paper; every gold paper when `cite_all`), `facts` (share of the facts the
answer states, as `papers eval`'s correctness), `right` (cites gold and states every fact, or abstains when it
must), `abstained_ok` (abstains exactly when it must), `wrong_paper` (cites a paper outside the gold ones), and
`lead_ok` (the direct-answer line contains the expected lead).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.answer.intent import Asks, read_intent

from eval.scoring import correctness, fact_present

CONVERSATIONS_PATH = Path(__file__).resolve().parent / "conversations.jsonl"


class ConversationsError(ValueError):
    """A conversation file that cannot be read; the message names the line."""


@dataclass
class ConvTurn:
    q: str
    kind: str = ""
    gold: list[str] = field(default_factory=list)
    cite_all: bool = False
    facts: list[str] = field(default_factory=list)
    abstain: bool = False
    scope: list[str] | None = None
    out_of_scope: list[str] = field(default_factory=list)
    lead: str | None = None


@dataclass
class ConvCase:
    id: str
    turns: list[ConvTurn]


def load_conversations(path: Path) -> list[ConvCase]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            turns = [ConvTurn(**{k: v for k, v in t.items() if k in ConvTurn.__dataclass_fields__})
                     for t in d["turns"]]
        except (ValueError, KeyError, TypeError) as e:
            raise ConversationsError(f"{path}:{n}: not a conversation ({e})") from None
        if not turns or any(not t.q.strip() for t in turns):
            raise ConversationsError(f"{path}:{n}: a conversation needs turns with a question ('q')")
        out.append(ConvCase(str(d.get("id") or f"line{n}"), turns))
    return out


def score_turn(turn: ConvTurn, answer: Any) -> dict[str, Any]:
    """The scores of one answered turn (see the module docstring)."""
    cited = [c.paper_id for c in answer.citations]
    abstained = bool(answer.abstained)
    answerable = not turn.abstain
    out: dict[str, Any] = {"abstained": abstained, "abstained_ok": abstained == turn.abstain}
    if answerable:
        hit = all(g in cited for g in turn.gold) if turn.cite_all else any(g in cited for g in turn.gold)
        facts, missing = correctness(turn.facts, answer.answer, abstained) if turn.facts else (None, [])
        out.update(cites_gold=float(hit and not abstained), facts=facts, missing_facts=missing,
                   wrong_paper=float(any(c not in turn.gold for c in cited)),
                   right=float(hit and not abstained and (facts is None or facts == 1.0)))
    else:
        out.update(cites_gold=None, facts=None, missing_facts=[], wrong_paper=None, right=float(abstained))
    if turn.lead and answerable:
        lead = answer.lead or ""
        out["lead_ok"] = float(bool(lead) and fact_present(turn.lead, lead))
        asks = read_intent(answer.rewritten or turn.q).asks
        out["lead_kind"] = {Asks.NUMBER: "number", Asks.DEFINITION: "definition"}.get(asks, "other")
    if answer.lead:  # the lead line is a span of a quoted sentence: the citation check must have passed it
        out["lead_supported"] = float(any(c.supported and c.sentence.startswith(answer.lead) for c in answer.checks))
    return out


def run_conversations(make_conversation: Callable[[], Any], cases: Sequence[ConvCase], mode: str = "extractive",
                      k: int | None = None) -> list[dict[str, Any]]:
    """Every conversation through a fresh chat; one record per turn."""
    records = []
    for case in cases:
        chat = make_conversation()
        for i, turn in enumerate(case.turns):
            t = time.perf_counter()
            answer = chat.ask(turn.q, k=k, paper_ids=turn.scope, mode=mode)
            ms = (time.perf_counter() - t) * 1000
            records.append({"conversation": case.id, "position": i + 1, "kind": turn.kind, "question": turn.q,
                            "searched": answer.rewritten or turn.q, "answer": answer.answer, "lead": answer.lead,
                            "cited": [c.paper_id for c in answer.citations], "gold": turn.gold,
                            "scope": turn.scope, "ms": round(ms, 1), **score_turn(turn, answer)})
    return records


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals) / len(vals), 3) if vals else None


def _group(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in records if r["cites_gold"] is not None]
    must = [r for r in records if r["cites_gold"] is None]
    return {"turns": len(records), "right": _mean([r["right"] for r in records]),
            "cites_gold": _mean([r["cites_gold"] for r in answerable]),
            "facts": _mean([r["facts"] for r in answerable]),
            "wrong_paper": _mean([r["wrong_paper"] for r in answerable]),
            "answerable_abstained": _mean([float(r["abstained"]) for r in answerable]),
            "must_abstain_abstained": _mean([float(r["abstained"]) for r in must]),
            "lead_ok": _mean([r.get("lead_ok") for r in records]),
            "lead_ok_number_definition": _mean([r.get("lead_ok") for r in records
                                                if r.get("lead_kind") in ("number", "definition")]),
            "lead_supported": _mean([r.get("lead_supported") for r in records])}


def summarise_conversations(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """All turns, first turns, follow-ups, per kind; whole conversations right; latency."""
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_conv.setdefault(r["conversation"], []).append(r)
    kinds = sorted({r["kind"] for r in records})
    ms = sorted(r["ms"] for r in records)
    return {
        "all": _group(records),
        "first": _group([r for r in records if r["position"] == 1]),
        "follow_up": _group([r for r in records if r["position"] > 1]),
        "by_kind": {k: _group([r for r in records if r["kind"] == k]) for k in kinds},
        "by_position": {str(p): _group([r for r in records if r["position"] == p])
                        for p in sorted({r["position"] for r in records})},
        "conversations": len(by_conv),
        "conversations_right": sum(all(r["right"] == 1.0 for r in rs) for rs in by_conv.values()),
        "latency_ms": {"p50": ms[len(ms) // 2] if ms else None, "p95": ms[int(len(ms) * 0.95)] if ms else None},
    }


def conversation_table(summary: dict[str, Any]) -> str:
    """A Markdown table of the summary (all / first / follow-ups / each kind)."""
    cols = ["turns", "right", "cites_gold", "facts", "wrong_paper", "answerable_abstained",
            "must_abstain_abstained", "lead_ok_number_definition", "lead_supported"]
    rows = [("all", summary["all"]), ("first turns", summary["first"]), ("follow-ups", summary["follow_up"])]
    rows += [(k, v) for k, v in summary["by_kind"].items()]
    out = ["| turns | " + " | ".join(c.replace("_", " ") for c in cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for name, g in rows:
        out.append(f"| {name} | " + " | ".join("–" if g[c] is None else str(g[c]) for c in cols) + " |")
    out.append(f"\nwhole conversations right: {summary['conversations_right']} of {summary['conversations']}")
    return "\n".join(out)
