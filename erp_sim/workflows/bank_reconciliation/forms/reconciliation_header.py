"""BankReconciliationHeader: one bank reconciliation, its statement, its figures, the worksheet and marking
it reconciled."""

from __future__ import annotations

from decimal import Decimal

from erp_sim import response_keys as K
from erp_sim.forms.base import Button, Control, FormDefinition, FormHost, OpenForm, Section
from erp_sim.money import display_money
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.forms.figures import (
    figure_controls,
    reconciliation,
    statement,
    summary,
    yes_no,
)


def bank_account(session: FormHost, account_id: str) -> dict[str, str]:
    row = session.db.execute("SELECT * FROM bank_account WHERE account_id = ?", (account_id,)).fetchone()
    return dict(row) if row is not None else {}


class ReconciliationHeader(FormDefinition):
    name = R.HEADER_FORM
    guidance = [
        f"Click {R.WORKSHEET_BUTTON} to match the statement's lines to bank transactions.",
        f"Click {R.RECONCILE_BUTTON} when no statement line is open and the unreconciled difference is exactly "
        "0.00; a reconciled reconciliation can no longer change.",
    ]
    links = [("Bank reconciliation", R.LIST_FORM)]

    def caption(self, session: FormHost, form: OpenForm) -> str:
        rec = reconciliation(session, form)
        return f"Bank reconciliation {rec['account_id']} - {statement(session, form)['statement_id']}"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        rec, figures = reconciliation(session, form), summary(session, form)
        state = "reconciled" if rec["reconciled"] else "not reconciled"
        return (
            f"Bank reconciliation of {rec['account_id']} against statement {statement(session, form)['statement_id']} "
            f"({state}): {figures.line_count} statement line(s), {figures.open_line_count} open; unreconciled "
            f"difference {display_money(figures.difference)}."
        )

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rec, stmt = reconciliation(session, form), statement(session, form)
        account = bank_account(session, rec["account_id"])
        record = [
            Control("BankRecon_AccountId", "Bank account", K.INPUT, rec["account_id"], data_field="AccountId"),
            Control("BankAccount_Name", "Name", K.INPUT, account.get("name", ""), data_field="Name"),
            Control("BankAccount_BankName", "Bank", K.INPUT, account.get("bank_name", ""), data_field="BankName"),
            Control(
                "BankAccount_AccountNumber",
                "Bank account number",
                K.INPUT,
                account.get("account_number", ""),
                data_field="AccountNum",
            ),
            Control("BankRecon_Currency", "Currency", K.INPUT, account.get("currency", ""), data_field="CurrencyCode"),
            Control("BankRecon_StatementId", "Statement", K.INPUT, stmt["statement_id"], data_field="StatementId"),
            Control("BankStatement_FromDate", "From date", K.DATE_INPUT, stmt["from_date"], data_field="FromDate"),
            Control("BankStatement_ToDate", "To date", K.DATE_INPUT, stmt["to_date"], data_field="ToDate"),
            Control(
                "BankRecon_CutOffDate",
                "Cut-off date",
                K.DATE_INPUT,
                rec["cut_off_date"],
                data_field="CutOffDate",
                help="Bank transactions after this date are left out of the worksheet.",
            ),
            Control(
                R.HEADER_RECONCILED,
                "Reconciled",
                K.COMBOBOX,
                yes_no(rec["reconciled"]),
                data_field="IsReconciled",
                options=["No", "Yes"],
            ),
            Control(
                "BankRecon_ReconciledDate",
                "Reconciled date",
                K.DATE_INPUT,
                rec["reconciled_date"] or "",
                data_field="ReconciledDate",
            ),
        ]
        balances = [
            Control(
                "BankStatement_OpeningBalance",
                "Opening balance",
                K.REAL_INPUT,
                display_money(Decimal(stmt["opening_balance"])),
            ),
            Control(
                "BankStatement_ClosingBalance",
                "Closing balance",
                K.REAL_INPUT,
                display_money(Decimal(stmt["closing_balance"])),
            ),
        ]
        return [
            Section("ReconciliationGroup", "Reconciliation", controls=record),
            Section("TotalsGroup", "Totals", controls=balances + figure_controls(session, form, "BankRecon")),
        ]

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        reconciled = bool(reconciliation(session, form)["reconciled"])
        return [
            Button(R.WORKSHEET_BUTTON, "Worksheet", True, "Open the reconciliation worksheet to match transactions."),
            Button(
                R.RECONCILE_BUTTON,
                "Mark as reconciled",
                not reconciled,
                "Mark the reconciliation as reconciled (no open line, difference exactly 0.00).",
                "the reconciliation is already marked as reconciled.",
            ),
        ]

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        key = button.lower()
        if key == R.WORKSHEET_BUTTON.lower():
            result = session.open_form(R.WORKSHEET_FORM, {"rec_id": form.context["rec_id"]})
            session.forms[-1].collapsed.update({R.TRANSACTION_TAB, R.MATCHED_TAB})  # one tab page at a time
            return result
        if key == R.RECONCILE_BUTTON.lower():
            rules.mark_reconciled(session.db, form.context["rec_id"])
            return "The bank reconciliation was marked as reconciled."
        return super().click(session, form, button)
