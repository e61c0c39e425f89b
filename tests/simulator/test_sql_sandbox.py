"""The agent's SQL under abuse: every statement bounded in CPU and memory, nothing host-revealing, deterministic."""

from __future__ import annotations

import sqlite3
import time

import pytest

from erp_sim import database
from erp_sim.database.sql_sandbox import LIMITS, SqlLimits, run_select, run_sql
from erp_sim.errors import ValidationError

TEMP_BOMB = (
    "SELECT count(*) FROM (SELECT printf('%.*c', 19000, 'x') || a.id || b.id AS big "
    "FROM expense_line a, expense_line b ORDER BY big)"
)


def test_printf_width_that_loops_inside_one_function_is_refused_at_once(db):
    started = time.perf_counter()
    with pytest.raises(ValidationError, match="width or precision over"):
        run_sql(db, "SELECT printf('%.*c', 2147483647, 'x')")
    with pytest.raises(ValidationError, match="width or precision over"):
        run_sql(db, "SELECT format('%5d %.*c', 1, 300000, 'x') FROM expense_line")
    assert time.perf_counter() - started < 5  # was 17-23 s inside one call; loose on a loaded machine
    assert run_sql(db, "SELECT printf('%05d|%.3s|%.*c', 7, 'abcdef', 3, 'z')")["Rows"] == [["00007|abc|zzz"]]


def test_temp_storage_stays_in_memory_and_under_its_byte_cap(db):
    assert db.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY: no temp files on disk
    before = database.state_hash(db)
    with pytest.raises(ValidationError, match="MiB of memory"):
        run_sql(db, TEMP_BOMB)
    assert database.state_hash(db) == before
    assert run_sql(db, "SELECT count(*) FROM expense_line")["Rows"][0][0] > 0


def test_cpu_time_deadline_stops_a_statement(db):
    with pytest.raises(ValidationError, match="s of CPU time"):
        run_select(
            db,
            "SELECT count(*) FROM expense_line a, expense_line b, expense_line c, expense_line d",
            SqlLimits(cpu_seconds=0.05, max_steps=10**15),
        )


PRINTF_PER_ROW = (
    "SELECT count(*) FROM expense_line a, expense_line b, expense_line c "
    "WHERE length(printf('%.*c', 1700, char(65 + (a.id + b.id + c.id) % 3))) > 0"
)


def test_the_work_budget_charges_functions_evaluated_in_python(db):
    """printf per row cost far more CPU than its VM steps said, so such a query stopped at the CPU deadline:
    where a machine's speed (or its load) decided. Each call is now charged, so it stops at the same point on
    any machine, however much CPU time it is allowed."""
    for limits in (LIMITS, SqlLimits(cpu_seconds=3600)):  # the default 1 s deadline is not what stops it
        with pytest.raises(ValidationError, match="2,000,000 steps of work"):
            run_select(db, PRINTF_PER_ROW, limits)
    assert run_select(db, "SELECT count(printf('%d', id)) FROM expense_line")[1][0][0] > 0  # a normal use


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT fts3_tokenizer('simple')",
        "SELECT fts3_tokenizer('mine', x'0000000000000000')",
        "SELECT sqlite_compileoption_get(0)",
        "SELECT sqlite_version()",
        "SELECT load_extension('/tmp/x')",
        "SELECT * FROM pragma_compile_options",
        "SELECT * FROM pragma_database_list",
        "SELECT * FROM dbstat",
    ],
)
def test_pointer_and_host_revealing_functions_are_refused(db, sql):
    with pytest.raises(ValidationError, match="not authorized|no such|constructor failed"):
        run_sql(db, sql)


def test_random_and_now_are_deterministic_per_episode(task):
    sql = "SELECT random(), random(), datetime('now'), date('NOW', '+1 day'), CURRENT_TIMESTAMP, strftime('%Y', 'now')"
    first, second = database.open_database(task), database.open_database(task)
    try:
        a, b = run_sql(first, sql)["Rows"], run_sql(second, sql)["Rows"]
        assert a == b and a[0][0] != a[0][1]
        assert a[0][2] == f"{task.transaction_date} 12:00:00" == a[0][4]
        assert run_sql(first, "SELECT datetime('2026-01-02', '+1 day')")["Rows"] == [["2026-01-03 00:00:00"]]
        now = f"{task.transaction_date} 12:00:00"  # a left-out time value is 'now'; the host's zone is never read
        implicit = "SELECT datetime(), date(), time(), unixepoch() = unixepoch('now'), julianday() = julianday('now')"
        assert run_sql(first, implicit)["Rows"] == [[now, task.transaction_date, "12:00:00", 1, 1]]
        zones = "SELECT datetime('now', 'localtime'), datetime('now', ' UTC '), strftime('%H:%M', 'now', 'localtime')"
        assert run_sql(first, zones)["Rows"] == [[now, now, "12:00"]]
        assert run_sql(first, "SELECT strftime('%Y-%m-%d %H:%M:%S'), strftime('now'), strftime()")["Rows"] == [
            [now, "now", None]
        ]
    finally:
        first.close()
        second.close()


def test_the_schema_stays_readable(db):
    rows = run_sql(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")["Rows"]
    assert ["expense_line"] in rows


def test_limits_are_configurable_and_checked():
    from erp_sim.database.sql_sandbox import set_limits

    saved = (LIMITS.cpu_seconds, LIMITS.memory_bytes)
    try:
        assert set_limits(cpu_seconds=2.5, memory_bytes=32 << 20).cpu_seconds == 2.5
        with pytest.raises(ValueError, match="CPU limit must be positive"):
            set_limits(cpu_seconds=0)
        with pytest.raises(ValueError, match="memory limit must be at least"):
            set_limits(memory_bytes=10)
    finally:
        set_limits(*saved)


def test_sqlite_error_does_not_leak_between_statements(db):
    with pytest.raises(ValidationError):
        run_sql(db, "SELECT printf('%.*c', 2147483647, 'x')")
    with pytest.raises(ValidationError, match="no such column"):
        run_sql(db, "SELECT nope FROM worker")
    assert isinstance(db, sqlite3.Connection)
