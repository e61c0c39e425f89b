"""erp_sim.agents.evaluation.statistics on synthetic results whose figures can be worked out by hand."""

from __future__ import annotations

import math

import pytest

from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.episode_row import EpisodeRow, duplicate_count, infra_error_rows

T_975_DF4 = 2.7764451051977987  # Student t quantile 0.975 with 4 degrees of freedom (tables)
TASKS, RUNS = 10, 5


def episode(
    config,
    task,
    run,
    success,
    *,
    policy="full",
    task_set="hotel_50",
    tokens=1000,
    peak=100,
    category=None,
    infra=None,
    wall=1.0,
):
    return EpisodeRow.model_validate(
        {
            "config": config,
            "policy": policy,
            "user": "rule",
            "agent": "scripted:recall=2e6",  # runs differ (a deterministic agent's would be copies)
            "task_set": task_set,
            "task_id": f"hotel-{task:03d}",
            "run": run,
            "seed": 1000 + 10 * task + run,
            "grade": {
                "success": success,
                "strict_success": success,
                "itemized_fraction": 1.0 if success else 0.5,
                "remaining_amount": "0.00",
                "collateral": [],
            },
            "metrics": {
                "steps": 10 + task,
                "tool_calls": 8,
                "invalid_actions": 0,
                "input_tokens": tokens,
                "output_tokens": 50,
                "peak_tokens": peak,
                "dependency": 1e6,
                "summarizer_calls": 0,
                "summarizer_tokens": 0,
            },
            "termination": "success" if success else "stalled",
            "failure_category": category,
            "infra_error": infra,
            "trajectory": f"trajectories/{config}/hotel-{task:03d}-run{run}.jsonl",
            "timing": {"wall_time_s": wall},
        }
    )


def synthetic_rows() -> list[EpisodeRow]:
    """C2: tasks 0-4 always succeed, 5-9 never (run rate 0.5 every run).
    C3: task < 5 + (0,1,2,0,1)[run] succeeds (run rates .5 .6 .7 .5 .6).
    C4: task < 8 + run % 2 succeeds (run rates .8 .9 .8 .9 .8)."""
    rows = []
    for run in range(RUNS):
        for task in range(TASKS):
            rows.append(
                episode(
                    "C2",
                    task,
                    run,
                    task < 5,
                    tokens=1000 * (task + 1),
                    peak=200,
                    category=None if task < 5 else "stalled_unanswered_question",
                )
            )
            ok = task < 5 + (0, 1, 2, 0, 1)[run]
            rows.append(
                episode(
                    "C3",
                    task,
                    run,
                    ok,
                    policy="last_n:n=5",
                    tokens=400 * (task + 1) + 10 * run,
                    peak=100,
                    category=None if ok else ("wrong_amount" if task % 2 == 0 else None),
                )
            )
            rows.append(
                episode("C4", task, run, task < 8 + run % 2, policy="last_n_summary:n=5,w=3", tokens=500, peak=120)
            )
    return rows


def hand_t_interval(values):
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = T_975_DF4 * sd / math.sqrt(n)
    return mean, mean - half, mean + half


# --- per-configuration intervals -------------------------------------------------------


def test_success_rate_t_interval_matches_hand_computation():
    summaries = st.summarize(synthetic_rows())
    assert list(summaries) == ["C2", "C3", "C4"]
    for config, run_rates in {"C3": [0.5, 0.6, 0.7, 0.5, 0.6], "C4": [0.8, 0.9, 0.8, 0.9, 0.8]}.items():
        est = summaries[config].estimates["success"]
        mean, low, high = hand_t_interval(run_rates)
        assert (est.mean, est.low, est.high) == pytest.approx((mean, low, high), abs=1e-12)
        assert est.n == RUNS and est.method == "t"
    # C3 by hand: mean .58, s = sqrt(.028/4), half width 2.776445 * s / sqrt(5) = .103885
    c3 = summaries["C3"].estimates["success"]
    assert (c3.low, c3.high) == pytest.approx((0.476115, 0.683885), abs=1e-6)


def test_identical_runs_give_a_zero_width_interval():
    c2 = st.summarize(synthetic_rows())["C2"].estimates["success"]
    assert (c2.mean, c2.low, c2.high) == (0.5, 0.5, 0.5)


