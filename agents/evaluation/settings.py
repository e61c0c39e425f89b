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
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from erp_sim.agents.models.roles import positive
from erp_sim.agents.runner import model_call_limit
from erp_sim.oracle import oracle_steps
from erp_sim.verbosity import VERBOSITIES, Verbosity

#: The three settings, in the order a row's ``sampling`` stores them.
SAMPLED = ("context_window", "max_steps", "verbosity")


def envs_package() -> ModuleType:
    """``erp_sim.envs`` (its step limits), imported on first use: importing it registers the ids with Gymnasium,
    which the eval's parent and a worker's start-up need not load (tests/test_startup.py)."""
    import erp_sim.envs

    return erp_sim.envs


class EpisodeSettings(BaseModel):
    """How the env and the runner are set up for an episode (the eval spec extends it)."""

    model_config = ConfigDict(extra="forbid")
    verbosity: Verbosity = Field("default", description="ERP response verbosity")
    max_steps: PositiveInt | None = Field(
        None,
        description="environment steps per episode (None: the task set's own step limit, its env id's: 200, "
        "long_horizon 1,500)",
    )
    context_window: PositiveInt | None = Field(
        None, description="tokens; a longer request ends the episode (context_overflow); None: no limit of ours"
    )

    def step_limit(self, task_set: str | None = None) -> int:
        """``max_steps``, or where it is None the task set's own limit (``erp_sim.envs.task_set_step_limit``; without a
        task set, the envs' default)."""
        if self.max_steps is not None:
            return self.max_steps
        envs = envs_package()
        return envs.MAX_EPISODE_STEPS if task_set is None else envs.task_set_step_limit(task_set)

    def env_kwargs(self) -> dict[str, Any]:
        """The ``gym.make`` keywords these settings fix."""
        return {"verbosity": self.verbosity, "max_episode_steps": self.step_limit()}

    def run_kwargs(self) -> dict[str, Any]:
        """The ``run_episode`` keywords these settings fix: the window, and the runner's cap on model calls for
        this many env steps."""
        return {"context_window": self.context_window, "max_model_calls": model_call_limit(self.step_limit())}

    def sampling(self) -> dict[str, Any]:
        """A row's ``sampling`` entries for these settings (the step limit as the episode ran with it)."""
        return {"context_window": self.context_window, "max_steps": self.step_limit(), "verbosity": self.verbosity}


SHOWN_SHORT_TASKS = 3  # tasks a step-limit warning names


def step_limit_warning(task_set: str, task_ids: list[str], max_steps: int) -> str | None:
    """A warning when ``max_steps`` is fewer steps than the oracle needs for some tasks (their episodes can only
    end as step_limit, whatever the policy), naming them and the task set's own limit; None when all fit."""
    needed = oracle_steps(task_set, task_ids)
    short = sorted((steps, task_id) for task_id, steps in needed.items() if steps > max_steps)
    if not short:
        return None
    shown = ", ".join(f"{task_id} needs {steps:,}" for steps, task_id in reversed(short[-SHOWN_SHORT_TASKS:]))
    own = envs_package().task_set_step_limit(task_set)
    advice = (
        f"the task set's own limit is {own:,} (leave --max-steps out to use it)"
        if own >= short[-1][0]
        else f"pass --max-steps {short[-1][0]:,} or more"
    )
    return (
        f"warning: --max-steps {max_steps:,} is fewer steps than the oracle takes for {len(short)} of "
        f"{len(needed)} tasks ({shown}{', ...' if len(short) > SHOWN_SHORT_TASKS else ''}): their episodes can "
        f"only end as step_limit; {advice}"
    )


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
