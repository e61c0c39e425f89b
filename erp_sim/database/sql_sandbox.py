"""The agent's read-only SQL (``data_find_entities_sql``): bounded work, nothing revealed, deterministic answers.

What an agent's statement may do, and what it costs at most:
- read the task database's tables (its workflow's, and ``sqlite_schema``); SQLite's authorizer,
  not a regex, denies writes, DDL, ATTACH, PRAGMA and recursive CTEs wherever they appear;
- no function that reveals pointers, files or the host (``fts3_tokenizer``, ``load_extension``,
  ``sqlite_compileoption_get``, ...);
- CPU: a deterministic work budget (SQLite's VM steps, plus a charge for every call of a function the
  sandbox evaluates in Python, ``printf`` and the date functions, by the length of what it returns: such a
  call costs as much CPU as 50-150 steps), so the same query stops at the same point on any machine and
  under any load; a CPU-time deadline (default 1 s, about 7x the work budget here) stays as a safety net
  for what the budget cannot see, SQLite's own string functions on long values (bounded by the
  single-value length limit): only a query that piles those up can be cut where a machine's speed decides;
- memory: temporary tables and sorters stay in memory (never temp files on disk), and the statement
  is interrupted once SQLite's heap grew by more than a byte cap (default 64 MiB) since it started.
  That heap is the process's: where sessions run side by side (the MCP and OpenEnv servers), what the
  others allocate meanwhile counts too, so a statement within a few MiB of the cap can be answered alone and
  refused under load. It is a safety limit like the CPU deadline, not a budget to work up to (running
  statements one at a time let one session's heavy queries stall every other session's SQL, and other
  sessions still allocate; SQLite's per-connection figures are not reachable from Python's sqlite3);
- ``random()`` is seeded per episode and ``'now'`` (``datetime('now')``, ``date()``, ``CURRENT_TIMESTAMP``, ...)
  is the episode's simulated clock, in UTC (``'localtime'`` and ``'utc'`` change nothing: they would read the
  host's time zone), so the same calls give byte-identical answers on any machine.
"""

from __future__ import annotations

import _sqlite3
import ctypes
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from erp_sim.database.schema import task_tables
from erp_sim.errors import ValidationError
from erp_sim.json_values import JsonObject


@dataclass
class SqlLimits:
    """Per-statement budgets of the agent's SQL; the server sets them from its flags."""

    cpu_seconds: float = 1.0
    memory_bytes: int = 64 << 20
    max_steps: int = 2_000_000  # VM steps: deterministic, so the same query always stops at the same point
    max_rows: int = 200


LIMITS = SqlLimits()
SQL_CELL_CHARS = 2000
SQL_OUTPUT_CHARS = 100_000  # stays well under the server's 160,000-character response limit
# SQLite limits while an agent's query runs: with at most 201 rows fetched, they bound its memory.
SQL_MAX_VALUE_BYTES = 20_000
SQL_MAX_COLUMNS = 100
PRINTF_MAX_WIDTH = 100_000  # SQLite's '%.*c' loops once per character even past the length limit
_CHECK_EVERY = 200  # VM steps between progress-handler checks (time, heap, steps)
# the work budget's charge for one call of a function evaluated in Python (measured: a printf call costs the
# CPU of about 50 VM steps, plus one step per 25 characters it returns)
CALL_STEPS = 60
CHARS_PER_STEP = 25
SqlValue = int | float | str | bytes | None  # what SQLite passes to a function and returns

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_REFUSED_FUNCTIONS = {
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "fts5",
    "randomblob",
    "zeroblob",
    "sqlite_compileoption_get",
    "sqlite_compileoption_used",
    "sqlite_source_id",
    "sqlite_version",
    "sqlite_offset",
}


def set_limits(cpu_seconds: float | None = None, memory_bytes: int | None = None) -> SqlLimits:
    """Change the budgets for every later statement in this process (``erp-sim serve --sql-cpu-seconds``)."""
    if cpu_seconds is not None:
        if not cpu_seconds > 0:
            raise ValueError("the SQL CPU limit must be positive")
        LIMITS.cpu_seconds = float(cpu_seconds)
    if memory_bytes is not None:
        if memory_bytes < 1 << 20:
            raise ValueError("the SQL memory limit must be at least 1 MiB")
        LIMITS.memory_bytes = int(memory_bytes)
    return LIMITS


def _heap_meter() -> Callable[[], int] | None:
    """``sqlite3_memory_used`` of the SQLite library Python links (None where it is not reachable)."""
    try:
        meter = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    except (OSError, AttributeError):
        return None
    meter.restype, meter.argtypes = ctypes.c_int64, []
    return meter


_heap_used = _heap_meter()


# --- deterministic functions, registered on every episode's connection ------------------------------
_builtins = threading.local()


