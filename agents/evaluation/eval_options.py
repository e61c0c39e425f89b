"""The options that ``erp-sim eval``, ``sweep`` and ``scale`` share, and the episode settings and
configurations they turn into."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from erp_sim import workflows
from erp_sim.agents.command_line import UsageError
from erp_sim.agents.evaluation.costs import add_price_argument
from erp_sim.agents.evaluation.settings import EpisodeSettings, add_settings_arguments, settings_options
from erp_sim.agents.models.roles import (
    EVAL_ROLES,
    add_backend_arguments,
    add_model_arguments,
    params_by_role,
    positive,
    server_url,
)
from erp_sim.agents.policies import parse_policy, preset
from erp_sim.task_sets import resolve_tasks, selected_split

DEFAULT_OUT = "runs/eval"


class EpisodeSpec(EpisodeSettings):
    """Everything needed to run one episode anywhere (a worker process, a Ray node): its settings (verbosity, step
    limit, context window) and what it runs."""

    config: str
    policy: str
    user: str = Field(description="rule | none | API:MODEL (roles.MODEL_APIS)")
    agent: str = Field(description="scripted | scripted:recall=TOKENS | API:MODEL | replay:DIR")
    task_set: str
    task_id: str
    run: int
    seed: int
    out_dir: str
    split: str | None = Field(None, description="the split --tasks selected (SET:train / SET:test), else None")
    base_url: str | None = None
    record_dir: str | None = None
    summarizer: str = Field("structured", description="structured | API:MODEL (for summarizing policies)")
    summarizer_base_url: str | None = Field(None, description="the summarizer's endpoint (None: base_url)")
    model_params: dict[str, dict[str, Any]] = Field(default_factory=dict, description="role -> request body keys")
    timeout: float | None = Field(None, description="seconds per model call (None: the client's default)")
    max_retries: int | None = Field(
        None, description="retries of a transient model failure (None: the client's default)"
    )
    azure_endpoint: str | None = Field(None, description="Azure roles' endpoint (None: AZURE_OPENAI_ENDPOINT)")
    api_version: str | None = Field(None, description="Azure roles' API version (None: OPENAI_API_VERSION)")
    cache_breakpoints: str | None = Field(None, description="auto | none, for Messages API roles (None: auto)")
    reasoning_items: str | None = Field(None, description="keep | drop, for roles with reasoning items (None: keep)")

    @property
    def switches(self) -> dict[str, str | None]:
        """The flags' switches (``roles.SWITCHES``), for the roles whose API reads them."""
        return {"cache_breakpoints": self.cache_breakpoints, "reasoning_items": self.reasoning_items}

    @model_validator(mode="after")
    def _own_step_limit(self) -> EpisodeSpec:
        """No --max-steps: the task set's own step limit (long_horizon's 1,500), stored as the row's."""
        if self.max_steps is None:
            self.max_steps = self.step_limit(self.task_set)
        return self

    @property
    def key(self) -> tuple:
        return (self.config, self.task_set, self.task_id, self.run)

    @property
    def episode_name(self) -> str:
        return f"{self.task_id}-run{self.run}"

    @property
    def folder(self) -> str:
        """The configuration's folder for trajectories and cassettes (``folder_name``)."""
        return folder_name(self.config)


