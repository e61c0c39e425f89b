"""Anthropic-style tool-result clearing (``clear_tool_uses_20250919``), client side."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.policies.units import Unit, UnitMemo, tool_call_names
from erp_sim.agents.tokens import RunningCount, same_prefix
from erp_sim.agents.types import Message

CLEARED_ARGUMENTS = "{}"


class ClearToolUsesParams(PolicyParams):
    trigger: int = Field(
        100_000, ge=0, description="Input tokens above which clearing applies (Anthropic default 100K)."
    )
    keep: int = Field(
        3, ge=0, description="Most recent tool uses whose results are never cleared (Anthropic default 3)."
    )
    clear_at_least: int = Field(
        0, ge=0, description="Clear only if at least this many tokens are freed; else clear nothing."
    )
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
    params: ClearToolUsesParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._clearing = False
        self._cleared = UnitMemo()
        self._input_tokens = RunningCount(self.counter)
        # Units wholly older than the kept results, as last cleared: the input units, the output ones, and after
        # each the tokens freed so far and whether any was changed. A step works on the units new to that range.
        self._old_in: list[Unit] = []
        self._old_out: list[Unit] = []
        self._old_freed: list[int] = []
        self._old_changed: list[bool] = []

    def build_context(self, messages: list[Message]) -> list[Message]:
        self._clearing = self._input_tokens(messages) > self.params.trigger
        if not self._clearing:
            return list(messages)
        split = self.split_transcript(messages)
        units = list(split.units)
        kept = self.params.keep  # results still to keep, counted from the newest
        freed, changed, index = 0, False, len(units) - 1
        while index >= 0 and (kept or units[index].kind != "tool"):  # the newest units, down to the last kept result
            unit = units[index]
            if unit.kind == "tool":
                results = len(unit.messages) - 1
                old = max(results - kept, 0)  # the unit's first `old` results are candidates
                kept = max(kept - results, 0)
                if old:
                    units[index], unit_freed = self._cleared_unit(unit, old)
                    freed += unit_freed
                    changed = changed or units[index] is not unit
            index -= 1
        old_freed, old_changed = self._clear_old(units, index + 1)  # every result of the units before is a candidate
        freed, changed = freed + old_freed, changed or old_changed
        if not changed or (self.params.clear_at_least and freed < self.params.clear_at_least):
            return list(messages)
        return split.join(units)

    def _clear_old(self, units: list[Unit], end: int) -> tuple[int, bool]:
        """Clear every result of ``units[:end]`` in place; the tokens freed and whether any unit changed. The
        units cleared at the last step are compared in one list comparison and their results reused."""
        same = same_prefix(units[:end], self._old_in)
        del self._old_in[same:], self._old_out[same:], self._old_freed[same:], self._old_changed[same:]
        freed = self._old_freed[-1] if same else 0
        changed = self._old_changed[-1] if same else False
        for unit in units[same:end]:
            cleared, unit_freed = self._cleared_unit(unit, len(unit.messages) - 1) if unit.kind == "tool" else (unit, 0)
            freed, changed = freed + unit_freed, changed or cleared is not unit
            self._old_in.append(unit)
            self._old_out.append(cleared)
            self._old_freed.append(freed)
            self._old_changed.append(changed)
        units[:end] = self._old_out[:end]
        return freed, changed

    def _cleared_unit(self, unit: Unit, old: int) -> tuple[Unit, int]:
        """The unit with its first ``old`` results cleared (bar exclusions), and the tokens freed.

        Memoized per unit: at each step only units new to the old range are worked on.
        """
        cached = self._cleared.get(unit, old)
        if cached is None:
            names = tool_call_names(unit)
            call_ids = {
                result.get("tool_call_id", "")
                for result in unit.tool_results[:old]
                if names.get(result.get("tool_call_id", ""), result.get("name", "")) not in self.params.exclude_tools
                and result.get("content") != self.params.placeholder
            }
            cleared = self._clear_unit(unit, call_ids) if call_ids else unit
            count = self.counter.count_message
            freed = sum(count(a) - count(b) for a, b in zip(unit.messages, cleared.messages) if a is not b)
            cached = (cleared, freed)
            self._cleared.put(unit, cached, old)
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

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Below the trigger everything is sent again while a unit as large as the largest shown keeps it
        below; once clearing, up to the unit of the oldest kept result (the next step clears it)."""
        parts = layout(context)
        count = self.counter.count_message
        tokens = [sum(map(count, unit.messages)) for unit in parts.units]
        if not self._clearing and sum(map(count, context)) + max(tokens, default=0) <= self.params.trigger:
            return [parts.head, len(context)]
        results = [(i, result) for i in parts.tool_units() for result in parts.units[i].tool_results]
        if len(results) <= self.params.keep:
            return [parts.head]
        oldest_kept = results[-self.params.keep][0] if self.params.keep else len(parts.units)
        return [parts.head, parts.unit_starts[oldest_kept]]
