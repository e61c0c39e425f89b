"""Recency policies: the study's C2, C3 and C4 configurations, and ACON's FIFO baseline."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.policies.folding import SummaryFold
from erp_sim.agents.policies.units import Unit, flatten
from erp_sim.agents.types import Message

SUMMARY_TAG = "<EARLIER_STEPS_SUMMARY>"
SUMMARY_END_TAG = "</EARLIER_STEPS_SUMMARY>"


class Full(ContextPolicy):
    """The full history, unchanged (study C2; C1 is the same with no user model)."""

    name: ClassVar[str] = "full"

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Everything sent is sent again."""
        return [layout(context).head, len(context)]

    def kept_prefix(self, context: list[Message], received: int) -> int:
        """The context is the input: what is unchanged of it."""
        return received


def _window_start(units: list[Unit], n: int) -> int:
    """Index where the window of the last ``n`` tool units starts.

    The window runs from the n-th most recent tool unit to the end, so user messages and
    assistant text between those tool units stay with them. With fewer than ``n`` tool
    units everything is in the window; with ``n == 0`` it starts after the last tool unit.
    """
    if n == 0:
        for index in range(len(units) - 1, -1, -1):
            if units[index].kind == "tool":
                return index + 1
        return 0
    seen = 0
    for index in range(len(units) - 1, -1, -1):
        if units[index].kind == "tool":
            seen += 1
            if seen == n:
                return index
    return 0


class LastNParams(PolicyParams):
    n: int = Field(5, ge=0, description="Tool-call units kept (the study's N).")


class LastN(ContextPolicy):
    """Keep the last N tool-call/response units (study C3, N=5).

    Keeps the head (system, first user instruction) and the transcript from the N-th most
    recent tool unit onwards; user messages and assistant text inside that window stay,
    everything older is dropped. Nothing replaces what is dropped.
    """

    name: ClassVar[str] = "last_n"
    Params: ClassVar[type[PolicyParams]] = LastNParams
    params: LastNParams  # the instance's parameters, of this policy's own type

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        return split.join(split.units[_window_start(split.units, self.params.n) :])

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """The system prompt and the instruction; everything while the window is not full (the next tool
        unit evicts nothing)."""
        parts = layout(context)
        return [parts.head] + ([len(context)] if len(parts.tool_units()) < self.params.n else [])


class FifoParams(PolicyParams):
    k: int = Field(5, ge=0, description="Most recent turns kept, where a turn is one unit.")


class Fifo(ContextPolicy):
    """First user message plus the last K turns (ACON's FIFO baseline, K=5).

    A turn is one unit: a tool call with its results, an assistant text, or a user message.
    Unlike ``last_n`` a user reply or an assistant question uses up a turn.
    """

    name: ClassVar[str] = "fifo"
    Params: ClassVar[type[PolicyParams]] = FifoParams
    params: FifoParams  # the instance's parameters, of this policy's own type

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        k = self.params.k
        return split.join(split.units[max(len(split.units) - k, 0) :] if k else [])

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """The head; everything while fewer than k turns are shown (the next one drops none)."""
        parts = layout(context)
        return [parts.head] + ([len(context)] if len(parts.units) < self.params.k else [])


class LastNSummaryParams(PolicyParams):
    n: int = Field(5, ge=0, description="Tool-call units kept verbatim (the study's N).")
    w: int = Field(3, description="Summary window W: evicted units folded per summarizer call; -1 = all at once.")

    @field_validator("w")
    @classmethod
    def _w_positive_or_all(cls, w: int) -> int:
        if w == 0 or w < -1:
            raise ValueError("must be -1 (summarize everything evicted at once) or at least 1")
        return w


