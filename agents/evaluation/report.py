"""The evaluation report: ``report.md`` and PNG plots from ``DIR/results.jsonl``.

``write_report(DIR)`` is what ``erp-sim report DIR`` (and the end of ``erp-sim eval``) calls.
All numbers come from :mod:`erp_sim.agents.evaluation.statistics`; this module only formats and draws them.
The output is a pure function of the rows: no timestamps, no absolute paths, rows put in
a canonical order, floats rounded by one set of formatters, PNGs saved without the
"Software" stamp, so re-running the report on the same results gives identical files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from erp_sim.agents.evaluation import costs as cost
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.failures import error_text
from erp_sim.agents.evaluation.runs import runs_text

RESULTS_FILE = "results.jsonl"
REPORT_FILE = "report.md"
SUCCESS_VS_TOKENS_PNG = "success_vs_tokens.png"
PEAK_TOKENS_PNG = "peak_tokens.png"
SUCCESS_VS_COST_PNG = "success_vs_cost.png"
REPORT_JSON = "report.json"
SWEEP_PNG_STEM = "sweep_heatmap"

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

DASH = "–"


# ---------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------


def load_results(results_dir: str | Path, name: str = RESULTS_FILE) -> tuple[list[dict[str, Any]], int]:
    """Rows of ``results.jsonl`` and the number of unreadable lines skipped.

    A run killed while writing can leave a truncated last line; the report counts such
    lines instead of failing, and ``--resume`` re-runs their episodes.
    """
    rows, malformed = [], 0
    with open(Path(results_dir) / name, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                malformed += 1
                continue
            if isinstance(row, dict) and "config" in row and "task_id" in row:
                rows.append(row)
            else:
                malformed += 1
    return rows, malformed


# ---------------------------------------------------------------------------------------
# Number formats: every float in the report goes through one of these
# ---------------------------------------------------------------------------------------


def _clean(value: float, digits: int) -> float:
    """Rounded, without a negative zero ("-0.0" would differ from "0.0" by noise alone)."""
    value = round(value, digits)
    return 0.0 if value == 0 else value


def fmt_number(value: float, digits: int = 1, *, sign: bool = False, grouped: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    spec = f"{'+' if sign else ''}{',' if grouped else ''}.{digits}f"
    return format(_clean(value, digits), spec)


def fmt_sci(value: float, *, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return format(value, "+.2e" if sign else ".2e")


def _with_interval(est: st.Estimate, fmt, scale: float = 1.0) -> str:
    point = fmt(est.mean * scale)
    if point == DASH or not est.has_interval:
        return point
    low, high = fmt(est.low * scale), fmt(est.high * scale)
    if low == point == high:  # no spread at the shown precision: brackets would only add noise
        return point
    return f"{point} [{low}, {high}]"


def fmt_percent(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 1), 100)


def fmt_count(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 0, grouped=True))


def fmt_decimal(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 1))


def fmt_dependency(est: st.Estimate) -> str:
    return _with_interval(est, fmt_sci)


def _time_unit(seconds: float) -> tuple[str, float, int]:
    if seconds >= 7200:
        return "h", 3600.0, 2
    if seconds >= 120:
        return "min", 60.0, 1
    return "s", 1.0, 2


def fmt_duration(est: st.Estimate) -> str:
    """Seconds, minutes or hours (as the study's "14.56 h"), one unit per cell."""
    if not math.isfinite(est.mean):
        return DASH
    unit, divisor, digits = _time_unit(est.mean)
    return _with_interval(est, lambda v: fmt_number(v, digits), 1 / divisor) + f" {unit}"


def fmt_pp(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 1, sign=True), 100)


def fmt_relative(est: st.Estimate) -> str:
    if not math.isfinite(est.mean):
        return DASH
    return _with_interval(est, lambda v: fmt_number(v, 1, sign=True), 100)


