"""One row per episode from a results file that may hold several attempts of it.

``erp-sim eval --resume`` appends a new row for every episode it runs again (an infrastructure
error, a killed run) and, when it finishes, rewrites the file with one row per episode
(``canonicalize``). A run killed during ``--resume`` leaves the appended rows in place, so the
report, the run page and ``canonicalize`` all read rows through :func:`latest_attempts`: the
last row of each episode wins and carries the earlier ones under ``attempts``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]


def episode_key(row: Row) -> tuple:
    """(config, task set, task id, run): what makes a row one episode of a plan."""
    return (row["config"], row.get("task_set"), row["task_id"], row.get("run", 0))


def attempt_summary(row: Row) -> Row:
    """What an earlier attempt leaves in the last row: its number, termination and error."""
    return {
        "attempt": row.get("attempt", 1),
        "termination": row.get("termination"),
        "infra_error": row.get("infra_error"),
        "model_error": row.get("model_error"),
    }


def latest_attempts(rows: Iterable[Row]) -> list[Row]:
    """The last row of each episode, in first-seen order, with ``attempts`` (earlier ones, oldest
    first) and ``attempt`` (its own number) set; rows are copied, the input is left as it was.

    A scored row is never displaced by a later infrastructure error (only files joined by hand
    have one: ``--resume`` never runs a scored episode again); that row becomes an attempt.
    """
    latest: dict[tuple, Row] = {}
    for row in rows:
        key, row = episode_key(row), dict(row)
        earlier = latest.get(key)
        if earlier is None:
            row["attempt"] = len(row.get("attempts", [])) + 1
            latest[key] = row
            continue
        displaced = not (row.get("infra_error") and not earlier.get("infra_error"))
        kept, other = (row, earlier) if displaced else (earlier, row)
        history = [*earlier.get("attempts", []), attempt_summary(other)]
        # numbered by position, so that the rows' order in the file (concurrency) does not change the result
        kept["attempts"] = [{**attempt, "attempt": number} for number, attempt in enumerate(history, 1)]
        kept["attempt"] = len(history) + 1
        latest[key] = kept
    return list(latest.values())