def test_tokens_per_benchmark_is_the_sum_over_tasks_averaged_over_runs():
    summaries = st.summarize(synthetic_rows())
    assert summaries["C2"].estimates["input_tokens"].mean == pytest.approx(55_000)  # 1000 * (1 + ... + 10)
    run_totals = [22_000 + 100 * run for run in range(RUNS)]  # 400 * 55 + 10 * run * 10 tasks
    mean, low, high = hand_t_interval(run_totals)
    est = summaries["C3"].estimates["input_tokens"]
    assert (est.mean, est.low, est.high) == pytest.approx((mean, low, high))
    assert summaries["C3"].estimates["peak_tokens"].mean == 100
    assert summaries["C2"].estimates["steps"].mean == pytest.approx(14.5)
    assert summaries["C2"].estimates["wall_time_s"].mean == pytest.approx(10.0)  # 10 tasks x 1 s


def test_rate_intervals_are_clipped_to_one():
    rows = [episode("C", task, run, not (task == 0 and run == 0)) for run in range(RUNS) for task in range(2)]
    est = st.summarize(rows)["C"].estimates["success"]  # run rates .5 1 1 1 1: t interval crosses 1
    assert est.high == 1.0 and est.low < est.mean < 1.0


def test_single_run_falls_back_to_a_bootstrap_over_tasks():
    rows = [r for r in synthetic_rows() if r.run == 0 and r.config == "C3"]
    summary = st.summarize(rows)["C3"]
    est = summary.estimates["success"]
    assert est.method.startswith("bootstrap") and est.n == TASKS
    assert est.low < est.mean == 0.5 < est.high
    assert summary.interval_method == "bootstrap over 10 tasks"
    assert summary.estimates["input_tokens"].mean == pytest.approx(22_000)
    assert st.summarize(rows)["C3"].estimates == summary.estimates  # fixed seed


def test_t_interval_edge_cases():
    assert math.isnan(st.t_interval([0.3]).low)
    assert st.t_interval([]).n == 0
    assert st.t_interval([1.0, math.nan, 1.0]).n == 2


# --- infrastructure errors and duplicates ---------------------------------------------


def test_infra_error_rows_are_excluded_counted_and_listed():
    rows = synthetic_rows()
    clean = st.summarize(rows)
    failed_call = episode("C3", 9, 0, True, policy="last_n:n=5", tokens=10**9, infra="RateLimitError after retries")
    with_error = st.summarize([*rows, failed_call])
    assert with_error["C3"].estimates == clean["C3"].estimates
    assert with_error["C3"].n_infra_errors == 1 and with_error["C3"].n_episodes == TASKS * RUNS
    assert infra_error_rows([*rows, failed_call]) == [failed_call]
    assert st.pass_hat_k_curve([*rows, failed_call]) == st.pass_hat_k_curve(rows)


def test_a_run_missing_an_episode_scales_its_total_to_the_task_set():
    rows = [r for r in synthetic_rows() if r.config == "C4"]
    rows.append(episode("C4", 10, 0, False, tokens=500, infra="timeout"))  # an 11th task, only ever an infra error
    summary = st.summarize(rows)["C4"]
    assert summary.n_tasks == 11 and summary.incomplete_runs == RUNS
    assert summary.estimates["input_tokens"].mean == pytest.approx(500 * 11)


def test_repeated_episode_keeps_the_last_row():
    rows = synthetic_rows()
    again = episode("C2", 9, 4, True, tokens=1)
    assert duplicate_count([*rows, again]) == 1
    scored = st.scored_rows([*rows, again])
    assert len(scored) == len(rows)
    assert next(r for r in scored if r.config == "C2" and r.task_id == "hotel-009" and r.run == 4) is again


# --- against a baseline ----------------------------------------------------------------


