"""Kill safety and attempts: workers die with the eval, the lock, replay of the attempt that made the row."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest
from fake_openai_server import FakeOpenAIServer
from harness_support import eval_command, one_retry_models, recording, script_server_with_scripted_agent, started_eval
from usage_support import usage_error

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.output_lock import LOCK_FILE, eval_lock, same_file


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return "resource_tracker"  # gone already: not a worker to kill


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*") if p.is_file()}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
def test_sigkill_of_the_eval_kills_its_workers_and_nothing_is_written_afterwards(tmp_path):
    process = started_eval(eval_command("--runs 3 --concurrency 2", tmp_path), rows=2, seconds=300)
    workers = _children(process.pid)
    assert len(workers) >= 2, "the eval runs its episodes in worker processes"
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "workers outlived the killed eval"
    before = _snapshot(tmp_path)
    time.sleep(3)
    assert _snapshot(tmp_path) == before, "something was written after the eval was killed"
    assert len(read_rows(tmp_path / "results.jsonl")) < 45


def test_a_second_eval_on_a_directory_in_use_stops_before_running_anything(tmp_path):
    with (
        eval_lock(tmp_path),
        pytest.raises(SystemExit, match=f"in use by a running erp-sim eval \\(pid {os.getpid()}\\)"),
    ):
        eval_main(
            ["--configs", "C3", "--tasks", "hotel_50:hotel-000", "--runs", "1", "--quiet", "--out", str(tmp_path)]
        )
    assert not (tmp_path / "results.jsonl").exists()


def test_replay_follows_the_attempt_that_made_the_row_and_the_history_is_kept(tmp_path, monkeypatch):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    with FakeOpenAIServer(random_tool_call_ids=True) as server:  # ids differ between attempts, as on real servers
        one_retry_models(monkeypatch, backoff_base=0.0)
        argv = [
            *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent openai:fake-model".split(),
            *recording(server.base_url, tmp_path),
        ]
        reference = script_server_with_scripted_agent(server, env, "hotel-003")
        calls = sum(m["role"] == "assistant" for m in reference.messages)
        # first attempt: three answers, then the service fails for good (an infrastructure error)
        server._replies = type(server._replies)(list(server._replies)[:3])
        server.fail(500, times=2)
        eval_main(argv)
        [row] = read_rows(tmp_path / "run" / "results.jsonl")
        assert row["termination"] == "infra_error"
        server._replies.clear()
        script_server_with_scripted_agent(server, env, "hotel-003")
        eval_main([*argv, "--resume"])
        [row] = read_rows(tmp_path / "run" / "results.jsonl")
        assert row["grade"]["success"] and row["attempt"] == 2
        assert [a["termination"] for a in row["attempts"]] == ["infra_error"]
        assert "HTTP 500" in row["attempts"][0]["infra_error"]
        cassettes = tmp_path / "rec" / "cassettes" / "C2"
        assert sorted(p.name for p in cassettes.iterdir()) == ["hotel-003-run0.attempt1.jsonl", "hotel-003-run0.jsonl"]
        assert len((cassettes / "hotel-003-run0.jsonl").read_text().splitlines()) == calls
        server.fail_always(500)  # replay must never touch the server
        eval_main(
            [
                *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent".split(),
                f"replay:{tmp_path / 'rec'}",
                "--out",
                str(tmp_path / "replay"),
            ]
        )
    [replayed] = read_rows(tmp_path / "replay" / "results.jsonl")
    assert replayed["grade"] == row["grade"] and replayed["metrics"] == row["metrics"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "needed a retry" in report


def test_a_replay_miss_or_a_harness_bug_is_that_episodes_unscored_row_and_the_run_goes_on(
    tmp_path, monkeypatch, capsys
):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    common = ["--configs", "C2", "--runs", "1", "--quiet", "--concurrency", "1"]
    with FakeOpenAIServer() as server:
        one_retry_models(monkeypatch, backoff_base=0.0)
        for task_id in ("hotel-003", "hotel-004"):
            script_server_with_scripted_agent(server, env, task_id)
        argv = [*common, "--tasks", "hotel_50:hotel-003,hotel-004", "--agent", "openai:fake-model"]
        assert eval_main([*argv, *recording(server.base_url, tmp_path)]) == 0
    cassette = tmp_path / "rec" / "cassettes" / "C2" / "hotel-003-run0.jsonl"
    cassette.write_text("".join(cassette.read_text().splitlines(keepends=True)[:3]))  # the run will leave it at step 3
    capsys.readouterr()
    # hotel-005 was never recorded: no cassette at all
    assert (
        eval_main(
            [
                *common,
                "--tasks",
                "hotel_50:hotel-003,hotel-004,hotel-005",
                "--agent",
                f"replay:{tmp_path / 'rec'}",
                "--out",
                str(tmp_path / "replay"),
            ]
        )
        == 0
    )
    rows = {row["task_id"]: row for row in read_rows(tmp_path / "replay" / "results.jsonl")}
    assert rows["hotel-004"]["grade"]["success"] and rows["hotel-004"]["infra_error"] is None
    assert rows["hotel-003"]["termination"] == "infra_error"
    assert rows["hotel-003"]["infra_error"].startswith(f"cassette replay miss: {cassette}: step 3: ")
    assert "no cassette for this episode" in rows["hotel-005"]["infra_error"]
    assert "2 of 3 episodes were not scored" in capsys.readouterr().err
    assert "cassette replay miss" in (tmp_path / "replay" / "report.md").read_text()

    # a bug in the harness (here: the scripted agent raises on hotel-001) ends that episode only
    from erp_sim.agents.scripted import ScriptedAgent

    act = ScriptedAgent.act

    calls = {"n": 0}

    def broken_on_the_first_episode(self, transcript, tools):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyError("a bug in the agent")
        return act(self, transcript, tools)

    monkeypatch.setattr(ScriptedAgent, "act", broken_on_the_first_episode)
    assert eval_main([*common, "--tasks", "hotel_50:hotel-001,hotel-002", "--out", str(tmp_path / "bug")]) == 0
    first, second = read_rows(tmp_path / "bug" / "results.jsonl")
    assert first["termination"] == "harness_error" and first["failure_category"] is None
    assert (
        first["infra_error"].startswith("harness error: KeyError: 'a bug in the agent'")
        and "broken_on_the_first_episode" in first["infra_error"]
    )
    assert second["grade"]["success"] and second["infra_error"] is None
    monkeypatch.setattr(ScriptedAgent, "act", act)
    assert (
        eval_main([*common, "--tasks", "hotel_50:hotel-001,hotel-002", "--out", str(tmp_path / "bug"), "--resume"]) == 0
    )
    assert all(row["grade"]["success"] for row in read_rows(tmp_path / "bug" / "results.jsonl"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
def test_a_killed_worker_stops_the_eval_with_one_line_and_resume_finishes_the_rest(tmp_path):
    args = [
        sys.executable,
        *"-m erp_sim.agents.cli eval --configs C2,C4 --tasks hotel_50:hotel-010,hotel-020,hotel-030,hotel-040 --runs 2 --quiet --concurrency 2 --out".split(),
        str(tmp_path),
    ]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not results.exists() or not results.read_text().strip()):
        time.sleep(0.05)
    workers = [pid for pid in _children(process.pid) if "resource_tracker" not in _command_line(pid)]
    assert workers, "the eval runs its episodes in worker processes"
    os.kill(workers[0], signal.SIGKILL)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 1 and "Traceback" not in stderr, stderr
    assert "a worker process died" in stderr and "--resume" in stderr
    finished = len(read_rows(results))
    assert subprocess.run([*args, "--resume"], capture_output=True, timeout=600).returncode == 0
    rows = read_rows(results)
    assert len(rows) == 16 and len({(r["config"], r["task_id"], r["run"]) for r in rows}) == 16 and finished < 16


def test_a_finished_eval_removes_its_lock_and_a_later_one_takes_it_again(tmp_path):
    argv = [*"--configs C3 --tasks hotel_50:hotel-000 --runs 1 --quiet --concurrency 1 --out".split(), str(tmp_path)]
    assert eval_main(argv) == 0
    assert (tmp_path / "results.jsonl").exists() and not (tmp_path / LOCK_FILE).exists()
    assert eval_main([*argv, "--resume"]) == 0
    assert not (tmp_path / LOCK_FILE).exists()
    # an eval that opened the lock file just before its holder removed it must not count the old file as held
    path = tmp_path / LOCK_FILE
    with path.open("a+") as stale:
        path.unlink()
        path.touch()
        assert not same_file(stale, path)
    with eval_lock(tmp_path), path.open() as current:
        assert same_file(current, path) and current.read() == str(os.getpid())
    assert not path.exists()


def test_an_unreadable_cassette_line_fails_only_its_episode_naming_the_file_and_line(tmp_path, monkeypatch, capsys):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    common = ["--configs", "C2", "--tasks", "hotel_50:hotel-003,hotel-004", "--runs", "1", "--quiet"]
    with FakeOpenAIServer() as server:
        one_retry_models(monkeypatch)
        for task_id in ("hotel-003", "hotel-004"):
            script_server_with_scripted_agent(server, env, task_id)
        argv = [*common, "--concurrency", "1", "--agent", "openai:fake-model"]
        assert eval_main([*argv, *recording(server.base_url, tmp_path)]) == 0
    cassette = tmp_path / "rec" / "cassettes" / "C2" / "hotel-003-run0.jsonl"
    recorded = cassette.read_bytes()
    lines = recorded.decode().splitlines(keepends=True)
    last = len(lines)
    third = json.loads(lines[2])
    third["response"]["usage"]["input_tokens"] = "n/a"
    damaged = {
        "cut short": (recorded[:-300], f"line {last}: not JSON, cut short?"),
        "no key": (recorded + b'{"step": 99}\n', f'line {last + 1}: no "key"'),
        "huge number": (recorded + b'{"step": ' + b"9" * 5000 + b"}\n", f"line {last + 1}: not readable ("),
        "deep nesting": (recorded + b"[" * 100_000 + b"]" * 100_000 + b"\n", f"line {last + 1}: nested too deeply"),
        "bad response": (
            "".join([*lines[:2], json.dumps(third) + "\n", *lines[3:]]).encode(),
            "line 3: its response does not validate (usage.input_tokens: ",
        ),
    }
    replay = [*common, "--agent", f"replay:{tmp_path / 'rec'}"]
    for name, (content, problem) in damaged.items():
        cassette.write_bytes(content)
        capsys.readouterr()
        out = tmp_path / name.replace(" ", "-")
        assert eval_main([*replay, "--out", str(out)]) == 0, name  # both concurrency settings: the default 2
        assert "Traceback" not in capsys.readouterr().err
        rows = {row["task_id"]: row for row in read_rows(out / "results.jsonl")}
        assert rows["hotel-004"]["grade"]["success"] and rows["hotel-004"]["infra_error"] is None
        assert rows["hotel-003"]["termination"] == "infra_error"
        assert rows["hotel-003"]["infra_error"].startswith(f"cassette unreadable: {cassette}: {problem}"), name
        assert "\n" not in rows["hotel-003"]["infra_error"]
    cassette.write_bytes(recorded)  # mended: --resume runs the failed episode again
    assert eval_main([*replay, "--out", str(out), "--resume"]) == 0
    rows = {row["task_id"]: row for row in read_rows(out / "results.jsonl")}
    assert rows["hotel-003"]["grade"]["success"] and rows["hotel-003"]["attempt"] == 2


def test_another_run_recording_into_the_same_directory_is_refused_and_the_first_stays_replayable(
    tmp_path, monkeypatch, capsys
):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    rec, first = tmp_path / "rec", tmp_path / "A"
    with FakeOpenAIServer() as server:
        one_retry_models(monkeypatch)
        script_server_with_scripted_agent(server, env, "hotel-003")
        argv = [
            *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent openai:fake-model".split(),
            "--base-url",
            server.base_url,
            "--record",
            str(rec),
        ]
        assert eval_main([*argv, "--out", str(first)]) == 0
        recorded = _snapshot(rec)
        assert json.loads((rec / "cassettes" / "run.json").read_text()) == {"out": str(first.resolve())}
        # the same models, the same server, another --out: refused before any episode, nothing moved
        assert usage_error(capsys, eval_main, [*argv, "--out", str(tmp_path / "B")]) == (
            f"--record {rec} holds the recording of the run in {first.resolve()}, whose rows replay "
            "from it; record into another directory (a --resume of that run records into it again)"
        )
        assert _snapshot(rec) == recorded and not (tmp_path / "B").exists()
        # a recording made before runs were noted: the run whose rows name it may resume, no other run
        (rec / "cassettes" / "run.json").unlink()
        message = usage_error(capsys, eval_main, [*argv, "--out", str(tmp_path / "B")])
        assert "holds cassettes of an earlier run (recorded before runs were noted)" in message
        assert eval_main([*argv, "--out", str(first), "--resume"]) == 0
        assert json.loads((rec / "cassettes" / "run.json").read_text()) == {"out": str(first.resolve())}
    assert sorted(p.name for p in (rec / "cassettes" / "C2").iterdir()) == ["hotel-003-run0.jsonl"]
    replay = "--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent".split()
    assert eval_main([*replay, f"replay:{rec}", "--out", str(tmp_path / "replay")]) == 0
    [row] = read_rows(tmp_path / "replay" / "results.jsonl")
    [original] = read_rows(first / "results.jsonl")
    assert row["grade"]["success"] and row["metrics"] == original["metrics"]


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_ctrl_c_says_in_one_line_what_was_saved_and_how_to_go_on(tmp_path, concurrency):
    """Issue 39, point 3: Ctrl-C printed a 20-line KeyboardInterrupt traceback; now one line and exit 130, and the
    command it names finishes the run, byte-identical to an uninterrupted one but for timing."""
    out = tmp_path / "run"
    argv = ["--configs", "C2", "--tasks", "hotel_50:hotel-010,hotel-020,hotel-030,hotel-040,hotel-049", "--quiet",
            "--concurrency", concurrency, "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "erp_sim.agents.cli", "eval", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, as a terminal's: Ctrl-C signals every process in it
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not results.exists() or not results.read_text().strip()):
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    saved = len(read_rows(results))
    command = f"erp-sim eval {' '.join(argv)} --resume"
    assert stderr.strip().splitlines() == [
        f"interrupted: {saved} of 5 episodes saved in {out}; continue with `{command}`"
    ]
    resume = subprocess.run(
        [sys.executable, "-m", "erp_sim.agents.cli", "eval", *argv, "--resume"], capture_output=True
    )
    assert resume.returncode == 0, resume.stderr
    whole = tmp_path / "whole"
    argv[-1] = str(whole)
    assert (
        subprocess.run([sys.executable, "-m", "erp_sim.agents.cli", "eval", *argv], capture_output=True).returncode == 0
    )
    untimed = [{k: v for k, v in row.items() if k != "timing"} for row in read_rows(results)]
    assert untimed == [{k: v for k, v in row.items() if k != "timing"} for row in read_rows(whole / "results.jsonl")]
