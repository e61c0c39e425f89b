"""Reading bank reconciliation's forms from a response: which form, grid and control holds what.

The names below are the forms' (``forms/``), defined once here so that the forms, the oracle and any
agent built on the responses (a scripted agent, a summarizer's facts) read the same vocabulary. The readers
work from a response text only (``erp_sim.formstate``), never from the database, and are tolerant:
a missing grid reads as no rows.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import NamedTuple, TypeVar

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.json_values import JsonObject

# --- forms, grids, tab pages, buttons, controls --------------------------------------------------
LIST_FORM = "BankReconciliation"  # the list of reconciliations (also its menu item)
HEADER_FORM = "BankReconciliationHeader"  # one reconciliation: figures, Worksheet, MarkAsReconciled
WORKSHEET_FORM = "BankReconciliationWorksheet"  # matching

LIST_GRID = "BankReconciliationGrid"
STATEMENT_GRID = "StatementLinesGrid"  # the statement's open lines
TRANSACTION_GRID = "BankTransactionsGrid"  # the account's open bank transactions up to the cut-off
MATCHED_GRID = "MatchedGrid"  # every match group's items
STATEMENT_TAB, TRANSACTION_TAB, MATCHED_TAB = "StatementLinesTabPage", "BankTransactionsTabPage", "MatchedTabPage"
TAB_PAGES = (STATEMENT_TAB, TRANSACTION_TAB, MATCHED_TAB)  # one of them shows at a time
TAB_OF_GRID = {STATEMENT_GRID: STATEMENT_TAB, TRANSACTION_GRID: TRANSACTION_TAB, MATCHED_GRID: MATCHED_TAB}

OPEN_BUTTON = "OpenReconciliation"  # list -> header
WORKSHEET_BUTTON, RECONCILE_BUTTON = "Worksheet", "MarkAsReconciled"  # header
MATCH_BUTTON, NEW_BUTTON, UNMATCH_BUTTON = "Match", "MarkAsNew", "Unmatch"  # worksheet
OFFSET_ACCOUNT = "Worksheet_OffsetAccount"  # the ledger account MarkAsNew posts to

# list columns
LIST_ACCOUNT, LIST_STATEMENT, LIST_CUT_OFF = "BankRecon_AccountId", "BankRecon_StatementId", "BankRecon_CutOffDate"
LIST_TOTAL, LIST_RECONCILED = "BankRecon_StatementTotal", "BankRecon_Reconciled"
# statement line columns
LINE_NUMBER, LINE_DATE, LINE_TEXT = "Stmt_LineNum", "Stmt_BookingDate", "Stmt_Description"
LINE_REFERENCE, LINE_AMOUNT = "Stmt_Reference", "Stmt_Amount"
# bank transaction columns
TRANS_DATE, TRANS_VOUCHER, TRANS_REFERENCE = "Trans_Date", "Trans_Voucher", "Trans_Reference"
TRANS_TEXT, TRANS_AMOUNT = "Trans_Description", "Trans_Amount"
# matched columns
MATCH_ID, MATCH_TYPE, MATCH_DOCUMENT = "Match_Id", "Match_Type", "Match_Document"
MATCH_REFERENCE, MATCH_AMOUNT, MATCH_ACCOUNT = "Match_Reference", "Match_Amount", "Match_OffsetAccount"

# worksheet figures (header controls use the BankRecon_ prefix for the same figures)
STATEMENT_TOTAL, MATCHED_AMOUNT = "Worksheet_StatementTotal", "Worksheet_MatchedAmount"
POSTED_AMOUNT, DIFFERENCE = "Worksheet_PostedAmount", "Worksheet_UnreconciledDifference"
OPEN_LINES, OPEN_TRANSACTIONS = "Worksheet_OpenStatementLines", "Worksheet_OpenBankTransactions"
MARKED_LINES_AMOUNT, MARKED_TRANSACTIONS_AMOUNT = "Worksheet_MarkedStatementAmount", "Worksheet_MarkedTransactionAmount"
HEADER_DIFFERENCE, HEADER_RECONCILED = "BankRecon_UnreconciledDifference", "BankRecon_Reconciled"


T = TypeVar("T")


# --- readers ------------------------------------------------------------------------------------
def amount(text: object) -> Decimal | None:
    """An amount as a form shows it ("-1,234.56"), or None when it is not one."""
    try:
        return Decimal(str(text).replace(",", ""))
    except (InvalidOperation, ValueError):
        return None


class StatementRow(NamedTuple):
    row_number: str
    line_number: int
    booking_date: str
    description: str
    reference: str
    amount: Decimal


class TransactionRow(NamedTuple):
    row_number: str
    date: str
    voucher: str
    reference: str
    description: str
    amount: Decimal


class MatchedRow(NamedTuple):
    row_number: str
    match_id: str
    match_type: str  # Match or New
    document: str  # "Line 3" or a voucher
    reference: str
    amount: Decimal
    offset_account: str


def _money(text: object) -> Decimal:
    value = amount(text)
    if value is None:
        raise ValueError(f"not an amount: {text!r}")
    return value


def _read(state: JsonObject | None, grid: str, make: Callable[..., T], spec: tuple[Column, ...]) -> list[T]:
    """The grid's rows on its current page as ``make(row number, *converted columns)``; rows that do not read
    (a missing or malformed value) are left out."""
    rows = []
    for row in formstate.grid_rows(state, grid):
        try:
            rows.append(make(str(row[K.ROW_NUMBER]), *(convert(row.get(name, "")) for name, convert in spec)))
        except (KeyError, ValueError):
            continue
    return rows


Column = tuple[str, Callable[[object], object]]  # (column name, how its text reads)
_STATEMENT: tuple[Column, ...] = (
    (LINE_NUMBER, lambda text: int(str(text))),
    (LINE_DATE, str),
    (LINE_TEXT, str),
    (LINE_REFERENCE, str),
    (LINE_AMOUNT, _money),
)
_TRANSACTION: tuple[Column, ...] = (
    (TRANS_DATE, str),
    (TRANS_VOUCHER, str),
    (TRANS_REFERENCE, str),
    (TRANS_TEXT, str),
    (TRANS_AMOUNT, _money),
)
_MATCHED: tuple[Column, ...] = (
    (MATCH_ID, str),
    (MATCH_TYPE, str),
    (MATCH_DOCUMENT, str),
    (MATCH_REFERENCE, str),
    (MATCH_AMOUNT, _money),
    (MATCH_ACCOUNT, str),
)


def statement_rows(state: JsonObject | None) -> list[StatementRow]:
    """The open statement lines on the grid's current page (none when its tab page is closed)."""
    return _read(state, STATEMENT_GRID, StatementRow, _STATEMENT)


def transaction_rows(state: JsonObject | None) -> list[TransactionRow]:
    """The open bank transactions on the grid's current page (none when its tab page is closed)."""
    return _read(state, TRANSACTION_GRID, TransactionRow, _TRANSACTION)


def matched_rows(state: JsonObject | None) -> list[MatchedRow]:
    """The matched items on the grid's current page (none when its tab page is closed)."""
    return _read(state, MATCHED_GRID, MatchedRow, _MATCHED)


def figure(state: JsonObject | None, control: str) -> Decimal | None:
    """A worksheet or header figure (an amount or a count), or None when the form does not show it."""
    return amount(formstate.control_value(state, control))


def open_tab(state: JsonObject | None) -> str | None:
    """The worksheet's tab page that is showing (the one whose grid the response holds)."""
    for grid, tab in TAB_OF_GRID.items():
        if formstate.find_grid((state or {}).get(K.FORM), grid) is not None:
            return tab
    return None
