"""The citation check, run on every answer (generated or extractive) before anyone sees it.

Each answer sentence is checked against the sources given for this question. Rules, and why:
1. A citation [n] must name a source given for this question; any other number is removed and reported
   (a model that cites [7] when it saw five sources is citing nothing).
2. A sentence that states something must cite; an uncited claim cannot be traced (abstentions are exempt).
3. Every number in the sentence must appear in a cited source: invented figures are the most common and the
   most damaging LLM error on papers ("a 3.4x speedup").
4. Every method, benchmark or model name in the sentence must appear in a cited source (or be its label):
   this catches a claim attributed to the wrong paper ("RecMem [2]" when [2] is ReLoop).
5. The sentence must be close in meaning to some sentence of a cited source (cosine of the same embedding
   model >= SEMANTIC_MIN); verbatim quotes pass at once. This catches fluent text the sources never said.
A sentence failing any rule is marked (or dropped, by setting); an answer left with no supported sentence
becomes the abstention. No second LLM call: the check is deterministic and takes milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag import prompts
from rag.labels import FIELD_TERMS, is_coined
from rag.schema import SentenceCheck
from rag.text import numbers, split_sentences

SEMANTIC_MIN = 0.55
UNSUPPORTED_MARK = "⚠"
_CITE_RE = re.compile(r"\[(\s*\d+(?:\s*[,;]\s*\d+)*\s*)\]")


@dataclass
class SourceText:
    """A numbered source as given to the answerer: its label and sentences (with vectors when known)."""

    n: int
    label: str
    sentences: list[str]
    vectors: list[list[float]] | None = None

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass
class CheckResult:
    text: str
    checks: list[SentenceCheck]
    removed_citations: list[int]
    abstained: bool

    @property
    def unsupported(self) -> list[SentenceCheck]:
        return [c for c in self.checks if not c.supported]


def cited_numbers(sentence: str) -> list[int]:
    out: list[int] = []
    for m in _CITE_RE.finditer(sentence):
        out += [int(x) for x in re.split(r"[,;]", m.group(1)) if x.strip()]
    return out


def strip_citations(sentence: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", _CITE_RE.sub("", sentence)).strip()


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def names_in(sentence: str) -> list[str]:
    """Method, benchmark and model names in a sentence: coined tokens (RecMem, GPT-4o, LIBERO)."""
    out = []
    for w in re.findall(r"[A-Za-z][\w.+\-]*[\w+]", sentence):
        core = w.strip(".-")
        if core in FIELD_TERMS or core.rstrip("s") in FIELD_TERMS:
            continue
        has_digit_name = core[0].isupper() and any(c.isdigit() for c in core)
        if is_coined(core) or has_digit_name or core in ("GRPO", "PPO", "DPO", "GPT", "BERT", "ImageNet", "Adam"):
            out.append(core)
    return out


def _split_answer(text: str) -> list[tuple[int, str]]:
    """(line number, sentence) pairs; a line (list item, quote line) never joins the next one."""
    out: list[tuple[int, str]] = []
    for i, line in enumerate(text.splitlines()):
        line = line.strip().lstrip("-*• ").strip()
        if line:
            out += [(i, s) for s in split_sentences(line)]
    return out


def check_answer(text: str, sources: Sequence[SourceText], unsupported: str = "mark",
                 embed: Callable[[list[str]], list[list[float]]] | None = None) -> CheckResult:
    """Check every sentence of an answer against its numbered sources; mark or drop what fails."""
    import numpy as np

    by_n = {s.n: s for s in sources}
    removed: list[int] = []
    checks: list[SentenceCheck] = []
    pending_semantic: list[tuple[int, str, list[int]]] = []
    pieces = _split_answer(text)
    all_text = " ".join(src.text + " " + src.label for src in sources)
    for _line, sentence in pieces:
        cited = cited_numbers(sentence)
        bad = [n for n in cited if n not in by_n]
        removed += bad
        valid = list(dict.fromkeys(n for n in cited if n in by_n))
        clean = strip_citations(sentence)
        shown = _CITE_RE.sub(lambda m: _keep_valid(m, by_n), sentence)
        shown = re.sub(r"\s+([.,;:!?])", r"\1", shown)
        if prompts.is_abstention(clean):
            checks.append(SentenceCheck(shown, valid, True, "abstention"))
            continue
        if not valid:
            reason = "no citation" + (" (cited a source that was not given)" if bad else "")
            invented = sorted(numbers(clean) - numbers(all_text))
            if invented:
                reason += "; number in no source: " + ", ".join(invented)
            checks.append(SentenceCheck(shown, [], False, reason))
            continue
        if _only_labels(clean, valid, by_n):
            checks.append(SentenceCheck(shown, valid, True, "names its cited sources"))
            continue
        cited_text = " ".join(by_n[n].text + " " + by_n[n].label for n in valid)
        missing_numbers = sorted(numbers(clean) - numbers(cited_text) - _label_numbers(valid, by_n))
        if missing_numbers:
            checks.append(SentenceCheck(shown, valid, False, "number not in cited source: " +
                                        ", ".join(missing_numbers)))
            continue
        cited_norm = _norm(cited_text)
        missing_names = [w for w in names_in(clean) if _norm(w) not in cited_norm]
        if missing_names:
            checks.append(SentenceCheck(shown, valid, False, "name not in cited source: " +
                                        ", ".join(dict.fromkeys(missing_names))))
            continue
        quote = _verbatim(clean, valid, by_n)
        if quote is not None:
            checks.append(SentenceCheck(shown, valid, True, "quoted", quote[1], quote[0], 1.0))
            continue
        checks.append(SentenceCheck(shown, valid, False, "pending"))
        pending_semantic.append((len(checks) - 1, clean, valid))

    if pending_semantic:
        if embed is None:
            for i, _, _ in pending_semantic:
                checks[i].reason = "not verifiable (no embedding model)"
        else:
            texts = [f"{by_n[valid[0]].label}: {clean}" for _, clean, valid in pending_semantic]
            vectors = np.asarray(embed(texts), dtype=np.float32)
            for (i, _clean, valid), vec in zip(pending_semantic, vectors):
                best, best_n, best_sentence = -1.0, None, ""
                for n in valid:
                    src = by_n[n]
                    if not src.vectors:
                        continue
                    sims = np.asarray(src.vectors, dtype=np.float32) @ vec
                    j = int(np.argmax(sims))
                    if sims[j] > best:
                        best, best_n, best_sentence = float(sims[j]), n, src.sentences[j]
                ok = best >= SEMANTIC_MIN
                checks[i].supported = ok
                checks[i].reason = "semantic match" if ok else f"not close to any cited sentence ({best:.2f})"
                checks[i].evidence, checks[i].evidence_n, checks[i].similarity = best_sentence, best_n, max(best, 0)

    return _assemble(checks, [line for line, _ in pieces], removed, unsupported)


_LIST_WORDS = {"matching", "papers", "paper", "see", "and", "or", "also", "relevant", "sources", "source", "the",
               "best", "match", "matches", "closest"}


def _only_labels(clean: str, valid: list[int], by_n: dict[int, SourceText]) -> bool:
    """A sentence that only lists the labels of the sources it cites ("Matching papers: A [1], B [2].")."""
    rest = clean
    for n in valid:
        rest = re.sub(re.escape(by_n[n].label), " ", rest, flags=re.IGNORECASE)
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", rest)}
    return words <= _LIST_WORDS and len(rest) < len(clean)


def _keep_valid(m: re.Match[str], by_n: dict[int, SourceText]) -> str:
    kept = [x.strip() for x in re.split(r"[,;]", m.group(1)) if x.strip() and int(x) in by_n]
    return f"[{', '.join(kept)}]" if kept else ""


def _label_numbers(valid: list[int], by_n: dict[int, SourceText]) -> set[str]:
    return set().union(*(numbers(by_n[n].label) for n in valid)) if valid else set()


def _verbatim(clean: str, valid: list[int], by_n: dict[int, SourceText]) -> tuple[int, str] | None:
    """The cited sentence an answer sentence quotes (ignoring quotes marks, label prefix, punctuation)."""
    body = _norm(re.sub(r"^[^:“\"]{0,80}:\s*", "", clean))
    if len(body) < 20:
        return None
    for n in valid:
        for s in by_n[n].sentences:
            if body in _norm(s) or _norm(s) in body:
                return n, s
    return None


def _assemble(checks: list[SentenceCheck], line_of: list[int], removed: list[int], policy: str) -> CheckResult:
    """Rebuild the answer text, keeping its line structure, with unsupported sentences marked or dropped."""
    lines: dict[int, list[str]] = {}
    for c, line in zip(checks, line_of):
        if c.supported:
            lines.setdefault(line, []).append(c.sentence)
        elif policy == "mark":
            lines.setdefault(line, []).append(f"{UNSUPPORTED_MARK} {c.sentence}")
    supported = [c for c in checks if c.supported and c.reason != "abstention"]
    abstained = not supported
    if abstained:
        abstention = next((c.sentence for c in checks if c.reason == "abstention"), None)
        text = abstention or prompts.ABSTAIN_UNSUPPORTED
        if policy == "mark" and any(not c.supported for c in checks):
            text += "\n\n" + "\n".join(f"{UNSUPPORTED_MARK} {c.sentence}" for c in checks if not c.supported)
        return CheckResult(text, checks, sorted(set(removed)), True)
    return CheckResult("\n".join(" ".join(v) for _, v in sorted(lines.items())), checks, sorted(set(removed)),
                       False)
