"""``--resume`` continues a run only with the settings its rows were made with.

A resumed run appends episodes to configurations that already have rows, and the report pools
every row of a configuration into one mean, interval and cost. A command that names another
agent, user or policy, another seed, step limit, verbosity or context window, or another model, server, request param,
timeout or retry count for any model role (agent, LLM user, LLM summarizer) would pool two
experiments under one name; it is refused in one line before any episode runs. Each role's
settings are the ones a row's ``sampling`` stores (``roles.sampling``), computed for the new
command as the episode would build them (a replay's are its recording's).

Only scored rows count: an episode that ended in an infrastructure error runs again anyway, so
fixing a wrong ``--base-url`` or model name and resuming stays possible. Rows written before
``sampling`` existed name no settings, and rows written before ``ModelSettings`` stored a role's
params beside its model: what such a row does not say is not compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from erp_sim.agents.evaluation.episode_models import check_models
from erp_sim.agents.evaluation.episode_row import EpisodeRow
from erp_sim.agents.models.roles import ModelSettings, label, names_a_model, public_url, read_manifest
from erp_sim.agents.policies import summarizes

if TYPE_CHECKING:
    from erp_sim.agents.evaluation.eval_options import EpisodeSpec

ROW_ROLES = ("agent", "user", "summarizer")  # the roles a row's sampling names
_FIELDS = tuple(ModelSettings.model_fields)  # model, params, timeout, max_retries, base_url, api, api_version
Planned = tuple[str, dict[str, dict[str, Any] | None] | None]  # (agent label, role -> sampling; None: unknown)


def resume_contradiction(specs: list[EpisodeSpec], rows: Iterable[EpisodeRow], results: Path) -> str | None:
    """The first setting of this command that contradicts the scored rows of the same configuration,
    as a one-line refusal (None: nothing contradicts them)."""
    first: dict[str, EpisodeSpec] = {}
    for spec in specs:
        first.setdefault(spec.config, spec)
    planned: dict[str, Planned] = {}
    for row in rows:
        planned_spec = first.get(row.config)
        if planned_spec is None or row.infra_error:  # another configuration, or an episode that runs again
            continue
        if row.config not in planned:
            planned[row.config] = planned_settings(planned_spec)
        problem = _difference(row, planned_spec, planned[row.config])
        if problem:
            what, old, new = problem
            return (
                f"--resume: the rows of {row.config} in {results} have {what} {_shown(old)}, "
                f"this command {_shown(new)}; resume with the same settings, or choose another --out"
            )
    return None


def planned_settings(spec: EpisodeSpec) -> Planned:
    """The agent label and each role's ``sampling`` entry that ``run_spec`` would write for ``spec``."""
    kind, _, argument = spec.agent.partition(":")
    settings: dict[str, ModelSettings | None]
    if kind == "replay":  # the rows of a replay name the recording's models and settings
        manifest = read_manifest(Path(argument) / "cassettes")
        if manifest is None:  # a recording made before manifests: its settings are not known here
            return spec.agent, None
        settings = {
            "agent": manifest.get("agent"),
            "user": manifest.get("user") if names_a_model(spec.user) else None,
            "summarizer": manifest.get("summarizer")
            if names_a_model(spec.summarizer) and summarizes(spec.policy)
            else None,
        }
        agent = settings["agent"]
        agent_label = label(agent) if agent is not None else "scripted" if "agent" not in manifest else spec.agent
    else:
        live = check_models(spec)
        settings = {role: live.get(role) for role in ROW_ROLES}
        agent_label = spec.agent
    return agent_label, {
        role: None if value is None else value.model_dump(mode="json", exclude_none=True)
        for role, value in settings.items()
    }


def _difference(row: EpisodeRow, spec: EpisodeSpec, planned: Planned) -> tuple[str, Any, Any] | None:
    """(what differs, the row's value, this command's value) for the first difference; None: none."""
    agent_label, sampling = planned
    for what, old, new in (
        ("policy", row.policy, spec.policy),
        ("agent", row.agent, agent_label),
        ("user", row.user, spec.user),
        (f"seed (run {row.run})", row.seed, spec.seed - spec.run + row.run),
        ("max steps", row.sampling.max_steps, spec.step_limit()),
        ("verbosity", row.sampling.verbosity, spec.verbosity),
    ):
        if old not in (None, "") and old != new:  # (older rows may not name it)
            return what, old, new
    stored = {role: getattr(row.sampling, role) for role in ROW_ROLES}
    model_row = names_a_model(row.agent) or row.agent.startswith("replay:") or names_a_model(row.user)
    if sampling is None or (model_row and not any(stored.values())):  # unknown, or a row from before sampling
        return None
    if row.sampling.context_window != spec.context_window:
        unset = "none (no limit)"
        return "context window", row.sampling.context_window or unset, spec.context_window or unset
    for role in ROW_ROLES:
        problem = _role_difference(role, stored[role], sampling[role])
        if problem:
            return problem
    return None


def _role_difference(role: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> tuple[str, Any, Any] | None:
    if old is None or new is None:
        return None if old is new else (f"{role} model", _model(old), _model(new))
    fields: tuple[str, ...] = _FIELDS
    if "params" not in old:  # a row from before ModelSettings (which always stores params): model and params flat
        old, fields = (
            {"model": old.get("model"), "params": {k: v for k, v in old.items() if k != "model"}},
            ("model", "params"),
        )
    for field in fields:
        if field == "base_url":  # rows from before the trailing slash was dropped name the same server with it
            was, now = (public_url(url) if isinstance(url, str) else url for url in (old.get(field), new.get(field)))
            if was != now:
                return f"{role} {field}", old.get(field, _DEFAULT[field]), new.get(field, _DEFAULT[field])
        elif field != "params":
            if old.get(field) != new.get(field):
                return f"{role} {field}", old.get(field, _DEFAULT[field]), new.get(field, _DEFAULT[field])
            continue
        was, now = old.get("params") or {}, new.get("params") or {}
        for key in dict.fromkeys([*was, *now]):
            if (key in was, was.get(key)) != (key in now, now.get(key)):
                return f"{role} request param {key}", was.get(key, NOT_SENT), now.get(key, NOT_SENT)
    return None


NOT_SENT = "(not sent)"
# what an absent field of a role's settings means (a row stores none of its None fields)
_DEFAULT = {
    "model": "unknown",
    "timeout": "the client's default",
    "max_retries": "the client's default",
    "base_url": "OpenAI's API",
    "api": "openai",
    "api_version": "none",
}


def _model(entry: dict[str, Any] | None) -> str:
    return "no model" if entry is None else f"{entry.get('api') or 'openai'}:{entry.get('model')}"


def _shown(value: Any) -> str:
    """A value as the command line would name it; JSON where text alone would be ambiguous."""
    return value if isinstance(value, str) and value.strip() == value != "" else json.dumps(value)
