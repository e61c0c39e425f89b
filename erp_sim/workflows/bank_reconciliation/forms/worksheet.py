"""BankReconciliationWorksheet: match the statement's open lines to the account's open bank transactions.

Three grids, each on a tab page of one Tab, of which one shows at a time (as a D365 Tab shows one page;
opening one closes the others): the statement's open lines, the account's open bank transactions up to
the cut-off date, and the matched items. Every grid pages at 25 rows, so what is still open has to be
carried from page to page. Rows are marked with ``form_select_grid_row``'s ``marking`` (marks stay across
pages, filters and tab pages, as in D365; a grid on a closed tab page can still be marked and filtered,
it is only not shown), and the buttons act on the marked rows:

- Match: the marked statement lines to the marked bank transactions, refused unless their totals are equal;
- Mark as new: each marked line posted at once as a new bank transaction to ``Worksheet_OffsetAccount``;
- Unmatch: the match groups of the marked (or the selected) rows of MatchedGrid.

Writes go through ``rules`` at once (the worksheet holds no unsaved record edits); the ledger account is a
value of the form, like a dialog's. Marks on rows that another path (the data tools, an action) matched or
unmatched meanwhile are dropped, with a warning, the next time the form is shown.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from erp_sim import response_keys as K
from erp_sim.database import transaction
from erp_sim.errors import FormStateError
from erp_sim.forms.base import Button, Column, Control, FormDefinition, FormHost, Grid, GridRow, OpenForm, Section
from erp_sim.money import ZERO, display_money
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID, POSTING_ACCOUNTS
from erp_sim.workflows.bank_reconciliation.forms.figures import figure_controls, reconciliation, statement, summary


@dataclass
class WorksheetInput:
    """The worksheet's own value (``OpenForm.pending``): the ledger account Mark as new posts to. Not a record
    edit, so there is nothing to save or lose: ``unsaved_count`` is 0 and closing the form never warns."""

    offset_account: str | None = None  # a main account id

    def unsaved_count(self) -> int:
        return 0

    def copy(self) -> WorksheetInput:
        return WorksheetInput(self.offset_account)


def _input(form: OpenForm) -> WorksheetInput:
    return form.edits(WorksheetInput)


def _open_lines(session: FormHost, form: OpenForm) -> list[sqlite3.Row]:
    rec = reconciliation(session, form)
    return session.cached_read(f"bank/{rec['id']}/open-lines", lambda: rules.open_lines(session.db, rec))


def _open_transactions(session: FormHost, form: OpenForm) -> list[sqlite3.Row]:
    rec = reconciliation(session, form)
    return session.cached_read(f"bank/{rec['id']}/open-transactions", lambda: rules.open_transactions(session.db, rec))


def _items(session: FormHost, form: OpenForm) -> list[rules.MatchItem]:
    rec_id = form.context["rec_id"]
    return session.cached_read(f"bank/{rec_id}/items", lambda: rules.match_items(session.db, rec_id))


def _marked(form: OpenForm, grid: str, rows: list[sqlite3.Row]) -> list[sqlite3.Row]:
    """The grid's marked rows among ``rows`` (its current rows), in grid order."""
    marked = form.grid_state(grid).marked
    return [row for row in rows if row["id"] in marked]


def _total(rows: list[sqlite3.Row]) -> Decimal:
    return sum((Decimal(row["amount"]) for row in rows), ZERO)


def _money_of(record: Any) -> str:
    return display_money(Decimal(record["amount"]))


def _item_record(item: rules.MatchItem) -> sqlite3.Row:
    record = item.line if item.line is not None else item.transaction
    assert record is not None  # an item is a statement line or a bank transaction
    return record


@dataclass(frozen=True)
class GridSpec:
    """A worksheet grid: its name and label, and per column (name, label, data type, the record's value)."""

    name: str
    label: str
    columns: tuple[tuple[str, str, str, Callable[[Any], str]], ...]
    key: Callable[[Any], int] = lambda record: int(record["id"])

    def grid(self, session: FormHost, rec_id: int, records: list[Any]) -> Grid:
        # rows are built once per database version (a 400-line statement's grids hold some 1,700), the grid at
        # every render
        rows = session.cached_read(
            f"bank/{rec_id}/rows/{self.name}",
            lambda: [GridRow(self.key(r), {name: value(r) for name, _, _, value in self.columns}) for r in records],
        )
        return Grid(self.name, self.label, [Column(name, label, kind) for name, label, kind, _ in self.columns], rows)


