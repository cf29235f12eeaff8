"""Conversations: follow-up questions are rewritten into standalone ones before retrieval.

"and how much memory does it save?" means nothing to a retriever. With an LLM the question is rewritten by the
model (and checked: it must keep the paper the conversation is about); without one, pronouns are replaced by
the label of the paper the previous answer cited, and retrieval is kept to the papers of the previous turn.
Citations stay numbered per answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rag import prompts
from rag.corpus.labels import mentions
from rag.answer.question import analyse, clean_question
from rag.schema import Answer, StreamEvent

_STARTERS_RE = re.compile(r"^(and|also|but|so|then|ok|okay|plus)\b[\s,]*", re.I)
_WHAT_ABOUT_RE = re.compile(r"^(?:and\s+|but\s+)?(?:what|how)\s+about\s+(.+?)\s*\??$", re.I)
_PRONOUN_RE = re.compile(
    r"\b(it|its|it's|they|their|theirs|them|this (?:method|paper|model|approach|work|benchmark|one)|"
    r"that (?:method|paper|model|approach|work|benchmark|one)|the (?:method|paper|model|approach|benchmark)|"
    r"these|those|the same)\b", re.I)
MAX_HISTORY_TURNS = 3


@dataclass
class Turn:
    question: str
    standalone: str
    answer: Answer


@dataclass
class Rewrite:
    """A follow-up made standalone: the question to retrieve with, and the papers to keep to (if any)."""

    question: str
    scope: list[str] | None = None
    how: str = "as-is"  # 'as-is', 'carry-over' or 'llm'
    notice: str | None = None


@dataclass
class Conversation:
    """One user's chat: its own history, never shared between sessions."""

    assistant: Any  # the rag.service.Assistant answering this chat
    turns: list[Turn] = field(default_factory=list)

    def _previous(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def is_follow_up(self, question: str) -> bool:
        prev = self._previous()
        if prev is None:
            return False
        mentions_paper = any(mentions(question, c.label) for c in prev.answer.citations) or bool(
            [r for r in prev.answer.retrieved if mentions(question, r.label)])
        if _WHAT_ABOUT_RE.match(question):
            return True
        if mentions_paper and not _PRONOUN_RE.search(question):
            return False
        return bool(_STARTERS_RE.match(question) or _PRONOUN_RE.search(question))

    def rewrite(self, question: str, use_llm: bool) -> Rewrite:
        """The standalone form of a question (unchanged when it is not a follow-up)."""
        prev = self._previous()
        if prev is None or not self.is_follow_up(question):
            return Rewrite(question)
        carried = self._carry_over(question, prev)
        if not use_llm:
            return carried
        from rag.answer.llm import LLMUnavailable, complete
        from llama_index.core.llms import ChatMessage, MessageRole

        history = "\n".join(f"User: {t.question}\nAssistant: {t.answer.answer[:300]}"
                            for t in self.turns[-MAX_HISTORY_TURNS:])
        messages = [ChatMessage(role=MessageRole.SYSTEM, content=prompts.REWRITE_SYSTEM),
                    ChatMessage(role=MessageRole.USER, content=prompts.REWRITE_USER.format(
                        history=history, question=question))]
        try:
            text = complete(self.assistant.settings, messages, max_tokens=80).splitlines()[0].strip().strip('"')
        except LLMUnavailable as e:
            carried.notice = f"LLM not used: {e.reason}; follow-up rewritten and answered without it"
            return carried
        labels = [c.label for c in prev.answer.citations]
        # The rewrite must still be about the paper(s) of the conversation, and must be a question of sane size.
        if not text or len(text) > 3 * len(question) + 200 or (labels and not any(mentions(text, x) for x in labels)):
            return carried
        return Rewrite(text, carried.scope, "llm")

    def _carry_over(self, question: str, prev: Turn) -> Rewrite:
        """Without an LLM: put the previous turn's papers and key terms into the follow-up."""
        labels = [c.label for c in prev.answer.citations]
        ids = [c.paper_id for c in prev.answer.citations]
        if not labels:  # the previous answer abstained: keep to the papers its question named
            named = [r for r in prev.answer.retrieved if mentions(prev.standalone, r.label)]
            labels, ids = [r.label for r in named], [r.paper_id for r in named]
        what_about = _WHAT_ABOUT_RE.match(question)
        if what_about:
            subject = what_about.group(1)
            old = next((x for x in labels + [r.label for r in prev.answer.retrieved] if mentions(prev.standalone, x)),
                       None)
            if old:
                text = re.sub(re.escape(old), subject, prev.standalone, flags=re.I)
            else:
                text = f"{prev.standalone.rstrip('?')} — {subject}?"
            return Rewrite(text, None, "carry-over")
        body = _STARTERS_RE.sub("", question).strip()
        body = body[:1].upper() + body[1:]
        if len(labels) == 1:
            label = labels[0]
            text = _PRONOUN_RE.sub(lambda m: label + ("'s" if m.group(1).lower() in ("its", "their") else ""),
                                   body, count=1)
            if text == body:
                text = f"{body.rstrip('?')} ({label})?"
        elif labels:
            text = f"{body.rstrip('?')} ({', '.join(labels)})?"
        else:
            terms = " ".join(sorted(analyse(prev.standalone).words))
            text = f"{body.rstrip('?')} ({terms})?"
        return Rewrite(text, ids or None, "carry-over")

    def ask(self, question: str, **kwargs: object) -> Answer:
        answer = None
        for event in self.stream(question, **kwargs):
            if event.kind == "final":
                answer = event.answer
        assert answer is not None
        return answer

    def stream(self, question: str, k: int | None = None, paper_ids: list[str] | None = None,
               mode: str | None = None) -> Iterator[StreamEvent]:
        """Rewrite a follow-up, then stream the answer; the turn is remembered when it completes."""
        q = clean_question(question, self.assistant.settings.max_question_chars)
        use_llm = self.assistant.resolve_mode(mode) == "llm"
        rw = self.rewrite(q, use_llm)
        scope = paper_ids or rw.scope
        # The LLM just failed on the rewrite: answer this turn without it rather than wait for it twice.
        turn_mode = "extractive" if rw.notice else mode
        for event in self.assistant.stream(rw.question, k=k, paper_ids=scope, mode=turn_mode):
            if event.kind == "final" and event.answer is not None:
                event.answer.question = q
                event.answer.rewritten = rw.question if rw.question != q else None
                if rw.notice:
                    event.answer.notice = " ".join(x.rstrip(".") + "." for x in (event.answer.notice, rw.notice)
                                                   if x)
                self.turns.append(Turn(q, rw.question, event.answer))
            yield event

    def clear(self) -> None:
        self.turns.clear()
