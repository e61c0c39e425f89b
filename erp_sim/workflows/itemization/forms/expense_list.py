"""TrvExpenses: the worker's expense reports (Expense management > My expenses > Expense reports)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from erp_sim import response_keys as K
from erp_sim.errors import FormStateError
from erp_sim.forms.base import Button, Column, Control, FormDefinition, FormHost, Grid, GridRow, OpenForm, Section
from erp_sim.money import ZERO, display_money
from erp_sim.workflows.itemization.task import task_of

GRID = "ExpenseReportsGrid"


class ExpenseReportList(FormDefinition):
    name = "TrvExpenses"
    menu_item = "TrvExpenses"
    primary_grid = GRID
    guidance = [
        "Select a report in ExpenseReportsGrid with form_select_grid_row, then click EditReport to open it.",
        "Filter the grid with form_filter_grid (gridColumnName TrvExpTable_ExpNumber) or form_filter_form.",
        "The grid shows 25 reports per page; click the grid with actionId LoadNextPage for more.",
    ]
    links = [("Expense categories", "TrvCostType"), ("Expense subcategories", "TrvExpSubCategory")]

    def caption(self, session: FormHost, form: OpenForm) -> str:
        return "Expense reports"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        total = session.db.execute("SELECT COUNT(*) FROM expense_report").fetchone()[0]
        return f"{total} expense report(s) for {task_of(session).worker_name}."

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rows = session.cached_read("report-list-rows", lambda: self._rows(session))
        columns = [
            Column("TrvExpTable_ExpNumber", "Expense report number"),
            Column("TrvExpTable_Txt", "Purpose"),
            Column("TrvExpTable_ApprovalStatus", "Approval status"),
            Column("TrvExpTable_CreatedDate", "Created date", "Date"),
            Column("TrvExpTable_TotalAmount", "Total amount", "Real"),
        ]
        quick = Control(
            "QuickFilter",
            "Filter",
            K.INPUT,
            form.quick_filter,
            editable=True,
            help="Type to filter all columns of the grid (form_filter_form).",
        )
        return [
            Section("FilterGroup", "Filter", controls=[quick]),
            Section("ReportsGroup", "Expense reports", grids=[Grid(GRID, "Expense reports", columns, rows)]),
        ]

    @staticmethod
    def _rows(session: FormHost) -> list[GridRow]:
        # Exact sums in SQL: amounts are two-place decimal text, so cents round-trip through REAL exactly.
        amounts = {
            report_id: Decimal(cents) / 100
            for report_id, cents in session.db.execute(
                "SELECT report_id, SUM(CAST(ROUND(CAST(amount AS REAL) * 100) AS INTEGER)) FROM expense_line "
                "WHERE line_type != 'ItemizedLine' GROUP BY report_id"
            )
        }
        return [
            GridRow(
                r["id"],
                {
                    "TrvExpTable_ExpNumber": r["report_number"],
                    "TrvExpTable_Txt": r["purpose"],
                    "TrvExpTable_ApprovalStatus": r["status"],
                    "TrvExpTable_CreatedDate": r["created_date"],
                    "TrvExpTable_TotalAmount": display_money(amounts.get(r["id"], ZERO)),
                },
            )
            for r in session.db.execute("SELECT * FROM expense_report ORDER BY report_number")
        ]

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        selected = form.grid_state(GRID).selected_key is not None
        return [
            Button(
                "EditReport",
                "Edit",
                selected,
                "Open the selected expense report.",
                f"select a report in {GRID} first (form_select_grid_row).",
            )
        ]

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        if button.lower() != "editreport":
            return super().click(session, form, button)
        report_id = form.grid_state(GRID).selected_key
        if report_id is None:
            raise FormStateError("Select an expense report in ExpenseReportsGrid first (form_select_grid_row).")
        return session.open_form("TrvExpenseReport", {"report_id": report_id})

    def set_value(self, session: FormHost, form: OpenForm, control: Control, value: Any) -> None:
        if control.name != "QuickFilter":
            return super().set_value(session, form, control, value)
        form.quick_filter = str(value)
        form.grid_state(GRID).page = 0
        return None
