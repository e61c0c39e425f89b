"""What the header form and the worksheet both show of a reconciliation: its record and its figures."""

from __future__ import annotations

import sqlite3

from erp_sim import response_keys as K
from erp_sim.forms.base import Control, FormHost, OpenForm
from erp_sim.money import display_money
from erp_sim.workflows.bank_reconciliation import rules


def reconciliation(session: FormHost, form: OpenForm) -> sqlite3.Row:
    """The form's reconciliation, read once per database version."""
    rec_id = form.context["rec_id"]
    return session.cached_read(f"bank/{rec_id}/record", lambda: rules.reconciliation_by_id(session.db, rec_id))


def statement(session: FormHost, form: OpenForm) -> sqlite3.Row:
    rec = reconciliation(session, form)
    return session.cached_read(
        f"bank/{rec['id']}/statement", lambda: rules.statement_by_id(session.db, rec["statement_id"])
    )


def summary(session: FormHost, form: OpenForm) -> rules.ReconciliationSummary:
    rec_id = form.context["rec_id"]
    return session.cached_read(f"bank/{rec_id}/summary", lambda: rules.summary(session.db, rec_id))


def keep_summary(session: FormHost, form: OpenForm, figures: rules.ReconciliationSummary) -> None:
    """``figures`` as the summary of the database's version now (a form that wrote knows what it changed)."""
    rec_id = form.context["rec_id"]
    session.cached_read(f"bank/{rec_id}/summary", lambda: figures)


def yes_no(flag: object) -> str:
    return "Yes" if flag else "No"


def figure_controls(session: FormHost, form: OpenForm, prefix: str, *, brief: bool = False) -> list[Control]:
    """The reconciliation's figures, named ``<prefix>_StatementTotal`` and so on; ``brief``: without the matched
    and posted amounts (the worksheet shows the difference, the header form how it adds up)."""
    figures = summary(session, form)
    controls = [
        Control(
            f"{prefix}_StatementTotal",
            "Statement total",
            K.REAL_INPUT,
            display_money(figures.statement_total),
            help="The sum of every line of the bank statement.",
        ),
        Control(
            f"{prefix}_MatchedAmount",
            "Matched bank transactions",
            K.REAL_INPUT,
            display_money(figures.matched_amount),
            help="The sum of the bank transactions matched to statement lines.",
        ),
        Control(
            f"{prefix}_PostedAmount",
            "Posted as new",
            K.REAL_INPUT,
            display_money(figures.posted_amount),
            help="The sum of the bank transactions posted from statement lines (Mark as new).",
        ),
        Control(
            f"{prefix}_UnreconciledDifference",
            "Unreconciled difference",
            K.REAL_INPUT,
            display_money(figures.difference),
            help="Statement total minus matched and posted amounts. Must be exactly 0.00 to mark as reconciled.",
        ),
        Control(
            f"{prefix}_OpenStatementLines",
            "Open statement lines",
            K.INPUT,
            str(figures.open_line_count),
            help=f"Statement lines not matched yet, of {figures.line_count}.",
        ),
    ]
    return [c for c in controls if not brief or not c.name.endswith(("_MatchedAmount", "_PostedAmount"))]
