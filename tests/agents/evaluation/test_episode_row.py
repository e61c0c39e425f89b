"""The results row's typed contract (``episode_row.EpisodeRow``): what ``erp-sim eval`` writes goes
through the model unchanged, byte for byte; a line that is not a row of this version is named and
set aside, never read as NaN; rows of earlier versions load with defaults; every metric the
report computes resolves on a real row."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from test_report import write_results
from test_report_attempts import killed_resume_rows
from test_statistics import episode

from erp_sim.agents.evaluation import costs, report
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, load_results, parse_row
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.report.cli import main as report_main

ONE_TASK = ["--tasks", "hotel_50:hotel-000", "--runs", "1", "--quiet", "--concurrency", "1"]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A results file as ``erp-sim eval`` writes it (C2 and a summarizing C4: every field set)."""
    out = tmp_path_factory.mktemp("eval")
    assert eval_main(["--configs", "C2,C4", *ONE_TASK, "--out", str(out)]) == 0
    return out / RESULTS_FILE


def test_a_row_written_by_eval_round_trips_byte_for_byte(written):
    lines = written.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 2
    for line in lines:
        assert parse_row(line).json_line() == line
    assert list(json.loads(lines[0])) == [  # the writer's keys, in its order (attempt: set by canonicalize)
        *("config", "policy", "user", "agent", "task_set", "task_id", "run", "seed", "grade", "metrics"),
        *("termination", "failure_category", "infra_error", "model_error", "trajectory", "sampling", "timing"),
        "attempt",
    ]


def test_a_retried_row_round_trips_with_its_attempts():
    latest = latest_attempts(killed_resume_rows())
    retried = latest[3]
    line = retried.json_line()
    assert list(json.loads(line))[-2:] == ["attempts", "attempt"] and retried.attempt == 2
    assert parse_row(line) == retried and parse_row(line).json_line() == line
    assert "attempts" not in json.loads(latest[0].json_line())  # a first attempt stores no history


def test_a_renamed_grade_field_is_refused_by_line_not_read_as_nan(tmp_path, capsys):
    good = [episode("C2", task, 0, True) for task in range(3)]
    renamed = good[1].dump()
    renamed["grade"]["succes"] = renamed["grade"].pop("success")  # a writer that renamed the field
    lines = [good[0].dump(), renamed, good[2].dump()]
    directory = write_results(tmp_path / "run", lines)
    rows, refused = load_results(directory)
    assert [row.task_id for row in rows] == ["hotel-000", "hotel-002"]
    assert [str(line) for line in refused] == [
        "results.jsonl line 2: grade.success: Field required; "
        "grade.succes: unknown field (renamed, misspelt, or from another version)"
    ]
    assert refused[0].number == 2 and refused[0].text == json.dumps(renamed) + "\n"
    assert st.summarize(rows)["C2"].estimates["success"].mean == 1.0  # the two rows read, not NaN
    assert report_main([str(directory)]) == 0
    assert "results.jsonl line 2: grade." in capsys.readouterr().err
    assert "1 unreadable line skipped: `results.jsonl line 2: grade." in (directory / report.REPORT_FILE).read_text()


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda row: row["metrics"].update(steps="many"), "metrics.steps: Input should be a valid integer"),
        (lambda row: row.update(termination="gave_up"), "termination: Input should be"),
        (lambda row: row.update(surprise=1), "surprise: unknown field (renamed, misspelt, or from another version)"),
        (lambda row: row.pop("config"), "config: Field required"),
        (lambda row: row["timing"].update(cpu_s=1.0), "timing.cpu_s: unknown field"),
        (lambda row: row.update({"a\n`b" + "x" * 500: 1}), "a `b" + "x" * 75 + "…: unknown field"),
    ],
)
def test_a_line_with_a_wrong_type_or_an_unknown_key_is_refused_in_one_line(change, where):
    data = episode("C2", 0, 0, True).dump()
    change(data)
    with pytest.raises(ValueError, match="^" + re.escape(where)) as error:
        parse_row(json.dumps(data))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"config": "C2", "ta', "not JSON (Unterminated string"),
        ("[" * 100_000, "not JSON (nested too deeply)"),
        ("[1, 2]", "not a JSON object but list"),
    ],
)
def test_a_line_that_is_no_json_object_is_refused_in_one_line(line, reason):
    with pytest.raises(ValueError, match="^" + re.escape(reason)):
        parse_row(line)


def test_lines_that_are_not_rows_are_set_aside_by_canonicalize_not_lost(tmp_path, capsys):
    out = tmp_path / "run"
    assert eval_main(["--configs", "C3", *ONE_TASK, "--out", str(out)]) == 0
    results = out / RESULTS_FILE
    stranger = json.dumps({**json.loads(results.read_text()), "renamed_field": 1}) + "\n"
    results.write_text(results.read_text() + stranger + '{"config": "C3", "ta', encoding="utf-8")
    assert eval_main(["--configs", "C3", *ONE_TASK, "--out", str(out), "--resume"]) == 0
    err = capsys.readouterr().err
    assert "results.jsonl line 2: renamed_field: unknown field" in err and "results.jsonl line 3: not JSON" in err
    assert len(results.read_text().splitlines()) == 1
    kept = (out / "results.refused.jsonl").read_text().splitlines(keepends=True)
    assert kept == [stranger, '{"config": "C3", "ta\n']


def test_a_row_of_the_first_results_files_loads_with_defaults():
    """The shape of the first ``erp-sim eval`` rows: no seed, model_error, sampling, attempt or newer counts."""
    old = {
        "config": "C2",
        "policy": "full",
        "agent": "scripted",
        "task_set": "hotel_50",
        "task_id": "hotel-000",
        "run": 0,
        "grade": {
            "success": True,
            "strict_success": True,
            "itemized_fraction": 1.0,
            "remaining_amount": "0.00",
            "collateral": [],
        },
        "metrics": {"steps": 12, "model_calls": 12, "tool_calls": 11, "input_tokens": 5000, "peak_tokens": 900},
        "termination": "success",
        "failure_category": None,
        "infra_error": None,
        "trajectory": "trajectories/C2/hotel-000-run0.json.gz",
        "timing": {"wall_time_s": 0.5},
    }
    row = parse_row(json.dumps(old))
    assert row.seed is None and row.user == "" and row.model_error is None and row.sampling.agent is None
    assert row.metrics.summarizer_input_tokens == 0 and row.metrics.provider_cached_tokens is None
    assert row.attempt_number == 1 and row.timing.model_time_s is None
    assert st.summarize([row])["C2"].estimates["input_tokens"].mean == 5000
    assert parse_row(json.dumps({**old, "grade": {}})).grade is None  # an unscored row stores no grade


def test_every_metric_and_cost_getter_resolves_on_a_row_written_by_eval(written):
    """A field renamed in the model but not in a getter fails here (AttributeError), not as NaN in a report."""
    rows = load_results(written.parent).rows
    for row in rows:
        for metric in st.METRICS:
            assert math.isfinite(metric.value(row)), metric.key
        for units, roles in costs.ROLE_COUNTS.items():
            for role in roles:
                assert all(math.isfinite(n) for n in costs.role_tokens(row, role, units)), (units, role)
    unscored = rows[0].model_copy(update={"grade": None})
    assert math.isnan(st.METRIC_BY_KEY["success"].value(unscored)) and not st.succeeded(unscored)
