"""Reading a rendered response: find grids and controls in a FormState, whatever the nesting.

For clients of the simulator (the oracle, scripted agents, summarizers), which must work
from what an agent sees, not from the database.
"""

from __future__ import annotations

import json
from typing import Any, Iterator


def parse_response(text: str) -> dict:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _walk(node: Any) -> Iterator[tuple[str, dict]]:
    """Yield (kind, item) for every control, grid and container in a Form tree."""
    if isinstance(node, dict):
        for kind, items in node.items():
            if isinstance(items, list):
                for item in items:
                    if isinstance(item, dict) and "Name" in item:
                        yield kind, item
                        yield from _walk(item.get("Children", {}))


def grids(form_state: dict | None) -> dict[str, dict]:
    return {item["Name"]: item for kind, item in _walk((form_state or {}).get("Form", {})) if kind == "Grid"}


def controls(form_state: dict | None) -> dict[str, dict]:
    return {item["Name"]: item for kind, item in _walk((form_state or {}).get("Form", {}))
            if kind not in ("Grid", "Group", "Tab", "TabPage", "FastTab")}


def grid_rows(form_state: dict | None, grid_name: str) -> list[dict]:
    """Rows of a grid as dicts: the column values plus ``RowNumber``."""
    grid = grids(form_state).get(grid_name)
    if not grid:
        return []
    return [{"RowNumber": row["RowNumber"], **row.get("Values", {})} for row in grid.get("Rows", [])]


def control_value(form_state: dict | None, name: str) -> Any:
    control = controls(form_state).get(name)
    return control.get("Value") if control else None


def has_next_page(form_state: dict | None, grid_name: str) -> bool:
    grid = grids(form_state).get(grid_name) or {}
    return bool(grid.get("Pagination", {}).get("HasNextPage"))
