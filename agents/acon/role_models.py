"""``erp-sim acon optimize``'s three model roles (agent, compressor, optimizer): live, recorded or replayed,
on any model API (``roles.MODEL_APIS``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from erp_sim.agents.command_line import UsageError
from erp_sim.agents.models.cassette import RecordingModel, ReplayModel
from erp_sim.agents.models.factory import chat_model
from erp_sim.agents.models.roles import (
    MODEL_CHOICES,
    model_spec,
    named_servers,
    read_manifest,
    replay_contradiction,
    settings_of,
    with_switches,
    write_manifest,
)

ROLES = ("agent", "compressor", "optimizer")


def role_models(args: argparse.Namespace, model_params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each role's model: live (with --record, into DIR/cassettes/ROLE.jsonl and the manifest models.json), or
    answered from the recording with --replay, which refuses role names and settings that contradict it."""
    named = {role: model_spec(getattr(args, role)) for role in ROLES}
    for role, spec in named.items():
        if spec is None:
            raise UsageError(f"--{role} {getattr(args, role)!r}: use {MODEL_CHOICES}")
    names = {role: getattr(args, role) for role in ROLES}
    own = {role: (f"--{role}-base-url", getattr(args, f"{role}_base_url", None)) for role in ROLES}
    servers = named_servers(args.base_url, ROLES, own)  # as live: its own, else --base-url
    if args.replay:
        cassettes = Path(args.replay) / "cassettes"
        try:
            recorded = read_manifest(cassettes) or {}  # a recording made before manifests: nothing to check against
        except ValueError as error:
            raise UsageError(f"--replay: {error}") from None
        problem = recorded and replay_contradiction(
            recorded,
            names,
            Path(args.replay),
            params=model_params,
            timeout=args.timeout,
            max_retries=args.max_retries,
            base_urls=servers,
        )
        if problem:
            raise UsageError(problem)
        return {
            role: ReplayModel(cassettes / f"{role}.jsonl", strict=True, settings=recorded.get(role)) for role in ROLES
        }
    endpoints = {role: servers[role][1] if role in servers else None for role in ROLES}
    # the optimizer samples at the server's default temperature, so the k candidates can differ
    try:
        models = {
            role: chat_model(
                name,
                endpoints[role],
                api=api,
                role=role,
                temperature=None if role == "optimizer" else "default",
                params=model_params.get(role),
                timeout=args.timeout,
                max_retries=args.max_retries,
                azure_endpoint=args.azure_endpoint,
                api_version=args.api_version,
            )
            for role, (api, name) in ((role, spec) for role, spec in named.items() if spec is not None)
        }
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.record:
        try:
            write_manifest(
                Path(args.record) / "cassettes",
                {role: settings for role, model in models.items() if (settings := settings_of(model)) is not None},
            )
        except ValueError as error:
            raise UsageError(f"--record {error}") from None
        models = {
            role: RecordingModel(model, Path(args.record) / "cassettes" / f"{role}.jsonl")
            for role, model in models.items()
        }
    return models


def role_switches(params: dict[str, dict[str, Any]], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each role's params with the flags' switches its API reads (``--cache-breakpoints``, ``--reasoning-items``)."""
    switches = {"cache_breakpoints": args.cache_breakpoints, "reasoning_items": args.reasoning_items}
    result = {}
    for role in ROLES:
        api = (model_spec(getattr(args, role)) or ("openai", ""))[0]
        merged = with_switches(params.get(role, {}), api, switches)
        if merged:
            result[role] = merged
    return result
