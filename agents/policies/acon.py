"""ACON's two compressors (Kang et al., 2025): history compression and observation compression.

ACON compresses only past a threshold, keeps the most recent action-observation turn, and
writes the compressed text back in place of the original, so later steps build on it:
``h' = f(h)`` if ``|h| > T_hist``; ``o' = f(o, h)`` if ``|o| > T_obs``.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.policies.folding import SummaryFold, starts_with
from erp_sim.agents.policies.units import Unit, UnitMemo, flatten
from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import Message

GUIDELINE_HELP = (
    "File holding the compression guideline: the compressor's whole instruction (system prompt), "
    "e.g. one written by `erp-sim acon optimize`. Unset: the built-in prompt in agents/prompts. "
    "Only an LLM summarizer follows it; the offline structured summarizer ignores it."
)


def check_guideline_file(path: str | None) -> str | None:
    """A guideline file must exist and hold text; checked when the spec is parsed."""
    if path is None:
        return None
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"guideline file {path!r} not found")
    if not file.read_text(encoding="utf-8").strip():
        raise ValueError(f"guideline file {path!r} is empty")
    return path


class GuidedCompression:
    """Mixin: the guideline text of a policy whose params have ``guideline``, as summarizer kwargs."""

    params: Any  # a policy's params with a ``guideline`` field (AconHistoryParams, AconObservationParams)

    @cached_property
    def guideline_kwargs(self) -> dict[str, str]:
        path = self.params.guideline
        return {"guideline": Path(path).read_text(encoding="utf-8")} if path else {}


HISTORY_TAG = "<HISTORY_SUMMARY>"
HISTORY_END_TAG = "</HISTORY_SUMMARY>"


def with_history_block(instruction: Message | None, summary: str) -> Message:
    """A COPY of the first user message with the summary block appended to its text.

    The only sanctioned change to the instruction: the original text stays a prefix.
    """
    block = f"\n\n{HISTORY_TAG}\n{summary}\n{HISTORY_END_TAG}"
    if instruction is None:
        return {"role": "user", "content": block.lstrip()}
    content = instruction.get("content")
    if isinstance(content, list):
        return {**instruction, "content": [*content, {"type": "text", "text": block}]}
    return {**instruction, "content": (content or "") + block}


class AconHistoryParams(PolicyParams):
    t: int = Field(4096, ge=0, description="T_hist: history tokens above which the history is compressed.")
    k: int = Field(1, ge=0, description="Most recent turns (units) always kept verbatim.")
    mode: Literal["accumulate", "reset"] = Field(
        "accumulate",
        description="accumulate: new summary from previous summary + folded units; reset: from folded units only.",
    )
    guideline: str | None = Field(None, description=GUIDELINE_HELP)

    _check_guideline = field_validator("guideline")(check_guideline_file)


class AconHistory(GuidedCompression, ContextPolicy):
    """ACON history compression (T_hist=4096, k=1).

    History = every unit after the instruction, plus the summary block. When its tokens
    exceed ``t``, all units but the last ``k`` that are not yet summarized are folded into
    the summary in one summarizer call, and from then on they are shown only through it.
    The summary sits in a ``<HISTORY_SUMMARY>`` block appended to a copy of the first user
    message (the original instruction text stays a prefix of it).

    ``mode``: ``accumulate`` (ACON's rule) writes the new summary from the previous summary
    plus the newly folded units, so knowledge carries forward; ``reset`` writes it from the
    newly folded units alone and drops the previous summary (an ablation: only the last
    compression is remembered).

    Compression points depend on when the threshold was crossed, so the policy keeps them
    as per-episode state; a transcript that does not extend the folded units (another
    episode, or an upstream policy that rewrote them) starts the state afresh.
    """

    name: ClassVar[str] = "acon_history"
    Params: ClassVar[type[PolicyParams]] = AconHistoryParams
    params: AconHistoryParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._fold = SummaryFold()
        self._folded_units: list[int] = []  # units folded by each summarizer call
        self._instruction_copy: tuple[Message | None, str, Message] | None = None
        self._largest_unit = 0  # tokens of the largest unit seen: what the next step may add
        self._folds_next = True

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        folded_messages = [m for batch, _ in self._fold.batches for m in batch]
        if not starts_with(flatten(split.units), folded_messages):
            self.reset_state()
        done = sum(self._folded_units)
        rest = split.units[done:]
        summary = self._fold.batches[-1][1] if self._fold.batches else None
        unit_tokens = [sum(map(self.counter.count_message, unit.messages)) for unit in rest]
        self._largest_unit = max([self._largest_unit, *unit_tokens])
        history_tokens = sum(unit_tokens)
        if summary:
            history_tokens += self.counter.count_text(summary)
        fold_count = len(rest) - self.params.k
        if history_tokens > self.params.t and fold_count > 0:
            batches = [list(batch) for batch, _ in self._fold.batches] + [flatten(rest[:fold_count])]
            task = self.task_text(split.instruction)
            summary = self._fold.summary(
                batches,
                lambda batch, previous: self.record_summary(
                    self.summarizer.summarize_history(task, batch, previous, **self.guideline_kwargs)
                ),
                chained=self.params.mode == "accumulate",
            )
            self._folded_units.append(fold_count)
            rest = rest[fold_count:]
            unit_tokens = unit_tokens[fold_count:]
        # the next step compresses when a unit as large as the largest so far takes the history past t
        after = sum(unit_tokens) + (self.counter.count_text(summary) if summary else 0)
        self._folds_next = after + self._largest_unit > self.params.t and len(rest) + 1 > self.params.k
        if not summary:
            return split.join(rest)
        out = [*split.system, self._instruction_with(split.instruction, summary), *split.pinned]
        out.extend(flatten(rest))
        return out

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Between compressions the context only grows; a compression rewrites the instruction's copy (its
        summary block), so then only the system prompt. The next step compresses if a unit as large as the
        largest so far would take the history past t."""
        parts = layout(context)
        return [parts.system] if self._folds_next else [parts.instruction, len(context)]

    def _instruction_with(self, instruction: Message | None, summary: str) -> Message:
        cached = self._instruction_copy
        if cached is None or cached[0] is not instruction or cached[1] != summary:
            cached = (instruction, summary, with_history_block(instruction, summary))
            self._instruction_copy = cached
        return cached[2]


class AconObservationParams(PolicyParams):
    t: int = Field(1024, ge=0, description="T_obs: tool-output tokens above which an observation is refined.")
    recent: int = Field(3, ge=0, description="Units of preceding history given to the refiner as context.")
    guideline: str | None = Field(None, description=GUIDELINE_HELP)

    _check_guideline = field_validator("guideline")(check_guideline_file)


class AconObservation(GuidedCompression, ContextPolicy):
    """ACON observation compression (T_obs=1024).

    A tool result whose content exceeds ``t`` tokens is replaced by a refined observation,
    written by the summarizer from the task, the ``recent`` preceding units (as the model
    saw them, already refined) and the raw result. Each result is refined once, when it is
    first seen (as the newest observation), and the refined text replaces it at every later
    step, as in ACON. The tool call id is kept, so the call/result pairing holds.
    """

    name: ClassVar[str] = "acon_observation"
    Params: ClassVar[type[PolicyParams]] = AconObservationParams
    params: AconObservationParams  # the instance's parameters, of this policy's own type

    def reset_state(self) -> None:
        self._refined: dict[tuple[str, str], Message] = {}
        self._units = UnitMemo()

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        task = self.task_text(split.instruction)
        units: list[Unit] = []
        for unit in split.units:
            if unit.kind == "tool":
                recent = units[max(len(units) - self.params.recent, 0) :] if self.params.recent else []
                unit = self._refine_unit(unit, task, recent)
            units.append(unit)
        return split.join(units)

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """A result is refined when first seen and stays so: everything sent is sent again."""
        return [layout(context).head, len(context)]

    def _refine_unit(self, unit: Unit, task: str, history: list[Unit]) -> Unit:
        cached = self._units.get(unit)
        if cached is None:
            cached = self._refine_results(unit, task, history)
            self._units.put(unit, cached)
        return cached

    def _refine_results(self, unit: Unit, task: str, history: list[Unit]) -> Unit:
        results, changed = [], False
        for result in unit.tool_results:
            text = message_text(result.get("content"))
            if self.counter.count_text(text) > self.params.t:
                key = (result.get("tool_call_id", ""), text)
                refined = self._refined.get(key)
                if refined is None:
                    answer = self.summarizer.refine_observation(task, result, flatten(history), **self.guideline_kwargs)
                    refined = {**result, "content": self.record_summary(answer)}
                    self._refined[key] = refined
                result, changed = refined, True
            results.append(result)
        return Unit("tool", (unit.messages[0], *results)) if changed else unit
