"""``erp-sim eval --policy ga_memory --memory DIR --sequential``: memory carried across episodes.

Tasks run one after another in the task set's order, in two arms with the same policy stack:
- ``with_memory``: the ``ga_memory`` layers use the store at DIR; after each graded episode
  the store is updated (every episode archived in L4; a successful one that asked for it with
  ``start_long_term_update`` promoted to L2/L3), so episode i sees what episodes < i verified;
- ``without_memory``: the same stack over an empty memory that keeps nothing.
One run per task (``--runs`` does not apply: the order is the experiment). The usual results
file and report are written, plus ``learning_curve.md`` (steps, model calls, input tokens and
success against the episode index, for both arms, and the first and last five episodes),
appended to ``report.md`` as its last section, and ``learning_curve.png``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from erp_sim.agents.command_line import UsageError
from erp_sim.agents.evaluation.costs import checked_prices
from erp_sim.agents.evaluation.episode_models import prepare_models, role_model
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, EpisodeRow, succeeded
from erp_sim.agents.evaluation.eval_options import EpisodeSpec, episode_options, task_ids
from erp_sim.agents.evaluation.evaluate import print_table, run_spec
from erp_sim.agents.evaluation.report import write_report
from erp_sim.agents.evaluation.report.learning_curve import (
    CURVE_FILE,
    CURVE_PNG,
    WITH,
    WITHOUT,
    learning_curve_markdown,
    plot_learning_curve,
)
from erp_sim.agents.memory.consolidate import Consolidation, ConsolidatorUse, LLMConsolidator, consolidate_episode
from erp_sim.agents.memory.store import MemoryStore
from erp_sim.agents.models.roles import MODEL_CHOICES, failures_named, names_a_model, sampling
from erp_sim.agents.policies import parse_policy
from erp_sim.agents.policies.registry import LayerSpec, PolicySpec
from erp_sim.agents.tokens.prompt_cache import EpisodeMeter, call_sums
from erp_sim.agents.types import InfrastructureError, ModelRequestError


def with_memory_dir(spec: str, directory: str) -> str:
    """``spec`` with every ga_memory layer pointed at ``directory`` ('' : the empty memory)."""
    parsed = parse_policy(spec)
    if not any(layer.name == "ga_memory" for layer in parsed.layers):
        raise ValueError(f"--memory needs a ga_memory layer in the policy, got {spec!r}")
    layers = [
        LayerSpec(name=layer.name, params={**layer.params, "dir": directory}) if layer.name == "ga_memory" else layer
        for layer in parsed.layers
    ]
    return PolicySpec(layers=layers).spec


def requested_update(trajectory: dict) -> bool:
    """Whether the agent called start_long_term_update and the harness accepted it."""
    accepted = {
        m.get("tool_call_id")
        for m in trajectory.get("messages", [])
        if m.get("role") == "tool" and str(m.get("content") or "").startswith("Long-term update scheduled")
    }
    return any(
        call.get("id") in accepted and call["function"]["name"] == "start_long_term_update"
        for m in trajectory.get("messages", [])
        for call in m.get("tool_calls") or []
    )


def update_memory(store: MemoryStore, trajectory: dict, consolidator=None) -> Consolidation:
    """After grading: promote (if requested and successful) or archive only."""
    if requested_update(trajectory):
        return consolidate_episode(store, trajectory, consolidator)
    key = store.archive(
        str(trajectory.get("task_id")),
        bool((trajectory.get("grade") or {}).get("success")),
        str(trajectory.get("termination", "")),
        False,
        trajectory,
    )
    return Consolidation(
        archive_key=key,
        success=bool((trajectory.get("grade") or {}).get("success")),
        note="no start_long_term_update: archived in L4 only",
    )


def run_sequential(args, policy: str) -> int:
    prices = checked_prices(args.price)  # before anything runs, as plain eval does
    if not args.memory:
        raise UsageError("--sequential needs --memory DIR (a directory or a *.sqlite file)")
    out = Path(args.out)
    results = out / RESULTS_FILE
    if results.exists():
        raise UsageError(f"{results} exists: a sequential run starts fresh; choose another --out.")
    consolidator = _consolidator_model(args)
    task_set, ids = task_ids(args.tasks)
    arms = [(WITH, with_memory_dir(policy, str(args.memory))), (WITHOUT, with_memory_dir(policy, ""))]
    specs = {
        (config, task_id): EpisodeSpec(
            config=config,
            policy=spec,
            user=args.user,
            task_set=task_set,
            task_id=task_id,
            run=0,
            seed=args.seed,
            **episode_options(args),
        )
        for config, spec in arms
        for task_id in ids
    }
    prepare_models(list(specs.values()), {"consolidator": consolidator}, probe=not args.no_probe)
    out.mkdir(parents=True, exist_ok=True)
    store = MemoryStore.open(args.memory)
    rows: list[EpisodeRow] = []
    notes = []
    for config, _ in arms:
        for episode, task_id in enumerate(ids):
            episode_spec = specs[config, task_id]
            row = EpisodeRow.model_validate(run_spec(episode_spec)).model_copy(update={"episode": episode})
            if config == WITH:
                # the consolidator's calls go to this episode's cassette (or come from it, in a replay)
                api, _, name = (consolidator or "").partition(":")
                model = consolidator and role_model(episode_spec, "consolidator", name, args.base_url, api)
                try:
                    with (
                        gzip.open(out / row.trajectory, "rt", encoding="utf-8") as handle,
                        failures_named("consolidator"),
                    ):
                        result = _consolidate(store, json.load(handle), model)
                except (InfrastructureError, ModelRequestError) as error:  # the store must not miss an episode
                    raise SystemExit(
                        f"erp-sim: {error}; the sequential run stopped at {task_id} (start it afresh)"
                    ) from None
                row = row.model_copy(update={"memory": result})
                notes.append(result)
            rows.append(row)
            if not args.quiet:
                print(
                    f"{config} {episode:3d} {task_id}: success={succeeded(row)} "
                    f"steps={row.metrics.steps} tokens={row.metrics.input_tokens:,}",
                    flush=True,
                )
    results.write_text("".join(row.json_line() for row in rows), encoding="utf-8")
    report = write_report(
        str(out), baseline=args.baseline, prices=prices, view=args.view
    )  # its last section: the learning curve
    curve = learning_curve_markdown(rows)
    (out / CURVE_FILE).write_text(curve, encoding="utf-8")
    plot_learning_curve(rows, out / CURVE_PNG)
    print_table(rows)
    print("\n" + curve)
    print(
        f"memory: {args.memory} ({len(store.keys('sop'))} SOPs, {len(store.keys('fact'))} facts, "
        f"{len(store.archive_keys())} archived episodes); report: {report}"
    )
    return 0


def _consolidate(store: MemoryStore, trajectory: dict, model: Any) -> Consolidation:
    """``update_memory``, with an LLM consolidator's model and calls (metered as a role's) in the result."""
    meter = EpisodeMeter().start()
    try:
        result = update_memory(store, trajectory, model and LLMConsolidator(model))
    finally:
        meter.stop()
    if not model:
        return result
    calls = meter.drain()
    use = ConsolidatorUse(
        model=sampling(model) or {},
        calls=len(calls),
        **{name: value for name, value in call_sums(calls).items() if name in ConsolidatorUse.model_fields},
        served_models=sorted({call.served_model for call in calls if call.served_model}),
    )
    return result.model_copy(update={"consolidator": use})


def _consolidator_model(args) -> str | None:
    """``API:MODEL`` of ``--consolidator`` (None: the deterministic consolidator)."""
    name = getattr(args, "consolidator", "deterministic") or "deterministic"
    if name == "deterministic":
        return None
    if not names_a_model(name):
        raise UsageError(f"--consolidator: deterministic or {MODEL_CHOICES}, got {name!r}")
    return name
