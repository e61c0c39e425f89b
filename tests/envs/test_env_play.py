"""``erp-sim play``: a terminal episode driven by stdin, and by a person at a pseudo-terminal."""

from __future__ import annotations

import io

import pytest
from erp_support import oracle_lines

import erp_sim
from erp_sim.envs import play


def run(monkeypatch, capsys, lines: list[str], *argv: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    code = play.main(list(argv))
    return code, capsys.readouterr().out


def test_scripted_session_solves_a_task(monkeypatch, capsys):
    task = erp_sim.get_task("Meals", 2)
    lines = ["help", "tools", "grade", "say Should I add the missing items?", *oracle_lines(task), "quit"]
    code, out = run(monkeypatch, capsys, lines, "--env", "erp_sim/MealsItemization-v0", "--task", "2", "--raw")
    assert code == 0
    assert (
        f"Task {task.task_id}" in out
        and "USER: Hi, I'm" in out
        and "Commands (only tool calls and 'say' take a step):" in out
    )
    assert "form_save_form()" in out and "USER: Yes, please add every missing charge" in out
    assert "Episode ended: success." in out and "Grade: success=True strict_success=True" in out
    assert "quit" not in out.split("Episode ended")[1]


def test_bad_input_is_reported_and_the_session_goes_on(monkeypatch, capsys):
    lines = [
        "",
        "form_find_menu_item not-json",
        "no_such_tool",
        "clear",
        '{"broken": ',
        '{"name": "nope"}',
        "\x1b[A",
        "say",
        'form_find_menu_item {"menuItemFilter": 1}',
    ]
    code, out = run(monkeypatch, capsys, lines, "--task", "hotel-004")
    assert code == 0
    assert "Arguments must be a JSON object" in out and "Unknown command or tool 'no_such_tool'" in out
    assert (
        "Unknown command or tool 'clear'" in out and "Not valid JSON" in out and "Unknown command or tool 'nope'" in out
    )
    assert "terminal escape sequence; nothing was sent" in out and "Say what?" in out
    # Only the last line reached the ERP: one step, an invalid action.
    assert "Error InvalidAction: Invalid arguments for form_find_menu_item" in out and "step 1]" in out
    assert "step 2]" not in out
    assert "Episode ended: end of input." in out and "Grade: success=False" in out


def test_no_user_stalls_and_unknown_task_fails(monkeypatch, capsys):
    code, out = run(monkeypatch, capsys, ["say hello?", "grade"], "--user", "none", "--task", "0")
    assert code == 0 and "Episode ended: stalled." in out and out.count("Grade:") == 1
    code, _ = run(monkeypatch, capsys, [], "--task", "hotel-999")
    assert code == 2
    with pytest.raises(SystemExit):
        play.main(["--verbosity", "loud"])


def test_local_commands_take_no_step_and_responses_read_as_tables(monkeypatch, capsys):
    lines = [
        "help",
        "tools",
        "tools form_select_grid_row",
        "prompt",
        "task",
        "raw",
        "grade",
        'form_find_menu_item {"menuItemFilter": "expense reports"}',
        'form_open_menu_item {"name": "TrvExpenses"}',
        "raw",
    ]
    code, out = run(monkeypatch, capsys, lines, "--task", "hotel-007")
    assert code == 0 and "step 2]" in out and "step 3]" not in out
    assert 'form_select_grid_row(gridName: string, rowNumber: string, marking?: "Marked"|"Unmarked"|null)' in out
    assert "rowNumber?" not in out and "  rowNumber: string\n" in out  # the one-tool view lists each argument
    assert (
        "Receipt wording -> subcategory (Hotel):" in out
        and "'Room charge', 'Accommodation', 'Guest room' -> Daily room rate" in out
    )
    assert "No tool call yet." in out
    assert "MenuItems: 1 row(s)\n  Name        | Label           | Type    | NavigationPath" in out
    assert "Grid ExpenseReportsGrid (Expense reports): rows 1-25 of 29 (more: actionId LoadNextPage)" in out
    assert "  9   | EXP-872881            | Training " in out and " *Filter [QuickFilter] = ''" in out
    assert out.rstrip().splitlines()[-3].startswith('{"SessionId":')  # `raw`: the JSON the agent saw


def test_readable_view_of_a_saved_itemization_and_of_data_payloads():
    task = erp_sim.get_task("hotel_50", "hotel-007")
    session = erp_sim.ErpSession(task)
    responses = list(erp_sim.run_oracle(session))
    saved = next(r.text for r in reversed(responses) if r.tool == "form_save_form")
    view = play.readable(saved)
    assert "Form Itemization" in view or "(TrvItemization)" in view
    assert " Remaining [ItemizationRemaining] = '0.00'" in view and "Buttons: " in view and "Guidance: " in view
    rows = session.call("data_find_entities_sql", {"sqlQuery": "SELECT id, name FROM worker ORDER BY id LIMIT 2"})
    assert play.readable(rows.text).splitlines()[1:4] == ["Data: 1 row(s)", "  id | name", "  ---+----------------"]
    assert play.readable("plain words") == "plain words"


def test_compact_responses_read_as_tables(monkeypatch, capsys):
    """Compact grids list bare column names and compact forms only the enabled buttons' names."""
    lines = [
        'form_open_menu_item {"name": "TrvExpenses"}',
        'form_select_grid_row {"gridName": "ExpenseReportsGrid", "rowNumber": "1"}',
    ]
    code, out = run(monkeypatch, capsys, lines, "--task", "hotel-007", "--verbosity", "compact")
    assert code == 0 and "Traceback" not in out
    assert "Grid ExpenseReportsGrid: rows 1-25 of 29 (more: actionId LoadNextPage)" in out
    assert "  Row | TrvExpTable_ExpNumber | TrvExpTable_Txt " in out and "  1   | EXP-" in out
    assert "  columns: TrvExpTable_ExpNumber, TrvExpTable_Txt, TrvExpTable_ApprovalStatus" in out
    assert out.count("Buttons: EditReport") == 1  # enabled once a report is selected


# --- a person at a terminal ----------------------------------------------------------------------
class Terminal:
    """`erp-sim play` on a pseudo-terminal: keystrokes in, screen text out (GNU readline active)."""

    def __init__(self, *argv: str):
        import os
        import pty
        import subprocess
        import sys

        self.master, slave = pty.openpty()
        env = {**os.environ, "TERM": "xterm", "INPUTRC": "/dev/null", "COLUMNS": "200"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "erp_sim.agents.cli", "play", *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
            preexec_fn=self.own_terminal,
        )
        os.close(slave)
        self.screen = ""

    @staticmethod
    def own_terminal() -> None:
        """In the child: a new session whose controlling terminal is the pty, so Ctrl-C sends SIGINT."""
        import fcntl
        import os
        import termios

        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    def expect(self, text: str, timeout: float = 60) -> str:
        """Read until ``text`` appears after what earlier calls consumed; returns what was read."""
        import os
        import select
        import time

        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} did not appear; screen so far:\n{self.screen[-3000:]}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"play exited before {text!r}; screen:\n{self.screen[-3000:]}"
                self.screen += chunk.decode(errors="replace")
        read, self.screen = self.screen.split(text, 1)
        return read + text

    def seen(self, text: str, timeout: float) -> bool:
        try:
            self.expect(text, timeout)
            return True
        except AssertionError:
            return False

    def type(self, keys: str) -> None:
        import os

        os.write(self.master, keys.encode())

    def close(self) -> int:
        import os
        import subprocess

        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:  # a failed test left it waiting for input
            self.proc.kill()
            return self.proc.wait(10)
        finally:
            os.close(self.master)


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal (POSIX)")
def test_a_person_at_a_terminal():
    term = Terminal("--task", "hotel-007")
    try:
        term.expect("erp[step 0]> ")
        term.type("help\r")
        assert "Tab completes commands and tool names" in term.expect("erp[step 0]> ")
        term.type("clear\r")  # an unknown word is not a tool call
        assert "Unknown command or tool 'clear'; nothing was sent." in term.expect("erp[step 0]> ")
        term.type("grade\r")
        assert "Grade: success=False" in term.expect("erp[step 0]> ")
        term.type("\x1b[A\r")  # Up recalls `grade` from the history instead of sending '\x1b[A' as a tool name
        assert "Grade: success=False" in term.expect("erp[step 0]> ")
        term.type("tols\x1b[D\x1b[Do\r")  # Left arrow twice, insert: line editing turns `tols` into `tools`
        assert "form_select_grid_row(gridName: string, rowNumber: string" in term.expect("erp[step 0]> ")
        term.type("form_find_me\t")  # Tab completes the tool name
        term.type('{"menuItemFilter": "expense reports"}\r')
        screen = term.expect("erp[step 1]> ")
        assert (
            "Result: Found 1 menu item(s) matching 'expense reports'." in screen
            and "TrvExpenses | Expense reports" in screen
        )
        term.type("prompt\r")
        assert "Receipt wording -> subcategory (Hotel):" in term.expect("erp[step 1]> ")
        term.type("raw\r")
        assert '"MenuItems":[{"Name":"TrvExpenses"' in term.expect("erp[step 1]> ")
        # Ctrl-C clears the line and keeps the episode. A SIGINT that lands after the prompt is
        # printed but before readline waits for a key is seen only at the next signal, so press again.
        for _ in range(6):
            term.type("\x03")
            if term.seen("^C (type quit or press Ctrl-D to end)", 5):
                break
        else:
            pytest.fail("Ctrl-C at the prompt printed nothing")
        term.expect("erp[step 1]> ")
        term.type("quit\r")
        assert "Episode ended: quit." in term.expect("itemization form open: False")
    finally:
        code = term.close()
    assert code == 0


def test_an_unknown_env_id_lists_the_ids_there_are(capsys):
    """Issue 39, point 5: `play --env erp_sim/Foo-v0` did not list the valid ids."""
    from erp_sim.envs import ENV_IDS

    assert play.main(["--env", "erp_sim/Foo-v0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("erp-sim play: error: --env erp_sim/Foo-v0: not a registered env id; erp-sim's: ")
    assert all(env_id in err for env_id in ENV_IDS)
