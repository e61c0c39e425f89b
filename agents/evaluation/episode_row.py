"""One evaluation row per episode (configuration x task x run) and the helpers that key, order and
group rows."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

Row = Mapping[str, Any]
TaskKey = tuple[str, str]  # (task_set, task_id)


def natural_key(text: str) -> tuple:
    """Sort key that puts C2 before C10 and n=3 before n=11."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def task_key(row: Row) -> TaskKey:
    return (str(row.get("task_set", "")), str(row["task_id"]))


def _episode_key(row: Row) -> tuple:
    return (
        natural_key(str(row["config"])),
        natural_key(task_key(row)[0]),
        natural_key(task_key(row)[1]),
        int(row.get("run", 0)),
    )


def is_infra_error(row: Row) -> bool:
    return bool(row.get("infra_error"))


def succeeded(row: Row) -> bool:
    """The full-itemization outcome; a row without a grade counts as a failure."""
    return bool((row.get("grade") or {}).get("success"))


def canonical_order(rows: Iterable[Row]) -> list[Row]:
    """Rows sorted by (config, task, run): results do not depend on the order episodes finished in."""
    return sorted(rows, key=_episode_key)


def scored_rows(rows: Iterable[Row]) -> list[Row]:
    """The rows the agent is scored on: no infrastructure error, one row per episode.

    A resumed run may append an episode again; the last row of an episode wins.
    """
    latest: dict[tuple, Row] = {}
    for row in rows:
        if not is_infra_error(row):
            latest[_episode_key(row)] = row
    return canonical_order(latest.values())


def duplicate_count(rows: Iterable[Row]) -> int:
    """How many scored rows repeat an episode already seen (a runner bug worth showing)."""
    keys = [_episode_key(row) for row in rows if not is_infra_error(row)]
    return len(keys) - len(set(keys))


def infra_error_rows(rows: Iterable[Row]) -> list[Row]:
    return canonical_order(row for row in rows if is_infra_error(row))


def by_config(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows grouped by configuration, configurations in natural order."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        groups[str(row["config"])].append(row)
    return {name: canonical_order(groups[name]) for name in sorted(groups, key=natural_key)}
