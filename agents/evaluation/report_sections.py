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
from erp_sim.agents.evaluation.episode_row import EpisodeRow
from erp_sim.agents.evaluation.failures import error_text
from erp_sim.agents.evaluation.report_format import (
    DASH,
    _plural,
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
)
from erp_sim.agents.evaluation.report_plots import SUCCESS_VS_COST_PNG, _plotted, is_scripted, short_labels
from erp_sim.agents.evaluation.runs import runs_text

#: The study's figures: Lodha et al., context management for an LLM agent itemizing hotel
#: expenses in Dynamics 365 (GPT-5 agent, GPT-4.1 user model, 50 hotel tasks x 5 runs):
#: config, setup, full itemization, mean itemized amount, tokens per benchmark (a unit the
#: study does not define), hours per benchmark.
STUDY_REFERENCE: tuple[tuple[str, str, float, float | None, int | None, float | None], ...] = (
    ("C1", "no user model", 0.080, None, None, None),
    ("C2", "full context", 0.710, None, 1_480_996, 14.56),
    ("C3", "last 5 pairs", 0.790, None, 535_274, 5.39),
    ("C4", "last 5 pairs + summary (W=3)", 0.916, 0.9964, 553_374, 5.79),
)


def _configurations(summaries: Mapping[str, st.ConfigSummary]) -> str:
    rows = [
        (
            s.config,
            f"`{s.policy}`",
            s.agent,
            s.user,
            s.task_set,
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
    rows = [
        (
            s.config,
            fmt_percent(s.estimates["success"]),
            fmt_percent(s.estimates["strict_success"]),
            fmt_percent(s.estimates["itemized_amount"]),
            fmt_percent(s.estimates["over_itemization"]),
        )
        for s in summaries.values()
    ]
    return md_table(
        (
            "config",
            "full itemization (%)",
            "strict success (%)",
            "itemized amount, capped (%)",
            "over-itemized episodes (%)",
        ),
        rows,
    )


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


def _prompt_cost(costs: Mapping[str, cost.ConfigCost], prices: Mapping[str, cost.Price]) -> str:
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
        headers += ["cost / benchmark, service counts and cached tokens (USD)"] if billed else []
    rows = []
    for c in costs.values():
        cells: list[Any] = [c.config]
        for role in roles:
            cells += [fmt_number(c.input_tokens[role], 0, grouped=True), _share(c.cacheable_share[role])]
        if prices:
            cells += [fmt_usd(c.cost_uncached), fmt_usd(c.cost_cached), _share(c.saving)]
            cells += [fmt_usd(c.cost_reported)] if billed else []
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
        parts.append(f"![full itemization vs cost with caching]({SUCCESS_VS_COST_PNG})")
    else:
        parts.append(
            "No prices given: pass `--price ROLE=input,cached_input,output[,cache_write]` (USD per 1M "
            "tokens; to `erp-sim report`, `eval` or `sweep`) for the cost with and without caching."
        )
    return "\n\n".join(parts)


def _token_units(costs: Mapping[str, cost.ConfigCost]) -> str:
    """o200k counts beside the service's own, per role, where a service reported any."""
    reported = [(c, role) for c in costs.values() for role in cost.ROLES if (c.reported_input_tokens[role] or 0) > 0]
    if not reported:
        return (
            "Every count in this report is o200k_base (ours, exact, the same for every model); no model service "
            "reported token counts in these rows (scripted or offline roles)."
        )
    rows = []
    for c, role in reported:
        ours, theirs = c.input_tokens[role], c.reported_input_tokens[role]
        cached = c.provider_cached_tokens[role]
        rows.append(
            (
                c.config,
                role,
                fmt_number(ours, 0, grouped=True),
                fmt_number(theirs, 0, grouped=True),
                fmt_number(100 * (theirs / ours - 1), 1, sign=True) if ours else DASH,
                fmt_number(c.input_tokens[role] * c.cacheable_share[role], 0, grouped=True),
                DASH if cached is None else fmt_number(cached, 0, grouped=True),
            )
        )
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
            ),
            rows,
            "llrrrrr",
        )
    )


def _comparisons(comparisons: Sequence[st.Comparison]) -> str:
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
        "Δ full itemization (pp)",
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
        st.category_order(counts),
        "failure category",
        [("failed episodes", failed), ("scored episodes", scored)],
    )


def _terminations(rows: Sequence[EpisodeRow], summaries: Mapping[str, st.ConfigSummary]) -> str:
    counts = st.termination_counts(rows)
    seen = {reason for per_config in counts.values() for reason in per_config}
    reasons = [r for r in st.TERMINATIONS if r in seen] + sorted(seen - set(st.TERMINATIONS))
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
            f"Full itemization (%), mean [95% CI]:\n\n{_grid_table(grid, summaries, 'success', fmt_percent)}\n\n"
            f"Input tokens per benchmark, mean [95% CI]:\n\n{_grid_table(grid, summaries, 'input_tokens', fmt_count)}\n\n"
            f"![N x W sensitivity of {grid.family}]({image})"
        )
    return "\n\n".join(parts)


STUDY_ORDER = ("C2", "C3", "C4")


def _study_change(config: str) -> float:
    tokens = {c: t for c, *_, t, _ in STUDY_REFERENCE}
    mine, base = tokens.get(config), tokens.get("C2")
    return mine / base - 1 if mine and base else math.nan


