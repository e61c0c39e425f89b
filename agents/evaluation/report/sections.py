"""The report's sections: tables, notes on the numbers, the study's reference figures and the
methods prose.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from erp_sim.agents.evaluation import costs as cost
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.episode_row import EpisodeRow, infra_error_rows
from erp_sim.agents.evaluation.report.formats import (
    DASH,
    _share,
    fmt_count,
    fmt_decimal,
    fmt_dependency,
    fmt_duration,
    fmt_number,
    fmt_p,
    fmt_percent,
    fmt_pp,
    fmt_relative,
    fmt_usd,
    md_table,
    plural,
    summaries_label,
)
from erp_sim.agents.evaluation.report.plots import SUCCESS_VS_COST_PNG, _plotted, is_scripted, short_labels
from erp_sim.agents.evaluation.runs import runs_text
from erp_sim.agents.failures import error_text
from erp_sim.outcomes import TERMINATIONS


def _configurations(summaries: Mapping[str, st.ConfigSummary]) -> str:
    rows = [
        (
            s.config,
            f"`{s.policy}`",
            s.agent,
            s.user,
            s.tasks,
            s.n_tasks,
            runs_text(s.n_runs, s.agent),
            s.n_episodes,
            s.n_infra_errors,
            s.interval_method,
        )
        for s in summaries.values()
    ]
    headers = (
        "config",
        "policy",
        "agent",
        "user",
        "task set",
        "tasks",
        "runs",
        "scored episodes",
        "infra errors",
        "95% CI",
    )
    table = md_table(headers, rows, "lllllrrrrl")
    incomplete = [f"{s.config} ({s.incomplete_runs})" for s in summaries.values() if s.incomplete_runs]
    if incomplete:
        table += (
            "\n\nRuns missing scored episodes (infrastructure errors not yet retried, or a run stopped before "
            "its end: `--resume` completes it): "
            + ", ".join(incomplete)
            + ". Their per-benchmark totals are the run's mean per episode times the number of tasks."
        )
    return table


def _outcomes(summaries: Mapping[str, st.ConfigSummary]) -> str:
    rows: list[tuple[str, ...]] = [
        (
            s.config,
            fmt_percent(s.estimates["success"]),
            fmt_percent(s.estimates["strict_success"]),
            fmt_percent(s.estimates["itemized_amount"], 2),
            fmt_percent(s.estimates["under_itemization"]),
            fmt_percent(s.estimates["over_itemization"]),
        )
        for s in summaries.values()
    ]
    headers: tuple[str, ...] = (
        "config",
        f"{summaries_label(summaries)} (%)",
        "strict success (%)",
        "itemized amount, capped (%)",
        "under-itemized episodes (%)",
        "over-itemized episodes (%)",
    )
    if all(cell == DASH for row in rows for cell in row[3:]):  # a workflow whose grade has no itemized amount
        headers, rows = headers[:3], [row[:3] for row in rows]
    return md_table(headers, rows)


def _cost(summaries: Mapping[str, st.ConfigSummary]) -> str:
    rows = [
        (
            s.config,
            fmt_count(s.estimates["input_tokens_per_episode"]),
            fmt_count(s.estimates["input_tokens"]),
            fmt_count(s.estimates["output_tokens"]),
            fmt_count(s.estimates["summarizer_tokens"]),
            fmt_count(s.estimates["peak_tokens"]),
            fmt_dependency(s.estimates["dependency"]),
            fmt_decimal(s.estimates["steps"]),
            fmt_duration(s.estimates["wall_time_s"]),
        )
        for s in summaries.values()
    ]
    headers = (
        "config",
        "input tokens / episode",
        "input tokens / benchmark",
        "output tokens / benchmark",
        "summarizer tokens / benchmark",
        "peak tokens / episode",
        "dependency / episode",
        "steps / episode",
        "wall time / benchmark",
    )
    table = md_table(headers, rows)
    users = [s for s in summaries.values() if (s.estimates["user_calls"].mean or 0) > 0]
    if users:  # an LLM user's calls are the user's cost, not the agent's: a table of their own
        table += (
            "\n\nLLM user (counted apart from the agent; o200k tokens, the service's own counts are under Token units):\n\n"
            + md_table(
                ("config", "user model calls / episode", "user tokens (in + out, o200k) / benchmark"),
                [
                    (s.config, fmt_decimal(s.estimates["user_calls"]), fmt_count(s.estimates["user_tokens"]))
                    for s in users
                ],
            )
        )
    return table


def _prompt_cost(
    costs: Mapping[str, cost.ConfigCost], prices: Mapping[str, cost.Price], success: str = "full itemization"
) -> str:
    """Input tokens, cacheable share per role and, with prices, the cost with and without caching."""
    roles = cost.roles_used(costs) or ["agent"]
    headers = ["config"]
    for role in roles:
        headers += [f"{role} input tokens / benchmark", f"{role} cacheable share (%)"]
    billed = any(c.cost_reported is not None for c in costs.values())
    if prices:
        headers += [
            "cost / benchmark without caching (USD)",
            "cost / benchmark with caching (USD)",
            "saved by caching (%)",
        ]
        headers += ["cost / benchmark, service counts where reported (USD)"] if billed else []
    rows = []
    for c in costs.values():
        cells: list[Any] = [c.config]
        for role in roles:
            cells += [fmt_number(c.input_tokens[role], 0, grouped=True), _share(c.cacheable_share[role])]
        if prices:
            cells += [fmt_usd(c.cost_uncached), fmt_usd(c.cost_cached), _share(c.saving)]
            cells += [_service_cost(c, prices)] if billed else []
        rows.append(cells)
    parts = [
        "Cacheable share = cacheable prefix tokens / input tokens (o200k), over scored episodes: the part of "
        "each request identical to the start of an earlier request of the same role in the episode, which a "
        "provider's prompt cache could serve at the cached price (an upper bound; see Methods).",
        md_table(headers, rows),
    ]
    if prices:
        parts.append(
            "Prices (USD per 1M tokens: input, cached input, output[, cache write]): "
            + "; ".join(f"{role} {price}" for role, price in prices.items())
            + "."
            + (
                f" Not priced, left out of the cost: {', '.join(cost.unpriced_roles(costs, prices))}."
                if cost.unpriced_roles(costs, prices)
                else ""
            )
        )
        parts.append(f"![{success} vs cost with caching]({SUCCESS_VS_COST_PNG})")
    else:
        parts.append(
            "No prices given: pass `--price ROLE=input,cached_input,output[,cache_write]` (USD per 1M "
            "tokens; to `erp-sim report`, `eval` or `sweep`) for the cost with and without caching."
        )
    return "\n\n".join(parts)


def _service_cost(c: cost.ConfigCost, prices: Mapping[str, cost.Price]) -> str:
    """The service-count cost, with the roles it covers: a role whose service reported nothing counts in o200k (a
    figure over the summarizer's counts alone read as the run's cost beside the agent's 2.12 USD)."""
    if c.cost_reported is None:
        return fmt_usd(None)
    ours = [role for role in prices if role not in c.service_roles]
    covers = f"service: {', '.join(c.service_roles) or 'none'}" + (f"; o200k: {', '.join(ours)}" if ours else "")
    return f"{fmt_usd(c.cost_reported)} ({covers})"


def _token_units(costs: Mapping[str, cost.ConfigCost]) -> str:
    """o200k counts beside the service's own, per role, where a service reported any."""
    reported = [
        (c, role) for c in costs.values() for role in cost.COST_ROLES if (c.reported_input_tokens.get(role) or 0) > 0
    ]
    if not reported:
        return (
            "Every count in this report is o200k_base (ours, exact, the same for every model); no model service "
            "reported token counts in these rows (scripted or offline roles)."
        )
    writes = any(c.provider_cache_write_tokens.get(role) is not None for c, role in reported)
    rows = []
    for c, role in reported:
        ours, theirs = c.input_tokens[role], c.reported_input_tokens[role]
        cached = c.provider_cached_tokens[role]
        row = [
            c.config,
            role,
            fmt_number(ours, 0, grouped=True),
            fmt_number(theirs, 0, grouped=True),
            fmt_number(100 * (theirs / ours - 1), 1, sign=True) if ours else DASH,
            fmt_number(c.input_tokens[role] * c.cacheable_share[role], 0, grouped=True),
            DASH if cached is None else fmt_number(cached, 0, grouped=True),
        ]
        if writes:  # a service that bills cache writes (the Messages API): its writes and its read share
            written = c.provider_cache_write_tokens.get(role)
            row += [
                DASH if written is None else fmt_number(written, 0, grouped=True),
                _share(cached / theirs) if cached is not None and theirs else DASH,
            ]
        rows.append(tuple(row))
    return (
        "Two units, never mixed: o200k counts of ours (the same for every model) and what each model service "
        "reported with its own tokenizer and chat template. The spread per step is in `erp-sim show` and the "
        "run page.\n\n"
        + md_table(
            (
                "config",
                "role",
                "input tokens / benchmark (o200k)",
                "input tokens / benchmark (service)",
                "service vs o200k (%)",
                "cacheable prefix / benchmark (o200k, bound)",
                "cached / benchmark (service-reported)",
                *(["cache writes / benchmark (service-reported)", "cache-read share (service, %)"] if writes else []),
            ),
            rows,
            "ll" + "r" * (7 if writes else 5),
        )
        + (
            "\n\nThe service billed cache writes (Anthropic's `cache_creation_input_tokens`, at the cache-write price): "
            "the cost with its counts uses its reads and writes as they are."
            if writes
            else ""
        )
    )


def _comparisons(comparisons: Sequence[st.Comparison], label: str) -> str:
    rows = []
    for c in comparisons:
        tasks = f"{c.better} / {c.worse} / {c.tied}" if c.paired else DASH
        h = (
            f"{fmt_number(c.cohens_h, 2, sign=True)} ({st.effect_size_label(c.cohens_h)})"
            if math.isfinite(c.cohens_h)
            else DASH
        )
        rows.append(
            (
                c.config,
                fmt_pp(c.success_diff),
                h,
                tasks,
                fmt_p(c.p_value, c.p_floor),
                c.test,
                fmt_relative(c.input_tokens_change),
                fmt_relative(c.peak_tokens_change),
            )
        )
    headers = (
        "config",
        f"Δ {label} (pp)",
        "Cohen's h",
        "tasks better / worse / tied",
        "p",
        "test",
        "Δ input tokens / benchmark (%)",
        "Δ peak tokens (%)",
    )
    return md_table(headers, rows, "lrrrrlrr")


def _deterministic_pass_k_note(summaries: Mapping[str, st.ConfigSummary]) -> str:
    names = [s.config for s in summaries.values() if s.deterministic]
    if not names:
        return ""
    return (
        f" {', '.join(names)}: a deterministic agent, whose runs of a task are identical copies, so its pass^k is "
        "its pass^1 (it runs once per task unless `--runs` asks for more)."
    )


def _pass_k(rows: Sequence[EpisodeRow], configs: Sequence[str]) -> str:
    groups = st.by_config(rows)
    curves = {name: st.pass_hat_k_curve(group) for name, group in groups.items()}
    k_max = max((max(curve, default=0) for curve in curves.values()), default=0)
    if k_max == 0:
        return "No scored episodes."
    runs = {name: Counter(st.task_key(row) for row in group) for name, group in groups.items()}
    fewer = False

    def cell(name: str, k: int) -> str:
        nonlocal fewer
        value = fmt_number(100 * curves.get(name, {}).get(k, math.nan), 1)
        tasks = runs.get(name, Counter())
        used = sum(n >= k for n in tasks.values())
        if value == DASH or used == len(tasks):
            return value
        fewer = True
        return f"{value} ({used} of {len(tasks)} tasks)"

    table = md_table(
        ("config", *(f"pass^{k} (%)" for k in range(1, k_max + 1))),
        [(name, *(cell(name, k) for k in range(1, k_max + 1))) for name in configs],
    )
    if fewer:
        table += (
            "\n\npass^k averages over the tasks with at least k scored runs; a cell naming fewer tasks than the "
            "configuration ran averages over those only (runs that did not finish, or infrastructure errors), "
            "so it can rise with k: compare it with the column before only over the same tasks."
        )
    return table


def _count_table(
    counts: Mapping[str, Mapping[str, int]],
    categories: Sequence[str],
    first: str,
    totals: Sequence[tuple[str, Mapping[str, int]]],
) -> str:
    """Categories down, configurations across; ``totals`` are bold rows at the bottom."""
    configs = list(counts)
    rows = [(f"`{category}`", *(counts[c].get(category, 0) for c in configs)) for category in categories]
    rows += [(f"**{label}**", *(values.get(c, 0) for c in configs)) for label, values in totals]
    return md_table((first, *configs), rows)


def _failures(rows: Sequence[EpisodeRow], summaries: Mapping[str, st.ConfigSummary]) -> str:
    counts = st.failure_counts(rows)
    failed = {name: sum(not st.succeeded(r) for r in group) for name, group in st.by_config(rows).items()}
    scored = {name: summaries[name].n_episodes for name in counts}
    return _count_table(
        counts,
        st.category_order(counts, st.row_workflows(rows)),
        "failure category",
        [("failed episodes", failed), ("scored episodes", scored)],
    )


def _terminations(rows: Sequence[EpisodeRow], summaries: Mapping[str, st.ConfigSummary]) -> str:
    counts = st.termination_counts(rows)
    seen = {reason for per_config in counts.values() for reason in per_config}
    reasons = [r for r in TERMINATIONS if r in seen] + sorted(seen - set(TERMINATIONS))
    scored = {name: summaries[name].n_episodes for name in counts}
    return _count_table(counts, reasons, "termination", [("scored episodes", scored)])


def _grid_table(grid: st.SweepGrid, summaries: Mapping[str, st.ConfigSummary], metric: str, fmt) -> str:
    rows = []
    for n in grid.n_values:
        cells = []
        for w in grid.w_values:
            config = grid.cells.get((n, w))
            cells.append(fmt(summaries[config].estimates[metric]) if config else DASH)
        rows.append((f"N={n}", *cells))
    return md_table(("N \\ W", *(f"W={w}" for w in grid.w_values)), rows)


def _sweeps(grids: Sequence[st.SweepGrid], summaries: Mapping[str, st.ConfigSummary], images: Sequence[str]) -> str:
    parts = []
    for grid, image in zip(grids, images):
        shadowed = "".join(
            f"At N={n}, W={w} the cell shows {grid.cells[(n, w)]}; {', '.join(names)} ran the same policy and "
            "is left out of the grid.\n\n"
            for (n, w), names in grid.shadowed.items()
        )
        parts.append(
            shadowed
            + _identical_w_note(grid, summaries)
            + f"### `{grid.family}` (agent {grid.agent}, user {grid.user}, {grid.task_set})\n\n"
            f"{summaries_label(summaries).capitalize()} (%), mean [95% CI]:\n\n{_grid_table(grid, summaries, 'success', fmt_percent)}\n\n"
            f"Input tokens per benchmark, mean [95% CI]:\n\n{_grid_table(grid, summaries, 'input_tokens', fmt_count)}\n\n"
            f"![N x W sensitivity of {grid.family}]({image})"
        )
    return "\n\n".join(parts)


def _infra(rows: Sequence[EpisodeRow]) -> str:
    """Episodes whose last attempt is an infrastructure error, then the attempt history of retried ones."""
    errors = infra_error_rows(rows)
    retried = [r for r in st.canonical_order(rows) if r.attempts]
    parts = []
    if errors:
        parts.append(
            md_table(
                ("config", "task", "run", "attempt", "error"),
                [(r.config, r.task_id, r.run, r.attempt_number, error_text(r.infra_error)[:160]) for r in errors],
                "lllrl",
            )
        )
    else:
        parts.append("No episode is left with an infrastructure error.")
    if retried:
        parts.append(f"{plural(len(retried), 'episode')} needed a retry (`--resume`); earlier attempts, oldest first:")
        parts.append(
            md_table(
                ("config", "task", "run", "attempt", "outcome", "error"),
                [
                    (
                        r.config,
                        r.task_id,
                        r.run,
                        a.attempt,
                        a.termination or "",
                        error_text(a.infra_error or a.model_error)[:160],
                    )
                    for r in retried
                    for a in r.attempts
                ],
                "lllrll",
            )
        )
    return "\n\n".join(parts)


def _label_table(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """The legend of the plots: short label, configuration, policy, agent."""
    labels = short_labels(list(_plotted(summaries)))
    if not labels:
        return ""
    rows = [(labels[name], name, f"`{summaries[name].policy}`", summaries[name].agent) for name in labels]
    return "Labels used in the plots (colours are fixed per configuration across reports):\n\n" + md_table(
        ("label", "configuration", "policy", "agent"), rows
    )


#: Fewer replicates than these make an interval too unstable to lean on.
MIN_BOOTSTRAP_TASKS = 10
MIN_T_RUNS = 3


def _caveats(summaries: Mapping[str, st.ConfigSummary]) -> list[str]:
    """Warnings a reader needs before the numbers: small n, and a scripted (non-LLM) agent."""
    notes = []
    few_tasks = [
        f"{s.config} ({s.interval_method})"
        for s in summaries.values()
        if s.n_episodes and s.n_tasks < MIN_BOOTSTRAP_TASKS and (s.n_runs == 1 or s.deterministic)
    ]
    few_runs = [
        f"{s.config} ({s.interval_method})"
        for s in summaries.values()
        if s.n_episodes and not s.deterministic and 1 < s.n_runs < MIN_T_RUNS
    ]
    why = [
        *(
            [f"{', '.join(few_tasks)}: a bootstrap over fewer than {MIN_BOOTSTRAP_TASKS} tasks understates the spread"]
            if few_tasks
            else []
        ),
        *(
            [
                f"{', '.join(few_runs)}: a t interval over fewer than {MIN_T_RUNS} runs is wide (or, where the runs agree, has no width that means anything)"
            ]
            if few_runs
            else []
        ),
    ]
    if why:
        notes.append(
            "**Small n: treat the intervals as rough.** " + "; ".join(why) + ". Run more tasks (`--tasks`) or "
            "runs (`--runs`) before drawing conclusions."
        )
    if any(is_scripted(s.agent) for s in summaries.values()):
        notes.append(
            "**Agent: scripted (not an LLM)** for "
            + ", ".join(s.config for s in summaries.values() if is_scripted(s.agent))
            + ": a deterministic rule-based agent (with `recall=` a synthetic misreading model); its numbers test "
            "the harness and the policies, they are not results of a language model."
        )
    return notes


def _identical_w_note(grid: st.SweepGrid, summaries: Mapping[str, st.ConfigSummary]) -> str:
    """Say which W columns of a sweep gave identical results at every N, and why W=1 and W=-1 do."""
    keys = ("success", "input_tokens", "peak_tokens", "steps")

    def column(w: int) -> tuple[float, ...] | None:
        cells = [grid.cells.get((n, w)) for n in grid.n_values]
        present = [c for c in cells if c is not None]
        if len(present) < len(cells):
            return None
        return tuple(round(summaries[c].estimates[k].mean, 9) for c in present for k in keys)

    same = []
    for i, a in enumerate(grid.w_values):
        for b in grid.w_values[i + 1 :]:
            if column(a) is not None and column(a) == column(b):
                same.append((a, b))
    if not same:
        return ""
    pairs = ", ".join(f"W={a} and W={b}" for a, b in same)
    why = ""
    if any({a, b} == {1, -1} for a, b in same):
        why = (
            " Why W=1 and W=-1 agree: both fold every evicted unit into the summary at once (W=1 one unit per "
            "summarizer call as soon as it is evicted, W=-1 all evicted units in one call), so neither leaves "
            "unfolded units visible between the summary and the last-N window; and the structured summarizer "
            "is lossless and deterministic, so the summary text does not depend on how the units were batched. "
            "The shown contexts are then identical step by step; only the number of summarizer calls differs. "
            "With an LLM summarizer the batching would change the summary and W=1 and W=-1 would part. In the "
            "plots the two are drawn as nested markers so both stay visible."
        )
    return (
        f"{pairs} gave identical {summaries_label(summaries)}, input tokens, peak tokens and steps at every N.{why}\n\n"
    )
