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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from erp_sim import response_keys as K
from erp_sim.database import transaction
from erp_sim.errors import FormStateError
from erp_sim.forms.base import (
    Button,
    Column,
    Control,
    FormDefinition,
    FormHost,
    Grid,
    GridRow,
    OpenForm,
    Section,
    filter_rows,
)
from erp_sim.money import ZERO, display_money
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID, POSTING_ACCOUNTS
from erp_sim.workflows.bank_reconciliation.forms.figures import (
    figure_controls,
    keep_summary,
    reconciliation,
    statement,
    summary,
)


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


def _grids(session: FormHost, form: OpenForm) -> _Grids:
    rec = reconciliation(session, form)
    return session.cached_read(_grids_key(rec["id"]), lambda: _read_grids(session.db, rec))


def _grids_key(rec_id: int) -> str:
    return f"bank/{rec_id}/grids"


def _read_grids(db: sqlite3.Connection, rec: sqlite3.Row) -> _Grids:
    return _Grids(
        _STATEMENT_GRID.records(rules.open_lines(db, rec)),
        _TRANSACTION_GRID.records(rules.open_transactions(db, rec)),
        _MATCHED_GRID.records(rules.match_items(db, rec["id"])),
    )


def _after_match(
    session: FormHost,
    form: OpenForm,
    before: tuple[_Grids, rules.ReconciliationSummary],
    lines: list[sqlite3.Row],
    transactions: list[sqlite3.Row],
    match_type: str,
) -> None:
    """The grids and figures after the worksheet's own Match or Mark as new (``match_type`` Match or New), kept for
    the version it wrote: ``before`` (read at the version just before the write) without the lines and
    transactions it matched and with the items of the matches it made, which come last (match RecIds only grow).
    A click then costs what it changed, not a new read of the statement, its sums and every row's values; a
    write elsewhere moves the version and all is read again."""
    rec_id = form.context["rec_id"]
    grids, figures = before
    last = grids.items.records[-1].match_rec_id if grids.items.records else 0
    session.cached_read(
        _grids_key(rec_id),
        lambda: _Grids(
            grids.lines.without({line["id"] for line in lines}),
            grids.transactions.without({row["id"] for row in transactions}),
            grids.items.plus(_MATCHED_GRID, rules.match_items(session.db, rec_id, after=last)),
        ),
    )
    keep_summary(
        session, form, figures.after_match(len(lines), match_type, transactions if match_type == "Match" else lines)
    )


def _marked(form: OpenForm, grid: str, records: GridRecords) -> list[Any]:
    """The grid's marked records among ``records`` (its current ones), in grid order."""
    return records.marked(form.grid_state(grid).marked)


def _total(rows: list[sqlite3.Row]) -> Decimal:
    return sum((Decimal(row["amount"]) for row in rows), ZERO)


def _money_of(record: Any) -> str:
    return display_money(Decimal(record["amount"]))


def _item_record(item: rules.MatchItem) -> sqlite3.Row:
    record = item.line if item.line is not None else item.transaction
    assert record is not None  # an item is a statement line or a bank transaction
    return record


_VIEWS = 4  # filtered views a grid keeps


@dataclass(frozen=True)
class GridRecords:
    """One grid's records at one database version, in grid order, and its rows: a row's values are made when a
    response first reads them (a page reads 25, a filter every row's) and kept with the row from then on."""

    records: list[Any]
    rows: list[GridRow]
    # the rows column filters find, by the filters (the last few): a filtered grid is rendered at every call
    views: dict[tuple[tuple[str, str], ...], list[GridRow]] = field(default_factory=dict, compare=False)

    @cached_property
    def position(self) -> dict[Any, int]:
        """Each row's index by its key."""
        return {row.key: index for index, row in enumerate(self.rows)}

    def marked(self, keys: set[Any]) -> list[Any]:
        """The records of the rows ``keys`` marks that are in the grid, in grid order."""
        if not keys:
            return []
        position = self.position
        return [self.records[index] for index in sorted(position[key] for key in keys if key in position)]

    def filtered(self, grid: Grid, filters: dict[str, str]) -> list[GridRow]:
        """``filter_rows`` of the rows, kept for these filters."""
        key = tuple(filters.items())
        view = self.views.get(key)
        if view is None:
            if len(self.views) >= _VIEWS:
                del self.views[next(iter(self.views))]
            view = self.views[key] = list(filter_rows(grid, self.rows, filters))
        return view

    def without(self, keys: set[Any]) -> GridRecords:
        """The grid once the rows of ``keys`` left it, its views too: list slices between them, not a pass
        over every row."""
        position, records, rows, start = self.position, [], [], 0
        for cut in sorted(position[key] for key in keys if key in position):
            records += self.records[start:cut]
            rows += self.rows[start:cut]
            start = cut + 1
        views = {key: [row for row in view if row.key not in keys] for key, view in self.views.items()}
        return GridRecords([*records, *self.records[start:]], [*rows, *self.rows[start:]], views)

    def plus(self, spec: GridSpec, records: list[Any]) -> GridRecords:
        added = spec.records(records)
        return GridRecords([*self.records, *added.records], [*self.rows, *added.rows])


@dataclass(frozen=True)
class _Grids:
    """What the worksheet's three grids show at one database version."""

    lines: GridRecords  # the statement's open lines
    transactions: GridRecords  # the account's open bank transactions
    items: GridRecords  # the matched items


