"""erp_sim.agents.evaluation.report: report.md and the PNG plots written from a results directory."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_statistics import TASKS, episode, synthetic_rows

from erp_sim.agents.evaluation import report
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, EpisodeRow
from erp_sim.agents.evaluation.report import formats, plots

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def write_results(directory: Path, rows, tail: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / RESULTS_FILE).write_text(
        "".join(row.json_line() if isinstance(row, EpisodeRow) else json.dumps(row) + "\n" for row in rows) + tail,
        encoding="utf-8",
    )
    return directory


def sweep_rows() -> list[EpisodeRow]:
    return [
        episode(
            f"N{n}W{w}",
            task,
            run,
            task < n + w + run % 2,
            policy=f"last_n_summary:n={n},w={w}",
            tokens=100 * n + 10 * w,
        )
        for n in (3, 5, 7)
        for w in (1, 3)
        for task in range(TASKS)
        for run in range(3)
    ]


@pytest.fixture(scope="module")
def presets(tmp_path_factory) -> Path:
    """C2/C3/C4 of test_statistics, plus an infrastructure error of an episode also scored (its earlier
    attempt: counted once, scored) and a truncated last line."""
    rows = synthetic_rows()
    rows.append(episode("C3", 3, 2, False, policy="last_n:n=5", infra="RateLimitError: 429 after 5 retries"))
    directory = write_results(tmp_path_factory.mktemp("presets"), rows, tail='{"config": "C4", "task')
    report.write_report(directory)
    return directory


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    directory = write_results(tmp_path_factory.mktemp("sweep"), sweep_rows())
    report.write_report(directory)
    return directory


def text(directory: Path) -> str:
    return (directory / report.REPORT_FILE).read_text(encoding="utf-8")


def test_report_has_the_expected_table_rows(presets):
    md = text(presets)
    # success: C2 .5 every run (no spread), C3 mean .58 with t interval [.476, .684], C4 .84 [.772, .908]
    assert "| C2 | 50.0 | 50.0 | 75.00 |" in md  # the capped amount to two decimals
    assert "| C3 | 58.0 [47.6, 68.4] | 58.0 [47.6, 68.4] | 79.00 [73.81, 84.19] | 42.0 [31.6, 52.4] | 0.0 |" in md
    assert "| C4 | 84.0 [77.2, 90.8] |" in md
    # tokens per benchmark: C3 runs 22,000 .. 22,400, t interval 22,200 +- 196.3
    assert "| C3 | 2,220 [2,200, 2,240] | 22,200 [22,004, 22,396] |" in md  # per episode, then per benchmark
    assert "| C3 | `last_n:n=5` | scripted:recall=2e6 | rule | hotel_50 | 10 | 5 | 50 | 0 | t over 5 runs |" in md
    assert "## Against the baseline C2" in md
    assert "| C4 | +34.0 [" in md and "| 4 / 0 / 6 | 0.1250 |" in md
    against = md.split("## Against the baseline C2")[1].split("## pass^k")[0]
    assert "| -59.6 [" in against and "| -50.0 |" in against  # C3 tokens 22,200 / 55,000 - 1; peak 100 / 200 - 1


def test_report_has_pass_k_failures_reference_and_infra_errors(presets):
    md = text(presets)
    assert "| config | pass^1 (%) | pass^2 (%) | pass^3 (%) | pass^4 (%) | pass^5 (%) |" in md
    assert "| C2 | 50.0 | 50.0 | 50.0 | 50.0 | 50.0 |" in md
    assert "| C4 | 84.0 | 81.0 |" in md  # (8 + C(2,2)/C(5,2)) / 10 = .81
    assert "| `stalled_unanswered_question` | 25 | 0 | 0 |" in md
    assert "| `unclassified` | 0 |" in md
    assert "| **failed episodes** | 25 | 21 | 8 |" in md
    assert "STUDY (GPT-5): full itemization" in md and "1,480,996" in md and "91.6 (amount 99.64)" in md
    assert "| C3 | hotel-003 | 2 | 1 | stalled | RateLimitError: 429 after 5 retries |" in md  # an earlier attempt
    assert "0 infrastructure errors excluded" in md and "1 unreadable line" in md


def test_pngs_are_written_without_a_software_stamp(presets):
    for name in (report.SUCCESS_VS_TOKENS_PNG, report.PEAK_TOKENS_PNG):
        data = (presets / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
        assert b"Software" not in data and b"Matplotlib" not in data
        assert f"]({name})" in text(presets)


def test_heatmap_only_for_sweeps(presets, sweep):
    assert not list(presets.glob(f"{report.SWEEP_PNG_STEM}*.png"))
    assert "Sensitivity" not in text(presets)
    heatmap = sweep / f"{report.SWEEP_PNG_STEM}.png"
    assert heatmap.read_bytes().startswith(PNG_SIGNATURE)
    md = text(sweep)
    assert "## Sensitivity to N and W" in md and "### `last_n_summary:n=*,w=*`" in md
    assert "| N \\ W | W=1 | W=3 |" in md
    # N3W1: success if task < 4 + run % 2 -> run rates .4 .5 .4 over three runs
    assert "| N=3 | 43.3 [" in md
    assert f"]({heatmap.name})" in md


def test_same_rows_give_identical_files(tmp_path, presets):
    rows = synthetic_rows()
    rows.append(episode("C3", 3, 2, False, policy="last_n:n=5", infra="RateLimitError: 429 after 5 retries"))
    random.Random(1).shuffle(rows)  # episodes finish in any order under concurrency
    again = write_results(tmp_path / "again", rows, tail='{"config": "C4", "task')
    report.write_report(again)
    assert (again / report.REPORT_FILE).read_bytes() == (presets / report.REPORT_FILE).read_bytes()
    for name in (report.SUCCESS_VS_TOKENS_PNG, report.PEAK_TOKENS_PNG):
        assert (again / name).read_bytes() == (presets / name).read_bytes()


def test_explicit_baseline_and_stale_heatmaps(tmp_path):
    directory = write_results(tmp_path, synthetic_rows())
    (tmp_path / f"{report.SWEEP_PNG_STEM}.png").write_bytes(b"left over")
    path = report.write_report(directory, baseline="C4")
    assert path == tmp_path / report.REPORT_FILE
    md = text(tmp_path)
    assert "## Against the baseline C4" in md and "| C2 | -34.0 [" in md
    assert not (tmp_path / f"{report.SWEEP_PNG_STEM}.png").exists()
    with pytest.raises(ValueError, match="baseline"):
        report.write_report(directory, baseline="C7")


def test_number_formats():
    assert formats.fmt_number(-0.04, 1) == "0.0"
    assert formats.fmt_number(1_480_996, 0, grouped=True) == "1,480,996"
    assert formats.fmt_p(0.00001) == "< 0.0001"
    assert formats.md_table(("a", "b"), [("x|y", 1)]) == "| a | b |\n|---|---:|\n| x\\|y | 1 |"


def _with(rows, config, **grade):
    return [r.model_copy(update={"grade": r.grade.model_copy(update=grade)}) if r.config == config else r for r in rows]


def test_study_table_puts_relative_token_changes_side_by_side_and_says_the_unit_is_undefined():
    md = report.render_report(__import__("test_statistics").synthetic_rows())
    study = md.split("## Reference figures")[1]
    assert "STUDY: tokens / benchmark (unit not defined)" in study
    assert "without saying what is counted" in study
    assert "| C3 | last 5 pairs | 79.0 | 535,274 | -63.9 |" in study and "| 553,374 | -62.6 |" in study
    # ours per episode, per benchmark, and the change paired over the tasks both ran (the baseline section's)
    assert "| 2,220 [2,200, 2,240] | 22,200 [22,004, 22,396] | -59.6 [-59.7, -59.5] |" in study
    assert "is the study's" in study and "DESIGN" not in md


def test_an_order_of_configurations_unlike_the_study_is_pointed_out():
    rows = [
        r.model_copy(update={"grade": r.grade.model_copy(update={"success": r.config != "C4"})})
        for r in __import__("test_statistics").synthetic_rows()
    ]
    md = report.render_report(rows)
    assert "**The order of full itemization differs from the study's**" in md
    assert "C3 100.0% vs C4 0.0% (study: 79.0% vs 91.6%)" in md


def test_over_itemization_cannot_hide_behind_the_itemized_amount():
    rows = []
    for task in range(10):  # half the episodes itemize 150%, half 50%: an uncapped mean says 100%
        row = episode("C2", task, 0, False, tokens=1000)
        rows.append(
            row.model_copy(
                update={"grade": row.grade.model_copy(update={"itemized_fraction": 1.5 if task % 2 else 0.5})}
            )
        )
    md = report.render_report(rows)
    assert "| C2 | 0.0 | 0.0 | 75.00 [" in md  # mean of min(fraction, 1) = (1 + .5) / 2
    outcome = next(line for line in md.splitlines() if line.startswith("| C2 | 0.0 | 0.0 |"))
    assert outcome.rstrip(" |").endswith("]") and "| 50.0 [" in outcome  # half the episodes over-itemized
    assert "min(itemized, header) / header" in md


def test_p_at_the_resampling_floor_is_a_bound_and_small_n_and_scripted_agents_are_flagged():
    rows = [episode(c, t, 0, c == "C3" or t >= 20, tokens=1000) for c in ("C2", "C3") for t in range(40)]
    md = report.render_report(rows, "C2")
    assert "≤ 2/(R+1) = 0.0002" in md and "p = 0.0002" not in md
    assert "Small n" not in md and "**Agent: scripted (not an LLM)** for C2, C3" in md
    few = report.render_report([episode("C2", t, 0, True) for t in range(3)])
    assert "**Small n: treat the intervals as rough.** C2 (bootstrap over 3 tasks): a bootstrap" in few
    assert "t interval" not in few.split("**Small n")[1].split("\n")[0]  # only the cause that applies


def test_plots_use_short_labels_and_one_fixed_colour_per_configuration(tmp_path):
    long_name = "head_tail:chars=800,tokens=0,keep_recent=1,tool_chars=,tool_tokens=+last_n:n=5"
    assert plots.short_labels(["C2", long_name, "C4", "acon_observation:t=1024,recent=3"]) == {
        "C2": "C2",
        long_name: "P1",
        "C4": "C4",
        "acon_observation:t=1024,recent=3": "P2",
    }
    assert plots.config_color("C2") == plots.config_color("c2") == "#1f77b4"
    assert plots.config_color(long_name) == plots.config_color(long_name)  # from the name, not the position
    assert plots._bar((0.0, 0.0)) is None and plots._bar((1.0, 2.0)) == [[1.0], [2.0]]
    rows = [episode(name, t, 0, True, policy=name) for name in ("C2", long_name) for t in range(3)]
    md = report.render_report(rows)
    assert f"| P1 | {long_name} | `{long_name}` | scripted:recall=2e6 |" in md


def test_an_llm_users_cost_has_its_own_table():
    rows = [episode("C2", t, 0, True) for t in range(3)]
    assert "LLM user (counted apart" not in report.render_report(rows)
    for row in rows:
        row.metrics = row.metrics.model_copy(
            update={"user_model_calls": 2, "user_input_tokens": 100, "user_output_tokens": 10}
        )
    assert "| C2 | 2.0 | 330 |" in report.render_report(rows)  # 110 tokens x 3 tasks per benchmark


def test_a_deterministic_agent_is_reported_with_one_run_and_why():
    rows = [episode("C2", t, 0, True).model_copy(update={"agent": "scripted"}) for t in range(12)]
    md = report.render_report(rows)
    assert (
        "| C2 | `full` | scripted | rule | hotel_50 | 12 | 1 (deterministic agent) | 12 | 0 | bootstrap over 12 tasks "
        "(deterministic agent: its runs are identical) |" in md
    )
    assert "C2: a deterministic agent, whose runs of a task are identical copies, so its pass^k is its pass^1" in md


def test_configurations_on_different_tasks_are_said_to_be_and_compared_over_shared_tasks():
    """A --resume'd configuration on fewer tasks: per-benchmark totals compare different tasks, so the report
    says so, the change against C2 is paired over shared tasks, and pass^k names the tasks each cell averages."""
    rows = __import__("test_statistics").synthetic_rows()
    every_run, first_run = {"hotel-000", "hotel-001", "hotel-002"}, {"hotel-003", "hotel-004", "hotel-005"}
    fewer = [r for r in rows if r.config != "C3" or r.task_id in every_run or (r.task_id in first_run and r.run == 0)]
    md = report.render_report(fewer)
    assert "**The configurations ran different tasks**" in md
    study = md.split("## Reference figures")[1]
    baseline = md.split("## Against the baseline")[1].split("## pass^k")[0]
    c3_change = next(line for line in baseline.splitlines() if line.startswith("| C3 |")).split(" | ")[-2]
    assert f"| {c3_change} |" in next(line for line in study.splitlines() if line.startswith("| C3 |"))
    pass_k = md.split("## pass^k")[1].split("## Failure taxonomy")[0]
    assert "(3 of 6 tasks)" in pass_k and "averages over those only" in pass_k
    assert "The configurations ran different tasks" not in report.render_report(rows)


def test_a_shortfall_of_cents_does_not_read_as_a_whole_itemization():
    """Issue 39, point 4: 14 under-itemized episodes (itemized fraction 0.9995) showed as 100.0%."""
    from test_statistics import episode

    from erp_sim.agents.evaluation.report import render_report

    rows = []
    for task in range(20):
        row = episode("C3", task, 0, task >= 14)
        fraction = 1.0 if task >= 14 else 0.99929
        rows.append(row.model_copy(update={"grade": row.grade.model_copy(update={"itemized_fraction": fraction})}))
    md = render_report(rows)
    line = next(line for line in md.splitlines() if line.startswith("| C3 | 30.0"))
    assert "| 99.95 " in line and "| 70.0 " in line  # the capped amount to two decimals, the under-itemized share
