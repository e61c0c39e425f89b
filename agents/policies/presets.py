"""The study's configurations C1-C4 as named presets (Lodha et al., hotel itemization in D365)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Preset(BaseModel):
    policy: str = Field(description="Policy spec string.")
    user_model: Literal["rule", "none"] = Field(
        description="'rule': the env's simulated user answers; 'none': nobody does."
    )
    description: str = ""


PRESETS: dict[str, Preset] = {
    "C1": Preset(policy="full", user_model="none", description="full history, no user model: questions stall the run"),
    "C2": Preset(policy="full", user_model="rule", description="full history with a user model (baseline)"),
    "C3": Preset(policy="last_n:n=5", user_model="rule", description="last 5 tool-call/response units"),
    "C4": Preset(policy="last_n_summary:n=5,w=3", user_model="rule", description="last 5 units + summary, window 3"),
}


def preset(name: str) -> Preset:
    try:
        return PRESETS[name.upper()]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