_STATEMENT_GRID = GridSpec(
    R.STATEMENT_GRID,
    "Open bank statement lines",
    (
        (R.LINE_NUMBER, "Line", "Integer", lambda line: str(line["line_number"])),
        (R.LINE_DATE, "Booking date", "Date", lambda line: line["booking_date"]),
        (R.LINE_TEXT, "Description", "String", lambda line: line["description"]),
        (R.LINE_REFERENCE, "Reference", "String", lambda line: line["bank_reference"]),
        (R.LINE_AMOUNT, "Amount", "Real", _money_of),
    ),
)
_TRANSACTION_GRID = GridSpec(
    R.TRANSACTION_GRID,
    "Open bank transactions",
    (
        (R.TRANS_DATE, "Date", "Date", lambda t: t["trans_date"]),
        (R.TRANS_VOUCHER, "Voucher", "String", lambda t: t["voucher"]),
        (R.TRANS_REFERENCE, "Payment reference", "String", lambda t: t["payment_reference"]),
        (R.TRANS_TEXT, "Description", "String", lambda t: t["description"]),
        (R.TRANS_AMOUNT, "Amount", "Real", _money_of),
    ),
)
_MATCHED_GRID = GridSpec(
    R.MATCHED_GRID,
    "Matched bank statement lines and transactions",
    (
        (R.MATCH_ID, "Match", "String", lambda item: item.match_id),
        (R.MATCH_TYPE, "Type", "String", lambda item: item.match_type),
        (
            R.MATCH_DOCUMENT,
            "Line or voucher",
            "String",
            lambda item: f"Line {item.line['line_number']}" if item.line is not None else _item_record(item)["voucher"],
        ),
        (
            R.MATCH_REFERENCE,
            "Reference",
            "String",
            lambda item: (
                item.line["bank_reference"] if item.line is not None else _item_record(item)["payment_reference"]
            ),
        ),
        (R.MATCH_AMOUNT, "Amount", "Real", lambda item: _money_of(_item_record(item))),
        (
            R.MATCH_ACCOUNT,
            "Offset account",
            "String",
            lambda item: "" if item.line is not None else _item_record(item)["offset_account"] or "",
        ),
    ),
    key=lambda item: int(item.item_id),
)