class LastNSummary(ContextPolicy):
    """Last N tool units plus a running summary of the evicted ones (study C4, N=5, W=3).

    What W means here: units that fall out of the last-N window are *evicted*, oldest
    first. Evicted units are folded into the running summary W at a time: as soon as W
    evicted units are waiting, one summarizer call turns (previous summary, those W units)
    into the new summary. Units evicted but not yet folded (at most W-1) stay visible
    between the summary and the window, so nothing is ever hidden without being summarized;
    the model therefore sees between N and N+W-1 tool units (more only when user or
    assistant-text units sit in between). W=1 summarizes at every eviction.

    W=-1: everything evicted so far is summarized at once, from scratch (no previous
    summary), at every step where the set of evicted units grew; nothing is pending.

    The summary is a user message right after the instruction, between
    ``<EARLIER_STEPS_SUMMARY>`` tags (a pinned block: policies further down keep it).
    """

    name: ClassVar[str] = "last_n_summary"
    Params: ClassVar[type[PolicyParams]] = LastNSummaryParams
    params: LastNSummaryParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._fold = SummaryFold()
        self._block: tuple[str, Message] | None = None  # the last summary and its block: one object while it holds
        self._folds_next = True  # the next request's summary differs from this one's
        # where the context's parts came from, this call's and the last one's (``kept_prefix``): the transcript's
        # head length, the block shown after it (None: none), where in the transcript the shown units start
        self._shown: tuple[int, Message | None, int] | None = None
        self._shown_before: tuple[int, Message | None, int] | None = None

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        units = split.units
        start = _window_start(units, self.params.n)  # units[:start] are evicted (no list of them: it only grows)
        window = units[start:]
        w = self.params.w
        # the next tool unit moves the window to the one after its first tool unit: what lies before is evicted
        tools_in_window = [i for i, unit in enumerate(window) if unit.kind == "tool"]
        full = len(tools_in_window) >= self.params.n
        evicted_next = tools_in_window[1] if len(tools_in_window) > 1 else len(window)
        pending_count = start % w if w != -1 else 0
        self._folds_next = full and (w == -1 or pending_count + evicted_next >= w)
        task = self.task_text(split.instruction)

        def summarize(batch: list[Message], previous: str | None) -> str:
            return self.record_summary(self.summarizer.summarize_history(task, batch, previous))

        if w == -1:  # everything evicted, from scratch
            summary = self._fold.summary([flatten(units[:start])] if start else [], summarize, chained=False)
            pending: list[Unit] = []
        else:
            folded = start - start % w
            summary = self._fold.fold_units(units, folded, w, summarize, split=split)
            pending = units[folded:start]
        head = len(split.system) + (split.instruction is not None) + len(split.pinned)
        if summary and (self._block is None or self._block[0] != summary):
            self._block = (summary, summary_block(summary))
        block = self._block[1] if summary and self._block is not None else None
        context = split.join([*pending, *window], pinned=None if block is None else [*split.pinned, block])
        # the shown units run to the transcript's end: they start where what follows the context's head starts
        self._shown_before = self._shown
        self._shown = (head, block, len(messages) - (len(context) - head - (block is not None)))
        return context

    def kept_prefix(self, context: list[Message], received: int) -> int:
        """The transcript's head, then the same summary block (the very object), then the shown units at the same
        positions while they start where they did: the context's messages map to the same transcript positions as
        last time, unchanged as far as the transcript's first ``received`` are."""
        last, now = self._shown_before, self._shown
        if last is None or now is None:
            return 0
        head, block, start = now
        if received < head or last[0] != head or last[1] is not block:
            return min(received, head)
        shown = head + (block is not None)  # the context's head
        return shown + max(0, received - start) if last[2] == start else shown

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Between folds the context only grows (an evicted unit stays where it was, now pending): up to the
        summary and all of it; when the next step folds, the system prompt and the instruction."""
        parts = layout(context)
        return [parts.instruction] if self._folds_next else [parts.instruction, parts.head, len(context)]


def summary_block(summary: str) -> Message:
    return {"role": "user", "content": f"{SUMMARY_TAG}\n{summary}\n{SUMMARY_END_TAG}"}
