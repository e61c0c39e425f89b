"""Test helpers for the bank reconciliation workflow, shared by several test folders."""

from __future__ import annotations

from decimal import Decimal

from erp_support import oracle_until_click

from erp_sim import ErpSession, get_task
from erp_sim.erp_session import ToolResponse
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.audit import books_problems
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID
from erp_sim.workflows.bank_reconciliation.grading import target_reconciliation
from erp_sim.workflows.bank_reconciliation.task import Task, as_task


def bank_task(task_id: str = "bank-020", task_set: str = "bank_recon_50") -> Task:
    return as_task(get_task(task_set, task_id))


def task_with(kind: str, task_set: str = "bank_recon_50") -> Task:
    """The first task of the set with a statement line or a transaction of ``kind``."""
    from erp_sim import load_task_set

    for task in map(as_task, load_task_set(task_set)):
        if any(line.kind == kind for line in task.statement_lines) or any(t.kind == kind for t in task.transactions):
            return task
    raise LookupError(kind)


def line_id(session: ErpSession, number: int) -> int:
    rec = rules.reconciliation_by_id(session.db, target_reconciliation(session))
    return int(
        session.db.execute(
            "SELECT id FROM bank_statement_line WHERE statement_id = ? AND line_number = ?",
            (rec["statement_id"], number),
        ).fetchone()[0]
    )


def trans_id(session: ErpSession, voucher: str) -> int:
    return int(session.db.execute("SELECT id FROM bank_transaction WHERE voucher = ?", (voucher,)).fetchone()[0])


def solve_by_rules(
    session: ErpSession, *, skip: frozenset[int] | set[int] = frozenset(), reconcile: bool = True
) -> None:
    """The task's true matches and postings written through ``rules`` (lines in ``skip`` left open)."""
    task = as_task(session.task)
    rec_id = target_reconciliation(session)
    for lines, vouchers in task.groups:
        if not lines & skip:
            rules.match(
                session.db, rec_id, [line_id(session, n) for n in lines], [trans_id(session, v) for v in vouchers]
            )
    for fee in task.fees:
        if fee.line_number not in skip:
            rules.mark_as_new(
                session.db, rec_id, [line_id(session, fee.line_number)], MAIN_ACCOUNT_BY_ID[fee.main_account_id]
            )
    if reconcile:
        rules.mark_reconciled(session.db, rec_id)


def open_worksheet(session: ErpSession) -> ToolResponse:
    """Drive the oracle up to the opened worksheet; returns the Worksheet click's response."""
    return oracle_until_click(session, "Worksheet")


def assert_books_balance(session: ErpSession) -> None:
    """The books audited from the raw tables (``audit.books_problems``), and the grade agreeing with them."""
    assert books_problems(session.db) == []
    figures = rules.summary(session.db, target_reconciliation(session))
    grade = session.grade()
    assert Decimal(grade.difference) == figures.difference
    assert grade.statement_lines - grade.cleared_lines == figures.open_line_count
