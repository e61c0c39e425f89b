"""Test helpers for the bank reconciliation workflow, shared by several test folders."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from erp_sim import ErpSession, get_task, oracle_calls
from erp_sim.erp_session import ToolResponse
from erp_sim.workflows.bank_reconciliation import rules
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


def solve_by_rules(session: ErpSession, *, skip: set[int] = frozenset(), reconcile: bool = True) -> None:
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
    calls = oracle_calls(session.task)
    name, args = next(calls)
    while True:
        response = session.call(name, args)
        assert not response.is_error, response.result
        if name == "form_click_control" and args.get("controlName") == "Worksheet":
            return response
        name, args = calls.send(response.text)


def _cents(text: str) -> Decimal:
    value = Decimal(text)
    assert value == value.quantize(Decimal("0.01")), text
    return value


def assert_books_balance(session: ErpSession) -> None:
    """The invariant, from the raw tables, whatever path wrote: every match group balances and holds each line and
    transaction once; every reconciliation's difference is its statement total minus its matched and posted
    amounts, as the rule module reports it (and the grade, for the task's); a reconciled one has no open line."""
    db = session.db
    items = db.execute(
        "SELECT m.id, m.reconciliation_id, m.match_type, i.statement_line_id, i.bank_transaction_id "
        "FROM bank_reconciliation_match m JOIN bank_reconciliation_match_item i ON i.match_id = m.id"
    ).fetchall()
    lines = Counter(row[3] for row in items if row[3] is not None)
    transactions = Counter(row[4] for row in items if row[4] is not None)
    assert max(lines.values(), default=1) == 1 and max(transactions.values(), default=1) == 1
    amount = {("l", r[0]): _cents(r[1]) for r in db.execute("SELECT id, amount FROM bank_statement_line")}
    amount |= {("t", r[0]): _cents(r[1]) for r in db.execute("SELECT id, amount FROM bank_transaction")}
    groups: dict[int, list[Decimal]] = {}
    for match_id, _, _, line, transaction in items:
        balance = groups.setdefault(match_id, [Decimal(0), Decimal(0), Decimal(0)])
        if line is not None:
            balance[0] += amount[("l", line)]
        else:
            balance[1] += amount[("t", transaction)]
        balance[2] += 1
    for match_id, (line_total, transaction_total, count) in groups.items():
        assert count >= 2 and line_total == transaction_total, (match_id, line_total, transaction_total)
    for rec in db.execute("SELECT * FROM bank_reconciliation").fetchall():
        statement_total = sum(
            (
                _cents(a)
                for (a,) in db.execute(
                    "SELECT amount FROM bank_statement_line WHERE statement_id = ?", (rec["statement_id"],)
                )
            ),
            Decimal(0),
        )
        cleared = [row for row in items if row[1] == rec["id"] and row[4] is not None]
        matched = sum((amount[("t", r[4])] for r in cleared if r[2] == "Match"), Decimal(0))
        posted = sum((amount[("t", r[4])] for r in cleared if r[2] == "New"), Decimal(0))
        figures = rules.summary(db, rec["id"])
        assert figures.difference == statement_total - matched - posted
        assert (figures.matched_amount, figures.posted_amount) == (matched, posted)
        open_lines = figures.open_line_count
        if rec["reconciled"]:
            assert open_lines == 0 and figures.difference == 0
        if rec["id"] == target_reconciliation(session):
            grade = session.grade()
            assert Decimal(grade.difference) == figures.difference
            assert grade.statement_lines - grade.cleared_lines == open_lines
