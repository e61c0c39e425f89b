"""Where a built context's parts lie, for the prefixes a policy claims it will send again unchanged.

Each policy's ``stable_prefixes(context)`` (``erp_sim.agents.models.stable_prefix``) names lengths of
prefixes of the context it just built that its next request will start with, assuming its own input
grows by appending (the runner's transcript does; in a stack, ``stable_prefix.within`` keeps only what
the layer above vouched for). A claim is the policy's best knowledge: a wrong one costs a cache write
nobody reads, never a wrong answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

from erp_sim.agents.policies.units import Unit, split_transcript
from erp_sim.agents.types import Message


@dataclass(frozen=True)
class Layout:
    """Prefix lengths of a context: after its system messages, after the instruction, after the pinned
    blocks (the head), and where each unit starts (its last entry: the whole context)."""

    system: int
    instruction: int
    head: int
    unit_starts: tuple[int, ...]
    units: tuple[Unit, ...]

    @property
    def whole(self) -> int:
        return self.unit_starts[-1]

    def tool_units(self) -> list[int]:
        """Indices of the tool units."""
        return [index for index, unit in enumerate(self.units) if unit.kind == "tool"]


def layout(context: list[Message]) -> Layout:
    split = split_transcript(context)
    system = len(split.system)
    instruction = system + (split.instruction is not None)
    head = instruction + len(split.pinned)
    starts = tuple(accumulate((len(unit.messages) for unit in split.units), initial=head))
    return Layout(system, instruction, head, starts, tuple(split.units))
