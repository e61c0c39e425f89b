"""TrvExpenses: the worker's expense reports (Expense management > My expenses > Expense reports)."""

from __future__ import annotations

from decimal import Decimal

from erp_sim.forms.base import Column, FormHost, GridRow, OpenForm
from erp_sim.forms.record_list import OpenRecord, RecordList
from erp_sim.money import ZERO, display_money
from erp_sim.workflows.itemization.task import task_of

GRID = "ExpenseReportsGrid"


class ExpenseReportList(RecordList):
    name = "TrvExpenses"
    menu_item = "TrvExpenses"
    primary_grid = GRID
    group, label = "ReportsGroup", "Expense reports"
    columns = [
        Column("TrvExpTable_ExpNumber", "Expense report number"),
        Column("TrvExpTable_Txt", "Purpose"),
        Column("TrvExpTable_ApprovalStatus", "Approval status"),
        Column("TrvExpTable_CreatedDate", "Created date", "Date"),
        Column("TrvExpTable_TotalAmount", "Total amount", "Real"),
    ]
    rows_key = "report-list-rows"
    opens = OpenRecord("EditReport", "Edit", "expense report", "an", "report", "TrvExpenseReport", "report_id")
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

    def rows(self, session: FormHost) -> list[GridRow]:
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
