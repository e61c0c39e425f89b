"""Grading bank reconciliation from the final state: success, strict success, reconciled_fraction, and each
failure category of the workflow (``failures.classify``), with the collateral diff shared with itemization."""

from __future__ import annotations

from decimal import Decimal

import pytest
from bank_support import assert_books_balance, bank_task, line_id, solve_by_rules, task_with, trans_id

from erp_sim import ErpSession, run_oracle
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID
from erp_sim.workflows.bank_reconciliation.failures import FAILURE_CATEGORIES, classify
from erp_sim.workflows.bank_reconciliation.grading import (
    collateral_changes,
    full_collateral_changes,
    progress,
    target_reconciliation,
)


def _grade(session):
    grade = session.grade().model_dump()
    assert_books_balance(session)
    return grade


def _solve_except(session, line, transactions):
    """Everything right but ``line``, matched to ``transactions`` (vouchers) instead; then marked reconciled."""
    rec = target_reconciliation(session)
    rules.match(session.db, rec, [line_id(session, line)], [trans_id(session, v) for v in transactions])
    solve_by_rules(session, skip={line})


def test_the_oracle_succeeds_strictly_and_its_grade_says_so():
    session = ErpSession(bank_task())
    assert progress(session, target_reconciliation(session)).done_fraction == 0
    run_oracle(session)
    grade = _grade(session)
    assert grade["success"] and grade["strict_success"] and grade["reconciled"]
    assert grade["reconciled_fraction"] == 1.0 and grade["difference"] == "0.00"
    assert grade["wrong_matches"] == grade["over_posted_fees"] == grade["collateral"] == grade["unmatched_lines"] == []
    assert classify(grade) is None
    assert progress(session, target_reconciliation(session)).done_fraction == 1


def test_a_near_duplicate_amount_is_a_wrong_match_although_the_difference_nets_to_zero():
    task = task_with("near_duplicate")
    twin = next(t for t in task.transactions if t.kind == "near_duplicate")
    line = next(
        n for lines, vouchers in task.groups for n in lines if len(vouchers) == 1 and task.line(n).amount == twin.amount
    )
    session = ErpSession(task)
    _solve_except(session, line, [twin.voucher])
    grade = _grade(session)
    assert grade["reconciled"] and grade["difference"] == "0.00"
    assert not grade["success"] and len(grade["wrong_matches"]) == 1
    assert classify(grade) == "wrong_match"
    assert grade["reconciled_fraction"] == pytest.approx((task.line_count - 1) / task.line_count)


def test_a_payment_and_its_reversal_added_into_a_match_is_a_wrong_match():
    task = task_with("reversal")
    payment, reversal = [t for t in task.transactions if t.kind == "reversal"][:2]
    assert Decimal(payment.amount) == -Decimal(reversal.amount) and payment.reference == reversal.reference
    lines, vouchers = task.groups[0]
    session = ErpSession(task)
    _solve_except(session, next(iter(lines)), [*vouchers, payment.voucher, reversal.voucher])
    grade = _grade(session)
    assert grade["reconciled"] and classify(grade) == "wrong_match"


def test_several_true_groups_matched_at_once_succeed_but_not_strictly():
    task = bank_task()
    (a, va), (b, vb) = task.groups[0], task.groups[1]
    session = ErpSession(task)
    rec = target_reconciliation(session)
    rules.match(session.db, rec, [line_id(session, n) for n in a | b], [trans_id(session, v) for v in va | vb])
    solve_by_rules(session, skip=a | b)
    grade = _grade(session)
    assert grade["success"] and not grade["strict_success"] and len(grade["coarse_matches"]) == 1
    assert grade["reconciled_fraction"] == 1.0


