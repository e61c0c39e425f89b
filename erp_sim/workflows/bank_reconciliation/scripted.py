"""The scripted agent's bank reconciliation: its procedure and its reading of the worksheet, from the visible
messages only (``reading`` names the forms, grids and controls; the generic agent is
``erp_sim.agents.scripted``).

- it finds the account, the statement and its number of lines in the instruction;
- on the worksheet it first reads every page of the statement grid and keeps each line's reference and
  amount (the worksheet shows one tab page at a time, so while it works on the transactions the statement
  lines are out of view: it carries them). Lines are cleared in statement order, so the line to work on is
  the (lines - open lines + 1)-th; if that line is no longer visible in the messages (a pruning policy evicted
  the page it was read from) it opens the statement tab again, where the first open line is it;
- it filters the transaction grid on the line's reference, marks the line and the transactions with that
  reference, and clicks Match once the marked amounts agree;
- a line with no transaction of its reference is a bank charge or interest: it asks the user whether to post
  it and to which ledger account, and posts it (Mark as new) only with the user's word. With no user (C1) the
  question stalls the episode, as itemization's confirmation does;
- once no line is open and the difference is 0.00 it closes the worksheet and marks the reconciliation
  reconciled, then says it is done.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Any, NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.form_index import READ_CACHE_SIZE, FormIndex
from erp_sim.money import display_money
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.faces import Decision, Seen

_STATEMENT = re.compile(r"\bbank statement (\S+) \([^)]*?, (\d+) lines\b")
_ACCOUNT = re.compile(r"\breconcile bank account (.+?) \(")
_POST = re.compile(r"\bpost line (\d+) \([^)]*\) as new, to (\d{6} [^.]+)\.", re.IGNORECASE)
_NO_POST = re.compile(r"\bdon't post line (\d+)\b", re.IGNORECASE)
# a structured summary's open statement lines (``facts``' format): "  12. CHK-781762 | -695.26 | CHECK PAID"
_SUMMARY_LINE = re.compile(r"^\s+(\d+)\. (\S+) \| (-?[\d,]+\.\d{2}) \| (.*)$", re.MULTILINE)
SOP_KEY = "sop/reconcile_bank_statement"
UNREADABLE = "I could not find the bank account and statement in your message. Which statement should I reconcile?"
ASK = (
    "Statement line {number} ({description}, reference {reference}, {amount}) has no bank transaction in the "
    "ledger. Should I post it as new, and to which ledger account?"
)


class Brief(NamedTuple):
    account: str | None
    statement: str | None
    line_count: int


@lru_cache(maxsize=64)
def read_instruction(instruction: str) -> Brief:
    statement = _STATEMENT.search(instruction)
    account = _ACCOUNT.search(instruction)
    return Brief(
        account.group(1) if account else None,
        statement.group(1) if statement else None,
        int(statement.group(2)) if statement else 0,
    )


def unreadable(brief: Brief) -> str | None:
    return UNREADABLE if brief.statement is None or not brief.line_count else None


def sop_key(brief: Brief) -> str:
    return SOP_KEY


Line = tuple[str, str, str]  # (reference, amount as shown, description)


class StatementPage(NamedTuple):
    """The statement lines one worksheet response shows: (line number, line) pairs."""

    lines: tuple[tuple[int, Line], ...]


def read_form(state: dict[str, Any], form: FormIndex, brief: Brief) -> StatementPage | None:
    if state.get(K.NAME) != R.WORKSHEET_FORM:
        return None
    rows = R.statement_rows(state)
    if not rows:
        return None
    return StatementPage(tuple((r.line_number, (r.reference, display_money(r.amount), r.description)) for r in rows))


UserSaid = tuple[tuple[tuple[int, str], ...], tuple[int, ...], tuple[tuple[int, Line], ...]]


@lru_cache(maxsize=READ_CACHE_SIZE)
def read_user(content: str, brief: Brief) -> UserSaid:
    """(the lines the user says to post, with the account's label; the lines not to post; a structured
    summary's open statement lines)."""
    posts = tuple((int(n), label.strip()) for n, label in _POST.findall(content))
    declined = tuple(int(n) for n in _NO_POST.findall(content))
    summary = tuple((int(n), (ref, amount, text.strip())) for n, ref, amount, text in _SUMMARY_LINE.findall(content))
    return posts, declined, summary


INITIAL: dict[str, Any] = {
    "lines": {},  # line number -> (Line, message index); copied on write
    "post_to": {},  # line number -> the ledger account's label the user named; copied on write
    "no_post": frozenset(),
}


def fold_result(state: dict[str, Any], page: StatementPage, position: int, brief: Brief) -> None:
    state["lines"] = {**state["lines"], **{n: (line, position) for n, line in page.lines}}


def fold_user(state: dict[str, Any], said: UserSaid, position: int, brief: Brief) -> None:
    posts, declined, summary = said
    if posts:
        state["post_to"] = {**state["post_to"], **dict(posts)}
    if declined:
        state["no_post"] = state["no_post"] | set(declined)
    if summary:
        state["lines"] = {**{n: (line, position) for n, line in summary}, **state["lines"]}


class ReconciliationView:
    """What the visible messages say about the reconciliation (``seen``: the generic view)."""

    def __init__(self, seen: Seen):
        self.seen = seen
        self.brief: Brief = seen.brief
        read = seen.read
        self.state: dict[str, Any] | None = seen.state
        self.form_index: FormIndex = seen.form_index
        self.last_tool = seen.last_tool
        self.last_arguments: dict[str, Any] = seen.last_arguments
        self.lines: dict[int, Line] = {n: line for n, (line, _) in read["lines"].items()}
        self.post_to: dict[int, str] = read["post_to"]
        self.no_post: frozenset[int] = read["no_post"]

    @property
    def form(self) -> str | None:
        return self.state.get(K.NAME) if self.state else None

    def figure(self, control: str) -> Any:
        return R.figure(self.state, control)


def decide(view: ReconciliationView, ask: bool) -> Decision:
    """The next step on the form in view: ``(tool, arguments)`` or a message to the user."""
    handlers: dict[str | None, Callable[[ReconciliationView], Decision]] = {
        None: _no_form,
        R.LIST_FORM: _list,
        R.HEADER_FORM: _header,
        R.WORKSHEET_FORM: _worksheet,
    }
    handler = handlers.get(view.form)
    return handler(view) if handler is not None else ("form_close_form", {})


def _no_form(view: ReconciliationView) -> Decision:
    opening = view.seen.sop_menu_item()  # the SOP's verified call opens the list without the menu search
    if opening is not None:
        return "form_open_menu_item", opening
    if view.last_tool == "form_find_menu_item":
        return "form_open_menu_item", {"name": R.LIST_FORM, "type": "Display"}
    return "form_find_menu_item", {"menuItemFilter": "bank reconciliation"}


def _list(view: ReconciliationView) -> Decision:
    rows = (view.form_index.grids.get(R.LIST_GRID) or {}).get(K.ROWS, [])
    target = next((r for r in rows if r.get(K.VALUES, {}).get(R.LIST_STATEMENT) == view.brief.statement), None)
    if target is None:
        return "form_filter_grid", {
            "gridName": R.LIST_GRID,
            "gridColumnName": R.LIST_STATEMENT,
            "filterValue": view.brief.statement,
        }
    if not target.get(K.IS_SELECTED):
        return "form_select_grid_row", {"gridName": R.LIST_GRID, "rowNumber": target[K.ROW_NUMBER]}
    return "form_click_control", {"controlName": R.OPEN_BUTTON}


def _long_term_update_due(view: ReconciliationView) -> bool:
    """With memory, the update is asked for before the click that ends the episode (marking it reconciled ends
    it at once, as itemization's closing the form does), so the run is consolidated."""
    return view.seen.memory and not view.seen.long_term_update_requested


def _done(view: ReconciliationView) -> Decision:
    if _long_term_update_due(view):
        return "start_long_term_update", {}
    return (
        f"Bank statement {view.brief.statement} is reconciled: all {view.brief.line_count} statement lines are "
        "matched or posted, the unreconciled difference is 0.00 and the reconciliation is marked as reconciled. Done."
    )


def _header(view: ReconciliationView) -> Decision:
    if formstate.control_value(view.state, R.HEADER_RECONCILED) == "Yes":
        return _done(view)
    if view.figure(R.HEADER_DIFFERENCE) == 0 and view.figure("BankRecon_OpenStatementLines") == 0:
        if _long_term_update_due(view):
            return "start_long_term_update", {}
        return "form_click_control", {"controlName": R.RECONCILE_BUTTON}
    return "form_click_control", {"controlName": R.WORKSHEET_BUTTON}


def _tab(tab: str) -> Decision:
    return "form_open_or_close_tab", {"tabName": tab, "tabAction": "Open"}


def _mark(grid: str, row: str) -> Decision:
    return "form_select_grid_row", {"gridName": grid, "rowNumber": row, "marking": "Marked"}


def _worksheet(view: ReconciliationView) -> Decision:
    open_lines = view.figure(R.OPEN_LINES)
    if open_lines is None:
        return "form_close_form", {}
    if open_lines == 0:
        if view.figure(R.DIFFERENCE) == 0:
            return "form_close_form", {}
        return (
            f"Every statement line is cleared but the unreconciled difference is {view.figure(R.DIFFERENCE)}, "
            "not 0.00. Should I investigate the difference?"
        )
    tab = R.open_tab(view.state)
    number = view.brief.line_count - int(open_lines) + 1
    unread = any(n not in view.lines for n in range(number, view.brief.line_count + 1))
    if tab == R.STATEMENT_TAB and view.form_index.has_next_page(R.STATEMENT_GRID) and unread:
        return "form_click_control", {"controlName": R.STATEMENT_GRID, "actionId": K.LOAD_NEXT_PAGE}
    line = view.lines.get(number)
    if line is None:  # not in view (evicted, or never read): the first open line of the statement grid is it
        if tab != R.STATEMENT_TAB:
            return _tab(R.STATEMENT_TAB)
        if view.form_index.first_row(R.STATEMENT_GRID) > 1:
            return _reset_statement_grid()
        return f"I cannot find statement line {number} on the worksheet. Could you check the statement?"
    if tab == R.STATEMENT_TAB and view.form_index.first_row(R.STATEMENT_GRID) > 1:
        return _reset_statement_grid()  # back to the first page: the line to clear is its first row
    return _clear(view, number, line, tab)


def _reset_statement_grid() -> Decision:
    return "form_filter_grid", {"gridName": R.STATEMENT_GRID, "gridColumnName": R.LINE_REFERENCE, "filterValue": ""}


def _clear(view: ReconciliationView, number: int, line: Line, tab: str | None) -> Decision:
    reference, amount_text, description = line
    amount = R.amount(amount_text)
    marked_line = R.figure(view.state, R.MARKED_LINES_AMOUNT)
    marked_transactions = R.figure(view.state, R.MARKED_TRANSACTIONS_AMOUNT)
    if tab != R.TRANSACTION_TAB:
        return _tab(R.TRANSACTION_TAB)
    grid = view.form_index.grids.get(R.TRANSACTION_GRID) or {}
    if (grid.get("Filters") or {}).get(R.TRANS_REFERENCE) != reference:
        return "form_filter_grid", {
            "gridName": R.TRANSACTION_GRID,
            "gridColumnName": R.TRANS_REFERENCE,
            "filterValue": reference,
        }
    rows = [r for r in grid.get(K.ROWS, []) if r.get(K.VALUES, {}).get(R.TRANS_REFERENCE) == reference]
    if rows:
        if marked_line != amount:
            return _mark(R.STATEMENT_GRID, "1")
        unmarked = [r for r in rows if not r.get(K.IS_MARKED)]
        if unmarked:
            return _mark(R.TRANSACTION_GRID, unmarked[0][K.ROW_NUMBER])
        if marked_transactions == amount:
            return "form_click_control", {"controlName": R.MATCH_BUTTON}
        return (
            f"The bank transactions with reference {reference} add up to {display_money(marked_transactions or Decimal(0))}, "
            f"but statement line {number} is {amount_text}. How should I match it?"
        )
    account = view.post_to.get(number)
    if account is None or number in view.no_post:
        return ASK.format(number=number, description=description, reference=reference, amount=amount_text)
    if formstate.control_value(view.state, R.OFFSET_ACCOUNT) != account:
        return "form_set_control_values", {"controlValues": [{"controlName": R.OFFSET_ACCOUNT, "value": account}]}
    if marked_line != amount:
        return _mark(R.STATEMENT_GRID, "1")
    return "form_click_control", {"controlName": R.NEW_BUTTON}


VIEW = ReconciliationView  # the view of the procedure ``faces.folder_procedure`` builds of this module
