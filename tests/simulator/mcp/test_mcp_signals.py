"""stdio under SIGINT and SIGTERM: the session ends graded, and the calls read are answered first."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest
from mcp_support import INIT, ROOT, SERVE
from test_mcp_hostile import call, rpc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stdio_sigterm_during_a_call_still_writes_the_final_grade(signum, tmp_path):
    grades = tmp_path / "grades.jsonl"
    proc = subprocess.Popen(
        SERVE + ["--grade-file", str(grades)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    bomb = "SELECT count(*) FROM expense_line a, expense_line b, expense_line c WHERE printf('%d', a.id + b.id) = 'x'"
    try:
        for message in [
            rpc(1, "initialize", INIT),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            call(2, "form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}),
        ]:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        for _ in range(2):
            assert proc.stdout.readline()  # initialize's and the call's replies
        proc.stdin.write(json.dumps(call(3, "data_find_entities_sql", {"sqlQuery": bomb})).encode() + b"\n")
        proc.stdin.flush()
        proc.send_signal(signum)  # while the SQL runs (or just before)
        assert proc.wait(30) == 0  # was -15 for SIGTERM, with no grade written
    finally:
        if proc.poll() is None:
            proc.kill()
    assert b"Traceback" not in proc.stderr.read()
    final = json.loads(grades.read_text().splitlines()[-1])
    assert final["state"] == "closed" and final["calls"] >= 1
    # the call running at the signal was answered (a signal ends the input, as end of stdin does)
    replies = [json.loads(line) for line in proc.stdout.read().splitlines() if line.strip()]
    assert [reply.get("id") for reply in replies] == [3] and "result" in replies[0], replies


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stdio_writes_in_flight_at_a_signal_are_answered_and_graded_alike(signum, tmp_path):
    """A write running (or read and queued) when the signal comes is answered and graded; none is graded unanswered
    (before: the session was cancelled under it, its write kept and graded, its client told nothing or
    "Connection closed")."""
    from erp_sim import get_task

    grades = tmp_path / "grades.jsonl"
    proc = subprocess.Popen(
        SERVE + ["--grade-file", str(grades)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    task = get_task("hotel_50", 0)
    sql = (
        "SELECT h.id FROM expense_line h JOIN expense_report r ON r.id = h.report_id WHERE r.report_number = "
        f"'{task.report_number}' AND h.line_number = {task.line_number} AND h.line_type != 'ItemizedLine'"
    )
    try:
        for message in [
            rpc(1, "initialize", INIT),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            call(2, "data_find_entities_sql", {"sqlQuery": sql}),
        ]:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        [[line_id]] = json.loads(json.loads(proc.stdout.readline())["result"]["content"][0]["text"])["Data"]["Rows"]
        line = {"ParentRecId": line_id, "Amount": "1.00", "Subcategory": "Room tax", "TransactionDate": "2026-01-23"}
        for number in range(10, 40):
            write = call(number, "data_create_entities", {"entitySetName": "ExpenseLines", "entities": [line]})
            proc.stdin.write(json.dumps(write).encode() + b"\n")
        proc.stdin.flush()
        proc.send_signal(signum)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    answers = [json.loads(text) for text in proc.stdout.read().splitlines() if text.strip()]
    acknowledged = sum(1 for answer in answers if "result" in answer and not answer["result"]["isError"])
    final = json.loads(grades.read_text().splitlines()[-1])
    assert final["state"] == "closed" and final["grade"]["saved_lines"] == acknowledged > 0, (answers, final)
    assert all("result" in answer for answer in answers), answers  # no "Connection closed" error