def _order_note(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """Pairs of C2-C4 whose order of full itemization differs from the study's, in words."""
    study = {c: success for c, _, success, *_ in STUDY_REFERENCE}
    ours = {c: summaries[c].estimates["success"].mean for c in STUDY_ORDER if c in summaries}
    flipped = []
    for i, a in enumerate(STUDY_ORDER):
        for b in STUDY_ORDER[i + 1 :]:
            comparable = a in ours and b in ours and math.isfinite(ours[a]) and math.isfinite(ours[b])
            if comparable and ((ours[a] > ours[b]) != (study[a] > study[b]) or ours[a] == ours[b]):
                flipped.append(
                    f"{a} {fmt_number(100 * ours[a], 1)}% vs {b} {fmt_number(100 * ours[b], 1)}% "
                    f"(study: {fmt_number(100 * study[a], 1)}% vs {fmt_number(100 * study[b], 1)}%)"
                )
    if len(ours) < 2:  # one of them: no order to compare
        return ""
    if not flipped:
        return f"\n\nThe order of full itemization across {', '.join(ours)} is the study's."
    return (
        "\n\n**The order of full itemization differs from the study's**: " + "; ".join(flipped) + ". A level "
        "that matches the study (e.g. C2) does not make the others comparable."
    )


def task_sets_note(rows: Sequence[EpisodeRow]) -> str | None:
    """A warning when the configurations' scored episodes cover different tasks (None: the same tasks)."""
    tasks = {name: {st.task_key(row) for row in group} for name, group in st.by_config(rows).items()}
    if len({frozenset(keys) for keys in tasks.values()}) <= 1:
        return None
    every = set().union(*tasks.values())
    counts = ", ".join(f"{name} {len(keys)}" for name, keys in tasks.items())
    return (
        f"**The configurations ran different tasks** (of {len(every)}: {counts}). Per-benchmark figures (cost, "
        "caching, the reference table's levels) are each over the configuration's own tasks, so they compare "
        "different tasks; the changes against the baseline and against C2 are paired over the tasks both ran."
    )


def changes_vs_c2(rows: Sequence[EpisodeRow], comparisons: Sequence[st.Comparison]) -> dict[str, st.Estimate]:
    """C3's and C4's input tokens against C2's, paired over the tasks both ran (the baseline section's figure
    when C2 is the baseline): a ratio of per-benchmark totals over different task sets would compare tasks."""
    known = {c.config: c for c in comparisons if c.baseline == "C2"}
    groups = st.by_config(st.scored_rows(rows))
    changes = {}
    for config in STUDY_ORDER[1:]:
        comparison = known.get(config)
        if comparison is None and config in groups and "C2" in groups:
            comparison = st.compare(groups[config], groups["C2"])
        if comparison is not None and comparison.paired:
            changes[config] = comparison.input_tokens_change
    return changes


def _reference(summaries: Mapping[str, st.ConfigSummary], vs_c2: Mapping[str, st.Estimate]) -> str:
    rows = []
    for config, setup, success, amount, tokens, _hours in STUDY_REFERENCE:
        ours = summaries.get(config)
        study_success = fmt_number(100 * success, 1)
        if amount is not None:
            study_success += f" (amount {fmt_number(100 * amount, 2)})"
        study_change, our_change = _study_change(config), vs_c2.get(config)
        rows.append(
            (
                config,
                setup,
                study_success,
                f"{fmt_number(tokens, 0, grouped=True)}" if tokens else DASH,
                fmt_number(100 * study_change, 1, sign=True)
                if config != "C2" and math.isfinite(study_change)
                else DASH,
                f"`{ours.policy}`, {ours.agent}" if ours else DASH,
                fmt_percent(ours.estimates["success"]) if ours else DASH,
                fmt_count(ours.estimates["input_tokens_per_episode"]) if ours else DASH,
                fmt_count(ours.estimates["input_tokens"]) if ours else DASH,
                fmt_relative(our_change) if our_change is not None else DASH,
            )
        )
    headers = (
        "config",
        "study setup",
        "STUDY (GPT-5): full itemization (%)",
        "STUDY: tokens / benchmark (unit not defined)",
        "STUDY: tokens vs C2 (%)",
        "this run: policy, agent",
        "this run: full itemization (%)",
        "this run: input tokens / episode",
        "this run: input tokens / benchmark",
        "this run: input tokens vs C2 (%)",
    )
    return (
        "The study's numbers are **GPT-5 on a live D365 tenant, 50 hotel tasks x 5 runs** (Lodha et al.); "
        "they were not produced by this evaluation. Our columns are this run's configurations of the same "
        "name, whatever agent and policy they used.\n\n"
        '**Units.** The study reports "tokens per benchmark" without saying what is counted (input only or '
        "input + output, per run or over all runs, which tokenizer); its C2 figure (1,480,996) is far below "
        "what 50 full-context episodes take here, so the levels are not comparable. Ours are **input "
        "(prompt) tokens of the agent's model calls** (o200k_base counts of the messages and tool schemas "
        "shown), per episode and per benchmark (= per episode x the number of tasks, one run; the mean over "
        "runs). What is comparable is the **relative change against C2** (over the tasks both ran: "
        "Σ tokens / Σ tokens of C2 − 1, with its paired interval), which sits beside the study's.\n\n"
        + md_table(headers, rows, "llrrrlrrrr")
        + _order_note(summaries)
        + "\n\nACON (Kang et al., agent context optimization: history and observation compression on AppWorld, "
        "OfficeBench and multi-objective QA) reports peak tokens down 26-54% at equal or better accuracy; "
        'compare the "Δ peak tokens" column of the section against the baseline.'
    )


def _infra(rows: Sequence[EpisodeRow]) -> str:
    """Episodes whose last attempt is an infrastructure error, then the attempt history of retried ones."""
    errors = st.infra_error_rows(rows)
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
        parts.append(f"{_plural(len(retried), 'episode')} needed a retry (`--resume`); earlier attempts, oldest first:")
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
    return f"{pairs} gave identical full itemization, input tokens, peak tokens and steps at every N.{why}\n\n"
