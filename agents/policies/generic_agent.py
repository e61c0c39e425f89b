"""GenericAgent's context management: head/tail truncation, budget eviction, working-memory anchor.

GenericAgent keeps a compact context budget (about 30K tokens) instead of relying on long
windows: long tool outputs of older messages are cut to their head and tail, the oldest
messages are evicted when the budget is exceeded, and a working-memory block with the task,
constraints and progress is re-injected at every step so eviction never makes the agent
forget what it is doing.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from erp_sim.agents.expense_facts import (
    GUARDRAILS,
    ExpenseFacts,
    facts_from_messages,
    key_variable_lines,
    observe_messages,
    task_line,
    todo_lines,
)
from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.policies.folding import starts_with
from erp_sim.agents.policies.units import Unit, UnitMemo, flatten, tool_call_names
from erp_sim.agents.tokens import TokenCounter
from erp_sim.agents.types import Message

MARKER = "\n[... {omitted} characters omitted ...]\n"
ANCHOR_TAG = "<WORKING_MEMORY>"
ANCHOR_END_TAG = "</WORKING_MEMORY>"


# -- head/tail truncation --------------------------------------------------------------------
class HeadTailParams(PolicyParams):
    chars: int = Field(
        800, ge=0, description="Character cap on a tool output (0: none); cut to the first and last chars/2."
    )
    tokens: int = Field(
        0, ge=0, description="Token cap on a tool output (0: none); cut to the first and last tokens/2."
    )
    keep_recent: int = Field(
        1, ge=0, description="Most recent tool units left untouched ('old messages' only are cut)."
    )
    tool_chars: dict[str, int] = Field(default_factory=dict, description="Per-tool character caps, overriding chars.")
    tool_tokens: dict[str, int] = Field(default_factory=dict, description="Per-tool token caps, overriding tokens.")

    @model_validator(mode="after")
    def _caps_not_negative(self) -> HeadTailParams:
        for name, cap in {**self.tool_chars, **self.tool_tokens}.items():
            if cap < 0:
                raise ValueError(f"cap for tool {name!r} must be >= 0, got {cap}")
        return self


def cut_chars(text: str, cap: int) -> str:
    """``text`` if it fits in ``cap`` characters, else its head and tail around a marker."""
    if cap <= 0 or len(text) <= cap:
        return text
    return _join_cut(text, cap // 2, len(text) - (cap - cap // 2))


def _join_cut(text: str, head_end: int, tail_start: int) -> str:
    return text[:head_end] + MARKER.format(omitted=tail_start - head_end) + text[tail_start:]


def _token_bounds(text: str, cap: int, counter: TokenCounter) -> tuple[int, int]:
    """Character bounds (head end, tail start) keeping about cap/2 tokens at each end."""
    encoder = counter.encoder
    ids = encoder.encode(text)
    head_tokens, tail_tokens = cap // 2, cap - cap // 2
    while True:
        head = encoder.decode(ids[:head_tokens]) if head_tokens else ""
        tail = encoder.decode(ids[len(ids) - tail_tokens :]) if tail_tokens else ""
        # a cut inside a multi-byte character decodes to U+FFFD: step back a token until clean
        if head_tokens and not text.startswith(head):
            head_tokens -= 1
        elif tail_tokens and not text.endswith(tail):
            tail_tokens -= 1
        else:
            head_end, tail_start = len(head), len(text) - len(tail)
            cut = _join_cut(text, head_end, tail_start)
            if counter.count_text(cut) <= cap + counter.count_text(MARKER.format(omitted=tail_start - head_end)):
                return head_end, tail_start
            if head_tokens == tail_tokens == 0:
                return 0, len(text)
            head_tokens, tail_tokens = max(head_tokens - 1, 0), max(tail_tokens - 1, 0)


def cut_head_tail(text: str, chars: int, tokens: int, counter: TokenCounter) -> str:
    """Keep the head and tail of ``text`` within a character cap and a token cap (0: no cap).

    The result is at most ``chars`` characters and ``tokens`` tokens, plus one marker
    saying how many characters were omitted; a text within both caps is returned as is.
    """
    head_end, tail_start = len(text), 0  # no cut yet: the head and the tail each cover the whole text
    if chars and len(text) > chars:
        head_end, tail_start = chars // 2, len(text) - (chars - chars // 2)
    if tokens and counter.count_text(text) > tokens:
        token_head, token_tail = _token_bounds(text, tokens, counter)
        head_end, tail_start = min(head_end, token_head), max(tail_start, token_tail)
    if head_end >= tail_start:
        return text
    return _join_cut(text, head_end, tail_start)


class HeadTail(ContextPolicy):
    """Cut long tool outputs of older units to head + marker + tail (GenericAgent: 400 + 400 chars).

    Applies to tool results of every tool unit except the last ``keep_recent`` ones (the
    current observation stays whole). A result over its character cap keeps its first
    ``cap // 2`` and last ``cap - cap // 2`` characters; over its token cap, the same in
    tokens; with both caps, the tighter cut at each end wins. Promise: a cut result has at
    most ``chars`` characters and ``tokens`` tokens plus one marker (``cut_head_tail``).
    Per-tool caps (``tool_chars``, ``tool_tokens``; spec ``tool_chars=form_find_controls:2000``)
    override the global ones for results of that tool; a cap of 0 means "no cap".
    """

    name: ClassVar[str] = "head_tail"
    Params: ClassVar[type[PolicyParams]] = HeadTailParams
    params: HeadTailParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._cut: dict[tuple[str, str], str] = {}
        self._cut_units = UnitMemo()

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        tool_indices = [i for i, unit in enumerate(split.units) if unit.kind == "tool"]
        keep = self.params.keep_recent
        old = set(tool_indices[: max(len(tool_indices) - keep, 0)])
        units = [self._cut_unit(unit) if i in old else unit for i, unit in enumerate(split.units)]
        return split.join(units)

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Up to the first recent tool unit that the next step cuts (it becomes old then), or everything."""
        parts = layout(context)
        recent = parts.tool_units()[-self.params.keep_recent :] if self.params.keep_recent else []
        changed = next((i for i in recent if self._cut_unit(parts.units[i]) is not parts.units[i]), None)
        return [parts.head, len(context) if changed is None else parts.unit_starts[changed]]

    def _cut_unit(self, unit: Unit) -> Unit:
        cached = self._cut_units.get(unit)
        if cached is None:
            cached = self._cut_results(unit)
            self._cut_units.put(unit, cached)
        return cached

    def _cut_results(self, unit: Unit) -> Unit:
        names = tool_call_names(unit)
        results, changed = [], False
        for result in unit.tool_results:
            content = result.get("content")
            if isinstance(content, str):
                named: str = result.get("name", "")  # the result's own name when its call is not in the unit
                tool = names.get(result.get("tool_call_id", ""), named)
                cut = self._cut_text(content, tool)
                if cut is not content:
                    result, changed = {**result, "content": cut}, True
            results.append(result)
        return Unit("tool", (unit.messages[0], *results)) if changed else unit

    def _cut_text(self, text: str, tool: str) -> str:
        key = (tool, text)
        cached = self._cut.get(key)
        if cached is None:
            chars = self.params.tool_chars.get(tool, self.params.chars)
            tokens = self.params.tool_tokens.get(tool, self.params.tokens)
            cached = cut_head_tail(text, chars, tokens, self.counter)
            if len(self._cut) > 65_536:
                self._cut.clear()
            self._cut[key] = cached
        return cached


