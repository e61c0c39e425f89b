"""``erp-sim play``: a terminal episode driven by stdin."""

from __future__ import annotations

import io
import json

import pytest

import erp_sim
from envs import play


def run(monkeypatch, capsys, lines: list[str], *argv: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    code = play.main(list(argv))
    return code, capsys.readouterr().out


def oracle_lines(task: erp_sim.Task) -> list[str]:
    """The oracle's calls as typed commands (it reads responses, so it runs on a session of its own)."""
    session, calls, lines = erp_sim.ErpSession(task), erp_sim.oracle_calls(task), []
    name, arguments = next(calls)
    while True:
        lines.append(f"{name} {json.dumps(arguments)}")
        try:
            name, arguments = calls.send(session.call(name, arguments).text)
        except StopIteration:
            session.close()
            return lines


def test_scripted_session_solves_a_task(monkeypatch, capsys):
    task = erp_sim.get_task("Meals", 2)
    lines = ["help", "tools", "grade", "say Should I add the missing items?", *oracle_lines(task), "quit"]
    code, out = run(monkeypatch, capsys, lines, "--env", "erp_sim/MealsItemization-v0", "--task", "2", "--raw")
    assert code == 0
    assert f"Task {task.task_id}" in out and "USER: Hi, I'm" in out and "Commands:" in out
    assert "form_save_form:" in out and "USER: Yes, please add every missing charge" in out
    assert "Episode ended: success." in out and "Grade: success=True strict_success=True" in out
    assert "quit" not in out.split("Episode ended")[1]


def test_bad_input_is_reported_and_the_session_goes_on(monkeypatch, capsys):
    lines = ["", "form_find_menu_item not-json", "no_such_tool", '{"broken": ', "form_find_menu_item {\"menuItemFilter\": 1}"]
    code, out = run(monkeypatch, capsys, lines, "--task", "hotel-004")
    assert code == 0
    assert "Arguments must be a JSON object" in out and "Unknown tool 'no_such_tool'" in out
    assert '"Code": "InvalidAction"' in out and "Invalid arguments for form_find_menu_item" in out
    assert "Episode ended: end of input." in out and "Grade: success=False" in out


def test_no_user_stalls_and_unknown_task_fails(monkeypatch, capsys):
    code, out = run(monkeypatch, capsys, ["say hello?", "grade"], "--user", "none", "--task", "0")
    assert code == 0 and "Episode ended: stalled." in out and out.count("Grade:") == 1
    code, _ = run(monkeypatch, capsys, [], "--task", "hotel-999")
    assert code == 2
    with pytest.raises(SystemExit):
        play.main(["--verbosity", "loud"])
