"""Anthropic-style tool-result clearing (``clear_tool_uses_20250919``), client side."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from agents.policies.base import ContextPolicy, PolicyParams
from agents.policies.units import Unit, UnitMemo, split_transcript, tool_call_names
from agents.tokens import RunningCount
from agents.types import Message

CLEARED_ARGUMENTS = "{}"


class ClearToolUsesParams(PolicyParams):
    trigger: int = Field(100_000, ge=0, description="Input tokens above which clearing applies (Anthropic default 100K).")
    keep: int = Field(3, ge=0, description="Most recent tool uses whose results are never cleared (Anthropic default 3).")
    clear_at_least: int = Field(0, ge=0, description="Clear only if at least this many tokens are freed; else clear nothing.")
    exclude_tools: list[str] = Field(default_factory=list, description="Tools whose uses are never cleared.")
    clear_tool_inputs: bool = Field(False, description="Also clear the arguments of the cleared calls.")
    placeholder: str = Field("[cleared]", min_length=1, description="Text that replaces a cleared tool result.")


class ClearToolUses(ContextPolicy):
    """Replace old tool results with a placeholder once the input exceeds ``trigger`` tokens.

    Semantics of Anthropic's context editing, evaluated afresh at every step on the
    messages this policy receives (as the API does on every request; the full transcript is
    never modified): if those messages count more than ``trigger`` tokens, every tool use
    except the ``keep`` most recent ones (one tool use = one call and its result; parallel
    calls count one each) has its result content replaced by ``placeholder``, oldest first,
    skipping tools in ``exclude_tools`` and results already cleared. With
    ``clear_tool_inputs`` the cleared calls' arguments become ``"{}"`` too. If all that
    frees fewer than ``clear_at_least`` tokens, nothing is cleared. Call ids stay, so every
    call keeps its (cleared) result.
    """

    name: ClassVar[str] = "clear_tool_uses"
    Params: ClassVar[type[PolicyParams]] = ClearToolUsesParams

    def reset_state(self) -> None:
        self._cleared = UnitMemo()
        self._input_tokens = RunningCount(self.counter)

    def build_context(self, messages: list[Message]) -> list[Message]:
        if self._input_tokens(messages) <= self.params.trigger:
            return list(messages)
        split = split_transcript(messages)
        uses = [
            (index, result)
            for index, unit in enumerate(split.units)
            if unit.kind == "tool"
            for result in unit.tool_results
        ]
        old = uses[: max(len(uses) - self.params.keep, 0)]
        to_clear: dict[int, set[str]] = {}
        for index, result in old:
            tool = tool_call_names(split.units[index]).get(result.get("tool_call_id", ""), result.get("name", ""))
            if tool in self.params.exclude_tools or result.get("content") == self.params.placeholder:
                continue
            to_clear.setdefault(index, set()).add(result.get("tool_call_id", ""))
        if not to_clear:
            return list(messages)
        units = list(split.units)
        freed = 0
        for index, call_ids in to_clear.items():
            units[index], unit_freed = self._cleared_unit(units[index], frozenset(call_ids))
            freed += unit_freed
        if freed < self.params.clear_at_least:
            return list(messages)
        return split.join(units)

    def _cleared_unit(self, unit: Unit, call_ids: frozenset[str]) -> tuple[Unit, int]:
        """The unit with the results of ``call_ids`` cleared, and the tokens that frees (memoized)."""
        cached = self._cleared.get(unit, call_ids)
        if cached is None:
            cleared = self._clear_unit(unit, call_ids)
            count = self.counter.count_message
            freed = sum(count(a) - count(b) for a, b in zip(unit.messages, cleared.messages) if a is not b)
            cached = (cleared, freed)
            self._cleared.put(unit, cached, call_ids)
        return cached

    def _clear_unit(self, unit: Unit, call_ids: set[str]) -> Unit:
        call = unit.messages[0]
        if self.params.clear_tool_inputs:
            call = {
                **call,
                "tool_calls": [
                    {**c, "function": {**(c.get("function") or {}), "arguments": CLEARED_ARGUMENTS}}
                    if c.get("id") in call_ids
                    else c
                    for c in call["tool_calls"]
                ],
            }
        results = tuple(
            {**r, "content": self.params.placeholder} if r.get("tool_call_id") in call_ids else r
            for r in unit.tool_results
        )
        return Unit("tool", (call, *results))
