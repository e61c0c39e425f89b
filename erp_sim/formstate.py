"""Reading a rendered response: find grids and controls in a FormState, whatever the nesting.

For clients of the simulator (the oracle, scripted agents, summarizers), which must work from
what an agent sees, not from the database. Tolerant by design: anything malformed is skipped.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterator

CONTAINER_TYPES = ("Group", "Tab", "TabPage", "FastTab")


def parse_response(text: str) -> dict[str, Any] | None:
    """The JSON object of a tool response, or None when the text is not one.

    Cached by text (the same response is read at many steps): callers must not mutate it.
    """
    return _parse_response(text) if isinstance(text, str) and text.lstrip().startswith("{") else None


@lru_cache(maxsize=4096)
def _parse_response(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def form_state(text: str) -> dict[str, Any] | None:
    """The ``FormState`` of a response text (None when there is none)."""
    state = (parse_response(text) or {}).get("FormState")
    return state if isinstance(state, dict) else None


def walk_controls(form: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(control type, control) for every control, grid and container of a ``Form`` tree."""
    if not isinstance(form, dict):
        return
    for control_type, controls in form.items():
        if not isinstance(controls, list):
            continue
        for control in controls:
            if not isinstance(control, dict):
                continue
            yield control_type, control
            if control_type in CONTAINER_TYPES:
                yield from walk_controls(control.get("Children"))


def find_control(form: Any, name: str) -> dict[str, Any] | None:
    return next((c for kind, c in walk_controls(form) if kind != "Grid" and c.get("Name") == name), None)


def find_grid(form: Any, name: str) -> dict[str, Any] | None:
    return next((c for kind, c in walk_controls(form) if kind == "Grid" and c.get("Name") == name), None)


def grids(state: dict | None) -> dict[str, dict]:
    return {c["Name"]: c for kind, c in walk_controls((state or {}).get("Form")) if kind == "Grid" and "Name" in c}


def grid_rows(state: dict | None, grid_name: str) -> list[dict]:
    """Rows of a grid as dicts: the column values plus ``RowNumber``."""
    grid = find_grid((state or {}).get("Form"), grid_name) or {}
    return [{"RowNumber": row.get("RowNumber"), **(row.get("Values") or {})}
            for row in grid.get("Rows") or [] if isinstance(row, dict)]


def control_value(state: dict | None, name: str) -> Any:
    control = find_control((state or {}).get("Form"), name)
    return control.get("Value") if control else None


def has_next_page(state: dict | None, grid_name: str) -> bool:
    grid = find_grid((state or {}).get("Form"), grid_name) or {}
    pagination = grid.get("Pagination")
    return bool(pagination.get("HasNextPage")) if isinstance(pagination, dict) else False
