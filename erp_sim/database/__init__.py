"""SQLite plumbing: a template database per task, copied per session; the change log; state hash.

Building a task's database (DDL + a few hundred rows) costs 4-5 ms, so it is done once per
task: kept in memory per process, and on disk across processes (``template_cache``: a task's first
open in a process restores it, 0.04 ms); each session gets its own in-memory copy through SQLite's
backup API (tens of microseconds).
A task's database holds its workflow's tables (``erp_sim.workflows.Workflow.schema_file``), the rows
every task of the workflow shares, the task's own rows and the change log. The agent's SQL runs in
``sql_sandbox``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from erp_sim import workflows
from erp_sim.database import template_cache
from erp_sim.database.schema import CHANGE_LOG, load_schema, task_tables
from erp_sim.database.sql_sandbox import SqlValue, install_functions
from erp_sim.errors import NotFoundError

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask
    from erp_sim.workflows import Rows, Workflow

_TEMPLATE_CACHE_SIZE = 256
Row = tuple[SqlValue, ...]  # a table row as sqlite3 reads it, columns in the table's order
_templates: OrderedDict[tuple[str, int], sqlite3.Connection] = OrderedDict()
_initial_dumps: dict[tuple[str, int], dict[str, list[Row]]] = {}


def _template_key(task: WorkflowTask) -> tuple[str, int]:
    return (task.task_set + "/" + task.task_id, task.seed)


def _new_connection() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _insert(conn: sqlite3.Connection, rows: Rows) -> None:
    conn.execute("BEGIN")
    for table, records in rows.items():
        if records:
            columns = list(records[0])
            conn.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [tuple(r[c] for c in columns) for r in records],
            )
    conn.execute("COMMIT")


@cache
def _catalog_database(name: str) -> sqlite3.Connection:
    """Workflow ``name``'s schema and the rows every task shares (e.g. company, categories, subcategories)."""
    workflow = workflows.load(name)
    conn = _new_connection()
    for ddl in load_schema(workflow.schema_file).ddl:
        conn.execute(ddl)
    _insert(conn, workflow.shared_rows())
    return conn


# Triggers log every row a write touches, whatever the path (forms, data tools, actions), so grading
# diffs only those rows (CHANGE_LOG: not one of the schema's tables, so no dump, hash or entity set includes it).
def _change_log_ddl(tables: Sequence[str]) -> str:
    triggers = "".join(
        f"CREATE TRIGGER erp_log_{table}_{op.lower()} AFTER {op} ON {table} BEGIN "
        + "".join(f"INSERT INTO {CHANGE_LOG} VALUES ('{table}', {ref}.id); " for ref in refs)
        + "END;"
        for table in tables
        for op, refs in (("INSERT", ["NEW"]), ("UPDATE", ["OLD", "NEW"]), ("DELETE", ["OLD"]))
    )
    return f"CREATE TABLE {CHANGE_LOG} (tbl TEXT NOT NULL, rec_id INTEGER NOT NULL);{triggers}"


def _build_template(workflow: Workflow[Any], task: WorkflowTask) -> sqlite3.Connection:
    conn = _new_connection()
    _catalog_database(workflow.name).backup(conn)  # copied: cheaper than running the DDL and catalog inserts again
    _insert(conn, workflow.task_rows(task))
    conn.executescript(_change_log_ddl(load_schema(workflow.schema_file).tables))  # after the task's rows: empty
    return conn


def _restored_or_built_template(workflow: Workflow[Any], task: WorkflowTask) -> sqlite3.Connection:
    """The task's template from the disk cache (``template_cache``), else built and stored there."""
    payload = template_cache.load(task)
    if payload is not None:
        template = _new_connection()
        template.deserialize(payload)
        return template
    template = _build_template(workflow, task)
    template_cache.store(task, template.serialize())
    return template


def open_database(task: WorkflowTask, rng: random.Random | None = None) -> sqlite3.Connection:
    """A fresh in-memory copy of the task's template database; its ``random()`` draws from ``rng``
    (default: seeded with the task's seed)."""
    conn = _new_connection()
    _template(task).backup(conn)
    install_functions(conn, rng or random.Random(task.seed), workflows.of_task(task).clock(task))
    return conn


