"""erp-sim eval / sweep / report: determinism, kill-and-resume, the OpenAI path, infra errors, Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest
from harness_support import eval_command, one_retry_models, recording, script_server_with_scripted_agent, started_eval
from usage_support import usage_error

import erp_sim.envs  # noqa: F401  (registers the ids this file's gym.make uses; nothing else here imports it)
from erp_sim.agents.evaluation.episode_row import read_results, read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.report.cli import main as report_main
from erp_sim.agents.evaluation.sweep import grid_specs
from erp_sim.agents.evaluation.sweep import main as sweep_main
from erp_sim.agents.policies import PolicySpecError

SMALL = ["--tasks", "hotel_50:hotel-000,hotel-021", "--runs", "2", "--quiet", "--concurrency", "1"]


def deterministic(path: Path) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "timing"} for row in read_rows(path / "results.jsonl")]


def test_two_runs_give_byte_identical_deterministic_results_and_a_report(tmp_path, capsys):
    for name in ("a", "b"):
        assert eval_main(["--configs", "C1,C3", *SMALL, "--out", str(tmp_path / name), "--concurrency", "2"]) == 0
    a, b = deterministic(tmp_path / "a"), deterministic(tmp_path / "b")
    assert json.dumps(a) == json.dumps(b) and len(a) == 8
    assert {r["config"] for r in a} == {"C1", "C3"}
    assert all(r["failure_category"] == "stalled_unanswered_question" for r in a if r["config"] == "C1")
    row = a[0]
    assert set(row) >= {
        "config",
        "policy",
        "user",
        "agent",
        "task_set",
        "task_id",
        "run",
        "seed",
        "grade",
        "metrics",
        "termination",
        "failure_category",
        "infra_error",
        "trajectory",
    }
    assert (tmp_path / "a" / row["trajectory"]).read_bytes() == (tmp_path / "b" / row["trajectory"]).read_bytes()
    report = (tmp_path / "a" / "report.md").read_text()
    assert "| C3 |" in report and (tmp_path / "a" / "success_vs_tokens.png").stat().st_size > 1000
    assert "C3" in capsys.readouterr().out
    assert report_main([str(tmp_path / "a")]) == 0


def test_forked_workers_give_what_one_process_gives_and_the_run_page_waits_for_view(tmp_path):
    """Two workers (forked: an offline run) write the rows and trajectory bytes one process writes; the run
    page is written only with --view."""
    common = ["--configs", "C3,C4", "--tasks", "hotel_50:hotel-000,hotel-021", "--quiet"]
    assert eval_main([*common, "--concurrency", "1", "--view", "--out", str(tmp_path / "one")]) == 0
    assert eval_main([*common, "--concurrency", "2", "--out", str(tmp_path / "two")]) == 0
    one, two = deterministic(tmp_path / "one"), deterministic(tmp_path / "two")
    assert one == two and len(one) == 4
    for row in one:
        assert (tmp_path / "one" / row["trajectory"]).read_bytes() == (
            tmp_path / "two" / row["trajectory"]
        ).read_bytes()
    assert (tmp_path / "one" / "view.html").is_file() and not (tmp_path / "two" / "view.html").exists()


def test_existing_results_need_resume(tmp_path, capsys):
    out = ["--configs", "C3", "--tasks", "hotel_50:hotel-000", "--runs", "1", "--quiet", "--out", str(tmp_path)]
    eval_main(out)
    assert "exists: pass --resume to continue it" in usage_error(capsys, eval_main, out)
    assert eval_main([*out, "--resume"]) == 0 and len(read_rows(tmp_path / "results.jsonl")) == 1


def test_a_killed_run_resumes_with_every_episode_exactly_once(tmp_path):
    command = eval_command("--runs 2 --concurrency 1", tmp_path)
    process = started_eval(command, rows=4, seconds=120)
    results = tmp_path / "results.jsonl"
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = len(read_rows(results))
    assert 4 <= before < 30, "the run must be killed mid-way"
    subprocess.run(
        [*command, "--resume"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600
    )
    counts = Counter(row.episode_key for row in read_results(results).rows)
    assert len(counts) == 30 and set(counts.values()) == {1}


def test_sweep_runs_the_grid_and_reports_a_heatmap(tmp_path):
    assert grid_specs("last_n_summary", ["n=3,5", "w=1,-1"]) == [
        "last_n_summary:n=3,w=1",
        "last_n_summary:n=3,w=-1",
        "last_n_summary:n=5,w=1",
        "last_n_summary:n=5,w=-1",
    ]
    with pytest.raises(PolicySpecError, match="q"):
        grid_specs("last_n_summary", ["q=1"])
    with pytest.raises(ValueError, match="NAME=V1"):
        grid_specs("last_n_summary", ["n"])
    assert (
        sweep_main(
            ["--grid", "n=3,5", "--grid", "w=1", "--tasks", "hotel_50:hotel-000", "--quiet", "--out", str(tmp_path)]
        )
        == 0
    )
    assert len(read_rows(tmp_path / "results.jsonl")) == 2 and (tmp_path / "sweep_heatmap.png").exists()


def test_a_sweep_on_a_split_is_labelled_with_it_and_old_rows_without_it_still_resume(tmp_path, capsys):
    """Rows of a split run keep it (``split``), so the report's task set and the sweep's heading say
    ``Airfare:test``; a run on task ids has no ``split`` key, and a results file from before the field
    (the key dropped) resumes and reports as the set."""
    sweep = ["--grid", "n=2,3", "--grid", "w=1", "--quiet", "--concurrency", "1"]
    assert sweep_main([*sweep, "--tasks", "Airfare:test", "--out", str(tmp_path / "split")]) == 0
    rows = read_rows(tmp_path / "split" / "results.jsonl")
    assert len(rows) == 18 and {(r["task_set"], r["split"]) for r in rows} == {("Airfare", "test")}
    report = (tmp_path / "split" / "report.md").read_text()
    assert "| `last_n_summary:n=2,w=1` | scripted | rule | Airfare:test | 9 |" in report
    assert "### `last_n_summary:n=*,w=*` (agent scripted, user rule, Airfare:test)" in report
    ids = ["--tasks", "hotel_50:hotel-000", "--out", str(tmp_path / "ids")]
    assert sweep_main([*sweep, *ids]) == 0
    assert all("split" not in row for row in read_rows(tmp_path / "ids" / "results.jsonl"))
    assert "(agent scripted, user rule, hotel_50)" in (tmp_path / "ids" / "report.md").read_text()
    results = tmp_path / "split" / "results.jsonl"  # as written before rows kept the split
    old = [{k: v for k, v in row.items() if k != "split"} for row in rows]
    results.write_text("".join(json.dumps(row) + "\n" for row in old))
    capsys.readouterr()
    assert sweep_main([*sweep, "--tasks", "Airfare:test", "--out", str(tmp_path / "split"), "--resume"]) == 0
    assert "0 episodes in" in capsys.readouterr().out and read_rows(results) == old
    assert "(agent scripted, user rule, Airfare)" in (tmp_path / "split" / "report.md").read_text()
    assert report_main([str(tmp_path / "split")]) == 0


def test_eval_of_an_openai_compatible_model_with_infra_errors_retried_on_resume(
    tmp_path, fake_openai_server, monkeypatch
):
    one_retry_models(monkeypatch, backoff_base=0.0)
    env = gym.make("erp_sim/ExpenseItemization-v0")
    argv = [
        *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent openai:fake-model".split(),
        *recording(fake_openai_server.base_url, tmp_path),
    ]
    fake_openai_server.fail(500, times=2)  # first attempt and its one retry fail: an infrastructure error
    eval_main(argv)
    [row] = read_rows(tmp_path / "run" / "results.jsonl")
    assert row["infra_error"] and row["termination"] == "infra_error"
    script_server_with_scripted_agent(fake_openai_server, env, "hotel-003")
    eval_main([*argv, "--resume"])
    [row] = read_rows(tmp_path / "run" / "results.jsonl")
    assert row["infra_error"] is None and row["grade"]["success"]
    # The recorded cassette replays the same episode offline.
    replay = [
        *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent".split(),
        f"replay:{tmp_path / 'rec'}",
        "--out",
        str(tmp_path / "replay"),
    ]
    fake_openai_server.fail_always(500)
    eval_main(replay)
    original, replayed = deterministic(tmp_path / "run"), deterministic(tmp_path / "replay")
    assert original[0]["attempt"] == 2 and original[0]["attempts"][0]["termination"] == "infra_error"
    assert original[0]["sampling"]["agent"] == {
        "model": "fake-model",
        "params": {"temperature": 0.0},
        "timeout": 300.0,
        "max_retries": 1,
        "base_url": fake_openai_server.base_url,
    }
    assert original[0]["sampling"]["cassettes"] == str(tmp_path / "rec")
    # the replay reports the recorded models and settings and the cassette folder: only the attempts differ
    same = {"attempt": 0, "attempts": []}
    assert [r | same for r in original] == [r | same for r in replayed]


@pytest.mark.xdist_group("ray")  # one local Ray instance at a time
def test_ray_backend_runs_episodes_on_a_local_ray_instance(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'erp-sim[ray]')")
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    assert (
        eval_main(
            [
                *"--configs C3 --tasks hotel_50:hotel-000,hotel-001 --runs 1 --quiet --backend ray --out".split(),
                str(tmp_path),
            ]
        )
        == 0
    )
    rows = read_rows(tmp_path / "results.jsonl")
    assert len(rows) == 2 and all(r["grade"]["success"] for r in rows)


def test_the_printed_table_has_the_columns_and_number_formats_of_the_readme_copy(tmp_path, capsys):
    import re

    assert (
        eval_main(
            [
                *"--configs C1,C2 --tasks hotel_50:hotel-000 --runs 1 --quiet --concurrency 1 --out".split(),
                str(tmp_path),
            ]
        )
        == 0
    )
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8").splitlines()
    start = readme.index(printed[0])  # the README's copy: the same header line ...
    copy = [line for line in readme[start : start + 12] if line.startswith("|")][: len(printed)]
    assert copy[1] == printed[1]  # ... and the same alignment

    def shape(line: str) -> list[str]:  # each cell's format: 100.0%, 61,686,467, 36.7 or text
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        return [
            re.sub(r"\d", "9", re.sub(r"^\d{1,3}(,\d{3})*$", "N", cell)) if cell[:1].isdigit() else "text"
            for cell in cells
        ]

    assert [shape(line)[:3] for line in printed[2:]] == [["text"] * 3] * 2
    assert all(shape(line)[8] == "9 (deterministic agent)" for line in copy[2:] + printed[2:])
    for line in copy[2:] + printed[2:]:
        cells = shape(line)
        assert re.fullmatch(r"9+\.9%", cells[3]) and re.fullmatch(r"9+\.9%", cells[4]), line
        assert cells[5] == cells[6] == "N" and re.fullmatch(r"9+\.9", cells[7]), line


def test_a_deterministic_agent_runs_once_by_default_and_runs_n_still_runs_n(tmp_path, capsys):
    from erp_sim.agents.evaluation.runs import default_runs

    assert default_runs("scripted") == 1
    assert default_runs("scripted:recall=2e6") == default_runs("openai:gpt-4.1") == default_runs("replay:rec") == 5
    tasks = ["--configs", "C3", "--tasks", "hotel_50:hotel-000", "--quiet", "--concurrency", "1"]
    assert eval_main([*tasks, "--out", str(tmp_path / "once")]) == 0
    assert [r["run"] for r in read_rows(tmp_path / "once" / "results.jsonl")] == [0]
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| C3 |"))
    assert line.startswith("| C3 | last_n:n=5 | rule | 100.0% |") and line.endswith("| 1 (deterministic agent) |")
    assert eval_main([*tasks, "--runs", "2", "--out", str(tmp_path / "twice")]) == 0
    assert [r["run"] for r in read_rows(tmp_path / "twice" / "results.jsonl")] == [0, 1]
    assert "| 2 (deterministic agent) |" in capsys.readouterr().out


@pytest.mark.xdist_group("ray")
def test_ray_backend_does_not_retry_a_killed_worker_and_shuts_ray_down(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'erp-sim[ray]')")
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    from ray_support import run_or_die

    from erp_sim.agents.evaluation.evaluate import _execute_ray, plan

    specs = plan(
        [("C3", "last_n:n=5", "rule")],
        "hotel_50",
        ["hotel-000", "hotel-001"],
        1,
        0,
        agent="scripted",
        max_steps=200,
        verbosity="default",
        out_dir=str(tmp_path),
        base_url=None,
        record_dir=None,
        context_window=None,
    )
    rows = []
    with pytest.raises(SystemExit, match="Ray worker died.*--resume"):  # noqa: PT012 (rows seen before the death count)
        for row in _execute_ray(specs, None, run=run_or_die):
            rows.append(row)
    assert [r["task_id"] for r in rows] in ([], ["hotel-000"])  # the killed episode was not run again
    assert not ray.is_initialized()  # shut down on the way out


def test_resume_with_nothing_left_starts_no_backend(tmp_path, monkeypatch, capsys):
    import erp_sim.agents.evaluation.evaluate as evaluate_module

    args = ["--configs", "C3", "--tasks", "hotel_50:hotel-000", "--runs", "1", "--quiet", "--out", str(tmp_path)]
    assert eval_main(args) == 0
    assert "\n1 episode in " in capsys.readouterr().out  # issue 39: not "1 episodes"
    monkeypatch.setattr(evaluate_module, "execute", lambda *a, **k: pytest.fail("a backend started with nothing left"))
    assert eval_main([*args, "--resume", "--backend", "ray"]) == 0
    out = capsys.readouterr().out
    assert "\n0 episodes in " in out and "(1 in the results)" in out


@pytest.mark.xdist_group("ray")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_no_ray_process_outlives_a_killed_eval(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'erp-sim[ray]')")
    import glob

    from erp_sim.agents.evaluation.ray_reaper import session_holders

    proc = subprocess.Popen(
        [
            sys.executable,
            *"-m erp_sim.agents.cli eval --configs C2,C3 --tasks hotel_50 --runs 5 --quiet --backend ray --out".split(),
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "RAY_DISABLE_USAGE_STATS": "1"},
    )
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "results.jsonl").exists() or not (tmp_path / "results.jsonl").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "the eval ended before running an episode"
            time.sleep(0.2)
        (session,) = [os.path.realpath(p) for p in glob.glob(f"/tmp/ray/session_*_{proc.pid}")]
        assert len(session_holders(session)) >= 3  # Ray's raylet, GCS, agents and workers
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 60
    while session_holders(session) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not session_holders(session), "Ray processes outlived the killed eval"
