"""``erp-sim scale``: what each context policy costs as the work grows (the long_horizon ladder).

    erp-sim scale                                     # C2-C4, scripted agent, long_horizon, 1 run
    erp-sim scale --agent scripted:recall=2e6 --runs 1 --out runs/scale-recall
    erp-sim scale --report-only runs/sweep            # the study on results already run

Episodes run like ``erp-sim eval`` (same results.jsonl, trajectories and report.md), without a
context limit of ours, so that every rung's cost is measured; ``--context-window`` is the window
the study marks: a policy overflows at the first rung where an episode's largest request (peak
tokens, or the size of the request refused as ``context_overflow``) exceeds it, or where an episode
ended as ``context_overflow`` (results of a run with the window enforced, e.g. ``erp-sim sweep
--context-window``, or ``--enforce-window`` here). Then
``scale.md`` and ``scale.png`` go beside report.md: per policy and rung (receipt charges of the
task) the mean input tokens, peak tokens, steps, success, and, when the rows carry
``cacheable_prefix_tokens``, the cacheable share of the input; each cost against the number of
charges on log-log axes with the slope of a least-squares line through the rung means
(``numpy.polyfit`` on the logs), fitted over the rungs where no episode was cut short: by the window
(``context_overflow``) or by the step limit (``step_limit``: its costs stop at the cap, which would
flatten the slope). Rungs left out are named in ``scale.md`` and on stderr.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from erp_sim import workflows
from erp_sim.agents.command_line import PlainDefaultsHelpFormatter, usage_errors
from erp_sim.agents.evaluation.episode_row import EpisodeRow, RowMetrics, load_results, results_dir, succeeded
from erp_sim.agents.evaluation.eval_options import add_common_arguments, parse_configs
from erp_sim.agents.evaluation.evaluate import command_text, run_from_args
from erp_sim.agents.evaluation.report.plots import PLOT_STYLE, config_color, matplotlib_module, save_png
from erp_sim.task_sets import task_rows, workflow_of

SCALE_FILE, SCALE_PNG = "scale.md", "scale.png"
DEFAULT_WINDOW = 128_000
DEFAULT_CONFIGS = "C2,C3,C4"
# (row field, label): the costs fitted on log-log axes
COSTS = (("input_tokens", "input tokens / episode"), ("peak_tokens", "peak tokens"), ("steps", "steps"))


class Rung(BaseModel):
    """One policy at one size of the ladder: means over its episodes."""

    charges: int
    episodes: int
    success: float
    success_within_window: float = Field(description="Success by an episode whose every request fit the window.")
    input_tokens: float
    peak_tokens: float
    steps: float
    cacheable_share: float | None = Field(
        None, description="Cacheable prefix tokens / input tokens (None: not recorded)."
    )
    overflowed: int = Field(
        description="Episodes whose largest request (peak, or the refused one) exceeded the window, or that ended "
        "as context_overflow."
    )
    cut_short: int = Field(description="Episodes ended by the window (context_overflow): their costs stop there.")
    step_capped: int = Field(0, description="Episodes ended by the step limit (step_limit): their costs stop there.")
    refused_request_tokens: float | None = Field(
        None, description="Mean size of the request that overflowed, over episodes that recorded one (None: none)."
    )


class PolicyScale(BaseModel):
    config: str
    policy: str
    rungs: list[Rung]
    slopes: dict[str, float | None] = Field(
        description="Cost -> slope of log(cost) on log(charges); None: under 2 rungs."
    )
    fitted_rungs: list[int] = Field(
        description="The rungs the slopes were fitted over: those where no episode was cut short."
    )
    overflow_rung: int | None = Field(description="First rung (charges) with an overflowing episode; None: none.")
    size_name: str = Field("items", description="What a rung counts, in prose (TaskSets.size_name).")
    size_unit: str = Field("items", description="Its short unit, for the tables (TaskSets.size_unit).")


def _cacheable(row: EpisodeRow) -> int | None:
    """``cacheable_prefix_tokens`` of a row, when recorded (rows before the prompt-cache count lack it)."""
    metrics = row.metrics
    return metrics.cacheable_prefix_tokens if "cacheable_prefix_tokens" in metrics.model_fields_set else None


def largest_request(metrics: RowMetrics) -> int:
    """An episode's largest request: its peak, or the request that overflowed and so never made a step."""
    return max(metrics.peak_tokens, metrics.refused_request_tokens or 0)


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Slope of the least-squares line through (log x, log y); None under two usable points."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len({x for x, _ in points}) < 2:
        return None
    fitted = np.polyfit([x for x, _ in points], [y for _, y in points], 1)
    return float(fitted[0])