# -- budget eviction -------------------------------------------------------------------------
class BudgetEvictionParams(PolicyParams):
    budget: int = Field(30_000, ge=1, description="Context budget in tokens (messages, as count_messages counts them).")
    target: float = Field(0.6, gt=0, le=1, description="After an eviction the context is at most target * budget.")
    min_units: int = Field(3, ge=0, description="Most recent units never evicted, even over budget.")


class BudgetEviction(ContextPolicy):
    """Evict the oldest whole units when the context exceeds a token budget (GenericAgent, ~30K).

    The visible context is the head plus the units after the eviction point. When it
    exceeds ``budget`` tokens, the eviction point moves forward, oldest unit first, until the
    context is at most ``target * budget`` or only ``min_units`` units are left; it then
    stays put until the budget is exceeded again (hysteresis: the prefix the model sees is
    stable between evictions). Promise: the output is within ``budget`` tokens, unless the
    head plus the last ``min_units`` units alone exceed it. Nothing replaces evicted units;
    pair with ``working_memory_anchor`` to keep the task state.
    """

    name: ClassVar[str] = "budget_eviction"
    Params: ClassVar[type[PolicyParams]] = BudgetEvictionParams
    params: BudgetEvictionParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._evicted = 0
        self._boundary: Message | None = None  # first message of the last evicted unit
        self._evicts_next = True

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        units = split.units
        if self._evicted and not self._still_valid(units):
            self.reset_state()
        count = self.counter.count_message
        total = self.counter.count_messages(split.head)
        unit_tokens = [sum(map(count, unit.messages)) for unit in units[self._evicted :]]
        total += sum(unit_tokens)
        if total > self.params.budget:
            target = self.params.target * self.params.budget
            dropped = 0
            while total > target and len(unit_tokens) - dropped > self.params.min_units:
                total -= unit_tokens[dropped]
                dropped += 1
            self._evicted += dropped
            if self._evicted:
                self._boundary = units[self._evicted - 1].messages[0]
            unit_tokens = unit_tokens[dropped:]
        # the next step evicts when a unit as large as the largest shown takes the context past the budget
        self._evicts_next = total + max(unit_tokens, default=0) > self.params.budget
        return split.join(units[self._evicted :])

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Between evictions the context only grows (the hysteresis): everything, until the next one."""
        parts = layout(context)
        return [parts.head] + ([] if self._evicts_next else [len(context)])

    def _still_valid(self, units: list[Unit]) -> bool:
        if len(units) < self._evicted:
            return False
        first = units[self._evicted - 1].messages[0]
        return first is self._boundary or first == self._boundary


# -- working-memory anchor -------------------------------------------------------------------
class WorkingMemoryParams(PolicyParams):
    at: Literal["start", "end"] = Field(
        "start", description="start: right after the instruction (pinned); end: as the last message."
    )


def render_anchor(task: str, facts: ExpenseFacts) -> str:
    """The working-memory block: task, constraints, progress, next steps."""
    progress = key_variable_lines(facts)
    if facts.actions:
        progress.append(f"Tool calls so far: {len(facts.actions)}; last: {facts.actions[-1]}")
    progress += [f"Seen: {note}" for note in facts.notes[-3:]]
    sections = [
        ("Task", [task_line(task)]),
        ("Constraints", [f"- {rule}" for rule in GUARDRAILS]),
        ("Progress", progress),
        ("Next", [f"- {line}" for line in todo_lines(facts)]),
    ]
    body = "\n\n".join(f"## {title}\n" + "\n".join(lines) for title, lines in sections)
    return f"{ANCHOR_TAG}\n{body}\n{ANCHOR_END_TAG}"


class WorkingMemoryAnchor(ContextPolicy):
    """Re-inject a working-memory block (task, constraints, progress) at every step (GenericAgent).

    The block is derived from every observation of the transcript this policy receives by
    the structured fact extractor (``erp_sim.agents.expense_facts``), so it needs no model and stays
    correct after later policies evict the observations it came from. It is a user message
    between ``<WORKING_MEMORY>`` tags, right after the instruction (``at=start``, a pinned
    block that later policies keep) or at the very end (``at=end``). Facts are folded
    incrementally: each message is read once per episode.
    """

    name: ClassVar[str] = "working_memory_anchor"
    Params: ClassVar[type[PolicyParams]] = WorkingMemoryParams
    params: WorkingMemoryParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._read: list[Message] = []
        self._facts: ExpenseFacts | None = None

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        task = self.task_text(split.instruction)
        body = flatten(split.units)
        if self._facts is None or not starts_with(body, self._read):
            self._facts, self._read = facts_from_messages([], task), []
        observe_messages(self._facts, body[len(self._read) :])
        self._read = body
        anchor = {"role": "user", "content": render_anchor(task, self._facts)}
        if self.params.at == "start":
            return split.join(pinned=[*split.pinned, anchor])
        return [*split.join(), anchor]

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """The block is written afresh at every step: what precedes it (at=start: the system prompt and the
        instruction; at=end: everything but the block)."""
        if self.params.at == "start":
            return [layout(context).instruction]
        return [layout(context[:-1]).head, len(context) - 1]
