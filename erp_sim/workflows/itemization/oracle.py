"""Itemization's oracle: solves any itemization task through the tools only, reading only responses.

It knows what the instruction says (report number, line number, expense type) and the
mapping from receipt wording to subcategory (what the study's system prompt taught GPT-5),
and nothing else: the receipt charges come from the receipt viewer's grid.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from decimal import Decimal

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.json_values import JsonObject
from erp_sim.workflows import Call, OracleError
from erp_sim.workflows.itemization.catalog import wording_to_subcategory
from erp_sim.workflows.itemization.task import Task


def _rows_until(
    response_text: str, grid: str, match: Callable[[JsonObject], bool]
) -> tuple[JsonObject | None, JsonObject | None]:
    state = formstate.form_state(response_text)
    return next((r for r in formstate.grid_rows(state, grid) if match(r)), None), state


def oracle_calls(task: Task) -> Generator[Call, str, None]:
    """Yield the calls that solve ``task``; receive each response text via ``send``. A task with several
    lines is itemized line by line, in the instruction's order, from the same report form."""
    yield "form_find_menu_item", {"menuItemFilter": "expense reports"}
    yield "form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}
    response = yield (
        "form_filter_grid",
        {
            "gridName": "ExpenseReportsGrid",
            "gridColumnName": "TrvExpTable_ExpNumber",
            "filterValue": task.report_number,
        },
    )
    row, _ = _rows_until(response, "ExpenseReportsGrid", lambda r: r["TrvExpTable_ExpNumber"] == task.report_number)
    if row is None:
        raise OracleError(f"report {task.report_number} not in the filtered list")
    yield "form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": row[K.ROW_NUMBER]}
    response = yield "form_click_control", {"controlName": "EditReport"}
    for line in task.lines:
        response = yield from _itemize_line(task, line.line_number, response)


def _itemize_line(task: Task, line_number: int, response: str) -> Generator[Call, str, str]:
    """From the report form (``response``): itemize one line and close its form; returns the last response."""

    def is_target(r: JsonObject) -> bool:
        return bool(r["TrvExpTrans_LineNum"] == str(line_number) and r["TrvExpTrans_LineType"] != "ItemizedLine")

    row, state = _rows_until(response, "ExpenseLinesGrid", is_target)
    while row is None:
        if not formstate.has_next_page(state, "ExpenseLinesGrid"):
            raise OracleError(f"line {line_number} not found on report {task.report_number}")
        response = yield "form_click_control", {"controlName": "ExpenseLinesGrid", "actionId": "LoadNextPage"}
        row, state = _rows_until(response, "ExpenseLinesGrid", is_target)
    yield "form_select_grid_row", {"gridName": "ExpenseLinesGrid", "rowNumber": row[K.ROW_NUMBER]}

    response = yield "form_click_control", {"controlName": "ViewReceipt"}
    state = formstate.form_state(response)
    charges = formstate.grid_rows(state, "ReceiptItemsGrid")
    while formstate.has_next_page(state, "ReceiptItemsGrid"):
        response = yield "form_click_control", {"controlName": "ReceiptItemsGrid", "actionId": "LoadNextPage"}
        state = formstate.form_state(response)
        charges += formstate.grid_rows(state, "ReceiptItemsGrid")
    if not charges:
        raise OracleError("the receipt shows no charges")
    yield "form_close_form", {}

    yield "form_click_control", {"controlName": "Itemize"}
    mapping = wording_to_subcategory(task.expense_type)
    for charge in charges:
        yield "form_click_control", {"controlName": "NewLine"}
        yield (
            "form_set_control_values",
            {
                "controlValues": [
                    {"controlName": "TrvExpTrans_ExpSubCategory", "value": mapping[charge["ReceiptItem_Description"]]},
                    {"controlName": "TrvExpTrans_TransDate", "value": charge["ReceiptItem_Date"]},
                    {"controlName": "TrvExpTrans_AmountCurr", "value": charge["ReceiptItem_Amount"].replace(",", "")},
                ]
            },
        )
    response = yield "form_save_form", {}
    remaining = formstate.control_value(formstate.form_state(response), "ItemizationRemaining")
    if remaining is None or Decimal(str(remaining).replace(",", "")) != 0:
        raise OracleError(f"remaining after save is {remaining!r}, not 0.00")
    return (yield "form_close_form", {})