def fmt_p(value: float, floor: float | None = None) -> str:
    """A p-value; at the floor of a resampling test, the bound, not a false exact value."""
    if not math.isfinite(value):
        return DASH
    if floor is not None and value <= floor * (1 + 1e-9):
        return f"≤ 2/(R+1) = {fmt_number(floor, 4)}"
    return "< 0.0001" if value < 0.0001 else fmt_number(value, 4)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` holds one of l/r per column (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------


def _configurations(summaries: Mapping[str, st.ConfigSummary]) -> str:
    rows = [
        (s.config, f"`{s.policy}`", s.agent, s.user, s.task_set, s.n_tasks, runs_text(s.n_runs, s.agent), s.n_episodes,
         s.n_infra_errors, s.interval_method)
        for s in summaries.values()
    ]
    headers = ("config", "policy", "agent", "user", "task set", "tasks", "runs", "scored episodes", "infra errors", "95% CI")
    table = md_table(headers, rows, "lllllrrrrl")
    incomplete = [f"{s.config} ({s.incomplete_runs})" for s in summaries.values() if s.incomplete_runs]
    if incomplete:
        table += (
            "\n\nRuns missing scored episodes (infrastructure errors not yet retried): "
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
    return md_table(("config", "full itemization (%)", "strict success (%)", "itemized amount, capped (%)",
                     "over-itemized episodes (%)"), rows)


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
        table += "\n\nLLM user (counted apart from the agent; o200k tokens, the service's own counts are under Token units):\n\n" + md_table(
            ("config", "user model calls / episode", "user tokens (in + out, o200k) / benchmark"),
            [(s.config, fmt_decimal(s.estimates["user_calls"]), fmt_count(s.estimates["user_tokens"])) for s in users])
    return table


def fmt_usd(est: st.Estimate | None) -> str:
    if est is None:
        return DASH
    digits = 2 if est.mean >= 1 else 4
    return _with_interval(est, lambda v: fmt_number(v, digits, grouped=True))


def _share(value: float) -> str:
    return fmt_number(100 * value, 1) if math.isfinite(value) else DASH


def _prompt_cost(costs: Mapping[str, cost.ConfigCost], prices: Mapping[str, cost.Price]) -> str:
    """Input tokens, cacheable share per role and, with prices, the cost with and without caching."""
    roles = cost.roles_used(costs) or ["agent"]
    headers = ["config"]
    for role in roles:
        headers += [f"{role} input tokens / benchmark", f"{role} cacheable share (%)"]
    billed = any(c.cost_reported is not None for c in costs.values())
    if prices:
        headers += ["cost / benchmark without caching (USD)", "cost / benchmark with caching (USD)", "saved by caching (%)"]
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
    parts = ["Cacheable share = cacheable prefix tokens / input tokens (o200k), over scored episodes: the part of "
             "each request identical to the start of an earlier request of the same role in the episode, which a "
             "provider's prompt cache could serve at the cached price (an upper bound; see Methods).",
             md_table(headers, rows)]
    if prices:
        parts.append("Prices (USD per 1M tokens: input, cached input, output[, cache write]): "
                     + "; ".join(f"{role} {price}" for role, price in prices.items()) + "."
                     + (f" Not priced, left out of the cost: {', '.join(cost.unpriced_roles(costs, prices))}."
                        if cost.unpriced_roles(costs, prices) else ""))
        parts.append(f"![full itemization vs cost with caching]({SUCCESS_VS_COST_PNG})")
    else:
        parts.append("No prices given: pass `--price ROLE=input,cached_input,output[,cache_write]` (USD per 1M "
                     "tokens; to `erp-sim report`, `eval` or `sweep`) for the cost with and without caching.")
    return "\n\n".join(parts)


def _token_units(costs: Mapping[str, cost.ConfigCost]) -> str:
    """o200k counts beside the service's own, per role, where a service reported any."""
    reported = [(c, role) for c in costs.values() for role in cost.ROLES if (c.reported_input_tokens[role] or 0) > 0]
    if not reported:
        return ("Every count in this report is o200k_base (ours, exact, the same for every model); no model service "
                "reported token counts in these rows (scripted or offline roles).")
    rows = []
    for c, role in reported:
        ours, theirs = c.input_tokens[role], c.reported_input_tokens[role]
        cached = c.provider_cached_tokens[role]
        rows.append((c.config, role, fmt_number(ours, 0, grouped=True), fmt_number(theirs, 0, grouped=True),
                     fmt_number(100 * (theirs / ours - 1), 1, sign=True) if ours else DASH,
                     fmt_number(c.input_tokens[role] * c.cacheable_share[role], 0, grouped=True),
                     DASH if cached is None else fmt_number(cached, 0, grouped=True)))
    return ("Two units, never mixed: o200k counts of ours (the same for every model) and what each model service "
            "reported with its own tokenizer and chat template. The spread per step is in `erp-sim show` and the "
            "run page.\n\n" + md_table(("config", "role", "input tokens / benchmark (o200k)",
                                          "input tokens / benchmark (service)", "service vs o200k (%)",
                                          "cacheable prefix / benchmark (o200k, bound)",
                                          "cached / benchmark (service-reported)"), rows, "llrrrrr"))


def _comparisons(comparisons: Sequence[st.Comparison]) -> str:
    rows = []
    for c in comparisons:
        tasks = f"{c.better} / {c.worse} / {c.tied}" if c.paired else DASH
        h = f"{fmt_number(c.cohens_h, 2, sign=True)} ({st.effect_size_label(c.cohens_h)})" if math.isfinite(c.cohens_h) else DASH
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
    return (f" {', '.join(names)}: a deterministic agent, whose runs of a task are identical copies, so its pass^k is "
            "its pass^1 (it runs once per task unless `--runs` asks for more).")


def _pass_k(rows: Sequence[Mapping[str, Any]], configs: Sequence[str]) -> str:
    curves = {name: st.pass_hat_k_curve(group) for name, group in st.by_config(rows).items()}
    k_max = max((max(curve, default=0) for curve in curves.values()), default=0)
    if k_max == 0:
        return "No scored episodes."
    table_rows = [
        (name, *(fmt_number(100 * curves.get(name, {}).get(k, math.nan), 1) for k in range(1, k_max + 1)))
        for name in configs
    ]
    return md_table(("config", *(f"pass^{k} (%)" for k in range(1, k_max + 1))), table_rows)


def _count_table(
    counts: Mapping[str, Mapping[str, int]], categories: Sequence[str], first: str, totals: Sequence[tuple[str, Mapping[str, int]]]
) -> str:
    """Categories down, configurations across; ``totals`` are bold rows at the bottom."""
    configs = list(counts)
    rows = [(f"`{category}`", *(counts[c].get(category, 0) for c in configs)) for category in categories]
    rows += [(f"**{label}**", *(values.get(c, 0) for c in configs)) for label, values in totals]
    return md_table((first, *configs), rows)


def _failures(rows: Sequence[Mapping[str, Any]], summaries: Mapping[str, st.ConfigSummary]) -> str:
    counts = st.failure_counts(rows)
    failed = {name: sum(not st.succeeded(r) for r in group) for name, group in st.by_config(rows).items()}
    scored = {name: summaries[name].n_episodes for name in counts}
    return _count_table(counts, st.category_order(counts), "failure category", [("failed episodes", failed), ("scored episodes", scored)])


def _terminations(rows: Sequence[Mapping[str, Any]], summaries: Mapping[str, st.ConfigSummary]) -> str:
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
            shadowed + _identical_w_note(grid, summaries) +
            f"### `{grid.family}` (agent {grid.agent}, user {grid.user}, {grid.task_set})\n\n"
            f"Full itemization (%), mean [95% CI]:\n\n{_grid_table(grid, summaries, 'success', fmt_percent)}\n\n"
            f"Input tokens per benchmark, mean [95% CI]:\n\n{_grid_table(grid, summaries, 'input_tokens', fmt_count)}\n\n"
            f"![N x W sensitivity of {grid.family}]({image})"
        )
    return "\n\n".join(parts)


STUDY_ORDER = ("C2", "C3", "C4")


def _study_change(config: str) -> float:
    tokens = {c: t for c, *_, t, _ in STUDY_REFERENCE}
    return tokens[config] / tokens["C2"] - 1 if tokens.get(config) and tokens.get("C2") else math.nan


def _our_change(summaries: Mapping[str, st.ConfigSummary], config: str) -> float:
    if config not in summaries or "C2" not in summaries:
        return math.nan
    base = summaries["C2"].estimates["input_tokens"].mean
    return summaries[config].estimates["input_tokens"].mean / base - 1 if base else math.nan


def _order_note(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """Pairs of C2-C4 whose order of full itemization differs from the study's, in words."""
    study = {c: success for c, _, success, *_ in STUDY_REFERENCE}
    ours = {c: summaries[c].estimates["success"].mean for c in STUDY_ORDER if c in summaries}
    flipped = []
    for i, a in enumerate(STUDY_ORDER):
        for b in STUDY_ORDER[i + 1:]:
            if a in ours and b in ours and math.isfinite(ours[a]) and math.isfinite(ours[b]):
                if (ours[a] > ours[b]) != (study[a] > study[b]) or ours[a] == ours[b]:
                    flipped.append(f"{a} {fmt_number(100 * ours[a], 1)}% vs {b} {fmt_number(100 * ours[b], 1)}% "
                                   f"(study: {fmt_number(100 * study[a], 1)}% vs {fmt_number(100 * study[b], 1)}%)")
    if not ours:
        return ""
    if not flipped:
        return "\n\nThe order of full itemization across C2, C3 and C4 is the study's."
    return ("\n\n**The order of full itemization differs from the study's**: " + "; ".join(flipped) + ". A level "
            "that matches the study (e.g. C2) does not make the others comparable.")


def _reference(summaries: Mapping[str, st.ConfigSummary]) -> str:
    rows = []
    for config, setup, success, amount, tokens, hours in STUDY_REFERENCE:
        ours = summaries.get(config)
        study_success = fmt_number(100 * success, 1)
        if amount is not None:
            study_success += f" (amount {fmt_number(100 * amount, 2)})"
        study_change, our_change = _study_change(config), _our_change(summaries, config)
        rows.append(
            (
                config,
                setup,
                study_success,
                f"{fmt_number(tokens, 0, grouped=True)}" if tokens else DASH,
                fmt_number(100 * study_change, 1, sign=True) if config != "C2" and math.isfinite(study_change) else DASH,
                f"`{ours.policy}`, {ours.agent}" if ours else DASH,
                fmt_percent(ours.estimates["success"]) if ours else DASH,
                fmt_count(ours.estimates["input_tokens_per_episode"]) if ours else DASH,
                fmt_count(ours.estimates["input_tokens"]) if ours else DASH,
                fmt_number(100 * our_change, 1, sign=True) if config != "C2" and math.isfinite(our_change) else DASH,
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
        "**Units.** The study reports \"tokens per benchmark\" without saying what is counted (input only or "
        "input + output, per run or over all runs, which tokenizer); its C2 figure (1,480,996) is far below "
        "what 50 full-context episodes take here, so the levels are not comparable. Ours are **input "
        "(prompt) tokens of the agent's model calls** (o200k_base counts of the messages and tool schemas "
        "shown), per episode and per benchmark (= per episode x the number of tasks, one run; the mean over "
        "runs). What is comparable is the **relative change against C2** (ratio of means minus 1), which "
        "sits beside the study's.\n\n"
        + md_table(headers, rows, "llrrrlrrrr")
        + _order_note(summaries)
        + "\n\nACON (Kang et al., agent context optimization: history and observation compression on AppWorld, "
        "OfficeBench and multi-objective QA) reports peak tokens down 26-54% at equal or better accuracy; "
        "compare the \"Δ peak tokens\" column above."
    )


def _infra(rows: Sequence[Mapping[str, Any]]) -> str:
    """Episodes whose last attempt is an infrastructure error, then the attempt history of retried ones."""
    errors = st.infra_error_rows(rows)
    retried = [r for r in st.canonical_order(rows) if r.get("attempts")]
    parts = []
    if errors:
        parts.append(md_table(("config", "task", "run", "attempt", "error"), [
            (r["config"], r["task_id"], r.get("run", 0), r.get("attempt", 1), error_text(r["infra_error"])[:160])
            for r in errors
        ], "lllrl"))
    else:
        parts.append("No episode is left with an infrastructure error.")
    if retried:
        parts.append(f"{_plural(len(retried), 'episode')} needed a retry (`--resume`); earlier attempts, oldest first:")
        parts.append(md_table(("config", "task", "run", "attempt", "outcome", "error"), [
            (r["config"], r["task_id"], r.get("run", 0), a.get("attempt", n + 1), a.get("termination") or "",
             error_text(a.get("infra_error") or a.get("model_error"))[:160])
            for r in retried for n, a in enumerate(r["attempts"])
        ], "lllrll"))
    return "\n\n".join(parts)


METHODS = """\
- **Scored episodes**: rows without `infra_error`; one row per (config, task, run), its last
  attempt (a run killed during `--resume` leaves several; a scored attempt is never displaced by a
  later infrastructure error), earlier attempts listed below. Infrastructure errors are counted
  once per episode and listed, never scored.
- **Per configuration** (Outcomes, Cost): each metric is reduced to one value per run (a run
  is one pass over the task set): the mean over the run's episodes for rates and per-episode
  metrics; for per-benchmark totals, that mean times the number of tasks (= the sum over
  tasks when the run is complete). The table gives the mean over runs R and the Student t
  interval mean ± t(0.975, R-1) · s/√R (`scipy.stats.t`, s with ddof 1): tasks are fixed,
  runs are the replicates. With one run, a BCa bootstrap over tasks
  (`scipy.stats.bootstrap`, 9999 resamples, fixed seed) instead. Intervals are clipped to
  the feasible range (rates to [0, 100]%, counts to ≥ 0).
- **Full itemization** = `grade.success` (zero remainder, lines saved, form closed);
  **strict success** = `grade.strict_success` (saved lines match the receipt);
  **itemized amount, capped** = mean over episodes of min(itemized, header) / header, where
  itemized is the sum of the saved lines and header the line's amount: an episode that
  over-itemizes cannot lift the mean past one that under-itemizes (an uncapped mean of
  itemized / header can show 100% while many episodes failed); **over-itemized episodes** =
  share of episodes whose saved lines exceed the header amount; **peak tokens** = the largest single
  model input of an episode; **dependency** = Σ over steps (n_in + 2·n_out)·n_out / 2 (ACON).
  Wall time per benchmark is the sum of episode wall times (serial-equivalent, whatever the
  concurrency of the run).
- **Against the baseline**, on tasks present in both configurations: d_t = (success rate of
  task t over its runs) − (the same for the baseline); Δ = mean_t d_t with a BCa bootstrap
  interval over tasks (paired, 9999 resamples, fixed seed). Cohen's h = 2·asin√p − 2·asin√p_base
  with p the mean success rate over the matched tasks (|h| 0.2 small, 0.5 medium, 0.8 large).
  p-value: two-sided sign-flip permutation test of mean d_t = 0 over tasks
  (`scipy.stats.permutation_test`, exact up to 13 non-zero tasks, else R = 9999 resamples); with
  one run per task this is McNemar's exact test. With resampling the smallest p it can give is
  2/(R+1) (two-sided, counting the observed statistic); a p at that floor is printed as
  "≤ 2/(R+1)", since the exact p may be smaller. Token changes: Σ_t tokens(t) / Σ_t
  tokens_base(t) − 1 (tokens(t) = mean over runs), paired BCa bootstrap over tasks. When no
  task is shared, a Welch t interval and test over run-level success rates instead.
- **pass^k** (tau-bench): for a task with c successes in n scored runs, C(c,k)/C(n,k) is
  the probability that k runs drawn without replacement all succeed; pass^k is its mean over
  tasks with n ≥ k. pass^1 is the success rate; the fall from pass^1 to pass^k shows how
  unreliable a configuration is from run to run.
- **Failure taxonomy**: `failure_category` of each scored episode, classified from the
  trajectory and final ERP state by the runner (`erp_sim.agents.evaluation.failures`, which
  lists the categories and the order they are checked in; `context_overflow` is an episode
  whose request exceeded the model's context window); failed episodes without a category
  are counted as `unclassified`.
- **Prompt caching**: for every model call of a role (agent, summarizer, LLM user),
  `cacheable_prefix_tokens` = the o200k tokens of the longest prefix of its request identical to
  an earlier request of the same role in the same episode, the request being its tool schemas
  (one unit, first: changed tools make nothing cacheable) then its messages in the order sent;
  the first differing message is compared token by token (`erp_sim.agents.prompt_cache`).
  Cacheable share = Σ cacheable prefix / Σ input tokens over a configuration's scored episodes.
  It is an upper bound: o200k counts stand in for the provider's own tokenizer, and a provider
  may cache less (a minimum prefix length such as 1024 tokens, block granularity, eviction after
  minutes idle, a cache per server). A provider's own figure (`prompt_tokens_details.cached_tokens`)
  is kept apart as `provider_cached_tokens` and never mixed with ours.
- **Cost** (with `--price ROLE=input,cached_input,output[,cache_write]`, USD per 1M tokens, no
  default prices): per episode and priced role, without caching input·p_input + output·p_output;
  with caching cacheable·p_cached + (input − cacheable)·p_uncached + output·p_output, p_uncached
  being cache_write when given, else p_input (all o200k counts); summed over priced roles, then
  reduced per run and given with an interval like every per-benchmark total. Unpriced roles are
  named and left out. When a service reported counts, the same formula over its own figures
  (reported input and output, its cached tokens as the cached part) is a column of its own.
- **Token units**: every token figure is o200k_base unless named "reported" / "service": those are
  the model service's own counts (`usage.prompt_tokens`, `completion_tokens`), kept in fields of
  their own (`reported_*`, `*_reported_*`, `*provider_cached_tokens`).
- **Sources**: the study (Lodha et al., "Less context, smarter agents: efficient context
  engineering for long-horizon tool-using LLM agents", arXiv 2606.10209: the hotel itemization
  task in Dynamics 365, configurations C1-C4 and their figures); ACON (Kang et al., "ACON:
  optimizing context compression for long-horizon LLM agents", arXiv 2510.00615:
  history/observation compression, the dependency measure); GenericAgent
  (working-memory anchor, head/tail truncation, budget eviction policies); tau-bench (pass^k).
"""


# ---------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------

_RC = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def _errors(est: st.Estimate, scale: float = 1.0) -> tuple[float, float]:
    """Asymmetric error bar lengths; zero where there is no interval."""
    if not est.has_interval:
        return 0.0, 0.0
    return max(0.0, (est.mean - est.low) * scale), max(0.0, (est.high - est.mean) * scale)


def _save(fig, path: Path) -> None:
    # No "Software" stamp (the matplotlib version) and PNG carries no date: reproducible bytes.
    fig.savefig(path, format="png", metadata={"Software": None})


#: Fixed colours: the presets always get the same ones; any other configuration a colour picked
#: from its name (sha256), so one configuration has one colour in every report.
_PRESET_COLORS = {"C1": "#7f7f7f", "C2": "#1f77b4", "C3": "#ff7f0e", "C4": "#2ca02c"}
_PALETTE = ("#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31",
            "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")
SHORT_LABEL_CHARS = 8


def config_color(name: str) -> str:
    import hashlib

    if name.upper() in _PRESET_COLORS:
        return _PRESET_COLORS[name.upper()]
    return _PALETTE[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(_PALETTE)]


def _colors(names: Sequence[str]) -> list[str]:
    return [config_color(name) for name in names]


def short_labels(names: Sequence[str]) -> dict[str, str]:
    """Names up to 8 characters stay; longer ones (policy specs) become P1, P2, ... in order."""
    labels, number = {}, 0
    for name in names:
        if len(name) <= SHORT_LABEL_CHARS:
            labels[name] = name
        else:
            number += 1
            labels[name] = f"P{number}"
    return labels


def _label_table(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """The legend of the plots: short label, configuration, policy, agent."""
    labels = short_labels(list(_plotted(summaries)))
    if not labels:
        return ""
    rows = [(labels[name], name, f"`{summaries[name].policy}`", summaries[name].agent) for name in labels]
    return "Labels used in the plots (colours are fixed per configuration across reports):\n\n" + md_table(
        ("label", "configuration", "policy", "agent"), rows)


def _agent_note(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """A second title line on every figure made from the scripted agent ("" otherwise)."""
    agents = sorted({s.agent for s in summaries.values()})
    scripted = [a for a in agents if is_scripted(a)]
    if not scripted:
        return ""
    if len(scripted) == len(agents):
        return "\nagent: scripted (not an LLM)"
    return "\nagents: " + ", ".join(f"{a} (not an LLM)" if is_scripted(a) else a for a in agents)


def _bar(errors: tuple[float, float]) -> list[list[float]] | None:
    """An error bar, or None where there is no spread (no zero-width bar drawn as a stray tick)."""
    return [[errors[0]], [errors[1]]] if errors[0] + errors[1] > 0 else None


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def plot_success_vs_tokens(summaries: Mapping[str, st.ConfigSummary], path: Path) -> Path:
    """Full itemization vs input tokens per benchmark: the study's trade-off, one point per config.

    Configurations of an N x W sweep are drawn colour-by-N and marker-by-W without text
    labels (a dozen names on one cloud of points is unreadable); the others are named.
    """
    import matplotlib.style
    from matplotlib import colormaps
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter

    points = {name: s for name, s in summaries.items() if math.isfinite(s.estimates["success"].mean)}
    labels = short_labels(list(points))
    in_sweep = {config: (grid, n, w) for grid in st.sweep_grids(points) for (n, w), config in grid.cells.items()}
    sweep_n = sorted({n for _, n, _ in in_sweep.values()})
    sweep_w = sorted({w for _, _, w in in_sweep.values()})
    named = [name for name in points if name not in in_sweep]
    n_colors = {n: colormaps["viridis"](0.05 + 0.8 * i / max(1, len(sweep_n) - 1)) for i, n in enumerate(sweep_n)}

    with matplotlib.style.context("default"), matplotlib.rc_context(_RC):
        fig = Figure(figsize=(7.5, 4.8), layout="constrained")
        ax = fig.add_subplot()
        handles = []
        for name, summary in points.items():
            tokens, success = summary.estimates["input_tokens"], summary.estimates["success"]
            x, y = (tokens.mean if math.isfinite(tokens.mean) else 0.0), 100 * success.mean
            style: dict[str, Any] = {"markersize": 6}
            if name in in_sweep:
                # hollow markers, larger for earlier W: sweep points that coincide stay visible as nested shapes
                _, n, w = in_sweep[name]
                index = sweep_w.index(w)
                color, marker = n_colors[n], _MARKERS[index % len(_MARKERS)]
                style = {"markersize": 6 + 4 * (len(sweep_w) - 1 - index), "markerfacecolor": "none", "markeredgewidth": 1.3}
            else:
                color, marker = config_color(name), "o"
            ax.errorbar(x, y, xerr=_bar(_errors(tokens)), yerr=_bar(_errors(success, 100)), fmt=marker, color=color,
                        ecolor=color, elinewidth=1.1, capsize=3, alpha=0.9, **style)
            if name not in in_sweep:
                handles.append(Line2D([], [], color=color, marker="o", linestyle="", label=labels[name]))
        if in_sweep:
            families = sorted({grid.family for grid, _, _ in in_sweep.values()})
            handles.append(Line2D([], [], linestyle="", label="sweep: " + "; ".join(families)))
            handles += [Line2D([], [], color=n_colors[n], marker="s", linestyle="", label=f"N={n}") for n in sweep_n]
            handles += [
                Line2D([], [], color="0.3", marker=_MARKERS[i % len(_MARKERS)], markerfacecolor="none", linestyle="",
                       label=f"W={w}")
                for i, w in enumerate(sweep_w)
            ]
        ax.set_xlabel("input tokens per benchmark (mean over runs)")
        ax.set_ylabel("full itemization (%)")
        # one text per spot: configurations at the same point share it ("C2 = P2"); neighbours alternate
        # above and below so that their labels do not print over each other
        spots: dict[tuple[float, float], list[str]] = {}
        for name in named:
            tokens, success = points[name].estimates["input_tokens"], points[name].estimates["success"]
            spot = (round(tokens.mean if math.isfinite(tokens.mean) else 0.0, 0), round(100 * success.mean, 6))
            spots.setdefault(spot, []).append(name)
        for number, (spot, names) in enumerate(sorted(spots.items())):
            ax.annotate(" = ".join(labels[n] for n in names), spot, xytext=(6, 5 if number % 2 == 0 else -12),
                        textcoords="offset points", fontsize=8, color=config_color(names[0]))
        ax.set_title("Full itemization vs input tokens (error bars: 95% CI)" + _agent_note(points))
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.set_ylim(-3, 103)
        ax.set_xlim(left=0)
        ax.margins(x=0.1)
        if handles:
            ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=7, frameon=False)
        _save(fig, path)
    return path


def plot_success_vs_cost(costs: Mapping[str, cost.ConfigCost], path: Path, note: str = "") -> Path:
    """Full itemization vs USD per benchmark with prompt caching, one point per configuration; a hollow
    marker at the cost without caching, joined by a line, shows what caching saves."""
    import matplotlib.style
    from matplotlib.figure import Figure

    points = {n: c for n, c in costs.items() if c.cost_cached is not None and math.isfinite(c.success.mean)}
    labels = short_labels(list(points))
    with matplotlib.style.context("default"), matplotlib.rc_context(_RC):
        fig = Figure(figsize=(7.5, 4.8), layout="constrained")
        ax = fig.add_subplot()
        for name, c in points.items():
            color, y = config_color(name), 100 * c.success.mean
            x, x_plain = c.cost_cached.mean, c.cost_uncached.mean if c.cost_uncached is not None else math.nan
            if math.isfinite(x_plain):
                ax.plot([x_plain, x], [y, y], color=color, linewidth=0.8, alpha=0.6)
                ax.plot([x_plain], [y], marker="o", markerfacecolor="none", color=color, markersize=6)
            ax.errorbar(x, y, xerr=_bar(_errors(c.cost_cached)), yerr=_bar(_errors(c.success, 100)), fmt="o",
                        color=color, ecolor=color, elinewidth=1.1, capsize=3, markersize=6)
            ax.annotate(labels[name], (x, y), xytext=(6, 5), textcoords="offset points", fontsize=8, color=color)
        ax.set_xlabel("USD per benchmark with prompt caching (filled; hollow: without caching)")
        ax.set_ylabel("full itemization (%)")
        ax.set_title("Full itemization vs cost with prompt caching (error bars: 95% CI)" + note)
        ax.set_ylim(-3, 103)
        ax.set_xlim(left=0)
        ax.margins(x=0.1)
        _save(fig, path)
    return path


def plot_peak_tokens(summaries: Mapping[str, st.ConfigSummary], path: Path) -> Path:
    """Mean peak tokens per episode by configuration, with 95% CI error bars."""
    import matplotlib.style
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    configs = list(summaries.values())
    with matplotlib.style.context("default"), matplotlib.rc_context(_RC):
        fig = Figure(figsize=(7, max(2.4, 0.8 + 0.38 * len(configs))), layout="constrained")
        ax = fig.add_subplot()
        ys = list(range(len(configs)))[::-1]  # first configuration on top
        means = [s.estimates["peak_tokens"].mean for s in configs]
        means = [m if math.isfinite(m) else 0.0 for m in means]
        errors = [_errors(s.estimates["peak_tokens"]) for s in configs]
        ax.barh(ys, means, color=_colors([s.config for s in configs]), height=0.6)
        spread = [(y, m, e) for y, m, e in zip(ys, means, errors) if e[0] + e[1] > 0]
        if spread:  # no bar-end tick where runs agree exactly
            ax.errorbar(
                [m for _, m, _ in spread],
                [y for y, _, _ in spread],
                xerr=[[e[0] for *_, e in spread], [e[1] for *_, e in spread]],
                fmt="none",
                ecolor="0.25",
                elinewidth=1,
                capsize=3,
            )
        for y, mean, error in zip(ys, means, errors):
            ax.annotate(f"{mean:,.0f}", (mean + error[1], y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
        labels = short_labels([s.config for s in configs])
        ax.set_yticks(ys, [labels[s.config] for s in configs])
        ax.set_xlabel("peak tokens per episode (largest single model input), mean over runs")
        ax.set_title("Peak context size by configuration (95% CI)" + _agent_note(summaries))
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.grid(axis="y", visible=False)
        ax.margins(x=0.15)
        ax.set_ylim(-0.6, len(configs) - 0.4)
        _save(fig, path)
    return path


def plot_sweep(grid: st.SweepGrid, summaries: Mapping[str, st.ConfigSummary], path: Path) -> Path:
    """N x W heatmaps of full itemization and input tokens per benchmark for one sweep."""
    import matplotlib.style
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    panels = (
        ("success", "full itemization (%)", "viridis", 100.0, (0.0, 100.0), lambda v: f"{v:.1f}"),
        ("input_tokens", "input tokens per benchmark", "magma_r", 1.0, None, lambda v: EngFormatter(places=1, sep="")(v)),
    )
    width = 1.3 + 1.1 * len(grid.w_values)
    with matplotlib.style.context("default"), matplotlib.rc_context({**_RC, "axes.grid": False}):
        fig = Figure(figsize=(2 * width + 1.2, 1.6 + 0.55 * len(grid.n_values)), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, (metric, label, cmap, scale, limits, text) in zip(axes, panels):
            values = grid.matrix(summaries, metric) * scale
            masked = np.ma.masked_invalid(values)
            vmin, vmax = limits if limits else (np.nanmin(values), np.nanmax(values))
            image = ax.imshow(masked, cmap=colormaps[cmap].with_extremes(bad="0.9"), vmin=vmin, vmax=vmax, aspect="auto")
            for i in range(values.shape[0]):
                for j in range(values.shape[1]):
                    if not math.isfinite(values[i, j]):
                        ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="0.4")
                        continue
                    r, g, b, _ = image.cmap(image.norm(values[i, j]))
                    dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                    ax.text(j, i, text(values[i, j]), ha="center", va="center", fontsize=8, color="white" if dark else "black")
            ax.set_xticks(range(len(grid.w_values)), [str(w) for w in grid.w_values])
            ax.set_yticks(range(len(grid.n_values)), [str(n) for n in grid.n_values])
            ax.set_xlabel("W (summary window)")
            ax.set_ylabel("N (pairs kept)")
            ax.set_title(label)
            colorbar = fig.colorbar(image, ax=ax, shrink=0.9)
            if metric == "input_tokens":
                colorbar.formatter = EngFormatter(sep="")
                colorbar.update_ticks()
        fig.suptitle(f"Sensitivity to N and W: {grid.family}" + _agent_note({c: summaries[c] for c in grid.cells.values()}),
                     fontsize=10)
        _save(fig, path)
    return path


# ---------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------


#: Fewer replicates than these make an interval too unstable to lean on.
MIN_BOOTSTRAP_TASKS = 10
MIN_T_RUNS = 3


def is_scripted(agent: str) -> bool:
    return agent.split(":", 1)[0] == "scripted"


def _caveats(summaries: Mapping[str, st.ConfigSummary]) -> list[str]:
    """Warnings a reader needs before the numbers: small n, and a scripted (non-LLM) agent."""
    notes = []
    small = [f"{s.config} ({s.interval_method})" for s in summaries.values() if s.n_episodes and (
        (s.n_runs == 1 and s.n_tasks < MIN_BOOTSTRAP_TASKS) or 1 < s.n_runs < MIN_T_RUNS)]
    if small:
        notes.append(
            f"**Small n: treat the intervals as rough.** {', '.join(small)}: a bootstrap over fewer than "
            f"{MIN_BOOTSTRAP_TASKS} tasks understates the spread, and a t interval over fewer than {MIN_T_RUNS} runs is "
            "very wide; run more tasks (`--tasks`) or runs (`--runs`) before drawing conclusions.")
    if any(is_scripted(s.agent) for s in summaries.values()):
        notes.append(
            "**Agent: scripted (not an LLM)** for " + ", ".join(s.config for s in summaries.values() if is_scripted(s.agent))
            + ": a deterministic rule-based agent (with `recall=` a synthetic misreading model); its numbers test "
            "the harness and the policies, they are not results of a language model.")
    return notes


def _identical_w_note(grid: st.SweepGrid, summaries: Mapping[str, st.ConfigSummary]) -> str:
    """Say which W columns of a sweep gave identical results at every N, and why W=1 and W=-1 do."""
    keys = ("success", "input_tokens", "peak_tokens", "steps")

    def column(w: int) -> tuple | None:
        cells = [grid.cells.get((n, w)) for n in grid.n_values]
        if None in cells:
            return None
        return tuple(round(summaries[c].estimates[k].mean, 9) for c in cells for k in keys)

    same = []
    for i, a in enumerate(grid.w_values):
        for b in grid.w_values[i + 1:]:
            if column(a) is not None and column(a) == column(b):
                same.append((a, b))
    if not same:
        return ""
    pairs = ", ".join(f"W={a} and W={b}" for a, b in same)
    why = ""
    if any({a, b} == {1, -1} for a, b in same):
        why = (" Why W=1 and W=-1 agree: both fold every evicted unit into the summary at once (W=1 one unit per "
               "summarizer call as soon as it is evicted, W=-1 all evicted units in one call), so neither leaves "
               "unfolded units visible between the summary and the last-N window; and the structured summarizer "
               "is lossless and deterministic, so the summary text does not depend on how the units were batched. "
               "The shown contexts are then identical step by step; only the number of summarizer calls differs. "
               "With an LLM summarizer the batching would change the summary and W=1 and W=-1 would part. In the "
               "plots the two are drawn as nested markers so both stay visible.")
    return f"{pairs} gave identical full itemization, input tokens, peak tokens and steps at every N.{why}\n\n"


def _plotted(summaries: Mapping[str, st.ConfigSummary]) -> dict[str, st.ConfigSummary]:
    """Configurations with at least one scored episode: the only ones a plot can show."""
    return {name: s for name, s in summaries.items() if s.n_episodes}


def _sweep_png_names(count: int) -> list[str]:
    return [f"{SWEEP_PNG_STEM}.png"] if count == 1 else [f"{SWEEP_PNG_STEM}_{i}.png" for i in range(1, count + 1)]


def render_report(
    rows: Sequence[Mapping[str, Any]],
    baseline: str | None = None,
    *,
    malformed_lines: int = 0,
    prices: Mapping[str, cost.Price] | None = None,
) -> str:
    """report.md's text for these rows (pure: no files read or written); one row per episode."""
    folded = len(rows)
    rows = st.canonical_order(latest_attempts(rows))
    folded -= len(rows)  # rows of earlier attempts, left by a run stopped during --resume
    scored = st.scored_rows(rows)
    summaries = st.summarize(rows)
    configs = list(summaries)
    infra = st.infra_error_rows(rows)
    scored_configs = [c for c in configs if summaries[c].n_episodes]
    baseline = baseline or (st.default_baseline(scored_configs) if scored_configs else None)
    comparisons = st.compare_to_baseline(scored, baseline) if baseline and len(scored_configs) > 1 else []
    grids = st.sweep_grids(_plotted(summaries))

    notes = [
        f"{_plural(len(scored), 'episode')} scored in {_plural(len(configs), 'configuration')}; "
        f"{_plural(len(infra), 'infrastructure error')} excluded from the scores (listed below)."
    ]
    if folded:
        notes.append(f"{_plural(folded, 'row')} of `{RESULTS_FILE}` held earlier attempts of an episode (a run stopped "
                     "during `--resume`); each episode counts once, as its last attempt, earlier ones listed below.")
    if malformed_lines:
        notes.append(f"{_plural(malformed_lines, 'unreadable line')} of `{RESULTS_FILE}` skipped.")
    notes.append("Every episode, with what the model was shown at each call, is in [`view.html`](view.html) "
                 "beside this file (rebuilt by `erp-sim view`).")
    notes.append(
        "Brackets are 95% confidence intervals (a value without brackets has no spread at the "
        "shown precision); see Methods at the end for every formula."
    )
    notes += _caveats(summaries)

    sections = [
        "# erp-sim evaluation report",
        " ".join(notes),
        "## Configurations",
        _configurations(summaries),
        "## Outcomes (mean [95% CI])",
        _outcomes(summaries),
        "## Cost (mean [95% CI])",
        _cost(summaries),
        f"![full itemization vs input tokens]({SUCCESS_VS_TOKENS_PNG})",
        f"![peak tokens per configuration]({PEAK_TOKENS_PNG})",
        _label_table(summaries),
        "## Prompt caching and cost",
        _prompt_cost(cost.config_costs(rows, prices or {}), prices or {}),
        "## Token units",
        _token_units(cost.config_costs(rows, {})),
    ]
    if comparisons:
        sections += [
            f"## Against the baseline {baseline}",
            "Differences are configuration minus baseline, paired over the tasks both ran "
            "(Δ full itemization in percentage points, token changes in % of the baseline).",
            _comparisons(comparisons),
        ]
    sections += [
        "## pass^k",
        "Chance that k independent runs of a task all succeed, averaged over tasks (tau-bench)."
        + _deterministic_pass_k_note(summaries),
        _pass_k(scored, configs),
        "## Failure taxonomy",
        "Scored episodes by failure category.",
        _failures(scored, summaries),
        "## Termination reasons",
        _terminations(scored, summaries),
    ]
    if grids:
        sections += ["## Sensitivity to N and W", _sweeps(grids, summaries, _sweep_png_names(len(grids)))]
    sections += [
        "## Reference figures: the study's GPT-5 numbers",
        _reference(summaries),
        "## Infrastructure errors",
        _infra(rows),
        "## Methods",
        METHODS.rstrip(),
    ]
    return "\n\n".join(sections) + "\n"


def write_plots(rows: Sequence[Mapping[str, Any]], out_dir: str | Path,
                prices: Mapping[str, cost.Price] | None = None) -> list[Path]:
    """The PNGs of the report, written into ``out_dir``; stale sweep heatmaps are removed."""
    out_dir = Path(out_dir)
    summaries = _plotted(st.summarize(rows))
    grids = st.sweep_grids(summaries)
    for stale in [*out_dir.glob(f"{SWEEP_PNG_STEM}*.png"), out_dir / SUCCESS_VS_COST_PNG]:
        stale.unlink(missing_ok=True)
    paths = [
        plot_success_vs_tokens(summaries, out_dir / SUCCESS_VS_TOKENS_PNG),
        plot_peak_tokens(summaries, out_dir / PEAK_TOKENS_PNG),
    ]
    for grid, name in zip(grids, _sweep_png_names(len(grids))):
        paths.append(plot_sweep(grid, summaries, out_dir / name))
    if prices:
        paths.append(plot_success_vs_cost(cost.config_costs(rows, prices), out_dir / SUCCESS_VS_COST_PNG,
                                          _agent_note(summaries)))
    return paths


def write_report(results_dir: str | Path, baseline: str | None = None,
                 prices: Mapping[str, cost.Price] | None = None) -> Path:
    """Read ``results_dir/results.jsonl``; write ``report.md``, ``report.json``, the PNG plots and ``view.html``
    beside it. ``prices`` (``costs.parse_prices``): USD per 1M tokens per role, for the cost figures."""
    results_dir = Path(results_dir)
    rows, malformed = load_results(results_dir)
    path = results_dir / REPORT_FILE
    path.write_text(render_report(rows, baseline, malformed_lines=malformed, prices=prices), encoding="utf-8")
    rows = latest_attempts(rows)  # a run killed during --resume leaves an episode's attempts appended
    report_json = {"cost": cost.costs_json(cost.config_costs(rows, prices or {}), prices or {})}
    (results_dir / REPORT_JSON).write_text(json.dumps(report_json, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    write_plots(rows, results_dir, prices)
    from erp_sim.agents.evaluation.view import write_view  # the browsable page beside report.md

    write_view(results_dir, rows=rows)
    return path