def scale_study(rows: list[EpisodeRow], window: int) -> list[PolicyScale]:
    """Rows of scored episodes -> one ``PolicyScale`` per configuration, by name."""
    sizes: dict[tuple[str, str], int] = {}
    groups: dict[str, dict[int, list[EpisodeRow]]] = defaultdict(lambda: defaultdict(list))
    policies: dict[str, str] = {}
    for row in rows:
        if row.infra_error or "metrics" not in row.model_fields_set:  # unscored, or no costs recorded
            continue
        key = (row.task_set, row.task_id)
        if key not in sizes:
            sizes.update({(row.task_set, r.task_id): r.size for r in task_rows(row.task_set)})
        groups[row.config][sizes[key]].append(row)
        policies.setdefault(row.config, row.policy)
    names = _size_names({task_set for task_set, _ in sizes})
    return [
        _policy_scale(config, policies[config], groups[config], window).model_copy(update=names)
        for config in sorted(groups)
    ]


def _size_names(task_sets: set[str]) -> dict[str, str]:
    """What the rungs count, as the task sets' workflow names it (several workflows: "items")."""
    owners = {workflow_of(name, fallback=True) for name in task_sets}
    if len(owners) != 1:
        return {}
    sets = workflows.task_sets()[owners.pop()]
    return {"size_name": sets.size_name, "size_unit": sets.size_unit}


def _policy_scale(config: str, policy: str, by_size: dict[int, list[EpisodeRow]], window: int) -> PolicyScale:
    rungs = []
    for charges in sorted(by_size):
        episodes = by_size[charges]
        metrics = [row.metrics for row in episodes]
        cut = [row.termination == "context_overflow" for row in episodes]
        refused = [m.refused_request_tokens for m in metrics if m.refused_request_tokens is not None]
        over = [c or largest_request(m) > window for c, m in zip(cut, metrics)]
        success = [succeeded(row) for row in episodes]
        cacheable = [_cacheable(row) for row in episodes]
        inputs = [m.input_tokens for m in metrics]
        recorded = [c for c in cacheable if c is not None]
        total_input = sum(inputs, 0)
        share = sum(recorded, 0) / total_input if len(recorded) == len(cacheable) and total_input else None
        n = len(episodes)
        rungs.append(
            Rung(
                charges=charges,
                episodes=n,
                success=sum(success) / n,
                success_within_window=sum(s and not o for s, o in zip(success, over)) / n,
                input_tokens=sum(inputs) / n,
                peak_tokens=sum(m.peak_tokens for m in metrics) / n,
                steps=sum(m.steps for m in metrics) / n,
                cacheable_share=share,
                overflowed=sum(over),
                cut_short=sum(cut),
                step_capped=sum(row.termination == "step_limit" for row in episodes),
                refused_request_tokens=sum(refused) / len(refused) if refused else None,
            )
        )
    whole = [r for r in rungs if not r.cut_short and not r.step_capped]
    slopes = {field: slope([r.charges for r in whole], [getattr(r, field) for r in whole]) for field, _ in COSTS}
    overflow = next((r.charges for r in rungs if r.overflowed), None)
    return PolicyScale(
        config=config,
        policy=policy,
        rungs=rungs,
        slopes=slopes,
        fitted_rungs=[r.charges for r in whole],
        overflow_rung=overflow,
    )


