"""A transcript as a head plus indivisible units, and the checks every policy's output passes.

Policies never cut inside a unit, so they can never leave a tool result without the call
that asked for it, or a call without its result:

- head: the leading system (or developer) messages, the first user message (the task
  instruction) and any policy blocks pinned right after it (a message whose text starts
  with one of ``PINNED_TAGS``, e.g. a summary or working-memory block a policy inserted),
  so a policy further down the stack keeps them like the instruction;
- units, in order: an assistant message with ``tool_calls`` together with the tool results
  that follow it is ONE unit (kind ``"tool"``); plain assistant text is a unit
  (``"assistant"``); every later user message is a unit (``"user"``).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate, compress, count, islice
from operator import is_not
from typing import Any, Literal, NamedTuple

from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import Message

UnitKind = Literal["tool", "assistant", "user"]
HEAD_ROLES = ("system", "developer")
PINNED_TAGS = ("<EARLIER_STEPS_SUMMARY>", "<WORKING_MEMORY>", "<WORKING_CHECKPOINT>")


class TranscriptError(ValueError):
    """The messages do not form a valid OpenAI chat transcript."""


class Unit(NamedTuple):
    """Messages that are kept or dropped together (a tuple: cheap to build, compared by value)."""

    kind: UnitKind
    messages: tuple[Message, ...]

    @property
    def tool_results(self) -> tuple[Message, ...]:
        return self.messages[1:] if self.kind == "tool" else ()


@dataclass
class Split:
    """A transcript cut into its head and units; ``join`` puts it back together."""

    system: list[Message] = field(default_factory=list)
    instruction: Message | None = None
    pinned: list[Message] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    # from an ``IncrementalSplit``: its call number, and how many leading units are the very Unit objects of
    # its previous call's split (what a caller may trust unchanged without comparing them again)
    step: int = field(default=0, compare=False)
    reused: int = field(default=0, compare=False)

    @property
    def head(self) -> list[Message]:
        instruction = [self.instruction] if self.instruction is not None else []
        return [*self.system, *instruction, *self.pinned]

    def join(self, units: list[Unit] | None = None, pinned: list[Message] | None = None) -> list[Message]:
        """The head (optionally with other pinned blocks) followed by ``units`` (default: all)."""
        out = [*self.system]
        if self.instruction is not None:
            out.append(self.instruction)
        out.extend(self.pinned if pinned is None else pinned)
        for unit in self.units if units is None else units:
            out.extend(unit.messages)
        return out


def is_pinned_block(message: Message) -> bool:
    return message.get("role") == "user" and message_text(message.get("content")).startswith(PINNED_TAGS)


def split_transcript(messages: list[Message]) -> Split:
    """Cut ``messages`` into head and units. Raises ``TranscriptError`` on an orphan tool result."""
    split, i = _split_head(messages)
    _split_units(messages, i, split.units)
    return split


def _split_head(messages: list[Message]) -> tuple[Split, int]:
    """The head of ``messages`` (system, instruction, pinned blocks) and where the units start."""
    split = Split()
    i, n = 0, len(messages)
    while i < n and messages[i].get("role") in HEAD_ROLES:
        split.system.append(messages[i])
        i += 1
    if i < n and messages[i].get("role") == "user":
        split.instruction = messages[i]
        i += 1
        while i < n and is_pinned_block(messages[i]):
            split.pinned.append(messages[i])
            i += 1
    return split, i


def _split_units(messages: list[Message], i: int, units: list[Unit]) -> None:
    """Append the units of ``messages[i:]`` to ``units``."""
    n = len(messages)
    append = units.append
    while i < n:
        message = messages[i]
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            j = i + 1
            while j < n and messages[j].get("role") == "tool":
                j += 1
            append(Unit("tool", tuple(messages[i:j])))
            i = j
        elif role == "tool":
            raise TranscriptError(f"message {i}: tool result {message.get('tool_call_id')!r} follows no tool call")
        else:
            append(Unit("assistant" if role == "assistant" else "user", (message,)))
            i += 1


def common_prefix(a: list, b: list, start: int = 0) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` by identity (checked from ``start``).

    Written with C-level iterators: it runs on every message of long transcripts at each step.
    """
    end = min(len(a), len(b))
    differences = compress(count(start), map(is_not, islice(a, start, end), islice(b, start, end)))
    return next(differences, end)


