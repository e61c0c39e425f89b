"""BankReconciliation: every bank reconciliation, reconciled or open (Cash and bank management > Bank
statement reconciliation > Bank reconciliation)."""

from __future__ import annotations

from decimal import Decimal

from erp_sim.forms.base import Column, FormHost, GridRow, OpenForm
from erp_sim.forms.record_list import OpenRecord, RecordList
from erp_sim.money import display_money
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.forms.figures import yes_no


class ReconciliationList(RecordList):
    name = R.LIST_FORM
    menu_item = R.LIST_FORM
    primary_grid = R.LIST_GRID
    group, label = "ReconciliationsGroup", "Bank reconciliations"
    columns = [
        Column(R.LIST_ACCOUNT, "Bank account"),
        Column(R.LIST_STATEMENT, "Statement"),
        Column(R.LIST_CUT_OFF, "Cut-off date", "Date"),
        Column(R.LIST_TOTAL, "Statement amount", "Real"),
        Column(R.LIST_RECONCILED, "Reconciled"),
    ]
    rows_key = "bank/list-rows"
    opens = OpenRecord(R.OPEN_BUTTON, "Open", "bank reconciliation", "a", "reconciliation", R.HEADER_FORM, "rec_id")
    guidance = [
        f"Select a reconciliation in {R.LIST_GRID} with form_select_grid_row, then click {R.OPEN_BUTTON}.",
        f"Filter with form_filter_grid (gridColumnName {R.LIST_STATEMENT} or {R.LIST_ACCOUNT}) or form_filter_form.",
        "A bank account has one open reconciliation at a time; earlier ones are reconciled.",
    ]

    def caption(self, session: FormHost, form: OpenForm) -> str:
        return "Bank reconciliation"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        total, open_count, accounts = session.db.execute(
            "SELECT COUNT(*), SUM(reconciled = 0), COUNT(DISTINCT account_id) FROM bank_reconciliation"
        ).fetchone()
        return f"{total} bank reconciliation(s) of {accounts} bank account(s); {open_count} not reconciled yet."

    def rows(self, session: FormHost) -> list[GridRow]:
        totals = rules.statement_totals(session.db)
        return [
            GridRow(
                r["id"],
                {
                    R.LIST_ACCOUNT: r["account_id"],
                    R.LIST_STATEMENT: r["statement"],
                    R.LIST_CUT_OFF: r["cut_off_date"],
                    R.LIST_TOTAL: display_money(totals.get(r["statement_id"], Decimal(0))),
                    R.LIST_RECONCILED: yes_no(r["reconciled"]),
                },
            )
            for r in session.db.execute(
                "SELECT r.*, s.statement_id AS statement FROM bank_reconciliation r "
                "JOIN bank_statement s ON s.id = r.statement_id ORDER BY r.cut_off_date DESC, r.account_id, r.id"
            )
        ]
