"""An episode's settings besides its task, agent and policy, typed once: the ERP's verbosity, the env's
step limit and the model's context window.

``EpisodeSettings`` is what ``erp-sim eval``, ``sweep`` and ``scale`` take as ``--verbosity``, ``--max-steps``
and ``--context-window`` (``add_settings_arguments``: choices and defaults read from the model), what every
``EpisodeSpec`` carries (it extends the model), what the env is made with (``env_kwargs``) and the runner run
with (``run_kwargs``), and what a results row's ``sampling`` records (``sampling``). Each limit is a constant
of the layer that owns it: the step limit the env's (``erp_sim.envs.MAX_EPISODE_STEPS``, and each env id's
own), the cap on model calls the runner's (``runner.model_call_limit``), the length of argument text the
session's (``erp_sim.json_values.MAX_ARGUMENT_CHARS``).
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from erp_sim.agents.models.roles import positive
from erp_sim.verbosity import VERBOSITIES, Verbosity

#: The three settings, in the order a row's ``sampling`` stores them.
SAMPLED = ("context_window", "max_steps", "verbosity")


class EpisodeSettings(BaseModel):
    """How the env and the runner are set up for an episode (the eval spec extends it)."""

    model_config = ConfigDict(extra="forbid")
    verbosity: Verbosity = Field("default", description="ERP response verbosity")
    max_steps: PositiveInt | None = Field(
        None, description="environment steps per episode (None: the env's step limit, erp_sim.envs.MAX_EPISODE_STEPS)"
    )
    context_window: PositiveInt | None = Field(
        None, description="tokens; a longer request ends the episode (context_overflow); None: no limit of ours"
    )

    def step_limit(self) -> int:
        """``max_steps``, or the env's own limit where it is None."""
        if self.max_steps is not None:
            return self.max_steps
        from erp_sim.envs import MAX_EPISODE_STEPS

        return MAX_EPISODE_STEPS

    def env_kwargs(self) -> dict[str, Any]:
        """The ``gym.make`` keywords these settings fix."""
        return {"verbosity": self.verbosity, "max_episode_steps": self.step_limit()}

    def run_kwargs(self) -> dict[str, Any]:
        """The ``run_episode`` keywords these settings fix: the window, and the runner's cap on model calls for
        this many env steps."""
        from erp_sim.agents.runner import model_call_limit

        return {"context_window": self.context_window, "max_model_calls": model_call_limit(self.step_limit())}

    def sampling(self) -> dict[str, Any]:
        """A row's ``sampling`` entries for these settings (the step limit as the episode ran with it)."""
        return {"context_window": self.context_window, "max_steps": self.step_limit(), "verbosity": self.verbosity}


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-steps``, ``--verbosity`` and ``--context-window``, as ``EpisodeSettings`` types them."""
    fields = EpisodeSettings.model_fields
    parser.add_argument(
        "--max-steps", type=positive(int), default=None, metavar="N", help=fields["max_steps"].description
    )
    parser.add_argument(
        "--verbosity", choices=VERBOSITIES, default=fields["verbosity"].default, help=fields["verbosity"].description
    )
    parser.add_argument(
        "--context-window",
        type=positive(int),
        metavar="TOKENS",
        help="the model's context window: a longer request ends its episode, scored as context_overflow "
        "(None: no limit of ours; a server's own context-length 400 does the same)",
    )


def settings_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``EpisodeSettings`` fields of parsed options."""
    return {name: getattr(args, name) for name in EpisodeSettings.model_fields}
