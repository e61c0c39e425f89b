"""Statistics of an offline evaluation: pure functions over the rows of ``results.jsonl``.

A row is one episode (one configuration x task x run), as the eval runner appends it. Rows
whose ``infra_error`` is set are the model service's fault, not the agent's: every score
here is computed on *scored* rows only, and the infrastructure errors are counted apart.

Choices, and why
----------------
* The unit of replication is a **run**, one pass over the task set. Every per-configuration
  figure is first reduced to one value per run (a rate, a mean, or a per-benchmark total),
  then reported as the mean over runs with a **Student t interval**
  (``scipy.stats.t``, df = runs - 1). Tasks are fixed, so this measures what changes between
  repetitions of the same benchmark, the way the study reports "5 independent runs"; a
  run-level mean over dozens of tasks is close to normal even when episodes are skewed.
  With a single run there is no run-to-run spread, so the interval falls back to a
  **bootstrap over tasks**, and the method is recorded with each estimate. A deterministic
  agent (``runs.is_deterministic``) always gets the bootstrap over tasks: its runs are copies,
  and a t interval over copies has zero width.
* Differences against a baseline are **paired over tasks** (same task set and task id in
  both configurations): per-task differences are bounded, discrete and skewed, and there
  may be only a handful of runs, so their interval is a **BCa bootstrap over tasks**
  (``scipy.stats.bootstrap``, fixed seed); the test is an exact-when-small **sign-flip
  permutation test** over tasks (``scipy.stats.permutation_test``), which with one run per
  task is exactly McNemar's exact test. When no task matches (different task sets), the
  difference falls back to a Welch t interval and test over run-level rates.
* ``pass^k`` follows tau-bench: for a task with ``c`` successes out of ``n`` runs, the
  probability that ``k`` runs drawn without replacement all succeed is C(c,k)/C(n,k);
  pass^k is its mean over tasks with at least ``k`` scored runs.

Everything is deterministic: rows are put in a canonical order first, and every bootstrap
or permutation uses its own generator seeded with :data:`SEED`.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from erp_sim import task_sets, workflows
from erp_sim.agents.evaluation.episode_row import (
    EpisodeRow,
    RowGrade,
    RowMetrics,
    TaskKey,
    by_config,
    canonical_order,
    is_infra_error,
    natural_key,
    scored_rows,
    succeeded,
    task_key,
)
from erp_sim.agents.evaluation.intervals import (
    CONFIDENCE,
    N_RESAMPLES,
    SEED,
    Estimate,
    bootstrap_interval,
    bootstrap_mean,
    scipy_stats,
    t_interval,
)
from erp_sim.agents.evaluation.runs import DETERMINISTIC_REASON, is_deterministic
from erp_sim.outcomes import UNCLASSIFIED, failure_report_order

# ---------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------


def _grade(read: Callable[[RowGrade], float | None]) -> Callable[[EpisodeRow], float]:
    """A grade figure; NaN for a row without a grade (an unscored episode) or without the figure (another
    workflow's grade), so means skip it."""

    def get(row: EpisodeRow) -> float:
        value = None if row.grade is None else read(row.grade)
        return math.nan if value is None else float(value)

    return get


def _count(read: Callable[[RowMetrics], float | None]) -> Callable[[EpisodeRow], float]:
    """A metrics figure; NaN where the row has none (a provider count never reported)."""

    def get(row: EpisodeRow) -> float:
        value = read(row.metrics)
        return math.nan if value is None else float(value)

    return get


def _wall_time(row: EpisodeRow) -> float:
    value = row.timing.wall_time_s
    return math.nan if value is None else value


@dataclass(frozen=True)
class Metric:
    """One reported quantity.

    ``per_benchmark`` metrics are totals over the task set (the study's "tokens per
    benchmark", "hours per benchmark"); the others are means over episodes.
    """

    key: str
    label: str
    per_benchmark: bool
    value: Callable[[EpisodeRow], float] = field(compare=False, repr=False)
    upper: float = math.inf  # intervals are clipped to [0, upper]: a rate cannot pass 100%


def _capped_itemized(row: EpisodeRow) -> float:
    """min(itemized, header) / header: over-itemization cannot make up for a shortfall elsewhere."""
    return min(_grade(lambda grade: grade.itemized_fraction)(row), 1.0)


def _over_itemized(row: EpisodeRow) -> float:
    """1 when saved lines exceed the header amount (itemized fraction above 1), else 0."""
    fraction = _grade(lambda grade: grade.itemized_fraction)(row)
    return math.nan if math.isnan(fraction) else float(fraction > 1.0 + 1e-9)


def _under_itemized(row: EpisodeRow) -> float:
    """1 when saved lines fall short of the header amount (itemized fraction below 1), else 0: a mean of the capped
    amount near 1 (0.9995) rounds to 100.0% while episodes fall short."""
    fraction = _grade(lambda grade: grade.itemized_fraction)(row)
    return math.nan if math.isnan(fraction) else float(fraction < 1.0 - 1e-9)


METRICS: tuple[Metric, ...] = (
    Metric("success", "full itemization rate", False, _grade(lambda g: g.success), upper=1.0),
    Metric("strict_success", "strict success rate", False, _grade(lambda g: g.strict_success), upper=1.0),
    Metric("itemized_amount", "mean of min(itemized, header) / header", False, _capped_itemized, upper=1.0),
    Metric("over_itemization", "over-itemization rate", False, _over_itemized, upper=1.0),
    Metric("under_itemization", "under-itemization rate", False, _under_itemized, upper=1.0),
    Metric("input_tokens", "input tokens per benchmark", True, _count(lambda m: m.input_tokens)),
    Metric("output_tokens", "output tokens per benchmark", True, _count(lambda m: m.output_tokens)),
    Metric("summarizer_tokens", "summarizer tokens per benchmark", True, _count(lambda m: m.summarizer_tokens)),
    Metric(
        "cacheable_tokens", "cacheable input tokens per benchmark", True, _count(lambda m: m.cacheable_prefix_tokens)
    ),
    Metric(
        "user_tokens",
        "LLM user tokens (o200k) per benchmark",
        True,
        _count(lambda m: m.user_input_tokens + m.user_output_tokens),
    ),
    Metric("user_calls", "LLM user calls per episode", False, _count(lambda m: m.user_model_calls)),
    Metric("peak_tokens", "peak tokens per episode", False, _count(lambda m: m.peak_tokens)),
    Metric("input_tokens_per_episode", "input tokens per episode", False, _count(lambda m: m.input_tokens)),
    Metric("dependency", "dependency per episode", False, _count(lambda m: m.dependency)),
    Metric("steps", "steps per episode", False, _count(lambda m: m.steps)),
    Metric("wall_time_s", "wall time per benchmark (s)", True, _wall_time),
)
METRIC_BY_KEY = {metric.key: metric for metric in METRICS}


def _nanmean(values: Sequence[float]) -> float:
    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    return float(finite.mean()) if finite.size else math.nan


def run_values(rows: Sequence[EpisodeRow], metric: Metric, n_tasks: int) -> dict[int, float]:
    """One value per run: the mean over the run's scored episodes, times ``n_tasks`` for totals.

    Scaling the mean (instead of summing) keeps per-benchmark totals comparable when an
    infrastructure error removed an episode from a run; with complete runs it is the sum.
    """
    per_run: dict[int, list[float]] = defaultdict(list)
    for row in rows:
        per_run[row.run].append(metric.value(row))
    scale = n_tasks if metric.per_benchmark else 1
    return {run: _nanmean(values) * scale for run, values in sorted(per_run.items())}


def task_values(rows: Sequence[EpisodeRow], metric: Metric) -> dict[TaskKey, float]:
    """One value per task: the mean over that task's scored runs."""
    per_task: dict[TaskKey, list[float]] = defaultdict(list)
    for row in rows:
        per_task[task_key(row)].append(metric.value(row))
    return {
        task: _nanmean(values)
        for task, values in sorted(per_task.items(), key=lambda item: tuple(map(natural_key, item[0])))
    }


# ---------------------------------------------------------------------------------------
# Per-configuration summary
# ---------------------------------------------------------------------------------------


def _joined(values: Iterable[str]) -> str:
    return " / ".join(sorted(set(values), key=natural_key))


@dataclass(frozen=True)
class ConfigSummary:
    """Everything reported about one configuration."""

    config: str
    policy: str
    agent: str
    user: str
    task_set: str
    n_tasks: int  # tasks attempted, infrastructure errors included: the benchmark's size
    n_runs: int
    n_episodes: int  # scored episodes
    n_infra_errors: int
    incomplete_runs: int  # runs with fewer scored episodes than tasks
    estimates: dict[str, Estimate]
    deterministic: bool = False  # a deterministic agent: runs are copies, intervals are over tasks
    tasks: str = ""  # the tasks as --tasks named them (``EpisodeRow.task_selection``: hotel_50:test), for headings

    @property
    def interval_method(self) -> str:
        if self.n_episodes == 0:
            return "–"
        if self.deterministic:
            return f"bootstrap over {self.n_tasks} tasks ({DETERMINISTIC_REASON}: its runs are identical)"
        if self.n_runs >= 2:
            return f"t over {self.n_runs} runs"
        return f"bootstrap over {self.n_tasks} tasks"


def deterministic_rows(rows: Sequence[EpisodeRow]) -> bool:
    """Whether every row is a deterministic agent's: its runs are copies, so only tasks vary."""
    return bool(rows) and all(is_deterministic(row.agent) for row in rows)


def estimate(rows: Sequence[EpisodeRow], metric: Metric) -> Estimate:
    """Mean and 95% interval of one metric over one configuration's rows (the method above)."""
    scored = scored_rows(rows)
    n_tasks = len({task_key(row) for row in rows})
    if len({row.run for row in scored}) >= 2 and not deterministic_rows(rows):
        result = t_interval(run_values(scored, metric, n_tasks).values())
    else:  # one run: only task-to-task spread is left to show
        scale = n_tasks if metric.per_benchmark else 1
        result = bootstrap_mean(task_values(scored, metric).values(), scale=scale)
    return result.clipped(0.0, metric.upper)


def summarize_config(rows: Sequence[EpisodeRow]) -> ConfigSummary:
    """Mean and 95% interval of every metric in :data:`METRICS` for one configuration's rows."""
    rows = canonical_order(rows)
    scored = scored_rows(rows)
    n_tasks = len({task_key(row) for row in rows})
    runs = sorted({row.run for row in scored})
    deterministic = deterministic_rows(rows)
    estimates = {metric.key: estimate(rows, metric) for metric in METRICS}
    per_run = Counter(row.run for row in scored)
    return ConfigSummary(
        config=rows[0].config if rows else "",
        policy=_joined(row.policy for row in rows),
        agent=_joined(row.agent for row in rows),
        user=_joined(row.user for row in rows),
        task_set=_joined(row.task_set for row in rows),
        n_tasks=n_tasks,
        n_runs=len(runs),
        n_episodes=len(scored),
        n_infra_errors=sum(is_infra_error(row) for row in rows),
        incomplete_runs=sum(count < n_tasks for count in per_run.values()),
        estimates=estimates,
        deterministic=deterministic,
        tasks=_joined(row.task_selection for row in rows),
    )


def summarize(rows: Iterable[EpisodeRow]) -> dict[str, ConfigSummary]:
    """:func:`summarize_config` for every configuration, in natural order."""
    return {name: summarize_config(group) for name, group in by_config(rows).items()}


# ---------------------------------------------------------------------------------------
# Differences against a baseline
# ---------------------------------------------------------------------------------------


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h = 2 asin(sqrt(p1)) - 2 asin(sqrt(p2)): a difference of proportions on a
    variance-stabilised scale (|h| 0.2 small, 0.5 medium, 0.8 large)."""
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


def effect_size_label(h: float) -> str:
    """Cohen's conventional reading of |h|."""
    if not math.isfinite(h):
        return ""
    size = abs(h)
    return "negligible" if size < 0.2 else "small" if size < 0.5 else "medium" if size < 0.8 else "large"


def default_baseline(configs: Sequence[str]) -> str:
    """The study's baseline, C2 (full context), when present; else the first configuration."""
    return "C2" if "C2" in configs else sorted(configs, key=natural_key)[0]


@dataclass(frozen=True)
class Comparison:
    """One configuration against the baseline.

    ``success_diff`` is in rate units (0.1 = 10 percentage points); the token changes are
    relative (-0.6 = 60% fewer tokens than the baseline).
    """

    config: str
    baseline: str
    paired: bool
    n_tasks: int  # matched tasks when paired
    success_diff: Estimate
    cohens_h: float
    better: int  # tasks where the config's success rate is higher (paired only)
    worse: int
    tied: int
    p_value: float
    test: str
    input_tokens_change: Estimate
    peak_tokens_change: Estimate
    p_floor: float | None = None  # the smallest p resampling can give (2/(R+1)); None when exact or analytic


def _sign_flip_pvalue(differences: np.ndarray) -> float:
    """Two-sided paired permutation test of mean difference 0 by sign flips.

    Zero differences are unchanged by a flip, so they are dropped: the test is then exact
    whenever 2^nonzero <= N_RESAMPLES, and with 0/1 outcomes it equals McNemar's exact test.
    """
    nonzero = differences[differences != 0]
    if nonzero.size <= 1:  # both sign patterns of a single difference are as extreme
        return 1.0
    result = scipy_stats().permutation_test(
        (nonzero,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=N_RESAMPLES,
        alternative="two-sided",
        rng=np.random.default_rng(SEED),
    )
    return float(min(1.0, result.pvalue))


def _relative_change(baseline: np.ndarray, other: np.ndarray) -> Estimate:
    """Paired bootstrap over tasks of sum(other) / sum(baseline) - 1."""

    def ratio(b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sum(c, axis=axis) / np.sum(b, axis=axis) - 1

    keep = np.isfinite(baseline) & np.isfinite(other)
    baseline, other = baseline[keep], other[keep]
    n = int(baseline.size)
    if n == 0 or baseline.sum() == 0:
        return Estimate(math.nan, math.nan, math.nan, n, "bootstrap")
    point = float(ratio(baseline, other))
    if n < 2:
        return Estimate(point, math.nan, math.nan, n, "bootstrap")
    low, high, method = bootstrap_interval((baseline, other), ratio, paired=True)
    return Estimate(point, low, high, n, method)


def _ratio_of_means(baseline: Sequence[float], other: Sequence[float]) -> Estimate:
    b, c = _nanmean(baseline), _nanmean(other)
    value = c / b - 1 if b else math.nan
    return Estimate(value, math.nan, math.nan, 0, "ratio of means")


def compare(rows: Sequence[EpisodeRow], baseline_rows: Sequence[EpisodeRow]) -> Comparison:
    """One configuration's scored rows against the baseline's (see the module docstring)."""
    success, tokens, peak = METRIC_BY_KEY["success"], METRIC_BY_KEY["input_tokens"], METRIC_BY_KEY["peak_tokens"]
    config, baseline = rows[0].config, baseline_rows[0].config
    p_other, p_base = task_values(rows, success), task_values(baseline_rows, success)
    matched = [task for task in p_base if task in p_other]
    if matched:
        b, c = np.array([p_base[t] for t in matched]), np.array([p_other[t] for t in matched])
        d = c - b
        if np.all(d == d[0]):
            diff = Estimate(float(d.mean()), float(d[0]), float(d[0]), len(d), "bootstrap")
        else:
            low, high, method = bootstrap_interval((d,), lambda x, axis: np.mean(x, axis=axis), paired=False)
            diff = Estimate(float(d.mean()), low, high, len(d), method)
        tok_b, tok_c = task_values(baseline_rows, tokens), task_values(rows, tokens)
        peak_b, peak_c = task_values(baseline_rows, peak), task_values(rows, peak)
        return Comparison(
            config=config,
            baseline=baseline,
            paired=True,
            n_tasks=len(matched),
            success_diff=diff,
            cohens_h=cohens_h(float(c.mean()), float(b.mean())),
            better=int((d > 0).sum()),
            worse=int((d < 0).sum()),
            tied=int((d == 0).sum()),
            p_value=_sign_flip_pvalue(d),
            p_floor=2 / (N_RESAMPLES + 1) if 2 ** int(np.count_nonzero(d)) > N_RESAMPLES else None,
            test="sign-flip permutation over tasks",
            input_tokens_change=_relative_change(
                np.array([tok_b[t] for t in matched]), np.array([tok_c[t] for t in matched])
            ),
            peak_tokens_change=_relative_change(
                np.array([peak_b[t] for t in matched]), np.array([peak_c[t] for t in matched])
            ),
        )
    # No shared task: compare the run-level rates as independent samples (Welch).
    n_tasks_c = len({task_key(r) for r in rows})
    n_tasks_b = len({task_key(r) for r in baseline_rows})
    runs_c = list(run_values(rows, success, n_tasks_c).values())
    runs_b = list(run_values(baseline_rows, success, n_tasks_b).values())
    p_c, p_b = _nanmean(runs_c), _nanmean(runs_b)
    low = high = p_value = math.nan
    if len(runs_c) >= 2 and len(runs_b) >= 2 and (np.std(runs_c) > 0 or np.std(runs_b) > 0):
        with warnings.catch_warnings():  # a constant sample (all runs equal) is fine for Welch
            warnings.simplefilter("ignore", RuntimeWarning)
            welch = scipy_stats().ttest_ind(runs_c, runs_b, equal_var=False)
            interval = welch.confidence_interval(CONFIDENCE)
        low, high, p_value = float(interval.low), float(interval.high), float(welch.pvalue)
    return Comparison(
        config=config,
        baseline=baseline,
        paired=False,
        n_tasks=0,
        success_diff=Estimate(p_c - p_b, low, high, min(len(runs_c), len(runs_b)), "Welch t"),
        cohens_h=cohens_h(p_c, p_b),
        better=0,
        worse=0,
        tied=0,
        p_value=p_value,
        test="Welch t over runs",
        input_tokens_change=_ratio_of_means(
            list(run_values(baseline_rows, tokens, n_tasks_b).values()),
            list(run_values(rows, tokens, n_tasks_c).values()),
        ),
        peak_tokens_change=_ratio_of_means(
            list(task_values(baseline_rows, peak).values()), list(task_values(rows, peak).values())
        ),
    )


def compare_to_baseline(rows: Iterable[EpisodeRow], baseline: str | None = None) -> list[Comparison]:
    """Every other configuration against ``baseline`` (default: :func:`default_baseline`)."""
    groups = by_config(scored_rows(rows))
    if not groups:
        return []
    baseline = baseline or default_baseline(list(groups))
    if baseline not in groups:
        raise ValueError(f"baseline {baseline!r} is not among the configurations {list(groups)}")
    return [compare(group, groups[baseline]) for name, group in groups.items() if name != baseline]


# ---------------------------------------------------------------------------------------
# pass^k
# ---------------------------------------------------------------------------------------


def pass_hat_k(rows: Iterable[EpisodeRow], k: int) -> float:
    """tau-bench's pass^k: mean over tasks of C(c, k) / C(n, k).

    ``n`` is a task's number of scored runs and ``c`` its successes, so each term is the
    chance that ``k`` of its runs drawn without replacement all succeed. Tasks with fewer
    than ``k`` scored runs are left out; NaN if none is left.
    """
    outcomes: dict[TaskKey, list[bool]] = defaultdict(list)
    for row in scored_rows(rows):
        outcomes[task_key(row)].append(succeeded(row))
    terms = [math.comb(sum(o), k) / math.comb(len(o), k) for o in outcomes.values() if len(o) >= k]
    return float(np.mean(terms)) if terms else math.nan


def pass_hat_k_curve(rows: Iterable[EpisodeRow]) -> dict[int, float]:
    """pass^k for k = 1 .. the largest number of scored runs of any task."""
    scored = scored_rows(rows)
    runs_per_task = Counter(task_key(row) for row in scored)
    k_max = max(runs_per_task.values(), default=0)
    return {k: pass_hat_k(scored, k) for k in range(1, k_max + 1)}


# ---------------------------------------------------------------------------------------
# Failure taxonomy and terminations
# ---------------------------------------------------------------------------------------


def failure_counts(rows: Iterable[EpisodeRow]) -> dict[str, dict[str, int]]:
    """Per configuration, scored episodes by failure category (the taxonomy's order first,
    then any other category seen, then failed episodes left :data:`UNCLASSIFIED`)."""
    result = {}
    for name, group in by_config(scored_rows(rows)).items():
        counts: Counter[str] = Counter()
        for row in group:
            if row.failure_category:
                counts[row.failure_category] += 1
            elif not succeeded(row):
                counts[UNCLASSIFIED] += 1
        result[name] = dict(counts)
    return result


def row_workflows(rows: Iterable[EpisodeRow]) -> list[str]:
    """The workflows of the rows' task sets, in registry order (none: the first registered)."""
    seen = {task_sets.workflow_of(task_set, fallback=True) for task_set in {row.task_set for row in rows}}
    return [name for name in workflows.PACKAGES if name in seen] or [next(iter(workflows.PACKAGES))]


def failure_categories(workflow_names: Sequence[str]) -> tuple[str, ...]:
    """The failure taxonomy (``erp_sim.agents.failures``) in report order, for rows of these workflows: the
    generic categories around each workflow's own (``erp_sim.outcomes.failure_report_order``)."""
    return failure_report_order(*(workflows.harness(name).failures.categories for name in workflow_names))


def category_order(counts: Mapping[str, Mapping[str, int]], workflow_names: Sequence[str] = ()) -> list[str]:
    """Taxonomy order for a failure table of these workflows' rows (default: the first registered's): known
    categories, unknown ones, unclassified."""
    known = failure_categories(workflow_names or [next(iter(workflows.PACKAGES))])
    seen = {category for per_config in counts.values() for category in per_config}
    extra = sorted(seen - set(known) - {UNCLASSIFIED})
    return [*known, *extra, *([UNCLASSIFIED] if UNCLASSIFIED in seen else [])]


def termination_counts(rows: Iterable[EpisodeRow]) -> dict[str, dict[str, int]]:
    """Per configuration, scored episodes by termination reason."""
    return {
        name: dict(Counter(str(row.termination) for row in group))
        for name, group in by_config(scored_rows(rows)).items()
    }


# ---------------------------------------------------------------------------------------
# N x W sweeps
# ---------------------------------------------------------------------------------------

_PARAM = re.compile(r"(?<![\w.])([nw])=(-?\d+)")  # W=-1: summarize everything evicted at once


def parse_n_w(policy: str) -> tuple[int, int] | None:
    """``(N, W)`` from a policy spec such as ``last_n_summary:n=5,w=3``; None if either is missing."""
    found = dict(_PARAM.findall(policy))
    if "n" in found and "w" in found:
        return int(found["n"]), int(found["w"])
    return None


def sweep_family(policy: str) -> str:
    """The spec with N and W blanked: configurations of one sweep share it."""
    return _PARAM.sub(lambda m: f"{m.group(1)}=*", policy)


@dataclass(frozen=True)
class SweepGrid:
    """Configurations that differ only in N and W (same policy otherwise, agent, user, tasks)."""

    family: str
    agent: str
    user: str
    task_set: str  # as --tasks named it (``ConfigSummary.tasks``: hotel_50:test for a split)
    n_values: tuple[int, ...]
    w_values: tuple[int, ...]
    cells: dict[tuple[int, int], str]  # (N, W) -> configuration
    shadowed: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)  # same point, not shown

    def matrix(self, summaries: Mapping[str, ConfigSummary], metric: str = "success") -> np.ndarray:
        """len(n_values) x len(w_values) array of a metric's means, NaN where no configuration ran."""
        grid = np.full((len(self.n_values), len(self.w_values)), math.nan)
        for (n, w), config in self.cells.items():
            grid[self.n_values.index(n), self.w_values.index(w)] = summaries[config].estimates[metric].mean
        return grid


def sweep_grids(summaries: Mapping[str, ConfigSummary]) -> list[SweepGrid]:
    """The N x W grids among the configurations: a family with at least two (N, W) points.

    If two configurations share a point (say a preset C4 and the sweep's n=5,w=3), the first
    in natural order fills the cell and the others are listed in ``shadowed``.
    """
    families: dict[tuple[str, str, str, str], dict[tuple[int, int], list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, summary in summaries.items():
        point = parse_n_w(summary.policy)
        if point is None:
            continue
        key = (sweep_family(summary.policy), summary.agent, summary.user, summary.tasks)
        families[key][point].append(name)
    grids = []
    for (family, agent, user, task_set), points in sorted(
        families.items(), key=lambda item: natural_key(" ".join(item[0]))
    ):
        if len(points) < 2:
            continue
        ordered = {point: sorted(names, key=natural_key) for point, names in sorted(points.items())}
        cells = {point: names[0] for point, names in ordered.items()}
        grids.append(
            SweepGrid(
                family=family,
                agent=agent,
                user=user,
                task_set=task_set,
                n_values=tuple(sorted({n for n, _ in cells})),
                w_values=tuple(sorted({w for _, w in cells})),
                cells=cells,
                shadowed={point: tuple(names[1:]) for point, names in ordered.items() if len(names) > 1},
            )
        )
    return grids
