"""TrvItemization: split one expense line into itemized lines until the remaining amount is 0.00.

Unsaved rows live in the form (``RowEdits.rows``) until ``form_save_form``: new rows,
edits of saved lines, and deletions of saved lines (``DeleteLine`` hides the row and marks it;
the line is deleted at save, and a double close discards the deletion like any other edit).
The Itemized and Remaining figures count saved lines only, as D365 does. Saving is all or
nothing: one invalid row names itself and nothing is written.

Forms and data tools agree by one rule: every render reads the current rows. The grid, the
totals and the summary all read the saved lines afresh, and an unsaved edit of a saved line
holds only the fields the user changed, laid over the line's current values (so a change the
data tools made to another field shows in the grid and survives the save). An edit of a line
deleted elsewhere is dropped, with a warning, the next time the form is shown (``reconcile``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from erp_sim import response_keys as K
from erp_sim.database import transaction
from erp_sim.errors import FormStateError, ValidationError
from erp_sim.forms.base import (
    Button,
    Column,
    Control,
    FormDefinition,
    FormHost,
    Grid,
    LazyRows,
    OpenForm,
    Section,
    read_records,
    row_keys,
)
from erp_sim.forms.pending import PendingRow, RowEdits
from erp_sim.money import display_money, money_text, parse_money
from erp_sim.values import parse_date, parse_text
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.catalog import CATEGORIES

GRID = "ItemizationGrid"
# Row controls -> ledger value keys.
ROW_CONTROLS = {
    "TrvExpTrans_ExpSubCategory": "subcategory",
    "TrvExpTrans_TransDate": "transaction_date",
    "TrvExpTrans_AmountCurr": "amount",
    "TrvExpTrans_Description": "description",
}
CONTROL_OF = {key: name for name, key in ROW_CONTROLS.items()}
RowValues = dict[str, str | None]  # ledger value key -> text (None: not set yet)
RowKey = int | str  # a saved line's RecId, or a new row's ``new-N``
ItemRow = tuple[RowKey, RowValues, str]  # (key, values, status: Saved, Modified or New)


def _edits(form: OpenForm) -> RowEdits:
    if form.pending is None:
        form.pending = RowEdits()
    assert isinstance(form.pending, RowEdits)
    return form.pending


def _rows(form: OpenForm) -> Mapping[RowKey, PendingRow]:
    return _edits(form).rows


def _saved_lines(session: FormHost, form: OpenForm) -> tuple[list[sqlite3.Row], list[int]]:
    """The line's saved itemized lines (``ledger.saved_lines``) and their RecIds, once per database version (a long
    itemization is read by the grid, the totals and the summary of every render; callers must not mutate them)."""
    line_id = form.context["line_id"]
    return read_records(session, f"itemization/{line_id}/grid", lambda: ledger.saved_lines(session, line_id))


def _summary(session: FormHost, form: OpenForm) -> ledger.ItemizationSummary:
    return ledger.saved_summary(session, form.context["line_id"])


def _saved_values(line: sqlite3.Row) -> RowValues:
    return {
        "subcategory": line["subcategory"],
        "transaction_date": line["transaction_date"],
        "amount": line["amount"],
        "description": line["description"],
    }


class ItemizationForm(FormDefinition):
    name = "TrvItemization"
    guidance = [
        "NewLine adds a row; set TrvExpTrans_ExpSubCategory, TrvExpTrans_TransDate and TrvExpTrans_AmountCurr on the selected row.",
        "Rows are stored by form_save_form; Itemized and Remaining count saved rows only.",
        "Done when Remaining is exactly 0.00 and the form is closed (form_close_form).",
    ]

    def header(self, session: FormHost, form: OpenForm) -> sqlite3.Row:
        """The expense line being itemized, read once per database version: a response's caption, deep link and
        sections and each value set read it (not inside the save's write, which reads it before)."""
        line_id = form.context["line_id"]
        return session.cached_read(f"itemization/{line_id}/header", lambda: ledger.line_by_id(session.db, line_id))

    def caption(self, session: FormHost, form: OpenForm) -> str:
        header = self.header(session, form)
        return f"Itemize expense - line {header['line_number']} {header['category_id']} {header['merchant']}"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        summary = _summary(session, form)
        unsaved = _edits(form).unsaved_count()
        return (
            f"Total {display_money(summary.total)}, itemized {display_money(summary.itemized)}, remaining "
            f"{display_money(summary.remaining)}; {summary.line_count} saved itemized line(s), {unsaved} unsaved row(s)."
        )

    def has_unsaved_changes(self, form: OpenForm) -> bool:
        return _edits(form).unsaved_count() > 0

    def reconcile(self, session: FormHost, form: OpenForm) -> None:
        """Drop unsaved edits of saved lines that no longer belong to this expense line (deleted elsewhere)."""
        edits = _edits(form)
        edited = edits.edited_line_ids()
        if not edited:
            return
        current = set(_saved_lines(session, form)[1])
        gone = [key for key in edited if key not in current]
        if not gone:
            return
        edits.replace({key: row for key, row in edits.rows.items() if key not in gone})
        if form.grid_state(GRID).selected_key in gone:
            form.grid_state(GRID).selected_key = None
        session.add_message(
            K.LEVEL_WARNING,
            f"Itemized line(s) RecId {', '.join(map(str, gone))} were deleted outside this form; "
            "their unsaved changes were dropped.",
        )

    def discard(self, form: OpenForm) -> None:
        _edits(form).replace({})
        state = form.grid_state(GRID)
        if isinstance(state.selected_key, str):
            state.selected_key = None

    def _grid_rows(self, session: FormHost, form: OpenForm) -> LazyRows:
        """The grid's rows: saved lines (with unsaved edits applied), then new rows. A row's values are made (an
        edit laid over the line's current values, the amount formatted) only if a response shows it: a long
        itemization is one page of 25 rows, and without edits of saved lines its rows are two lists joined."""
        pending = _rows(form)
        lines, ids = _saved_lines(session, form)
        new_keys = _edits(form).new_keys()
        keys: list[Any]
        sources: list[Any]  # a line, or a line and its unsaved edit
        if len(new_keys) == len(pending):  # no saved line is edited or deleted: the edits are the new rows
            return LazyRows([*ids, *new_keys], [*lines, *pending.values()], _row_grid_values)
        keys, sources = [], []
        for line in lines:
            edit = pending.get(line["id"])
            if not (edit and edit.deleted):
                keys.append(line["id"])
                sources.append((line, edit) if edit else line)
        return LazyRows([*keys, *new_keys], [*sources, *map(pending.__getitem__, new_keys)], _row_grid_values)

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        header = self.header(session, form)
        summary = _summary(session, form)
        expense = [
            Control("HeaderCostType", "Expense category", K.INPUT, header["category_id"]),
            Control("HeaderMerchant", "Merchant", K.INPUT, header["merchant"]),
            Control("HeaderTransDate", "Date", K.DATE_INPUT, header["transaction_date"]),
        ]
        totals = [
            Control(
                "ItemizationTotal",
                "Total",
                K.REAL_INPUT,
                display_money(summary.total),
                help="Amount of the expense line.",
            ),
            Control(
                "ItemizationItemized",
                "Itemized",
                K.REAL_INPUT,
                display_money(summary.itemized),
                help="Sum of saved itemized lines.",
            ),
            Control(
                "ItemizationRemaining",
                "Remaining",
                K.REAL_INPUT,
                display_money(summary.remaining),
                help="Total minus itemized. Must be exactly 0.00 when done.",
            ),
        ]
        rows = self._grid_rows(session, form)
        columns = [
            Column("TrvExpTrans_TransDate", "Date", "Date"),
            Column("TrvExpTrans_ExpSubCategory", "Subcategory"),
            Column("TrvExpTrans_AmountCurr", "Amount", "Real"),
            Column("TrvExpTrans_LineStatus", "Status"),
        ]
        sections = [
            Section("ExpenseGroup", "Expense", controls=expense),
            Section("TotalsGroup", "Totals", controls=totals),
            Section("LinesGroup", "Itemized lines", grids=[Grid(GRID, "Itemized lines", columns, rows)]),
        ]
        selected = self._selected(session, form)
        if selected is not None:
            sections.append(
                Section("LineDetailsGroup", "Selected line", controls=self._row_controls(header, selected[1]))
            )
        return sections

    def missing_control_hint(self, session: FormHost, form: OpenForm, name: str) -> str:
        if name.lower().startswith("trvexptrans_") and self._selected(session, form) is None:
            return f" The line controls (TrvExpTrans_*) appear once a line is selected: click NewLine, or select a row of {GRID}."
        return ""

    def _row_controls(self, header: sqlite3.Row, values: RowValues) -> list[Control]:
        amount = values["amount"]
        return [
            Control(
                "TrvExpTrans_ExpSubCategory",
                "Subcategory",
                K.COMBOBOX,
                values["subcategory"] or "",
                True,
                True,
                f"One of the {header['category_id']} subcategories.",
                "ExpSubCategory",
                options=list(CATEGORIES[header["category_id"]].subcategories),
            ),
            Control(
                "TrvExpTrans_TransDate",
                "Date",
                K.DATE_INPUT,
                values["transaction_date"] or "",
                True,
                True,
                "Date of the charge.",
                "TransDate",
            ),
            Control(
                "TrvExpTrans_AmountCurr",
                "Amount",
                K.REAL_INPUT,
                display_money(Decimal(amount)) if amount else "",
                True,
                True,
                "Amount of the charge, two decimals.",
                "AmountCurr",
            ),
            Control(
                "TrvExpTrans_Description",
                "Description",
                K.INPUT,
                values["description"] or "",
                True,
                False,
                "Optional note.",
                "Txt2",
            ),
        ]

    def _selected(self, session: FormHost, form: OpenForm) -> ItemRow | None:
        """(key, values, status) of the selected row, or None; reads one row, not the grid."""
        key = form.grid_state(GRID).selected_key
        edit = _rows(form).get(key)
        if isinstance(key, str):
            return (key, edit.values, "New") if edit else None
        if key is None:
            return None
        line = session.db.execute(
            "SELECT * FROM expense_line WHERE id = ? AND parent_line_id = ?", (key, form.context["line_id"])
        ).fetchone()
        if line is None or (edit and edit.deleted):
            return None
        saved = _saved_values(line)
        return (key, {**saved, **edit.values}, "Modified") if edit else (key, saved, "Saved")

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        selected = self._selected(session, form) is not None
        return [
            Button("NewLine", "New", True, "Add a new itemized line and select it."),
            Button(
                "DeleteLine",
                "Delete",
                selected,
                "Delete the selected itemized line.",
                f"select an itemized line in {GRID} first (form_select_grid_row).",
            ),
            Button("ViewReceipt", "Receipts", True, "View the receipt attached to the expense line."),
        ]

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        key = button.lower()
        if key == "newline":
            row_key = _edits(form).new_key()
            header = self.header(session, form)
            _edits(form).put(
                row_key,
                PendingRow(
                    {
                        "subcategory": None,
                        "transaction_date": header["transaction_date"],
                        "amount": None,
                        "description": "",
                    }
                ),
            )
            form.grid_state(GRID).selected_key = row_key
            self._show_row(session, form, row_key)
            return "A new itemized line was added and selected. Set its subcategory, date and amount, then save."
        if key == "deleteline":
            selected = self._selected(session, form)
            if selected is None:
                raise FormStateError("Select a row in ItemizationGrid first (form_select_grid_row).")
            doomed = selected[0]
            form.grid_state(GRID).selected_key = None
            if isinstance(doomed, str):
                _edits(form).drop(doomed)
                return "The new itemized line was removed."
            _edits(form).put(doomed, PendingRow({}, deleted=True))
            return (
                "The itemized line was marked for deletion; form_save_form deletes it (closing the form twice "
                "discards the deletion)."
            )
        if key == "viewreceipt":
            receipt = ledger.receipt_of_line(session.db, form.context["line_id"])
            if receipt is None:
                raise FormStateError("The expense line has no receipt attached.")
            return session.open_form("TrvReceiptViewer", {"receipt_id": receipt["id"]})
        return super().click(session, form, button)

    def _show_row(self, session: FormHost, form: OpenForm, row_key: RowKey) -> None:
        """Page the grid so the given row is visible (as D365 scrolls to a new row)."""
        keys = row_keys(self.view(form, self.grid(session, form, GRID)))
        if row_key in keys:
            form.grid_state(GRID).page = keys.index(row_key) // 25

    def set_value(self, session: FormHost, form: OpenForm, control: Control, value: Any) -> None:
        if control.name not in ROW_CONTROLS:
            return super().set_value(session, form, control, value)
        selected = self._selected(session, form)
        if selected is None:
            raise FormStateError(
                "No itemized line is selected: click NewLine or select a row in ItemizationGrid first."
            )
        row_key, values, _ = selected
        field = ROW_CONTROLS[control.name]
        header = self.header(session, form)
        if field == "subcategory":
            parsed = ledger.parse_subcategory(value, header["category_id"], control.name)
        elif field == "transaction_date":
            parsed = parse_date(value, control.name)
        elif field == "amount":
            parsed = money_text(parse_money(value, control.name))
        else:
            parsed = parse_text(value, control.name)
        # Replaced, never mutated (see erp_sim.forms.pending). A saved line's edit keeps only the changed
        # fields, laid over its current values at every render and at save.
        edit = _rows(form).get(row_key)
        base = values if isinstance(row_key, str) else edit.values if edit else {}
        _edits(form).put(row_key, PendingRow({**base, field: parsed}))
        return None

    def save(self, session: FormHost, form: OpenForm) -> str:
        self.reconcile(session, form)
        pending = _rows(form)
        if not pending:
            return "There were no changes to save."
        header = self.header(session, form)
        keys = row_keys(self._grid_rows(session, form))  # the rows as numbered before the save
        checked: sqlite3.Row | None = None  # the header, checked once at the first new row (as each would be)
        new_rows: list[tuple[RowKey, ledger.ItemizedValues]] = []  # inserted at the end, in their order
        selected_id: int | None = None  # the RecId the selected new row gets
        known: ledger.KnownParses = {}  # the field parses of this save (ledger.validate_itemized_values)
        with transaction(session.db):
            for line_id in _edits(form).edited_line_ids():
                if pending[line_id].deleted:
                    ledger.delete_itemized_line(session.db, line_id, header["id"])
            for key, row in pending.items():
                if row.deleted:
                    continue
                raw = (
                    row.values
                    if isinstance(key, str)
                    else {**_saved_values(ledger.line_by_id(session.db, key)), **row.values}
                )
                try:
                    values = ledger.validate_itemized_values(header, raw, CONTROL_OF, known)
                except ValidationError as exc:
                    number = keys.index(key) + 1
                    raise ValidationError(
                        f"Row {number}: {exc} Nothing was saved. Select row {number} of {GRID} "
                        "(form_select_grid_row) and complete it, or delete it (DeleteLine), then save again."
                    ) from None
                if isinstance(key, str):
                    if checked is None:
                        checked = ledger.itemizable_header(session.db, header["id"])
                    new_rows.append((key, values))
                else:
                    ledger.update_itemized_line(session.db, key, values, header["id"])
            if checked is not None:
                selected_id = _insert_new_rows(session, checked, new_rows, form.grid_state(GRID).selected_key)
                ledger.mark_itemized_header(session.db, header["id"])
        if selected_id is not None:  # once the save holds: a failed one keeps the row
            form.grid_state(GRID).selected_key = selected_id
        count = len(pending)
        _edits(form).replace({})
        summary = _summary(session, form)  # read once: the response's totals show it too
        if summary.over_itemized:
            session.add_message(
                K.LEVEL_WARNING,
                f"The itemized amount exceeds the expense amount by {display_money(-summary.remaining)}. "
                f"Select the wrong line in {GRID}, correct its amount or delete it (DeleteLine), and save.",
            )
        elif summary.complete:
            session.add_message(K.LEVEL_INFO, "The expense is fully itemized: remaining 0.00.")
        return (
            f"{count} itemized line(s) saved. Itemized {display_money(summary.itemized)} of {display_money(summary.total)}; "
            f"remaining {display_money(summary.remaining)}."
        )


def _insert_new_rows(
    session: FormHost, header: sqlite3.Row, rows: list[tuple[RowKey, ledger.ItemizedValues]], selected: object
) -> int | None:
    """Insert the new rows in their order, in batches around the selected one (whose RecId the grid selects
    next, the one INSERT whose id is read); the selected row's RecId, or None when no new row is selected."""
    at = next((n for n, (key, _) in enumerate(rows) if key == selected), None)
    if at is None:
        ledger.insert_itemized_lines(session.db, header, [values for _, values in rows])
        return None
    ledger.insert_itemized_lines(session.db, header, [values for _, values in rows[:at]])
    selected_id = ledger.insert_itemized_line(session.db, header, rows[at][1])
    ledger.insert_itemized_lines(session.db, header, [values for _, values in rows[at + 1 :]])
    return selected_id


def _grid_values(values: RowValues, status: str) -> dict[str, str]:
    return {
        "TrvExpTrans_TransDate": values["transaction_date"] or "",
        "TrvExpTrans_ExpSubCategory": values["subcategory"] or "",
        "TrvExpTrans_AmountCurr": display_money(Decimal(values["amount"])) if values["amount"] else "",
        "TrvExpTrans_LineStatus": status,
    }


def _row_grid_values(source: sqlite3.Row | tuple[sqlite3.Row, PendingRow] | PendingRow) -> dict[str, str]:
    """A grid row's values from its source: a saved line, a saved line and its unsaved edit (laid over the line's
    current values), or a new row."""
    if isinstance(source, PendingRow):
        return _grid_values(source.values, "New")
    if isinstance(source, tuple):
        line, edit = source
        return _grid_values({**_saved_values(line), **edit.values}, "Modified")
    return _grid_values(_saved_values(source), "Saved")
