"""TrvExpenseReport: one expense report, its lines grid and the selected line's details."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from erp_sim import response_keys as K
from erp_sim.database import transaction
from erp_sim.errors import FormStateError
from erp_sim.forms.base import Button, Column, Control, FormDefinition, FormHost, Grid, GridRow, OpenForm, Section
from erp_sim.money import ZERO, display_money, parse_money
from erp_sim.values import parse_text
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.catalog import CATEGORIES
from erp_sim.workflows.itemization.task import task_of

GRID = "ExpenseLinesGrid"  # header lines only (ledger.header_lines): a selected line is never an itemized one
# Editable line controls -> ledger field names.
LINE_FIELDS = {
    "TrvExpTrans_MerchantId": "merchant",
    "TrvExpTrans_AmountCurr": "amount",
    "TrvExpTrans_Txt2": "description",
}


def itemization_status(session: FormHost, line: sqlite3.Row) -> str:
    if not CATEGORIES[line["category_id"]].itemize:
        return ""
    summary = ledger.saved_summary(session, line["id"])
    if summary.line_count == 0:
        return "Not itemized"
    if summary.complete:
        return "Fully itemized"
    return f"Remaining {display_money(summary.remaining)}"


@dataclass
class ReportEdits:
    """The form's unsaved changes (``OpenForm.pending``): per header line the changed fields, and the purpose."""

    lines: dict[int, dict[str, str]] = field(default_factory=dict)
    purpose: str | None = None

    def unsaved_count(self) -> int:
        return len(self.lines) + (self.purpose is not None)

    def line_value(self, line_id: int, name: str, saved: object) -> object:
        return self.lines.get(line_id, {}).get(name, saved)

    def copy(self) -> ReportEdits:
        return ReportEdits(dict(self.lines), self.purpose)


def _edits(form: OpenForm) -> ReportEdits:
    return form.edits(ReportEdits)