class IncrementalSplit:
    """``split_transcript`` for a transcript that grows by appending: only what changed is re-split.

    Remembers the last transcript (a copy of the list). The next one is compared to it after the head
    (whose pinned blocks may change at every step, like a working-memory block): units lying entirely
    in the unchanged part are reused, the rest is split again. The common case, every unit but the
    last unchanged, is one list comparison in C after the copy is extended by the new messages (the
    very message objects compare at pointer speed without being touched; an equal copy of a message
    counts as unchanged, so its unit, equal in value, is reused), so a growing transcript is split in
    time proportional to what is new, with no list of the whole transcript or of its units built. A
    policy above that rewrites one older unit per step (head_tail cutting the unit that just became old)
    costs a re-split from that unit on. Each call returns a new ``Split`` whose ``units`` is the
    splitter's own list, cut and extended by the next call: read it before then, copy it to keep it.
    """

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._head = -1  # the last split's head length (-1: none yet)
        self._units: list[Unit] = []  # the last split's units, cut and extended in place
        self._ends: list[int] = []  # index after each unit of the last split
        self._grew = False  # the last call found the transcript grown by appending (its copy extended to match)
        self._step = 0  # calls so far

    def __call__(self, messages: list[Message]) -> Split:
        split, start = _split_head(messages)
        kept = self._reusable_units(messages, start)
        resume = self._ends[kept - 1] if kept else start
        units, ends = self._units, self._ends
        del units[kept:], ends[kept:]
        try:
            _split_units(messages, resume, units)
        except BaseException:  # nothing half-cut is reused: the next call splits afresh
            self._head = -1
            raise
        ends += list(accumulate((len(unit.messages) for unit in units[kept:]), initial=resume))[1:]
        if not self._grew:  # else ``_reusable_units`` extended the copy to equal ``messages``
            self._messages = list(messages)
        self._head = start
        self._step += 1
        split.units, split.step, split.reused = units, self._step, kept
        return split

    def _reusable_units(self, messages: list[Message], start: int) -> int:
        """How many units of the last split lie in the part of ``messages`` that is unchanged."""
        self._grew = False
        if start != self._head or not self._units:
            return 0
        last = len(self._units) - 1  # the last unit may still be growing: it is always split again
        known = self._messages
        shown = len(known)
        if len(messages) >= shown:  # the common case, it grew: extend the copy by what is new, compare pointers
            known += messages[shown:]
            if known == messages:
                self._grew = True
                return last
            del known[shown:]
        end = self._ends[last - 1] if last else start  # where the last unit starts
        if end <= len(messages) and self._messages[start:end] == messages[start:end]:
            return last
        same = common_prefix(self._messages, messages, start)
        return min(bisect_right(self._ends, same), last)


def flatten(units: list[Unit]) -> list[Message]:
    """The messages of ``units``, in order."""
    return [message for unit in units for message in unit.messages]


def tool_call_names(unit: Unit) -> dict[str, str]:
    """Tool call id -> tool name, for the calls of a tool unit."""
    if unit.kind != "tool":
        return {}
    return {
        call.get("id", ""): (call.get("function") or {}).get("name", "")
        for call in unit.messages[0].get("tool_calls") or ()
    }


def validate_messages(messages: list[Message]) -> None:
    """Raise ``TranscriptError`` unless ``messages`` is a chat list an OpenAI server accepts.

    System/developer messages only at the start; every assistant message with tool calls is
    followed directly by exactly one result per call (any order) and nothing else in between;
    no tool result anywhere else; roles from the known set.
    """
    known = {"system", "developer", "user", "assistant", "tool"}
    seen_other = False
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in known:
            raise TranscriptError(f"message {i}: unknown role {role!r}")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise TranscriptError(f"message {i}: tool result {call_id!r} answers no open tool call")
            pending.discard(call_id)
            continue
        if pending:
            raise TranscriptError(f"message {i}: tool calls {sorted(pending)} have no result")
        if role in HEAD_ROLES:
            if seen_other:
                raise TranscriptError(f"message {i}: {role} message after the conversation started")
            continue
        seen_other = True
        if role == "assistant" and message.get("tool_calls"):
            ids = [call.get("id") for call in message["tool_calls"]]
            if len(set(ids)) != len(ids) or None in ids:
                raise TranscriptError(f"message {i}: tool call ids missing or repeated: {ids}")
            pending = set(ids)
    if pending:
        raise TranscriptError(f"end of transcript: tool calls {sorted(pending)} have no result")


class UnitMemo:
    """Per-unit results of a policy, reused while the unit is the same.

    A unit counts as the same while its messages are the same objects holding the same
    content objects (checked in O(1) when it is the very Unit object seen before, which
    ``IncrementalSplit`` hands out for unchanged units). Transcripts are append-only, so
    a policy recomputes only new units at each step; a message whose content was replaced
    in place is seen as changed.
    """

    def __init__(self, limit: int = 65_536):
        self.limit = limit
        self._entries: dict[int, tuple[Unit, tuple, object, object]] = {}

    def get(self, unit: Unit, variant: object = None, default: Any = None) -> Any:
        entry = self._entries.get(id(unit.messages[0]))
        if entry is None or entry[2] != variant:
            return default
        if entry[0] is not unit and not _same_snapshot(entry[1], unit.messages):
            return default
        return entry[3]

    def put(self, unit: Unit, value: object, variant: object = None) -> None:
        if len(self._entries) >= self.limit:
            self._entries.clear()
        snapshot = tuple((m, m.get("content")) for m in unit.messages)
        self._entries[id(unit.messages[0])] = (unit, snapshot, variant, value)

    def clear(self) -> None:
        self._entries.clear()


def _same_snapshot(snapshot: tuple, messages: tuple[Message, ...]) -> bool:
    return len(snapshot) == len(messages) and all(
        m is old and m.get("content") is content for (old, content), m in zip(snapshot, messages)
    )