def test_comparison_against_baseline_is_paired_over_tasks():
    comparisons = {c.config: c for c in st.compare_to_baseline(synthetic_rows())}  # default baseline C2
    assert set(comparisons) == {"C3", "C4"}
    c4 = comparisons["C4"]
    # per-task differences: tasks 0-4 -> 0; 5, 6, 7 -> 1; 8 -> 0.4 (2 of 5 runs); 9 -> 0
    assert c4.paired and c4.n_tasks == TASKS and c4.baseline == "C2"
    assert c4.success_diff.mean == pytest.approx(0.34)
    assert (c4.better, c4.worse, c4.tied) == (4, 0, 6)
    assert c4.success_diff.low <= 0.34 <= c4.success_diff.high <= 1.0
    assert c4.cohens_h == pytest.approx(2 * math.asin(math.sqrt(0.84)) - 2 * math.asin(math.sqrt(0.5)))
    # exact sign flips of (1, 1, 1, .4): only all-plus and all-minus reach |sum| = 3.4 -> 2 / 16
    assert c4.p_value == pytest.approx(0.125)
    # tokens: sum over tasks of per-task means, C3 = 22,200 vs C2 = 55,000
    assert comparisons["C3"].input_tokens_change.mean == pytest.approx(22_200 / 55_000 - 1)
    assert comparisons["C3"].peak_tokens_change.mean == pytest.approx(-0.5)
    again = {c.config: c for c in st.compare_to_baseline(list(reversed(synthetic_rows())))}
    assert again == comparisons  # order-independent and seeded


def test_one_run_per_task_gives_mcnemars_exact_test():
    rows = [episode("A", t, 0, t < 2) for t in range(20)]  # A succeeds on tasks 0, 1
    rows += [episode("B", t, 0, 2 <= t < 11) for t in range(20)]  # B on 2..10: 9 vs 2 discordant
    (comparison,) = st.compare_to_baseline(rows, baseline="A")
    assert (comparison.better, comparison.worse) == (9, 2)
    # exact McNemar: 2 * P(Binomial(11, 1/2) <= 2) = 2 * (1 + 11 + 55) / 2048
    assert comparison.p_value == pytest.approx(134 / 2048)


def test_one_discordant_task_or_none_gives_p_one():
    rows = [episode("A", t, 0, t == 0) for t in range(5)] + [episode("B", t, 0, t < 2) for t in range(5)]
    rows += [episode("C", t, 0, t == 0) for t in range(5)]
    b, c = st.compare_to_baseline(rows, baseline="A")
    assert (b.better, b.worse, b.p_value) == (1, 0, 1.0)
    assert (c.tied, c.p_value, c.success_diff.low, c.success_diff.high) == (5, 1.0, 0.0, 0.0)


def test_unmatched_tasks_fall_back_to_welch():
    rows = [r for r in synthetic_rows() if r.config in ("C2", "C3")]
    for r in rows:
        if r.config == "C2":
            r.task_set = "meals_20"
    (c3,) = st.compare_to_baseline(rows, baseline="C2")
    assert not c3.paired and c3.test.startswith("Welch")
    assert c3.success_diff.mean == pytest.approx(0.08)
    # C2 has zero spread, so Welch reduces to a one-sample t interval of C3's run rates, shifted by .5
    _, low, high = hand_t_interval([0.5, 0.6, 0.7, 0.5, 0.6])
    assert (c3.success_diff.low, c3.success_diff.high) == pytest.approx((low - 0.5, high - 0.5))


def test_unknown_baseline_is_an_error():
    with pytest.raises(ValueError, match="baseline"):
        st.compare_to_baseline(synthetic_rows(), baseline="C9")


def test_cohens_h_and_its_reading():
    assert st.cohens_h(0.5, 0.5) == 0
    assert st.cohens_h(1.0, 0.0) == pytest.approx(math.pi)
    assert [st.effect_size_label(h) for h in (0.1, 0.3, 0.6, 1.0, -1.0)] == [
        "negligible",
        "small",
        "medium",
        "large",
        "large",
    ]


# --- pass^k ----------------------------------------------------------------------------


def test_pass_hat_k_on_a_tiny_case():
    rows = [episode("C", 0, run, True) for run in range(3)]  # task 0: 3 of 3
    rows += [episode("C", 1, run, run == 0) for run in range(3)]  # task 1: 1 of 3
    # pass^1 = (3/3 + 1/3) / 2; pass^2 = (C(3,2)/C(3,2) + C(1,2)/C(3,2)) / 2 = (1 + 0) / 2
    assert st.pass_hat_k_curve(rows) == pytest.approx({1: 2 / 3, 2: 0.5, 3: 0.5})
    rows += [episode("C", 2, 0, True)]  # a task with one run only counts for k = 1
    assert st.pass_hat_k(rows, 1) == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert st.pass_hat_k(rows, 2) == pytest.approx(0.5)