class ExpenseReportForm(FormDefinition):
    name = "TrvExpenseReport"
    guidance = [
        "Select the expense line in ExpenseLinesGrid (form_select_grid_row) to see its details.",
        "Click ViewReceipt to read the receipt attached to the selected line.",
        "Click Itemize to open the itemization form for the selected line.",
        "Itemized lines are listed in the itemization form (Itemize), not in this grid.",
    ]
    links = [("Expense reports", "TrvExpenses")]

    def report(self, session: FormHost, form: OpenForm) -> sqlite3.Row:
        return ledger.report_by_id(session.db, form.context["report_id"])

    def caption(self, session: FormHost, form: OpenForm) -> str:
        report = self.report(session, form)
        return f"Expense report {report['report_number']} - {report['purpose']}"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        report = self.report(session, form)
        lines = ledger.header_lines(session.db, report["id"])
        return f"Expense report {report['report_number']} ({report['status']}) with {len(lines)} expense line(s)."

    def selected_line(self, session: FormHost, form: OpenForm) -> sqlite3.Row | None:
        key = form.grid_state(GRID).selected_key
        return ledger.line_by_id(session.db, key) if key is not None else None

    def _line_value(self, form: OpenForm, line: sqlite3.Row, field: str) -> object:
        return _edits(form).line_value(line["id"], field, line[field])

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        report = self.report(session, form)
        lines = ledger.header_lines(session.db, report["id"])
        total = sum((Decimal(line["amount"]) for line in lines), ZERO)
        purpose = _edits(form).purpose
        purpose = report["purpose"] if purpose is None else purpose
        header = [
            Control(
                "TrvExpTable_ExpNumber",
                "Expense report number",
                K.INPUT,
                report["report_number"],
                data_field="ExpNumber",
            ),
            Control(
                "TrvExpTable_Txt",
                "Purpose",
                K.INPUT,
                purpose,
                editable=report["status"] == "Draft",
                required=True,
                data_field="Txt",
                help="The business purpose of the trip.",
            ),
            Control(
                "TrvExpTable_ApprovalStatus",
                "Approval status",
                K.COMBOBOX,
                report["status"],
                data_field="ApprovalStatus",
            ),
            Control(
                "TrvExpTable_CreatingWorker",
                "Created by",
                K.INPUT,
                task_of(session).worker_name,
                data_field="CreatingWorker",
            ),
            Control("TrvExpTable_Destination", "Destination", K.INPUT, report["destination"], data_field="Destination"),
            Control(
                "TrvExpTable_TotalAmount", "Total amount", K.REAL_INPUT, display_money(total), data_field="TotalAmount"
            ),
        ]
        # Header lines only: itemized lines are worked in the itemization form, as in D365.
        rows = [
            GridRow(
                line["id"],
                {
                    "TrvExpTrans_LineNum": str(line["line_number"]),
                    "TrvExpTrans_TransDate": line["transaction_date"],
                    "TrvExpTrans_CostType": line["category_id"],
                    "TrvExpTrans_MerchantId": str(self._line_value(form, line, "merchant")),
                    "TrvExpTrans_AmountCurr": display_money(Decimal(line["amount"])),
                    "TrvExpTrans_CurrencyCode": line["currency"],
                    "TrvExpTrans_LineType": line["line_type"],
                    "TrvExpTrans_ExpSubCategory": line["subcategory"] or "",
                    "TrvExpTrans_ItemizationStatus": itemization_status(session, line),
                },
            )
            for line in lines
        ]
        columns = [
            Column("TrvExpTrans_LineNum", "Line", "Integer"),
            Column("TrvExpTrans_TransDate", "Date", "Date"),
            Column("TrvExpTrans_CostType", "Expense category"),
            Column("TrvExpTrans_MerchantId", "Merchant"),
            Column("TrvExpTrans_AmountCurr", "Amount", "Real"),
            Column("TrvExpTrans_CurrencyCode", "Currency"),
            Column("TrvExpTrans_LineType", "Line type"),
            Column("TrvExpTrans_ExpSubCategory", "Subcategory"),
            Column("TrvExpTrans_ItemizationStatus", "Itemization"),
        ]
        sections = [
            Section("HeaderGroup", "Expense report", controls=header),
            Section("LinesTabPage", "Expense lines", K.TAB_PAGE, grids=[Grid(GRID, "Expense lines", columns, rows)]),
        ]
        line = self.selected_line(session, form)
        if line is not None:
            sections.append(
                Section(
                    "LineDetailsFastTab",
                    "Line details",
                    K.FAST_TAB,
                    controls=self._line_controls(session, form, report, line),
                )
            )
        return sections

    def _line_controls(
        self, session: FormHost, form: OpenForm, report: sqlite3.Row, line: sqlite3.Row
    ) -> list[Control]:
        editable = report["status"] == "Draft"
        receipt = ledger.receipt_of_line(session.db, line["id"])
        pending_amount = _edits(form).line_value(line["id"], "amount", None)

        def line_text(name: str, label: str, field: str, data_field: str) -> Control:
            """A text of the line the user may edit on a Draft report: its pending edit, else its saved value."""
            return Control(name, label, K.INPUT, self._line_value(form, line, field), editable, data_field=data_field)

        controls = [
            Control("TrvExpTrans_CostType", "Expense category", K.INPUT, line["category_id"], data_field="CostType"),
            line_text("TrvExpTrans_MerchantId", "Merchant", "merchant", "MerchantId"),
            Control("TrvExpTrans_TransDate", "Date", K.DATE_INPUT, line["transaction_date"], data_field="TransDate"),
            Control(
                "TrvExpTrans_AmountCurr",
                "Amount",
                K.REAL_INPUT,
                pending_amount if pending_amount is not None else display_money(Decimal(line["amount"])),
                editable and line["line_type"] == "Default",
                required=True,
                data_field="AmountCurr",
                help="Transaction amount in the transaction currency.",
            ),
            Control("TrvExpTrans_CurrencyCode", "Currency", K.INPUT, line["currency"], data_field="CurrencyCode"),
            Control("TrvExpTrans_LineType", "Line type", K.COMBOBOX, line["line_type"], data_field="LineType"),
            line_text("TrvExpTrans_Txt2", "Description", "description", "Txt2"),
            Control(
                "TrvExpTrans_ReceiptAttached",
                "Receipt attached",
                K.CHECKBOX,
                receipt is not None,
                data_field="ReceiptsAttached",
            ),
        ]
        if CATEGORIES[line["category_id"]].itemize:
            summary = ledger.saved_summary(session, line["id"])
            controls += [
                Control("TrvExpTrans_ItemizedAmount", "Itemized amount", K.REAL_INPUT, display_money(summary.itemized)),
                Control(
                    "TrvExpTrans_RemainingAmount", "Remaining amount", K.REAL_INPUT, display_money(summary.remaining)
                ),
            ]
        return controls

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        report = self.report(session, form)
        line = self.selected_line(session, form)
        itemizable = line is not None and CATEGORIES[line["category_id"]].itemize
        has_receipt = line is not None and ledger.receipt_of_line(session.db, line["id"]) is not None
        select = f"select the expense line in {GRID} first (form_select_grid_row)."
        not_draft = f"report {report['report_number']} is {report['status']}; only Draft reports can change."
        if line is None:
            itemize_reason = select
        elif not itemizable:
            itemize_reason = f"the selected line's category {line['category_id']} is not itemized."
        else:
            itemize_reason = not_draft
        return [
            Button(
                "Itemize",
                "Itemize",
                itemizable and report["status"] == "Draft",
                "Open the itemization form for the selected line.",
                itemize_reason,
            ),
            Button(
                "ViewReceipt",
                "Receipts",
                has_receipt,
                "View the receipt attached to the selected line.",
                select if line is None else "the selected line has no receipt attached.",
            ),
            Button(
                "SubmitReport",
                "Submit",
                report["status"] == "Draft",
                "Submit the expense report for approval.",
                not_draft,
            ),
        ]

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        key = button.lower()
        if key == "submitreport":
            if self.has_unsaved_changes(form):
                raise FormStateError("Save or discard the changes on this form before submitting.")
            with transaction(session.db):
                ledger.submit_report(session.db, form.context["report_id"])
            return "The expense report was submitted for approval."
        if key not in ("itemize", "viewreceipt"):
            return super().click(session, form, button)
        line = self.selected_line(session, form)
        if line is None:
            raise FormStateError("Select an expense line in ExpenseLinesGrid first (form_select_grid_row).")
        if key == "viewreceipt":
            receipt = ledger.receipt_of_line(session.db, line["id"])
            if receipt is None:
                raise FormStateError(f"Line {line['line_number']} has no receipt attached.")
            return session.open_form("TrvReceiptViewer", {"receipt_id": receipt["id"]})
        if not CATEGORIES[line["category_id"]].itemize:
            raise FormStateError(f"Expense category {line['category_id']} is not itemized.")
        if self.report(session, form)["status"] != "Draft":
            raise FormStateError("Only lines of Draft expense reports can be itemized.")
        return session.open_form("TrvItemization", {"line_id": line["id"]})

    def set_value(self, session: FormHost, form: OpenForm, control: Control, value: Any) -> None:
        if not control.editable:
            return super().set_value(session, form, control, value)
        if control.name == "TrvExpTable_Txt":
            _edits(form).purpose = parse_text(value, control.name)
            return None
        line = self.selected_line(session, form)
        assert line is not None  # the line controls are on the form only while a line is selected
        field = LINE_FIELDS[control.name]
        parsed = (
            display_money(parse_money(value, control.name)) if field == "amount" else parse_text(value, control.name)
        )
        lines = _edits(form).lines
        lines[line["id"]] = {**lines.get(line["id"], {}), field: parsed}
        return None

    def save(self, session: FormHost, form: OpenForm) -> str:
        if not self.has_unsaved_changes(form):
            return "There were no changes to save."
        controls = {field: name for name, field in LINE_FIELDS.items()}
        with transaction(session.db):
            edits = _edits(form)
            if edits.purpose is not None:
                ledger.update_report_purpose(session.db, form.context["report_id"], edits.purpose, "TrvExpTable_Txt")
            for line_id, changes in edits.lines.items():
                ledger.update_line_fields(session.db, line_id, changes, controls)
        form.pending = None
        return "The expense report was saved."