@dataclass(frozen=True)
class GridSpec:
    """A worksheet grid: its name and label, and per column (name, label, data type, the record's value)."""

    name: str
    label: str
    columns: tuple[tuple[str, str, str, Callable[[Any], str]], ...]
    key: Callable[[Any], int] = lambda record: int(record["id"])

    def values(self, record: Any) -> dict[str, str]:
        return {name: value(record) for name, _, _, value in self.columns}

    def records(self, records: list[Any]) -> GridRecords:
        values = self.values
        return GridRecords(records, [GridRow(self.key(r), values_of=values, source=r) for r in records])

    def grid(self, records: GridRecords) -> RecordsGrid:
        columns = [Column(name, label, kind) for name, label, kind, _ in self.columns]
        return RecordsGrid(self.name, self.label, columns, records.rows, records)


@dataclass
class RecordsGrid(Grid):
    """A worksheet grid with the records its rows show (``Worksheet.view`` filters through them)."""

    records: GridRecords


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
        figures, grids = summary(session, form), _grids(session, form)
        lines = _marked(form, R.STATEMENT_GRID, grids.lines)
        transactions = _marked(form, R.TRANSACTION_GRID, grids.transactions)
        return (
            f"Statement {statement(session, form)['statement_id']}: {figures.line_count} line(s), "
            f"{figures.open_line_count} open; unreconciled difference {display_money(figures.difference)}. Marked: "
            f"{len(lines)} statement line(s) ({display_money(_total(lines))}), {len(transactions)} bank "
            f"transaction(s) ({display_money(_total(transactions))})."
        )

    # --- what the form shows ---
    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rec, stmt = reconciliation(session, form), statement(session, form)
        grids = _grids(session, form)
        marked_lines = _total(_marked(form, R.STATEMENT_GRID, grids.lines))
        marked_transactions = _total(_marked(form, R.TRANSACTION_GRID, grids.transactions))
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
        pages: list[tuple[str, str, GridRecords, GridSpec]] = [
            (R.STATEMENT_TAB, "Bank statement lines", grids.lines, _STATEMENT_GRID),
            (R.TRANSACTION_TAB, "Bank transactions", grids.transactions, _TRANSACTION_GRID),
            (R.MATCHED_TAB, "Matched", grids.items, _MATCHED_GRID),
        ]
        return sections + [
            Section(tab, label, K.TAB_PAGE, grids=[spec.grid(records)]) for tab, label, records, spec in pages
        ]

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        reconciled = bool(reconciliation(session, form)["reconciled"])
        grids = _grids(session, form)
        lines = bool(_marked(form, R.STATEMENT_GRID, grids.lines))
        transactions = bool(_marked(form, R.TRANSACTION_GRID, grids.transactions))
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
        grids, figures = _grids(session, form), summary(session, form)  # as before a write
        if key == R.MATCH_BUTTON.lower():
            lines = _marked(form, R.STATEMENT_GRID, grids.lines)
            transactions = _marked(form, R.TRANSACTION_GRID, grids.transactions)
            line_ids, transaction_ids = [r["id"] for r in lines], [r["id"] for r in transactions]
            match_id = rules.match(session.db, rec_id, line_ids, transaction_ids)
            _after_match(session, form, (grids, figures), lines, transactions, "Match")
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
            if _marked(form, R.TRANSACTION_GRID, grids.transactions):
                raise FormStateError(
                    f"Mark as new posts statement lines that have no bank transaction: unmark the rows of "
                    f"{R.TRANSACTION_GRID} first (or click {R.MATCH_BUTTON} to match them)."
                )
            lines = _marked(form, R.STATEMENT_GRID, grids.lines)
            line_ids = [r["id"] for r in lines]
            posted = rules.mark_as_new(session.db, rec_id, line_ids, MAIN_ACCOUNT_BY_ID[account])
            _after_match(session, form, (grids, figures), lines, [], "New")  # what it posts is matched: not open
            self._clear(form, R.STATEMENT_GRID)
            return " ".join(
                f"Statement line {line['line_number']} was posted as {number} to {MAIN_ACCOUNT_BY_ID[account].label} "
                f"and matched ({match_id})."
                for line, (match_id, number) in zip(lines, posted)
            )
        if key == R.UNMATCH_BUTTON.lower():
            state = form.grid_state(R.MATCHED_GRID)
            chosen = state.marked or ({state.selected_key} if state.selected_key is not None else set())
            matches = sorted({item.match_rec_id for item in grids.items.marked(chosen)})
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

    def view(self, form: OpenForm, grid: Grid) -> Sequence[GridRow]:
        """A filtered grid's rows from the view its records keep (``GridRecords.filtered``), unless a sort or the
        quick filter (form_filter_form) rearranges them as well."""
        state = form.grid_state(grid.name)
        quick = form.quick_filter and grid.name == self.primary_grid
        if isinstance(grid, RecordsGrid) and state.filters and not state.sort and not quick:
            return grid.records.filtered(grid, state.filters)
        return super().view(form, grid)

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
        grids, dropped = _grids(session, form), 0
        for grid, records in (
            (R.STATEMENT_GRID, grids.lines),
            (R.TRANSACTION_GRID, grids.transactions),
            (R.MATCHED_GRID, grids.items),
        ):
            state = form.grid_state(grid)
            if not state.marked and state.selected_key is None:
                continue  # nothing to drop: the grid's keys are not needed
            gone = {key for key in state.marked if key not in records.position}
            dropped += len(gone)
            state.marked -= gone
            if state.selected_key is not None and state.selected_key not in records.position:
                state.selected_key = None
        if dropped:
            session.add_message(
                K.LEVEL_WARNING,
                f"{dropped} marked row(s) are no longer in their grid (matched or unmatched elsewhere) and were unmarked.",
            )
