"""Opt-in, seeded fault injection: realistic passing failures that never change state.

A fault is decided before the tool runs, so a failed call has no effect and retrying is
always safe. The same task seed and profile give the same faults at the same call numbers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TypedDict

from erp_sim.errors import TransientFaultError

FAULT_KINDS: dict[str, str] = {
    "FormBusy": "The form is busy processing a previous request. Wait a moment and try again; nothing was changed.",
    "SessionLost": "The client session was interrupted and has been restored. The request was not processed; send it again.",
    "RequestTimeout": "The request timed out before the server processed it. No changes were made; retry the call.",
}


# A plain dataclass, not a pydantic model: ``gym.make`` checks its ``faults`` argument here, and
# that must not load the model layer (start-up target in scripts/bench_startup.py).
@dataclass(frozen=True)
class FaultProfile:
    """How often calls fail. ``rate`` 0 (the default) disables injection.

    ``rate``: share of tool calls that fail, 0 to 1. ``seed``: mixed with the task seed to draw
    faults. ``kinds``: the fault kinds to draw from (``FAULT_KINDS``).
    """

    rate: float = 0.0
    seed: int = 0
    kinds: tuple[str, ...] = field(default_factory=lambda: tuple(sorted(FAULT_KINDS)))

    def __post_init__(self) -> None:
        if isinstance(self.rate, bool) or not isinstance(self.rate, (int, float)) or not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be a number from 0 to 1, got {self.rate!r}")  # NaN fails too
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"fault seed must be an int, got {self.seed!r}")
        object.__setattr__(self, "kinds", tuple(self.kinds))
        unknown = sorted(set(self.kinds) - set(FAULT_KINDS))
        if unknown or not self.kinds:
            raise ValueError(f"Unknown fault kinds: {unknown or 'none given'}; known: {sorted(FAULT_KINDS)}")

    @classmethod
    def parse(cls, spec: str | float | FaultProfile | None) -> FaultProfile | None:
        """Accept None, a rate (0.1), ``"0.1"`` or ``"rate=0.1,seed=3,kinds=FormBusy|SessionLost"``.

        Raises ``ValueError`` naming what is wrong."""
        if spec is None or isinstance(spec, FaultProfile):
            return spec
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            return cls(rate=float(spec))
        if not isinstance(spec, str):
            raise ValueError(
                f"faults must be None, a rate or a string like 'rate=0.1,seed=3', got {type(spec).__name__}"
            )
        values: _ProfileSettings = {}
        for part in spec.split(","):
            key, has_value, value = (text.strip() for text in part.partition("="))
            try:
                if not has_value and "rate" not in values:
                    values["rate"] = float(key)
                elif key == "rate":
                    values["rate"] = float(value)
                elif key == "seed":
                    values["seed"] = int(value)
                elif key == "kinds":
                    values["kinds"] = tuple(kind.strip() for kind in value.split("|"))
                else:
                    raise ValueError(f"unknown setting {key!r}")
            except ValueError as exc:
                raise ValueError(f"Bad fault profile {spec!r} ({exc}); write e.g. 'rate=0.1,seed=3'") from None
        return cls(**values)


class _ProfileSettings(TypedDict, total=False):
    """The settings a profile string gives (``FaultProfile.parse``)."""

    rate: float
    seed: int
    kinds: tuple[str, ...]


class FaultInjector:
    def __init__(self, profile: FaultProfile, task_seed: int):
        self.profile = profile
        self.rng = random.Random(task_seed * 1_000_003 + profile.seed)

    def maybe_fail(self) -> None:
        draw, kind = self.rng.random(), self.rng.choice(self.profile.kinds)
        if draw < self.profile.rate:
            raise TransientFaultError(kind, FAULT_KINDS[kind])