def test_pass_hat_k_on_the_synthetic_configs():
    by_config = st.by_config(synthetic_rows())
    assert st.pass_hat_k_curve(by_config["C2"]) == pytest.approx(dict.fromkeys(range(1, 6), 0.5))
    # C4: tasks 0-7 always (1), task 8 two of five (C(2,k)/C(5,k)), task 9 never
    assert st.pass_hat_k(by_config["C4"], 2) == pytest.approx((8 + 1 / 10) / 10)
    assert st.pass_hat_k(by_config["C4"], 1) == pytest.approx(
        st.summarize(by_config["C4"])["C4"].estimates["success"].mean
    )


# --- failure taxonomy ------------------------------------------------------------------


def test_failure_counts_per_configuration():
    counts = st.failure_counts(synthetic_rows())
    assert counts["C2"] == {"stalled_unanswered_question": 25}
    # C3 fails 21 episodes: even tasks are classified wrong_amount, odd ones are not
    assert counts["C3"]["wrong_amount"] + counts["C3"][st.UNCLASSIFIED] == 21
    assert counts["C3"]["wrong_amount"] == sum(
        1 for run in range(RUNS) for task in range(TASKS) if task % 2 == 0 and task >= 5 + (0, 1, 2, 0, 1)[run]
    )
    order = st.category_order(counts)
    known = st.failure_categories(["itemization"])
    assert order[: len(known)] == list(known) and order[-1] == st.UNCLASSIFIED
    assert st.termination_counts(synthetic_rows())["C4"] == {"success": 42, "stalled": 8}


# --- sweeps ----------------------------------------------------------------------------


def test_parse_n_w_and_family():
    assert st.parse_n_w("last_n_summary:n=5,w=3") == (5, 3)
    assert st.parse_n_w("last_n_summary:w=1,n=9,summarizer=structured") == (9, 1)
    assert st.parse_n_w("last_n_summary:n=5,w=-1") == (5, -1)  # W=-1: everything evicted at once
    assert st.parse_n_w("last_n:n=5") is None
    assert st.parse_n_w("budget:window=3,max_n=2") is None
    assert (
        st.sweep_family("last_n_summary:n=5,w=3")
        == st.sweep_family("last_n_summary:n=9,w=1")
        == "last_n_summary:n=*,w=*"
    )


def test_sweep_grid_only_for_configs_differing_in_n_and_w():
    assert st.sweep_grids(st.summarize(synthetic_rows())) == []  # one (N, W) point is no sweep
    rows = [
        episode(f"N{n}W{w}", task, run, task < n + w, policy=f"last_n_summary:n={n},w={w}")
        for n in (3, 5)
        for w in (1, 3)
        for task in range(TASKS)
        for run in range(2)
    ]
    rows += [episode("other", task, 0, True, policy="last_n_summary:n=5,w=3,summarizer=llm") for task in range(TASKS)]
    summaries = st.summarize(rows)
    (grid,) = st.sweep_grids(summaries)
    assert grid.family == "last_n_summary:n=*,w=*"
    assert grid.n_values == (3, 5) and grid.w_values == (1, 3)
    assert grid.cells == {(3, 1): "N3W1", (3, 3): "N3W3", (5, 1): "N5W1", (5, 3): "N5W3"}
    assert grid.matrix(summaries).tolist() == [[0.4, 0.6], [0.6, 0.8]]


def test_a_deterministic_agent_gets_intervals_over_tasks_and_the_reason():
    """The scripted agent without recall= repeats itself: its runs are copies, so the interval is over
    tasks (a t interval over copies would have zero width), with or without extra runs."""
    rows = [
        episode("C3", task, run, task < 5).model_copy(update={"agent": "scripted"})
        for run in range(2)
        for task in range(TASKS)
    ]
    for subset in (rows, [r for r in rows if r.run == 0]):
        summary = st.summarize(subset)["C3"]
        assert summary.deterministic
        assert summary.interval_method == "bootstrap over 10 tasks (deterministic agent: its runs are identical)"
        est = summary.estimates["success"]
        assert est.method.startswith("bootstrap") and est.n == TASKS and est.low < 0.5 < est.high
    varied = st.summarize([r.model_copy(update={"agent": "scripted:recall=2e6"}) for r in rows])["C3"]
    assert not varied.deterministic and varied.interval_method == "t over 2 runs"
