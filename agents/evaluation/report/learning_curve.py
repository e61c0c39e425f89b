"""The learning curve of a sequential run (``erp-sim eval --sequential``): steps, model calls, input tokens and
success against the episode index, for the arm that carries memory over and the one that does not.

``report.md`` ends with it whichever command writes the report (``erp-sim eval``, ``erp-sim report``); the
sequential run also writes it alone, as ``learning_curve.md`` and ``learning_curve.png``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from erp_sim.agents.evaluation.episode_row import EpisodeRow, RowMetrics, succeeded
from erp_sim.agents.evaluation.report.plots import matplotlib_module
from erp_sim.agents.memory.consolidate import ConsolidatorUse

WITH, WITHOUT = "with_memory", "without_memory"
CURVE_FILE = "learning_curve.md"
CURVE_PNG = "learning_curve.png"


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


def plot_learning_curve(rows: list[EpisodeRow], path: Path) -> None:
    figure = matplotlib_module().figure.Figure(figsize=(10, 3.5))
    axes = figure.subplots(1, 2)
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
