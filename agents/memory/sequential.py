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
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from erp_sim.agents.evaluation.episode_row import EpisodeRow, RowMetrics, succeeded
from erp_sim.agents.memory.consolidate import Consolidation, ConsolidatorUse, LLMConsolidator, consolidate_episode
from erp_sim.agents.memory.store import MemoryStore
from erp_sim.agents.models.roles import failures_named, sampling
from erp_sim.agents.policies import parse_policy
from erp_sim.agents.policies.registry import LayerSpec, PolicySpec
from erp_sim.agents.prompt_cache import EpisodeMeter, call_sums
from erp_sim.agents.types import InfrastructureError, ModelRequestError

WITH, WITHOUT = "with_memory", "without_memory"
CURVE_FILE = "learning_curve.md"


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
    from erp_sim.agents.evaluation.costs import checked_prices
    from erp_sim.agents.evaluation.episode_models import prepare_models, role_model
    from erp_sim.agents.evaluation.evaluate import EpisodeSpec, episode_options, print_table, run_spec, task_ids
    from erp_sim.agents.evaluation.report import RESULTS_FILE, write_report

    prices = checked_prices(args.price)  # before anything runs, as plain eval does
    if not args.memory:
        raise SystemExit("--sequential needs --memory DIR (a directory or a *.sqlite file)")
    out = Path(args.out)
    results = out / RESULTS_FILE
    if results.exists():
        raise SystemExit(f"{results} exists: a sequential run starts fresh; choose another --out.")
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
    prepare_models(list(specs.values()), {"consolidator": consolidator})
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
    report = write_report(str(out), baseline=args.baseline, prices=prices)  # its last section: the learning curve
    curve = learning_curve_markdown(rows)
    (out / CURVE_FILE).write_text(curve, encoding="utf-8")
    _plot(rows, out / "learning_curve.png")
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
    from erp_sim.agents.models.roles import MODEL_CHOICES, names_a_model

    name = getattr(args, "consolidator", "deterministic") or "deterministic"
    if name == "deterministic":
        return None
    if not names_a_model(name):
        raise SystemExit(f"--consolidator: deterministic or {MODEL_CHOICES}, got {name!r}")
    return name


def learning_curve_section(rows: list[EpisodeRow]) -> str | None:
    """The learning curve, when ``rows`` are a sequential run's (its episodes are numbered); None otherwise.
    ``report.md`` ends with it whichever command writes the report (``erp-sim eval``, ``erp-sim report``)."""
    if not any(row.episode is not None and row.config == WITH for row in rows):
        return None
    return learning_curve_markdown(rows)


def curve_points(rows: list[EpisodeRow], config: str) -> list[EpisodeRow]:
    return sorted((r for r in rows if r.config == config), key=lambda r: r.episode or 0)


def learning_curve_markdown(rows: list[EpisodeRow]) -> str:
    """The per-episode table of both arms and the first/last five summary."""
    with_rows, without_rows = curve_points(rows, WITH), curve_points(rows, WITHOUT)
    lines = [
        "## Learning curve (memory across episodes)",
        "",
        "Episodes in task order; `with_memory` carries the store over, `without_memory` runs the same "
        "policy over an empty memory. Steps are ERP steps (tool calls and messages to the user); model calls "
        "include the memory tools, which the harness answers.",
        "",
        "| episode | task | steps (with / without) | model calls | input tokens (with / without) | success |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for a, b in zip(with_rows, without_rows):
        ma, mb = a.metrics, b.metrics
        lines.append(
            f"| {a.episode} | {a.task_id} | {ma.steps} / {mb.steps} | "
            f"{ma.model_calls} / {mb.model_calls} | {ma.input_tokens:,} / {mb.input_tokens:,} | "
            f"{_mark(a)} / {_mark(b)} |"
        )
    lines += ["", "| episodes | arm | steps | model calls | input tokens | success |", "|---|---|---:|---:|---:|---:|"]
    for label, part in (("first 5", slice(0, 5)), ("last 5", slice(-5, None))):
        for arm, arm_rows in ((WITH, with_rows), (WITHOUT, without_rows)):
            chosen = arm_rows[part]
            if not chosen:
                continue
            lines.append(
                f"| {label} | {arm} | {_mean(chosen, lambda m: m.steps):.1f} | "
                f"{_mean(chosen, lambda m: m.model_calls):.1f} | {_mean(chosen, lambda m: m.input_tokens):,.0f} | "
                f"{sum(succeeded(r) for r in chosen)}/{len(chosen)} |"
            )
    uses = [row.memory.consolidator for row in with_rows if row.memory and row.memory.consolidator]
    if uses:
        lines += ["", _consolidator_note(uses)]
    return "\n".join(lines) + "\n"


def _consolidator_note(uses: list[ConsolidatorUse]) -> str:
    """Who consolidated and what its calls cost: in no metric above, and in a cost only where priced (docs/memory.md)."""
    models = sorted({f"`{use.model.get('api') or 'openai'}:{use.model.get('model')}`" for use in uses})
    reported = sum(use.reported_input_tokens for use in uses), sum(use.reported_output_tokens for use in uses)
    return (
        f"Consolidator: {', '.join(models)}, {sum(use.calls for use in uses)} calls, "
        f"{sum(use.input_tokens for use in uses):,} input and {sum(use.output_tokens for use in uses):,} output "
        f"tokens (o200k; its service reported {reported[0]:,} and {reported[1]:,}); per episode in each "
        "`with_memory` row's `memory.consolidator`, in none of the metrics of this report, and in its costs "
        "only with `--price consolidator=...`."
    )


def _mark(row: EpisodeRow) -> str:
    return "yes" if succeeded(row) else "no"


def _mean(rows: list[EpisodeRow], metric: Callable[[RowMetrics], float]) -> float:
    return statistics.fmean(metric(r.metrics) for r in rows)


def _plot(rows: list[EpisodeRow], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for arm in (WITH, WITHOUT):
        points = curve_points(rows, arm)
        x = [r.episode for r in points]
        axes[0].plot(x, [r.metrics.steps for r in points], marker="o", label=arm)
        axes[1].plot(x, [r.metrics.input_tokens for r in points], marker="o", label=arm)
    axes[0].set(xlabel="episode", ylabel="ERP steps")
    axes[1].set(xlabel="episode", ylabel="input tokens")
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, metadata={"Software": None})
    plt.close(figure)