def _template(task: WorkflowTask) -> sqlite3.Connection:
    """The task's template, kept in memory (least recently used out past ``_TEMPLATE_CACHE_SIZE``)."""
    key = _template_key(task)
    template = _templates.get(key)
    if template is None:
        template = _restored_or_built_template(workflows.of_task(task), task)
        _templates[key] = template
        if len(_templates) > _TEMPLATE_CACHE_SIZE:
            _templates.popitem(last=False)[1].close()
    else:
        _templates.move_to_end(key)
    return template


def initial_rows_of(task: WorkflowTask, table: str, rec_ids: Sequence[int]) -> dict[int, Row]:
    """The task's starting rows of ``table`` with these RecIds (those that existed), read from its template:
    what the collateral diff compares the touched rows with, without a dump of every table."""
    query = f"SELECT * FROM {table} WHERE id IN (SELECT value FROM json_each(?))"
    rows = plain_rows(_template(task), query, (json.dumps(list(rec_ids)),))
    return {cast(int, row[0]): row for row in rows}  # every table's first column is its integer id


def plain_rows(db: sqlite3.Connection, query: str, parameters: Sequence[object] = ()) -> list[Row]:
    """The query's rows as plain tuples: no ``sqlite3.Row`` made and then copied per row (the collateral diff
    of a 200-row itemization reads 200 rows and the change log's 200 entries)."""
    cursor = db.cursor()
    cursor.row_factory = None
    rows: list[Row] = cursor.execute(query, parameters).fetchall()
    return rows


def clear_templates() -> None:
    """Forget every cached template (what the next ``open_database`` of a task then builds: a cold open)."""
    while _templates:
        _templates.popitem()[1].close()


def record_by_id(db: sqlite3.Connection, table: str, rec_id: int, what: str) -> sqlite3.Row:
    """The row of ``table`` with RecId ``rec_id``, or a NotFoundError naming it as ``what`` (e.g. "Expense line")."""
    row: sqlite3.Row | None = db.execute(f"SELECT * FROM {table} WHERE id = ?", (rec_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"{what} with RecId {rec_id} does not exist.")
    return row


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """All-or-nothing writes (SAVEPOINT so callers may nest): every write path (form save, data tool,
    action) runs in one."""
    db.execute("SAVEPOINT erp_write")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK TO erp_write")
        db.execute("RELEASE erp_write")
        raise
    db.execute("RELEASE erp_write")


def database_bytes(conn: sqlite3.Connection) -> bytes:
    """The whole database as bytes (SQLite's serialize): what pickling a session stores."""
    return conn.serialize()


def database_from_bytes(data: bytes, task: WorkflowTask, rng: random.Random) -> sqlite3.Connection:
    """A fresh in-memory connection holding ``database_bytes``' output, set up like ``open_database``'s
    (without the functions, a restored episode's SQL would read the wall clock and an unseeded random())."""
    conn = _new_connection()
    conn.deserialize(data)
    install_functions(conn, rng, workflows.of_task(task).clock(task))
    return conn


def initial_dump(task: WorkflowTask) -> dict[str, list[Row]]:
    """The task's starting rows (what grading diffs against), computed once per template."""
    key = _template_key(task)
    if key not in _initial_dumps:
        conn = open_database(task)
        try:
            _initial_dumps[key] = table_dump(conn)
        finally:
            conn.close()
        if len(_initial_dumps) > _TEMPLATE_CACHE_SIZE:
            _initial_dumps.pop(next(iter(_initial_dumps)))
    return _initial_dumps[key]


def table_dump(conn: sqlite3.Connection) -> dict[str, list[Row]]:
    """Every row of every table (``schema.task_tables``), ordered by id: the basis of grading diffs and the
    state hash."""
    return {
        table: [tuple(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY id")] for table in task_tables(conn)
    }


def state_hash(conn: sqlite3.Connection) -> str:
    digest = hashlib.sha256()
    for table, rows in table_dump(conn).items():
        digest.update(table.encode())
        for row in rows:
            digest.update(repr(row).encode())
    return digest.hexdigest()