@pytest.mark.parametrize("how", ["wrong account", "line with a transaction", "twice"])
def test_a_posting_the_user_did_not_authorise_is_an_over_posted_fee(how):
    task = bank_task()
    fee = task.fees[0]
    other = next(a for a in ("618160", "618190", "801100") if a != fee.main_account_id)
    session = ErpSession(task)
    rec = target_reconciliation(session)
    line = line_id(session, fee.line_number)
    if how == "wrong account":
        rules.mark_as_new(session.db, rec, [line], MAIN_ACCOUNT_BY_ID[other])
        solve_by_rules(session, skip={fee.line_number})
    elif how == "line with a transaction":
        lines, _ = next(g for g in task.groups if len(g[1]) == 1)
        rules.mark_as_new(session.db, rec, [line_id(session, next(iter(lines)))], MAIN_ACCOUNT_BY_ID[other])
        solve_by_rules(session, skip=set(lines))
    else:
        ((match_id, _),) = rules.mark_as_new(session.db, rec, [line], MAIN_ACCOUNT_BY_ID[fee.main_account_id])
        rules.unmatch(session.db, rec, rules.match_by_id(session.db, rec, match_id)["id"])
        solve_by_rules(session)  # posts the line again: the first posting is left open
    grade = _grade(session)
    assert grade["reconciled"] and grade["difference"] == "0.00" and not grade["success"]
    assert len(grade["over_posted_fees"]) == 1 and classify(grade) == "over_posted_fee"


def test_a_posting_matched_back_to_its_own_line_counts_as_the_posting():
    task = bank_task()
    fee = task.fees[0]
    session = ErpSession(task)
    rec = target_reconciliation(session)
    account = MAIN_ACCOUNT_BY_ID[fee.main_account_id]
    ((match_id, voucher),) = rules.mark_as_new(session.db, rec, [line_id(session, fee.line_number)], account)
    rules.unmatch(session.db, rec, rules.match_by_id(session.db, rec, match_id)["id"])
    rules.match(session.db, rec, [line_id(session, fee.line_number)], [trans_id(session, voucher)])
    solve_by_rules(session, skip={fee.line_number})
    assert _grade(session)["strict_success"]


def test_open_lines_and_an_unmarked_reconciliation_are_their_own_categories():
    session = ErpSession(bank_task())
    solve_by_rules(session, skip={1}, reconcile=False)
    grade = _grade(session)
    assert grade["unmatched_lines"] == [1] and classify(grade) == "unmatched_line"
    session = ErpSession(bank_task())
    solve_by_rules(session, reconcile=False)
    grade = _grade(session)
    assert grade["reconciled_fraction"] == 1.0 and classify(grade) == "not_marked_reconciled"
    state = progress(session, target_reconciliation(session))
    assert state.done_fraction == Decimal(session.task.line_count) / (session.task.line_count + 1)


def test_work_on_another_accounts_worksheet_is_collateral_and_the_logged_diff_is_the_full_one():
    task = bank_task()
    session = ErpSession(task)
    rec = target_reconciliation(session)
    other = session.db.execute(
        "SELECT id FROM bank_reconciliation WHERE reconciled = 0 AND id != ?", (rec,)
    ).fetchone()[0]
    other_rec = rules.reconciliation_by_id(session.db, other)
    line = rules.open_lines(session.db, other_rec)[0]
    same = [
        t for t in rules.open_transactions(session.db, other_rec) if t["payment_reference"] == line["bank_reference"]
    ]
    rules.match(session.db, other, [line["id"]], [t["id"] for t in same])
    solve_by_rules(session)
    grade = _grade(session)
    assert not grade["success"] and grade["collateral"] and classify(grade) == "collateral_change"
    assert collateral_changes(session, rec) == full_collateral_changes(session, rec)
    assert all("bank_reconciliation_match" in change for change in grade["collateral"])


def test_the_target_reconciliations_own_changes_are_not_collateral():
    session = ErpSession(bank_task())
    rec = target_reconciliation(session)
    solve_by_rules(session)
    assert collateral_changes(session, rec) == full_collateral_changes(session, rec) == []


def test_every_category_is_reachable_and_named_once():
    assert len(set(FAILURE_CATEGORIES)) == len(FAILURE_CATEGORIES) == 5