def render_scale(study: list[PolicyScale], window: int) -> str:
    """scale.md: the per-rung table of every policy, then slopes and overflow rungs."""
    cacheable = any(r.cacheable_share is not None for p in study for r in p.rungs)
    refused = any(r.refused_request_tokens is not None for p in study for r in p.rungs)
    name, unit = (study[0].size_name, study[0].size_unit) if study else ("items", "items")
    lines = [
        "# Scaling with the horizon",
        "",
        f"Costs per episode against the number of {name} (rung). Window: {window:,} tokens; an episode "
        "overflows when its largest request exceeds it: its peak tokens (the largest request it sent), or the "
        "request refused as context_overflow (never sent, so not in the peak; its size is the refused request "
        f"column). Slopes: least-squares fit of log(cost) on log({unit}) over the rung means (1.0: linear growth, "
        "2.0: quadratic), over the rungs where no episode was cut short by the window or the step limit.",
        "",
        f"| config | policy | {unit} | episodes | success | success within window | input tokens / episode | "
        "peak tokens |"
        + (" refused request |" if refused else "")
        + " steps |"
        + (" cacheable share |" if cacheable else "")
        + " overflowed | step-capped |",
        "|---|---|---:|---:|---:|---:|---:|---:|"
        + ("---:|" if refused else "")
        + "---:|"
        + ("---:|" if cacheable else "")
        + "---:|---:|",
    ]
    for policy in study:
        for rung in policy.rungs:
            share = (
                "" if not cacheable else f" {'-' if rung.cacheable_share is None else f'{rung.cacheable_share:.1%}'} |"
            )
            size = rung.refused_request_tokens
            refusal = "" if not refused else f" {'-' if size is None else f'{size:,.0f}'} |"
            lines.append(
                f"| {policy.config} | {policy.policy} | {rung.charges} | {rung.episodes} | {rung.success:.0%} | "
                f"{rung.success_within_window:.0%} | {rung.input_tokens:,.0f} | {rung.peak_tokens:,.0f} |{refusal} "
                f"{rung.steps:,.1f} |{share} {rung.overflowed}/{rung.episodes} | {rung.step_capped}/{rung.episodes} |"
            )
    lines += [
        "",
        "| config | policy | slope: input tokens | slope: peak tokens | slope: steps | fitted over | first overflow |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for policy in study:
        cells = [f"{policy.slopes[field]:.2f}" if policy.slopes[field] is not None else "-" for field, _ in COSTS]
        fitted = ", ".join(map(str, policy.fitted_rungs)) or "-"
        overflow = f"{policy.overflow_rung} {unit}" if policy.overflow_rung is not None else "never"
        lines.append(f"| {policy.config} | {policy.policy} | {' | '.join(cells)} | {fitted} | {overflow} |")
    left_out = unfitted_rungs(study)
    if left_out:
        lines += ["", f"Left out of the fits, as their costs stop at a cap: {left_out}."]
    return "\n".join(lines) + "\n"


def unfitted_rungs(study: list[PolicyScale]) -> str:
    """The rungs each policy's slopes leave out and why, in one line ('' when none)."""
    parts = []
    for policy in study:
        for rung in policy.rungs:
            why = [
                f"{count}/{rung.episodes} {what}"
                for count, what in ((rung.cut_short, "ended by the window"), (rung.step_capped, "step-capped"))
                if count
            ]
            if why:
                parts.append(f"{policy.config} at {rung.charges} {policy.size_unit} ({', '.join(why)})")
    return "; ".join(parts)


def plot_scale(study: list[PolicyScale], window: int, path: Path) -> Path:
    """Each cost against charges on log-log axes (fitted slope in the legend), success on a log x axis;
    a dashed vertical line marks each policy's first overflowing rung, the window a dotted line on peak tokens."""
    mpl = matplotlib_module()
    panels = [*COSTS, ("success_within_window", "success within the window")]
    if any(r.cacheable_share is not None for p in study for r in p.rungs):
        panels.append(("cacheable_share", "cacheable share of input"))
    rungs = sorted({r.charges for p in study for r in p.rungs})
    columns = min(3, len(panels))  # a grid of up to three panels a row: five in one row were 3,150 px wide
    rows = -(-len(panels) // columns)
    with mpl.style.context("default"), mpl.rc_context(PLOT_STYLE):
        fig = mpl.figure.Figure(figsize=(4.6 * columns, 3.7 * rows), layout="constrained")
        grid = fig.subplots(rows, columns, squeeze=False)
        axes = [ax for row in grid for ax in row]
        for ax in axes[len(panels) :]:  # the grid's spare cells
            ax.set_visible(False)
        for ax, (field, label) in zip(axes, panels):
            for policy in study:
                points = [(r.charges, getattr(r, field)) for r in policy.rungs if getattr(r, field) is not None]
                fitted = policy.slopes.get(field)
                name = policy.config + (f" (slope {fitted:.2f})" if fitted is not None else "")
                ax.plot(
                    [x for x, _ in points],
                    [y for _, y in points],
                    marker="o",
                    color=config_color(policy.config),
                    label=name,
                )
                if policy.overflow_rung is not None:
                    ax.axvline(policy.overflow_rung, color=config_color(policy.config), linestyle="--", linewidth=0.8)
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(mpl.ticker.FixedLocator(rungs))  # the rungs, in plain numbers (not 2 x 10^1)
            ax.xaxis.set_major_formatter(mpl.ticker.ScalarFormatter())
            ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
            if field in dict(COSTS):
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(mpl.ticker.LogLocator(subs=(1, 2, 5)))  # 1, 2, 5 in each decade, labelled
                ax.yaxis.set_major_formatter(mpl.ticker.EngFormatter(sep=""))  # 200k, not 2 x 10^5
                ax.yaxis.set_minor_formatter(mpl.ticker.NullFormatter())
            else:  # shares
                ax.set_ylim(-0.05, 1.05)
            if field == "peak_tokens":
                ax.axhline(window, color="black", linestyle=":", linewidth=0.8, label=f"window {window:,}")
            ax.set_xlabel(study[0].size_name)
            ax.set_title(label)
            ax.legend(fontsize=7)
        save_png(fig, path)
    return path


def write_scale(results_dir: str | Path, window: int = DEFAULT_WINDOW) -> Path:
    """Read results.jsonl; write scale.md and scale.png beside it. Returns scale.md's path."""
    results_dir = Path(results_dir)
    study = scale_study(load_results(results_dir).rows, window)
    if not study:
        raise SystemExit(f"erp-sim scale: no scored episode in {results_dir}")
    plot_scale(study, window, results_dir / SCALE_PNG)
    left_out = unfitted_rungs(study)
    if left_out:
        print(f"erp-sim scale: slopes leave out rungs cut short: {left_out}", file=sys.stderr)
    path = results_dir / SCALE_FILE
    path.write_text(render_scale(study, window), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim scale", description=__doc__.splitlines()[0], formatter_class=PlainDefaultsHelpFormatter
    )
    parser.add_argument("--configs", default=DEFAULT_CONFIGS, help="comma-separated presets (C1-C4)")
    parser.add_argument("--policy", action="append", default=[], help="a policy spec, e.g. last_n:n=5 (repeatable)")
    parser.add_argument(
        "--enforce-window",
        action="store_true",
        help="end an episode at its first request over --context-window (as eval does); by default "
        "episodes run on and the window only marks where a policy overflows",
    )
    parser.add_argument(
        "--report-only",
        metavar="DIR",
        type=results_dir,
        help="only write scale.md and scale.png for results already in DIR (or its results.jsonl)",
    )
    add_common_arguments(parser)
    parser.set_defaults(tasks="long_horizon", runs=1, out="runs/scale", context_window=DEFAULT_WINDOW)
    args = parser.parse_args(argv)
    args.command = command_text(parser.prog, argv)
    window = args.context_window
    if window is None:  # the option's type refuses anything but a positive number
        parser.error("--context-window must be a positive number of tokens")
    if args.report_only:
        print(f"scale study: {write_scale(args.report_only, window)}")
        return 0
    try:
        configs = parse_configs([n for n in args.configs.split(",") if n.strip()], args.policy, args.user)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.enforce_window:
        args.context_window = None
    with usage_errors(parser):
        status = run_from_args(args, configs)
    print(f"scale study: {write_scale(args.out, window)}")
    return status
