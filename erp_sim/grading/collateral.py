"""The collateral diff: every row a session changed that its task did not ask for, like AppWorld's DB diffs.

Generic over workflows: a grader passes its task's ``Expected`` (which changed rows the task asks for,
e.g. the itemized lines of the target line), and gets the rest as sentences. Read from the change log
(``erp_sim.database.schema.CHANGE_LOG``), so the diff reads only touched rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from erp_sim.database import Row, initial_dump, initial_rows_of, plain_rows, table_dump
from erp_sim.database.schema import CHANGE_LOG, Schema

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask

#: (table, its column names, the row at the start, the row now) -> whether the task asks for that change.
#: A row that was created has no start (None); a row that was deleted has no now.
Expected = Callable[[str, list[str], Row | None, Row | None], bool]


def changed_rows(db: sqlite3.Connection) -> list[tuple[str, int]]:
    """The (table, RecId) pairs writes have touched since the task began (some may be unchanged again).

    Logged by triggers in every task database, whatever the write path, so the collateral diff reads only
    touched rows: the full diff of every table cost ~5 ms, more than an episode's whole env overhead."""
    # in (table, RecId) order, as SQLite's ORDER BY gives it (table names are ASCII), sorted here: its DISTINCT and
    # ORDER BY cost twice the read of a 200-row itemization's log
    return sorted(set(cast(list[tuple[str, int]], plain_rows(db, f"SELECT tbl, rec_id FROM {CHANGE_LOG}"))))


def collateral_changes(db: sqlite3.Connection, task: WorkflowTask, schema: Schema, expected: Expected) -> list[str]:
    """Row-level diff against the task's initial database, minus the changes ``expected`` allows (the touched
    rows' starting values are read from the task's template)."""
    touched: dict[str, list[int]] = {}
    for table, rec_id in changed_rows(db):
        touched.setdefault(table, []).append(rec_id)
    changes = []
    for table in schema.tables:
        if table not in touched:
            continue
        cols = list(schema.columns[table])
        query = f"SELECT * FROM {table} WHERE id IN (SELECT rec_id FROM {CHANGE_LOG} WHERE tbl = ?)"
        now = {row[0]: row for row in plain_rows(db, query, (table,))}
        before = initial_rows_of(task, table, touched[table])
        for rec_id in touched[table]:
            changes += _row_change(table, cols, rec_id, before.get(rec_id), now.get(rec_id), expected)
    return changes


def full_collateral_changes(
    db: sqlite3.Connection, task: WorkflowTask, schema: Schema, expected: Expected
) -> list[str]:
    """The same diff over every row of every table (slow; what tests check the logged diff against)."""
    before = initial_rows(task)
    after = {t: _by_rec_id(rows) for t, rows in table_dump(db).items()}
    changes = []
    for table in schema.tables:
        cols = list(schema.columns[table])
        for rec_id in sorted(before[table].keys() | after[table].keys()):
            changes += _row_change(table, cols, rec_id, before[table].get(rec_id), after[table].get(rec_id), expected)
    return changes


def _by_rec_id(rows: list[Row]) -> dict[int, Row]:
    return {cast(int, r[0]): r for r in rows}  # every table's first column is its integer id


_initial_rows: dict[tuple[str, str, int], dict[str, dict[int, Row]]] = {}


def initial_rows(task: WorkflowTask) -> dict[str, dict[int, Row]]:
    """The task's starting rows by table and RecId, built once per task (every row: the full diff's)."""
    key = (task.task_set, task.task_id, task.seed)
    if key not in _initial_rows:
        if len(_initial_rows) >= 256:
            _initial_rows.pop(next(iter(_initial_rows)))
        _initial_rows[key] = {t: _by_rec_id(rows) for t, rows in initial_dump(task).items()}
    return _initial_rows[key]


def _row_change(
    table: str, cols: list[str], rec_id: int, a: Row | None, b: Row | None, expected: Expected
) -> list[str]:
    if a == b or expected(table, cols, a, b):
        return []
    if a is None:
        return [f"{table} RecId {rec_id} created"]
    if b is None:
        return [f"{table} RecId {rec_id} deleted"]
    diffs = [f"{c}: {x!r} -> {y!r}" for c, x, y in zip(cols, a, b) if x != y]
    return [f"{table} RecId {rec_id} changed ({'; '.join(diffs)})"]
