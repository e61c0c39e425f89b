"""A response as a person reads it: the result, messages, payloads as text tables and the form's controls
and grids. ``erp-sim play`` prints it, and ``render_mode='ansi'`` returns it (erp_sim.envs.expense_env)."""

from __future__ import annotations

import json

from erp_sim import response_keys as K

CELL_WIDTH = 28  # longer cells are cut with "~" in tables; `raw` shows them whole


def table(columns: list[tuple[str, str]], rows: list[dict]) -> list[str]:
    """Rows as a text table; columns are (key, header) pairs."""

    def cell(value) -> str:
        text = "" if value is None else str(value)
        return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "~"

    cells = [[cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max([len(header)] + [len(line[i]) for line in cells]) for i, (_, header) in enumerate(columns)]
    render = lambda values: "  " + " | ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()
    return [
        render([header for _, header in columns]),
        "  " + "-+-".join("-" * w for w in widths),
        *(render(line) for line in cells),
    ]


def pages(pagination: dict | None, shown: int) -> str:
    if not isinstance(pagination, dict) or K.TOTAL_ROWS not in pagination:
        return f"{shown} row(s)"
    text = f"rows {pagination.get(K.FIRST_ROW)}-{pagination.get(K.LAST_ROW)} of {pagination[K.TOTAL_ROWS]}"
    more = [
        action
        for key, action in ((K.HAS_PREVIOUS_PAGE, K.LOAD_PREVIOUS_PAGE), (K.HAS_NEXT_PAGE, K.LOAD_NEXT_PAGE))
        if pagination.get(key)
    ]
    return text + (f" (more: actionId {' / '.join(more)})" if more else "") if pagination[K.TOTAL_ROWS] else "no rows"


def column_header(column: dict | str) -> tuple[str, str]:
    """(name, label) of a grid column: an object at default verbosity, a bare name in compact."""
    if isinstance(column, dict):
        return column[K.NAME], column.get(K.LABEL) or column[K.NAME]
    return column, column


def button_text(button: dict | str) -> str:
    """A button's name, marked when disabled (compact lists only the enabled buttons' names)."""
    if isinstance(button, dict):
        return button[K.NAME] + ("" if button.get(K.IS_ENABLED, True) else " (disabled)")
    return button


def form_lines(node, lines: list[str]) -> None:
    """Controls as `Label [Name] = Value` (* editable), grids as tables, buttons on one line."""
    if isinstance(node, list):
        for item in node:
            form_lines(item, lines)
        return
    if not isinstance(node, dict):
        return
    if K.ROWS in node and K.COLUMNS in node:
        rows = [{**row, **row.get(K.VALUES, {})} for row in node[K.ROWS] or []]
        label = f" ({node[K.LABEL]})" if node.get(K.LABEL) else ""  # compact grids have no label
        lines.append(f"Grid {node.get(K.NAME)}{label}: {pages(node.get(K.PAGINATION), len(rows))}")
        headers = [column_header(c) for c in node[K.COLUMNS]]
        if rows:
            lines += table([(K.ROW_NUMBER, "Row"), *headers], rows)
        lines.append("  columns: " + ", ".join(name for name, _ in headers))
        return
    if K.VALUE in node and K.NAME in node:
        if node.get(K.IS_VISIBLE, True):
            mark = "*" if node.get(K.IS_EDITABLE) else " "
            lines.append(f" {mark}{node.get(K.LABEL) or node[K.NAME]} [{node[K.NAME]}] = {node[K.VALUE]!r}")
        return
    for key, value in node.items():
        if key == K.BUTTONS and isinstance(value, list):
            lines.append("Buttons: " + ", ".join(map(button_text, value)))
        elif isinstance(value, (dict, list)):
            form_lines(value, lines)


def readable(observation: str) -> str:
    """The result, messages, other payloads as tables and the form's controls and grids."""
    try:
        response = json.loads(observation)
    except ValueError:
        return observation  # a user's reply, or plain text
    if not isinstance(response, dict):
        return json.dumps(response, indent=2, ensure_ascii=False)
    error = response.get(K.ERROR) or {}
    lines = [f"Error {error.get(K.CODE)}: {error.get(K.MESSAGE)}" if error else f"Result: {response.get(K.RESULT, '')}"]
    for message in response.get(K.MESSAGES) or []:
        if isinstance(message, dict) and message.get(K.TEXT) != error.get(K.MESSAGE):
            lines.append(f"{message.get(K.LEVEL, K.LEVEL_INFO)}: {message.get(K.TEXT)}")
    for key, value in response.items():
        if key in K.ENVELOPE_KEYS:
            continue
        if isinstance(value, dict) and isinstance(value.get(K.COLUMNS), list) and isinstance(value.get(K.ROWS), list):
            value = [dict(zip(value[K.COLUMNS], row)) for row in value[K.ROWS]]  # SQL results: columns + row lists
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            lines.append(f"{key}: {len(value)} row(s)")
            lines += table([(column, column) for column in dict.fromkeys(k for row in value for k in row)], value)
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    form = response.get(K.FORM_STATE)
    if form:
        summary = form.get(K.SUMMARY)
        lines.append(f"Form {form.get(K.CAPTION)} ({form.get(K.NAME)}){': ' + summary if summary else ''}")
        form_lines({K.FORM: form.get(K.FORM), K.BUTTONS: form.get(K.BUTTONS) or []}, lines)
        if form.get(K.HAS_UNSAVED_CHANGES):
            lines.append("Unsaved changes: save with form_save_form")
        for guidance in form.get(K.GUIDANCE) or []:
            lines.append(f"Guidance: {guidance}")
        lines.append("(* editable; 'raw' shows the full JSON)")
    return "\n".join(lines)
