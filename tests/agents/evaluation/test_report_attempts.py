"""A results file left by a killed ``--resume`` (attempts appended, never canonicalized) counts
each episode once in report, run page and ``erp-sim report``; error texts name a status once."""

from __future__ import annotations

import json

from test_report import write_results
from test_statistics import episode

from erp_sim.agents.evaluation import report
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.episode_row import EpisodeRow
from erp_sim.agents.evaluation.report.cli import main as report_main
from erp_sim.agents.evaluation.report.view import main as view_main
from erp_sim.agents.failures import error_text

OLD_ERROR = (
    "fake-model at http://127.0.0.1:1/v1: request refused with HTTP 400: HTTP 400: Error code: 400 - "
    "{'error': {'message': 'Invalid value for content.'}}"
)
OUTAGE = "fake-model at http://127.0.0.1:1/v1: gave up after 6 attempts; last error: HTTP 503: overloaded"


def killed_resume_rows() -> list[EpisodeRow]:
    """4 episodes: a first run (canonical, 3 infra errors), then a --resume that re-ran those 3 and was
    killed before it rewrote the file: 7 rows. Of the re-runs, 2 are scored and 1 failed again."""
    first = [episode("C2", 0, 0, True)] + [episode("C2", task, 0, False, infra=OUTAGE) for task in (1, 2, 3)]
    for row in first:
        row.attempt = 1
    again = [
        episode("C2", 1, 0, True),
        episode("C2", 2, 0, False, category="premature_termination"),
        episode("C2", 3, 0, False, infra=OLD_ERROR),
    ]
    return first + again


def test_latest_attempts_keeps_the_last_row_of_each_episode_with_the_earlier_ones():
    rows = killed_resume_rows()
    latest = latest_attempts(rows)
    assert [(r.task_id, r.attempt, bool(r.infra_error)) for r in latest] == [
        ("hotel-000", 1, False),
        ("hotel-001", 2, False),
        ("hotel-002", 2, False),
        ("hotel-003", 2, True),
    ]
    assert [a.model_dump() for a in latest[3].attempts] == [
        {"attempt": 1, "termination": "stalled", "infra_error": OUTAGE, "model_error": None}
    ]
    assert not rows[4].attempts and rows[4].attempt is None and len(rows) == 7  # the input rows are left as they were
    assert latest_attempts(latest) == latest  # a canonical file reads the same


def test_report_of_a_killed_resume_counts_each_episode_once(tmp_path, capsys):
    directory = write_results(tmp_path / "run", killed_resume_rows())
    assert report_main([str(directory)]) == 0
    assert capsys.readouterr().out.startswith("4 episodes;")
    md = (directory / report.REPORT_FILE).read_text(encoding="utf-8")
    assert "3 episodes scored in 1 configuration; 1 infrastructure error excluded from the scores" in md
    assert "| C2 | `full` | scripted:recall=2e6 | rule | hotel_50 | 4 | 1 | 3 | 1 |" in md
    assert "3 episodes needed a retry (`--resume`)" in md
    assert "3 rows of `results.jsonl` held earlier attempts of an episode (a run stopped during `--resume`)" in md
    # the error of the last attempt, with its status once
    assert "request refused with HTTP 400: {'error'" in md and "HTTP 400: HTTP 400" not in md


def test_the_run_page_shows_each_episode_once(tmp_path, capsys):
    directory = write_results(tmp_path / "run", killed_resume_rows())
    assert view_main([str(directory)]) == 0
    assert capsys.readouterr().out.startswith("4 episodes;")
    page = (directory / "view.html").read_text(encoding="utf-8")
    overview = json.loads(page.split('<script type="application/json" id="overview-data">')[1].split("</script>")[0])
    assert [(e["task_id"], e["outcome"]) for e in overview["episodes"]] == [
        ("hotel-000", "success"),
        ("hotel-001", "success"),
        ("hotel-002", "premature_termination"),
        ("hotel-003", "infra_error"),
    ]


def test_error_text_names_the_status_once():
    assert error_text(OLD_ERROR) == (
        "fake-model at http://127.0.0.1:1/v1: request refused with HTTP 400: "
        "{'error': {'message': 'Invalid value for content.'}}"
    )
    assert error_text(OUTAGE) == OUTAGE
    assert error_text("HTTP 500: HTTP 500: HTTP 500: boom") == "HTTP 500: boom"
    assert error_text("HTTP 500: HTTP 502: two statuses") == "HTTP 500: HTTP 502: two statuses"  # different: kept
    assert error_text(None) == ""
    assert json.dumps(error_text(OLD_ERROR)).count("400") == 1
