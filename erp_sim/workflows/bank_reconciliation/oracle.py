"""Bank reconciliation's oracle: solves any task strictly through the tools, reading only responses.

It knows what the instruction says (the bank account, the statement and its number of lines), the matching
rules (``catalog.MATCHING_RULES``: a line's reference is its transactions' payment reference) and what the
user answers when asked about a line with no bank transaction (``Task.fees``), and nothing else: the lines
come from the worksheet's statement grid, page by page, and each line's transactions from the transaction
grid filtered on the line's reference. Lines are cleared in statement order, so the next one is always the
first row of the statement grid (checked against the marked amount the worksheet shows).
"""

from __future__ import annotations

from collections.abc import Generator

from erp_sim import formstate
from erp_sim.money import display_money
from erp_sim.workflows import Call, OracleError
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID
from erp_sim.workflows.bank_reconciliation.task import Task


def oracle_calls(task: Task) -> Generator[Call, str, None]:
    """Yield the calls that solve ``task``; receive each response text via ``send``."""
    yield "form_find_menu_item", {"menuItemFilter": "bank reconciliation"}
    yield "form_open_menu_item", {"name": R.LIST_FORM, "type": "Display"}
    response = yield (
        "form_filter_grid",
        {"gridName": R.LIST_GRID, "gridColumnName": R.LIST_STATEMENT, "filterValue": task.statement_id},
    )
    rows = formstate.grid_rows(formstate.form_state(response), R.LIST_GRID)
    row = next(
        (r for r in rows if r[R.LIST_STATEMENT] == task.statement_id and r[R.LIST_ACCOUNT] == task.account_id), None
    )
    if row is None:
        raise OracleError(f"no reconciliation of statement {task.statement_id} in the list")
    yield "form_select_grid_row", {"gridName": R.LIST_GRID, "rowNumber": row["RowNumber"]}
    yield "form_click_control", {"controlName": R.OPEN_BUTTON}
    response = yield "form_click_control", {"controlName": R.WORKSHEET_BUTTON}

    state = formstate.form_state(response)
    lines = R.statement_rows(state)
    while formstate.has_next_page(state, R.STATEMENT_GRID):
        response = yield "form_click_control", {"controlName": R.STATEMENT_GRID, "actionId": "LoadNextPage"}
        state = formstate.form_state(response)
        lines += R.statement_rows(state)
    if len(lines) != task.line_count:
        raise OracleError(
            f"the worksheet shows {len(lines)} open statement lines, the instruction says {task.line_count}"
        )
    # back to the first page (clearing a filter does), then the transactions' tab page
    yield "form_filter_grid", {"gridName": R.STATEMENT_GRID, "gridColumnName": R.LINE_REFERENCE, "filterValue": ""}
    yield "form_open_or_close_tab", {"tabName": R.TRANSACTION_TAB, "tabAction": "Open"}
    offset_account = None
    for line in lines:
        response = yield (
            "form_filter_grid",
            {"gridName": R.TRANSACTION_GRID, "gridColumnName": R.TRANS_REFERENCE, "filterValue": line.reference},
        )
        state = formstate.form_state(response)
        if formstate.has_next_page(state, R.TRANSACTION_GRID):
            raise OracleError(f"more than a page of transactions share reference {line.reference}")
        candidates = [t for t in R.transaction_rows(state) if t.reference == line.reference]
        response = yield "form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "1", "marking": "Marked"}
        _expect(response, R.MARKED_LINES_AMOUNT, line.amount, f"line {line.line_number} is not the first open line")
        if candidates:
            if sum(t.amount for t in candidates) != line.amount:
                raise OracleError(f"the transactions of {line.reference} do not add up to line {line.line_number}")
            for candidate in candidates:
                response = yield (
                    "form_select_grid_row",
                    {"gridName": R.TRANSACTION_GRID, "rowNumber": candidate.row_number, "marking": "Marked"},
                )
            _expect(
                response,
                R.MARKED_TRANSACTIONS_AMOUNT,
                line.amount,
                f"the marked amounts of line {line.line_number} differ",
            )
            response = yield "form_click_control", {"controlName": R.MATCH_BUTTON}
        else:
            account = task.fee_accounts.get(line.line_number)
            if account is None:  # the user would not post it: the task cannot be solved
                raise OracleError(f"line {line.line_number} has no bank transaction and the user does not post it")
            if account != offset_account:
                label = MAIN_ACCOUNT_BY_ID[account].label
                yield "form_set_control_values", {"controlValues": [{"controlName": R.OFFSET_ACCOUNT, "value": label}]}
                offset_account = account
            response = yield "form_click_control", {"controlName": R.NEW_BUTTON}
        _expect(response, R.OPEN_LINES, task.line_count - line.line_number, f"line {line.line_number} is still open")
    _expect(response, R.DIFFERENCE, 0, "the unreconciled difference is not 0.00")
    yield "form_close_form", {}
    response = yield "form_click_control", {"controlName": R.RECONCILE_BUTTON}
    if formstate.control_value(formstate.form_state(response), R.HEADER_RECONCILED) != "Yes":
        raise OracleError("the reconciliation was not marked as reconciled")


def _expect(response: str, control: str, value: object, problem: str) -> None:
    shown = R.figure(formstate.form_state(response), control)
    if shown is None or shown != value:
        raise OracleError(f"{problem}: {control} shows {shown} ({display_money(shown) if shown is not None else '-'})")
