"""Opt-in, seeded fault injection: realistic passing failures that never change state.

A fault is decided before the tool runs, so a failed call has no effect and retrying is
always safe. The same task seed and profile give the same faults at the same call numbers.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, Field

from erp_sim.errors import TransientFaultError

FAULT_KINDS: dict[str, str] = {
    "FormBusy": "The form is busy processing a previous request. Wait a moment and try again; nothing was changed.",
    "SessionLost": "The client session was interrupted and has been restored. The request was not processed; send it again.",
    "RequestTimeout": "The request timed out before the server processed it. No changes were made; retry the call.",
}


class FaultProfile(BaseModel):
    """How often calls fail. ``rate`` 0 (the default) disables injection."""

    rate: float = Field(0.0, ge=0.0, le=1.0, description="Share of tool calls that fail.")
    seed: int = Field(0, description="Mixed with the task seed to draw faults.")
    kinds: list[str] = Field(default_factory=lambda: sorted(FAULT_KINDS), description="Fault kinds to draw from.")

    @classmethod
    def parse(cls, spec: "str | float | FaultProfile | None") -> "FaultProfile | None":
        """Accept None, a rate (0.1), ``"0.1"`` or ``"rate=0.1,seed=3"``."""
        if spec is None or isinstance(spec, FaultProfile):
            return spec
        if isinstance(spec, (int, float)):
            return cls(rate=float(spec))
        values: dict[str, object] = {}
        for part in str(spec).split(","):
            key, _, value = part.partition("=")
            if not value:
                values["rate"] = float(key)
            elif key.strip() == "kinds":
                values["kinds"] = value.split("|")
            else:
                values[key.strip()] = float(value) if key.strip() == "rate" else int(value)
        return cls(**values)


class FaultInjector:
    def __init__(self, profile: FaultProfile, task_seed: int):
        unknown = set(profile.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"Unknown fault kinds: {sorted(unknown)}; known: {sorted(FAULT_KINDS)}")
        self.profile = profile
        self.rng = random.Random(task_seed * 1_000_003 + profile.seed)

    def maybe_fail(self) -> None:
        draw, kind = self.rng.random(), self.rng.choice(self.profile.kinds)
        if draw < self.profile.rate:
            raise TransientFaultError(kind, FAULT_KINDS[kind])