class Worksheet(FormDefinition):
    name = R.WORKSHEET_FORM
    primary_grid = R.STATEMENT_GRID
    guidance = [
        f"Mark rows (form_select_grid_row, marking Marked) in {R.STATEMENT_GRID} and {R.TRANSACTION_GRID} and click "
        f"{R.MATCH_BUTTON}; marks stay across pages, filters and tab pages.",
        f"{R.NEW_BUTTON} posts each marked line at once to {R.OFFSET_ACCOUNT}; a posting is final.",
        "One tab page shows at a time (form_open_or_close_tab); grids show 25 rows a page (LoadNextPage).",
    ]
    links = [("Bank reconciliation", R.LIST_FORM)]

    def caption(self, session: FormHost, form: OpenForm) -> str:
        rec = reconciliation(session, form)
        return f"Bank reconciliation worksheet - {rec['account_id']} {statement(session, form)['statement_id']}"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        figures = summary(session, form)
        lines = _marked(form, R.STATEMENT_GRID, _open_lines(session, form))
        transactions = _marked(form, R.TRANSACTION_GRID, _open_transactions(session, form))
        return (
            f"Statement {statement(session, form)['statement_id']}: {figures.line_count} line(s), "
            f"{figures.open_line_count} open; unreconciled difference {display_money(figures.difference)}. Marked: "
            f"{len(lines)} statement line(s) ({display_money(_total(lines))}), {len(transactions)} bank "
            f"transaction(s) ({display_money(_total(transactions))})."
        )

    # --- what the form shows ---
    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rec, stmt = reconciliation(session, form), statement(session, form)
        lines, transactions = _open_lines(session, form), _open_transactions(session, form)
        marked_lines = _total(_marked(form, R.STATEMENT_GRID, lines))
        marked_transactions = _total(_marked(form, R.TRANSACTION_GRID, transactions))
        account = _input(form).offset_account
        header = [
            Control("Worksheet_AccountId", "Bank account", K.INPUT, rec["account_id"]),
            Control("Worksheet_StatementId", "Statement", K.INPUT, stmt["statement_id"]),
            Control("Worksheet_CutOffDate", "Cut-off date", K.DATE_INPUT, rec["cut_off_date"]),
        ]
        marked = [
            Control(
                R.MARKED_LINES_AMOUNT,
                "Marked statement lines",
                K.REAL_INPUT,
                display_money(marked_lines),
                help="Must equal the marked bank transactions to match.",
            ),
            Control(
                R.MARKED_TRANSACTIONS_AMOUNT,
                "Marked bank transactions",
                K.REAL_INPUT,
                display_money(marked_transactions),
            ),
            Control(
                R.OFFSET_ACCOUNT,
                "Offset account for new transactions",
                K.COMBOBOX,
                MAIN_ACCOUNT_BY_ID[account].label if account else "",
                editable=not rec["reconciled"],
                help=f"The ledger account {R.NEW_BUTTON} posts to.",
                options=[a.label for a in POSTING_ACCOUNTS],
            ),
        ]
        sections = [
            Section("WorksheetGroup", "Reconciliation", controls=header),
            Section("WorksheetTotalsGroup", "Totals", controls=figure_controls(session, form, "Worksheet", brief=True)),
            Section("MarkedGroup", "Marked rows", controls=marked),
        ]
        grids: list[tuple[str, str, list[Any], GridSpec]] = [
            (R.STATEMENT_TAB, "Bank statement lines", lines, _STATEMENT_GRID),
            (R.TRANSACTION_TAB, "Bank transactions", transactions, _TRANSACTION_GRID),
            (R.MATCHED_TAB, "Matched", _items(session, form), _MATCHED_GRID),
        ]
        return sections + [
            Section(tab, label, K.TAB_PAGE, grids=[spec.grid(session, rec["id"], records)])
            for tab, label, records, spec in grids
        ]

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        reconciled = bool(reconciliation(session, form)["reconciled"])
        lines = bool(_marked(form, R.STATEMENT_GRID, _open_lines(session, form)))
        transactions = bool(_marked(form, R.TRANSACTION_GRID, _open_transactions(session, form)))
        matched = form.grid_state(R.MATCHED_GRID)
        done = "the reconciliation is already marked as reconciled."
        return [
            Button(
                R.MATCH_BUTTON,
                "Match",
                not reconciled and lines and transactions,
                "Match the marked statement lines to the marked bank transactions (equal totals).",
                done
                if reconciled
                else f"mark statement lines in {R.STATEMENT_GRID} and bank transactions in {R.TRANSACTION_GRID} "
                "first (form_select_grid_row with marking Marked).",
            ),
            Button(
                R.NEW_BUTTON,
                "Mark as new",
                not reconciled and lines and not transactions,
                f"Post each marked statement line as a new bank transaction to {R.OFFSET_ACCOUNT}.",
                done
                if reconciled
                else f"mark the statement line(s) in {R.STATEMENT_GRID} first, and no bank transaction "
                "(a line marked as new has none).",
            ),
            Button(
                R.UNMATCH_BUTTON,
                "Unmatch",
                not reconciled and bool(matched.marked or matched.selected_key is not None),
                f"Undo the match groups of the marked or selected rows of {R.MATCHED_GRID}.",
                done if reconciled else f"select or mark a row of {R.MATCHED_GRID} first (form_select_grid_row).",
            ),
        ]

    # --- what the user does ---
    def set_value(self, session: FormHost, form: OpenForm, control: Control, value: Any) -> None:
        if control.name != R.OFFSET_ACCOUNT:
            return super().set_value(session, form, control, value)
        _input(form).offset_account = rules.posting_account(value, control.name).main_account_id
        return None

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        key = button.lower()
        rec_id = form.context["rec_id"]
        if key == R.MATCH_BUTTON.lower():
            lines = _marked(form, R.STATEMENT_GRID, _open_lines(session, form))
            transactions = _marked(form, R.TRANSACTION_GRID, _open_transactions(session, form))
            match_id = rules.match(session.db, rec_id, [r["id"] for r in lines], [r["id"] for r in transactions])
            self._clear(form, R.STATEMENT_GRID, R.TRANSACTION_GRID)
            numbers = ", ".join(str(line["line_number"]) for line in lines)
            return (
                f"{match_id}: statement line(s) {numbers} matched to {len(transactions)} bank transaction(s), "
                f"{display_money(_total(lines))}."
            )
        if key == R.NEW_BUTTON.lower():
            account = _input(form).offset_account
            if account is None:
                raise FormStateError(
                    f"Set {R.OFFSET_ACCOUNT} first: the ledger account to post to (form_open_lookup lists them)."
                )
            if _marked(form, R.TRANSACTION_GRID, _open_transactions(session, form)):
                raise FormStateError(
                    f"Mark as new posts statement lines that have no bank transaction: unmark the rows of "
                    f"{R.TRANSACTION_GRID} first (or click {R.MATCH_BUTTON} to match them)."
                )
            lines = _marked(form, R.STATEMENT_GRID, _open_lines(session, form))
            posted = rules.mark_as_new(session.db, rec_id, [r["id"] for r in lines], MAIN_ACCOUNT_BY_ID[account])
            self._clear(form, R.STATEMENT_GRID)
            return " ".join(
                f"Statement line {line['line_number']} was posted as {number} to {MAIN_ACCOUNT_BY_ID[account].label} "
                f"and matched ({match_id})."
                for line, (match_id, number) in zip(lines, posted)
            )
        if key == R.UNMATCH_BUTTON.lower():
            state = form.grid_state(R.MATCHED_GRID)
            chosen = state.marked or ({state.selected_key} if state.selected_key is not None else set())
            matches = sorted({item.match_rec_id for item in _items(session, form) if item.item_id in chosen})
            if not matches:
                raise FormStateError(f"Select or mark a row of {R.MATCHED_GRID} first (form_select_grid_row).")
            results = self._unmatch(session, rec_id, matches)
            self._clear(form, R.MATCHED_GRID)
            return " ".join(results)
        return super().click(session, form, button)

    @staticmethod
    def _unmatch(session: FormHost, rec_id: int, matches: list[int]) -> list[str]:
        with transaction(session.db):
            return [rules.unmatch(session.db, rec_id, match) for match in matches]

    @staticmethod
    def _clear(form: OpenForm, *grids: str) -> None:
        for grid in grids:
            state = form.grid_state(grid)
            state.marked, state.selected_key = set(), None

    def toggle_section(self, session: FormHost, form: OpenForm, name: str, action: str) -> str:
        """As a D365 Tab: opening one tab page closes the others."""
        result = super().toggle_section(session, form, name, action)
        opened = next((page for page in R.TAB_PAGES if page.lower() == name.lower()), None)
        if opened is not None and action.lower() == "open":
            others = [page for page in R.TAB_PAGES if page != opened]
            form.collapsed.update(others)
            result += f" {' and '.join(others)} were closed: the worksheet shows one tab page at a time."
        return result

    def reconcile(self, session: FormHost, form: OpenForm) -> None:
        """Drop marks and selections of rows that are no longer in their grid (matched or unmatched elsewhere)."""
        rec_id = form.context["rec_id"]
        current = session.cached_read(
            f"bank/{rec_id}/row-keys",
            lambda: {
                R.STATEMENT_GRID: {row["id"] for row in _open_lines(session, form)},
                R.TRANSACTION_GRID: {row["id"] for row in _open_transactions(session, form)},
                R.MATCHED_GRID: {item.item_id for item in _items(session, form)},
            },
        )
        dropped = 0
        for grid, keys in current.items():
            state = form.grid_state(grid)
            gone = state.marked - keys
            dropped += len(gone)
            state.marked -= gone
            if state.selected_key is not None and state.selected_key not in keys:
                state.selected_key = None
        if dropped:
            session.add_message(
                K.LEVEL_WARNING,
                f"{dropped} marked row(s) are no longer in their grid (matched or unmatched elsewhere) and were unmarked.",
            )
