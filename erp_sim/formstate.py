"""Reading a rendered response: find grids and controls in a FormState, whatever the nesting.

For clients of the simulator (the oracle, scripted agents, summarizers), which must work from
what an agent sees, not from the database. Tolerant by design: anything malformed is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from erp_sim import response_keys as K
from erp_sim.json_values import JsonObject
from erp_sim.response import read_json
from erp_sim.response_keys import CONTAINER_TYPES


def parse_response(text: str) -> dict[str, Any] | None:
    """The JSON object of a tool response, or None when the text is not one.

    Cached by text (the same response is read at many steps): callers must not mutate it.
    """
    return _parse_response(text) if isinstance(text, str) and text.lstrip().startswith("{") else None


@lru_cache(maxsize=4096)
def _parse_response(text: str) -> dict[str, Any] | None:
    try:
        value = read_json(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def form_state(text: str) -> dict[str, Any] | None:
    """The ``FormState`` of a response text (None when there is none)."""
    state = (parse_response(text) or {}).get(K.FORM_STATE)
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
                yield from walk_controls(control.get(K.CHILDREN))


def find_control(form: Any, name: str) -> dict[str, Any] | None:
    return next((c for kind, c in walk_controls(form) if kind != K.GRID and c.get(K.NAME) == name), None)


def find_grid(form: Any, name: str) -> dict[str, Any] | None:
    return next((c for kind, c in walk_controls(form) if kind == K.GRID and c.get(K.NAME) == name), None)


def grids(state: JsonObject | None) -> dict[str, JsonObject]:
    return {c[K.NAME]: c for kind, c in walk_controls((state or {}).get(K.FORM)) if kind == K.GRID and K.NAME in c}


def grid_rows(state: JsonObject | None, grid_name: str) -> list[JsonObject]:
    """Rows of a form's grid as dicts: the column values plus ``RowNumber``."""
    return grid_row_dicts(find_grid((state or {}).get(K.FORM), grid_name))


def grid_row_dicts(grid: dict[str, Any] | None) -> list[JsonObject]:
    """Rows of a grid as dicts: the column values plus ``RowNumber``."""
    return [
        {K.ROW_NUMBER: row.get(K.ROW_NUMBER), **(row.get(K.VALUES) or {})}
        for row in (grid or {}).get(K.ROWS) or []
        if isinstance(row, dict)
    ]


def grid_row_values(grid: dict[str, Any] | None) -> list[tuple[str, bool, dict[str, str]]]:
    """(row number, selected, values as text) of a grid's rows; a row without a number gets its position.

    Selection is ``IsSelected`` (our ERP) or ``Selected`` (older samples).
    """
    rows: list[tuple[str, bool, dict[str, str]]] = []
    for index, row in enumerate((grid or {}).get(K.ROWS) or [], start=1):
        if not isinstance(row, dict):
            continue
        values = row.get(K.VALUES)
        if not isinstance(values, dict):
            values = {}
        selected = bool(row.get(K.IS_SELECTED, row.get(K.SELECTED_LEGACY)))
        rows.append((str(row.get(K.ROW_NUMBER, index)), selected, {str(k): text_of(v) for k, v in values.items()}))
    return rows


def text_of(value: Any) -> str:
    """A value as an agent reads it: strings as they are, None as "", anything else as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def control_value(state: JsonObject | None, name: str) -> Any:
    control = find_control((state or {}).get(K.FORM), name)
    return control.get(K.VALUE) if control else None


def control_text(state: JsonObject | None, name: str) -> str | None:
    """A control's value as text ("" when it has none), or None when the form has no such control."""
    control = find_control((state or {}).get(K.FORM), name)
    return None if control is None else text_of(control.get(K.VALUE))


def has_next_page(state: JsonObject | None, grid_name: str) -> bool:
    return grid_has_next_page(find_grid((state or {}).get(K.FORM), grid_name))


def grid_has_next_page(grid: dict[str, Any] | None) -> bool:
    pagination = (grid or {}).get(K.PAGINATION)
    return bool(pagination.get(K.HAS_NEXT_PAGE)) if isinstance(pagination, dict) else False


def grid_total_rows(grid: dict[str, Any] | None) -> int:
    """The rows of a grid over all its pages (0 when its pagination does not say)."""
    pagination = (grid or {}).get(K.PAGINATION)
    total = pagination.get(K.TOTAL_ROWS) if isinstance(pagination, dict) else None
    return total if isinstance(total, int) else 0
