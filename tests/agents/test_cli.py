"""The ``erp-sim`` commands where a newcomer meets them: one-line errors, closed pipes, plain help texts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from erp_sim.agents import demo


def run_into_closed_pipe(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """``erp-sim ARGS | head -0``: stdout is a pipe whose reader has already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "erp_sim.agents.cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            input=stdin,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("command", [["demo"], ["play", "--task", "3"]])
def test_a_reader_that_goes_away_ends_the_command_quietly(command):
    done = run_into_closed_pipe(*command, stdin="quit\n")
    assert done.returncode == 1 and done.stderr == ""  # as the Python docs recommend: no BrokenPipeError traceback


def test_demo_runs_on_any_task_set_from_its_first_task(capsys):
    assert demo.main(["--task-set", "Meals", "--verbosity", "compact"]) == 0
    out = capsys.readouterr().out
    assert "Meals expense" in out and '"strict_success": true' in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "nosuch"], "No task 'nosuch' in task set 'hotel_50'."),
        (
            ["--task-set", "nosuch"],
            "Unknown task set 'nosuch'. Known: bank_recon_50, bank_recon_long, expense_types, hotel_50,",
        ),
        (["--task-set", "Meals", "--task", "99"], "Task index 99 out of range: Meals has 20 tasks."),
    ],
)
def test_demo_names_a_bad_task_or_task_set_in_one_line(capsys, args, message):
    assert demo.main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"erp-sim demo: {message}") and captured.err.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--policy", "last_n:q=3"],
        ["eval", "--configs", "C9"],
        ["sweep", "--family", "last_n", "--grid", "q=1,2"],
    ],
)
def test_a_policy_spec_mistake_is_one_line_without_the_usage_block(capsys, tmp_path, args):
    from erp_sim.agents.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([*args, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and not (tmp_path / "out").exists()
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "usage:" not in captured.err, captured.err
    assert captured.err.startswith(f"erp-sim {args[0]}: error: ") and (
        "known: C1" in captured.err or "parameters: n" in captured.err
    )


def every_command() -> list[list[str]]:
    from erp_sim.agents.acon.cli import SUBCOMMANDS
    from erp_sim.agents.cli import COMMANDS

    return [[name] for name in COMMANDS if name != "acon"] + [["acon", name] for name in SUBCOMMANDS]


@pytest.mark.parametrize("command", every_command(), ids=" ".join)
def test_help_texts_are_plain_words_without_rest_markup(capsys, command):
    from erp_sim.agents.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and f"erp-sim {' '.join(command)}" in out
    assert "`" not in out and not re.search(r":(func|class|mod|data|meth):", out), out


def test_show_names_the_configurations_and_runs_that_exist(tmp_path, capsys):
    from erp_sim.agents.cli import main

    rows = [
        {"task_id": "hotel-003", "config": config, "policy": policy, "run": run, "trajectory": "t.json.gz"}
        for config, policy in (("C2", "full"), ("C4", "last_n_summary:n=5,w=3"))
        for run in (0, 1)
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert main(["show", str(tmp_path), "hotel-003", "--config", "C9"]) == 2
    err = capsys.readouterr().err
    assert err == "erp-sim show: hotel-003 did not run in configuration 'C9'; it ran in C2, C4\n"
    assert main(["show", str(tmp_path), "hotel-003", "--config", "C4", "--run", "7"]) == 2
    assert capsys.readouterr().err == "erp-sim show: hotel-003 has no run 7 in C4; its runs: 0, 1\n"


@pytest.mark.parametrize(
    "options, refusal",
    [
        (
            ["--grade-file", "/nonexistent-dir/grades.jsonl"],
            "--grade-file /nonexistent-dir/grades.jsonl: cannot append",
        ),
        (["--grade-file", "."], "--grade-file .: not a regular file"),
        (["--grade-file", "/dev/full"], "--grade-file /dev/full: not a regular file"),
        (["--max-request-bytes", "0"], "--max-request-bytes must be at least 1,024, got 0"),
        (["--max-request-bytes", "-1"], "--max-request-bytes must be at least 1,024, got -1"),
        (["--idle-timeout", "nan"], "--idle-timeout must be 0 (never) or a number of seconds, got nan"),
        (["--idle-timeout", "-5"], "--idle-timeout must be 0 (never) or a number of seconds, got -5.0"),
    ],
)
def test_serve_refuses_settings_that_would_lose_grades_or_refuse_every_call(options, refusal):
    """An unwritable grade file used to be found out only by a log line per grade, all of them lost."""
    if options[-1] == "/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    done = subprocess.run(
        [sys.executable, "-m", "erp_sim.agents.cli", "serve", *options],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and refusal in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("closed", [0, 1])
def test_serve_on_stdio_with_stdin_or_stdout_closed_says_so_in_one_line(closed):
    """It raised AttributeError on sys.stdin being None (a supervisor that starts it with fd 0 closed)."""
    done = subprocess.run(
        [sys.executable, "-m", "erp_sim.agents.cli", "serve"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(closed),
    )
    assert done.returncode == 2 and "stdio needs an open stdin and stdout" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_refuses_a_fifo_as_grade_file_instead_of_waiting_for_a_reader(tmp_path):
    fifo = tmp_path / "grades.fifo"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "erp_sim.agents.cli", "serve", "--grade-file", str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,  # it used to wait here for ever, for a reader of the FIFO
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "not a regular file" in done.stderr


@pytest.mark.parametrize("serve", [["serve", "--http"], pytest.param(["serve", "--openenv"], marks=pytest.mark.extras)])
@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_refuses_a_port_out_of_range_in_one_line(serve, port):
    """99999 used to be bound as 34463 (modulo 65536): a server on a port nobody asked for."""
    if serve[-1] == "--openenv":
        pytest.importorskip("openenv", reason="the openenv extra")
    done = subprocess.run(
        [sys.executable, "-m", "erp_sim.agents.cli", *serve, "--port", port],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "is not a port number" in done.stderr and "Traceback" not in done.stderr


def test_report_show_and_view_take_the_results_file_for_its_folder(tmp_path, capsys):
    """Issue 39, point 5: `erp-sim report runs/eval/results.jsonl` advised running eval with that --out."""
    from erp_sim.agents.cli import main

    run = tmp_path / "run"
    assert (
        main(["eval", "--configs", "C2", "--tasks", "hotel_50:hotel-3", "--runs", "1", "--quiet", "--out", str(run)])
        == 0
    )
    assert "\n1 episode in " in capsys.readouterr().out  # not "1 episodes"
    results = str(run / "results.jsonl")
    assert main(["report", results]) == 0
    assert capsys.readouterr().out == f"1 episode; wrote {run / 'report.md'}\n"
    assert main(["view", results, "--out", str(tmp_path / "v.html")]) == 0 and (tmp_path / "v.html").is_file()
    assert main(["show", results, "hotel-003"]) == 0 and "hotel-003" in capsys.readouterr().out
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"erp-sim report: {tmp_path} has no results.jsonl (pass the folder erp-sim eval --out wrote, or its "
        "results.jsonl)\n"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "--tasks", "nosuchset"], "--tasks nosuchset: Unknown task set 'nosuchset'."),
        (["eval", "--tasks", "hotel_50:hotel-0077"], "did you mean hotel-007, "),
        (["eval", "--agent", "mystery"], "unknown agent 'mystery'"),
        (["sweep", "--agent", "mystery"], "unknown agent 'mystery'"),
        (["scale", "--price", "agent=2.5,5,10"], "cached input"),
        (["eval", "--configs", "C9"], "known: C1"),
        (
            [
                "acon",
                "optimize",
                *"--agent openai:a --compressor openai:c --optimizer openai:o --tasks hotel_50:hotel-000".split(),
                "--model-param",
                "max_tokens=5",
                "--model-param",
                "max_completion_tokens=9",
            ],
            "both",
        ),
    ],
)
def test_every_usage_error_ends_as_argparse_ends_one(capsys, tmp_path, args, message):
    """Issue 39, point 5: a bad --tasks or --agent exited 1 with `erp-sim: ...` where a bad --configs or --policy
    exited 2 with `erp-sim eval: error: ...`; now all exit 2 in argparse's form, and write nothing."""
    from usage_support import usage_error

    from erp_sim.agents.cli import main

    assert message in usage_error(capsys, main, [*args, "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
