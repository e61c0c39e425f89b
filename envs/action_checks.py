"""What the env checks an action against before reading it: an adapter's own refusal, and a size bound
that needs no JSON written (``erp_sim.envs.expense_env.parse_action`` uses both)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InvalidAction:
    """An action an adapter refused before the env read it (OpenEnv's wrongly typed fields, say): the env counts it
    as an invalid action with this reason, as it counts the ones it refuses itself."""

    reason: str


def json_text_over(value: Any, limit: int) -> bool:
    """Whether ``json.dumps(value)`` would be longer than ``limit``, told without writing it: a lower bound of its
    length (a string's characters and quotes, a container's brackets and separators, a character for anything
    else), summed until it passes ``limit``. Costs a few microseconds for an ordinary action; a cycle passes too."""
    total, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, Mapping):  # braces, and ": " per entry; counted before the entries are queued
            total += 2 + 2 * len(item)
            if total > limit:
                return True
            pending.extend(item.keys())
            pending.extend(item.values())
            continue
        elif isinstance(item, (list, tuple)):  # brackets and ", " between items
            total += max(2, 2 * len(item))
            if total > limit:
                return True
            pending.extend(item)
            continue
        else:
            total += 1
        if total > limit:
            return True
    return False