def _builtin(sql: str, args: tuple[SqlValue, ...]) -> SqlValue:
    """Evaluate SQLite's own function on a private connection (our overrides hide it on the episode's)."""
    conn = getattr(_builtins, "conn", None)
    if conn is None:
        conn = _builtins.conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)
    value: SqlValue = conn.execute(sql, args).fetchone()[0]
    budget = getattr(_builtins, "budget", None)
    if budget is not None:  # the agent's statement is running: the call is charged to its work budget
        budget.steps += CALL_STEPS + (len(value) // CHARS_PER_STEP if isinstance(value, (str, bytes)) else 0)
    return value


_DATE_FUNCTIONS = ("date", "time", "datetime", "julianday", "strftime", "unixepoch")
_CLOCK_KEYWORDS = {"current_date": "date", "current_time": "time", "current_timestamp": "datetime"}
_CONVERSION = re.compile(r"%[-+ #0,!]*(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l)?(.)", re.DOTALL)


def _checked_printf(name: str) -> Callable[..., SqlValue]:
    def printf(*args: SqlValue) -> SqlValue:
        if not args or not isinstance(args[0], str):
            return _builtin(f"SELECT {name}({', '.join('?' * len(args))})", args)
        consumed = 1
        for width, precision, kind in _CONVERSION.findall(args[0]):
            for part in (width, precision):
                if part == "*":
                    value = args[consumed] if consumed < len(args) else 0
                    consumed += 1
                    size = value if isinstance(value, int) else 0
                else:
                    size = int(part) if part else 0
                if size and abs(size) > PRINTF_MAX_WIDTH:
                    _builtins.refusal = f"{name}() width or precision over {PRINTF_MAX_WIDTH:,}"
                    raise ValueError(_builtins.refusal)
            consumed += kind != "%"
        return _builtin(f"SELECT {name}({', '.join('?' * len(args))})", args)

    return printf


_HOST_ZONE_MODIFIERS = {"localtime", "utc"}  # they read the host's time zone: the simulated clock has none
_NO_CHANGE = "+0 seconds"


def _clocked(name: str, now: str) -> Callable[..., SqlValue]:
    """SQLite's date function ``name`` on the simulated clock: its time value 'now', or left out (which SQLite
    reads as 'now'), is ``now``; 'localtime' and 'utc' change nothing (the clock is UTC, as on a UTC host)."""
    value_at = 1 if name == "strftime" else 0  # strftime(format, time value, modifiers...)

    def function(*args: SqlValue) -> SqlValue:
        clocked = list(args)
        if len(clocked) == value_at:
            clocked.append(now)
        for position in range(value_at, len(clocked)):
            value = clocked[position]
            word = value.strip().lower() if isinstance(value, str) else None
            if position == value_at and word == "now":
                clocked[position] = now
            elif position > value_at and word in _HOST_ZONE_MODIFIERS:
                clocked[position] = _NO_CHANGE
        return _builtin(f"SELECT {name}({', '.join('?' * len(clocked))})", tuple(clocked))

    return function


def install_functions(conn: sqlite3.Connection, rng: random.Random, now: str) -> None:
    """Make ``random()`` and the clock deterministic and ``printf`` bounded on an episode's connection.

    ``now`` is the simulated clock (``YYYY-MM-DD HH:MM:SS``); ``random()`` draws from ``rng``, which the
    session keeps and pickles, so a restored episode draws what the original would have.
    """
    conn.create_function("random", 0, lambda: rng.getrandbits(64) - (1 << 63))
    for name in _DATE_FUNCTIONS:
        conn.create_function(name, -1, _clocked(name, now), deterministic=True)
    for keyword, function in _CLOCK_KEYWORDS.items():
        conn.create_function(keyword, 0, lambda f=function: _builtin(f"SELECT {f}(?)", (now,)))
    for name in ("printf", "format"):
        conn.create_function(name, -1, _checked_printf(name), deterministic=True)
    conn.execute("PRAGMA temp_store = MEMORY")  # sorters and temp tables never reach the disk


# --- the statement itself ---------------------------------------------------------------------------
def _readable_tables(conn: sqlite3.Connection) -> frozenset[str]:
    """What an agent's SQL may read: the task database's own tables (``task_tables``) and the schema table."""
    return frozenset(name.lower() for name in task_tables(conn)) | _SCHEMA_TABLES


def _authorizer(readable: frozenset[str]) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    def authorize(action: int, arg1: str | None, arg2: str | None, db_name: str | None, trigger: str | None) -> int:
        if action not in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _REFUSED_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_READ and (arg1 or "").lower() not in readable:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    return authorize


class _Budget:
    """The progress handler: stops a statement at its step, CPU-time or heap budget, and says which."""

    def __init__(self, limits: SqlLimits) -> None:
        self.limits, self.steps = limits, 0
        self.reason: str | None = None
        self.cpu_start = time.thread_time()
        self.heap_start = _heap_used() if _heap_used else 0

    def __call__(self) -> int:
        self.steps += _CHECK_EVERY
        if self.steps > self.limits.max_steps:
            self.reason = f"query interrupted after {self.limits.max_steps:,} steps of work; add filters or a LIMIT"
        elif time.thread_time() - self.cpu_start > self.limits.cpu_seconds:
            self.reason = (
                f"query interrupted after {self.limits.cpu_seconds:g} s of CPU time (the safety limit: SQLite's own "
                "string functions on long values); add filters or a LIMIT, or work on shorter values"
            )
        elif _heap_used and _heap_used() - self.heap_start > self.limits.memory_bytes:
            self.reason = (
                f"query interrupted: it needed over {self.limits.memory_bytes >> 20} MiB of memory "
                f"(sorts, DISTINCT, GROUP BY on wide values); select fewer or shorter columns"
            )
        return 1 if self.reason else 0


def run_select(
    conn: sqlite3.Connection, sql: str, limits: SqlLimits | None = None
) -> tuple[list[str], list[list[SqlValue]], bool]:
    """Run one read-only SELECT within ``limits`` (default ``LIMITS``). Returns (columns, rows, truncated)."""
    limits = limits or LIMITS
    statement = sql.strip().rstrip(";").strip()
    if not statement:
        raise ValidationError("sqlQuery: empty query.")
    if not sqlite3.complete_statement(statement + ";") or ";" in _strip_string_literals(statement):
        raise ValidationError("sqlQuery: exactly one SELECT statement is allowed (no ';'-separated statements).")
    if statement.split(None, 1)[0].upper() not in {"SELECT", "WITH"}:
        raise ValidationError("sqlQuery: only read-only SELECT queries are allowed.")
    authorizer = _authorizer(_readable_tables(conn))
    budget = _Budget(limits)
    _builtins.refusal, _builtins.budget = None, budget
    conn.set_authorizer(authorizer)
    conn.set_progress_handler(budget, _CHECK_EVERY)
    try:
        cursor = conn.execute(statement)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchmany(limits.max_rows + 1)
        cursor.close()  # ends the statement now: frees its sorter and temp tables
    except sqlite3.DatabaseError as exc:
        message = str(exc)
        if "not authorized" in message:
            message = "not authorized: only read-only SELECT queries on the expense tables are allowed"
        elif "interrupted" in message and budget.reason:
            message = budget.reason
        elif "user-defined function raised exception" in message:
            message = getattr(_builtins, "refusal", None) or "a function's argument is out of range"
        raise ValidationError(f"sqlQuery: {message}.") from None
    except sqlite3.Warning as exc:  # e.g. "You can only execute one statement at a time."
        raise ValidationError(f"sqlQuery: {exc}") from None
    finally:
        _builtins.budget = None
        conn.set_authorizer(None)
        conn.set_progress_handler(None, 0)
    truncated = len(rows) > limits.max_rows
    return columns, [list(r) for r in rows[: limits.max_rows]], truncated


def _strip_string_literals(sql: str) -> str:
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        else:
            out.append(ch)
    return "".join(out)


# --- the SQL tool's answer ----------------------------------------------------------------------
def run_sql(db: sqlite3.Connection, sql: str) -> JsonObject:
    """One read-only SELECT (see ``run_select``); cells over 2,000 characters are cut."""
    limits = {sqlite3.SQLITE_LIMIT_LENGTH: SQL_MAX_VALUE_BYTES, sqlite3.SQLITE_LIMIT_COLUMN: SQL_MAX_COLUMNS}
    previous = {limit: db.setlimit(limit, value) for limit, value in limits.items()}
    try:  # a value over the limit becomes NULL (printf) or "string or blob too big", never a memory bomb
        columns, rows, truncated = run_select(db, sql)
    finally:
        for limit, value in previous.items():
            db.setlimit(limit, value)
    out_rows: list[list[object]] = []
    size, cut = 0, False
    for row in rows:
        cells = [_cell(value) for value in row]
        cut = cut or any(isinstance(v, str) and len(v) > SQL_CELL_CHARS for v in row)
        size += sum(len(str(c)) for c in cells) + 4
        if size > SQL_OUTPUT_CHARS and out_rows:
            truncated = True
            break
        out_rows.append(cells)
    payload: dict[str, Any] = {"Columns": columns, "Rows": out_rows, "Truncated": truncated}
    notes = []
    if truncated:
        notes.append(f"Only the first {len(out_rows)} row(s) are shown; add a WHERE clause or use LIMIT/OFFSET.")
    if cut:
        notes.append(f"Values longer than {SQL_CELL_CHARS:,} characters were cut.")
    if notes:
        payload["Note"] = " ".join(notes)
    return payload


def _cell(value: object) -> object:
    if isinstance(value, bytes):
        value = "x'" + value.hex() + "'"
    if isinstance(value, str) and len(value) > SQL_CELL_CHARS:
        return value[:SQL_CELL_CHARS] + "...[cut]"
    return value