_NOT_IN_FILE_NAMES = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def folder_name(config: str) -> str:
    """A configuration's name as a folder name: a configuration run with --policy is named by its spec
    (``last_n:n=5``, ``ga_memory:dir=/tmp/m``), whose ``:`` no Windows file name may hold (nor ``<>"/\\|?*``, and a
    ``/`` would nest folders): each such character becomes ``_``."""
    return _NOT_IN_FILE_NAMES.sub("_", config)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of eval and sweep; every help text ends with its default (ArgumentDefaultsHelpFormatter)."""
    parser.add_argument(
        "--agent",
        default="scripted",
        help="scripted | scripted:recall=TOKENS | API:MODEL | replay:DIR, API one of openai (Chat Completions, "
        "any OpenAI-compatible server), openai-responses, anthropic (the Messages API), azure, azure-responses "
        "(MODEL: the deployment); the scripted agent is a rule-based stand-in, not an LLM; replay:DIR answers "
        "every model role from the recording in DIR, offline, and refuses a --user/--summarizer that "
        "contradicts it",
    )
    parser.add_argument(
        "--base-url",
        type=server_url,
        help="the server of the model roles (None: the API's own: api.openai.com with OPENAI_API_KEY, "
        "api.anthropic.com with ANTHROPIC_API_KEY; no key needed on localhost or a private address)",
    )
    parser.add_argument(
        "--summarizer",
        default="structured",
        help="structured | API:MODEL (as --agent): who writes the summaries of summarizing policies (last_n_summary "
        "= C4, acon_history, acon_observation; structured is offline, from the ERP responses)",
    )
    parser.add_argument("--summarizer-base-url", type=server_url, help="the summarizer's server (None: --base-url)")
    parser.add_argument(
        "--no-probe",
        action="store_true",
        help="skip the one cheap request (a model lookup, else a one-token completion) sent to each model role's "
        "server before the first episode, which makes a wrong URL, key or model name an error in seconds",
    )
    add_backend_arguments(parser)
    parser.add_argument(
        "--summarizer-temperature",
        type=positive(float, zero=True),
        metavar="T",
        help="= --model-param summarizer:temperature=T (None: 0.0, none sent to a reasoning model: o1, o3, o4-mini, gpt-5, ...)",
    )
    parser.add_argument(
        "--summarizer-seed", type=int, metavar="S", help="= --model-param summarizer:seed=S (None: not sent)"
    )
    parser.add_argument(
        "--summarizer-max-tokens",
        type=positive(int),
        metavar="N",
        help="= --model-param summarizer:max_tokens=N (None: not sent)",
    )
    add_model_arguments(parser, EVAL_ROLES)
    parser.add_argument(
        "--user", default="rule", help="rule | none | API:MODEL as --agent (preset C1 always runs without a user)"
    )
    parser.add_argument(
        "--tasks",
        default=workflows.DEFAULT_TASK_SET,
        help="SET, SET:train, SET:test or SET:id1,id2 (sets: "
        + ", ".join(workflows.fixture_set_names())
        + ", or a workflow's view of one such as Hotel or Meals)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="runs over the task set per configuration (None: 1 for a deterministic agent, the scripted "
        "one without recall=, whose runs would be identical copies; else 5)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of run 0; run r uses seed + r")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="episodes run at once in worker processes (1: in this process)",
    )
    parser.add_argument("--backend", choices=["local", "ray"], default="local", help="where episodes run")
    parser.add_argument("--address", help="Ray cluster address (with --backend ray; None: a local Ray instance)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="output directory (results.jsonl, trajectories, report.md)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an existing --out: run only episodes without a scored row (infrastructure errors are retried)",
    )
    add_settings_arguments(parser)
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record every model call (agent, LLM user, summarizer, consolidator) into DIR/cassettes, a "
        "cassette per role and episode, and the models and settings into DIR/cassettes/models.json "
        "(openai agents; None: off); DIR belongs to the run that records into it: another --out is refused",
    )
    parser.add_argument("--baseline", help="configuration the report compares against (None: C2, else the first)")
    add_price_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--view", action="store_true", help="also write the run page, view.html, at the end (else: erp-sim view OUT)"
    )


def task_ids(tasks: str) -> tuple[str, list[str]]:
    """``--tasks``: SET, SET:train, SET:test or SET:id1,id2 (parsed by ``erp_sim.task_sets.resolve_tasks``)."""
    try:
        return resolve_tasks(tasks)
    except (KeyError, FileNotFoundError) as error:
        raise UsageError(f"--tasks {tasks}: {error.args[0] if error.args else error}") from None


def episode_options(args: argparse.Namespace) -> dict[str, Any]:
    """The EpisodeSpec fields that come from the options of eval and sweep."""
    items = list(args.model_param)
    for key, value in (
        ("temperature", args.summarizer_temperature),
        ("seed", args.summarizer_seed),
        ("max_tokens", args.summarizer_max_tokens),
    ):
        if value is not None:
            items.append(("summarizer", key, value))
    return {
        "agent": args.agent,
        **settings_options(args),
        "split": selected_split(args.tasks),
        "out_dir": str(Path(args.out)),
        "base_url": args.base_url,
        "record_dir": args.record,
        "summarizer": args.summarizer,
        "summarizer_base_url": args.summarizer_base_url,
        "model_params": params_by_role(items, EVAL_ROLES),
        "timeout": args.timeout,
        "max_retries": args.max_retries,
        "azure_endpoint": args.azure_endpoint,
        "api_version": args.api_version,
        "cache_breakpoints": args.cache_breakpoints,
        "reasoning_items": args.reasoning_items,
    }


def parse_configs(names: list[str], policies: list[str], user: str) -> list[tuple[str, str, str]]:
    configs = []
    for name in names:
        p = preset(name)
        configs.append((name.upper(), p.policy, "none" if p.user_model == "none" else user))
    for spec in policies:
        configs.append((parse_policy(spec).spec, parse_policy(spec).spec, user))
    return configs
