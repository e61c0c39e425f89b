"""Bank reconciliation's rules (``rules``): what Match, Mark as new, Unmatch and Mark as reconciled accept and
refuse, whatever path calls them; a refusal says why and changes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from bank_support import assert_books_balance, bank_task, line_id, solve_by_rules, task_with, trans_id

from erp_sim import ErpSession
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.workflows.bank_reconciliation import rules
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID
from erp_sim.workflows.bank_reconciliation.grading import target_reconciliation

CHARGES = MAIN_ACCOUNT_BY_ID["618160"]


@pytest.fixture
def session():
    s = ErpSession(bank_task())
    yield s
    s.close()


def _first_single(task):
    """A one-to-one line and its transaction's voucher."""
    lines, vouchers = next(g for g in task.groups if len(g[1]) == 1)
    return next(iter(lines)), next(iter(vouchers))


def _refused(session, error, match, write):
    before = session.state_hash()
    with pytest.raises(error, match=match):
        write()
    assert session.state_hash() == before


def test_match_refuses_unequal_totals_naming_both_and_changes_nothing(session):
    task = session.task
    rec = target_reconciliation(session)
    (_, voucher_a), (line_b, _) = [(next(iter(g[0])), next(iter(g[1]))) for g in task.groups[:2]]
    _refused(
        session,
        BusinessRuleError,
        r"statement lines total .* and the bank transactions total .*: a match needs equal totals",
        lambda: rules.match(session.db, rec, [line_id(session, line_b)], [trans_id(session, voucher_a)]),
    )


@pytest.mark.parametrize(
    "where, expected",
    [
        ("another account", "is on bank account"),
        ("reconciled", "already reconciled"),
        ("after the cut-off", "after the cut-off date"),
    ],
)
def test_match_refuses_transactions_that_are_not_open_on_the_worksheet(session, where, expected):
    task = session.task
    rec = target_reconciliation(session)
    if where == "another account":
        sql = "SELECT id FROM bank_transaction WHERE account_id != ? AND reconciled = 0"
    elif where == "reconciled":
        sql = "SELECT id FROM bank_transaction WHERE account_id = ? AND reconciled = 1"
    else:
        sql = f"SELECT id FROM bank_transaction WHERE account_id = ? AND trans_date > '{task.cut_off_date}'"
    (other,) = session.db.execute(sql, (task.account_id,)).fetchone()
    line, _ = _first_single(task)
    _refused(
        session, BusinessRuleError, expected, lambda: rules.match(session.db, rec, [line_id(session, line)], [other])
    )


def test_match_refuses_what_is_matched_already_and_lines_of_another_statement(session):
    task = session.task
    rec = target_reconciliation(session)
    line, voucher = _first_single(task)
    rules.match(session.db, rec, [line_id(session, line)], [trans_id(session, voucher)])
    _refused(
        session,
        BusinessRuleError,
        "already matched",
        lambda: rules.match(session.db, rec, [line_id(session, line)], [trans_id(session, voucher)]),
    )
    (foreign,) = session.db.execute(
        "SELECT id FROM bank_statement_line WHERE statement_id != (SELECT statement_id FROM bank_reconciliation WHERE id = ?)",
        (rec,),
    ).fetchone()
    _refused(
        session,
        NotFoundError,
        "not on this reconciliation's statement",
        lambda: rules.match(session.db, rec, [foreign], [1]),
    )
    _refused(session, ValidationError, "Mark at least one", lambda: rules.match(session.db, rec, [], [1]))
    _refused(session, ValidationError, "more than once", lambda: rules.match(session.db, rec, [1, 1], [1]))


def test_a_deposit_slip_matches_all_its_checks_at_once(session):
    task = session.task
    rec = target_reconciliation(session)
    lines, vouchers = next(g for g in task.groups if len(g[1]) > 1)
    ids = [trans_id(session, v) for v in sorted(vouchers)]
    line = line_id(session, next(iter(lines)))
    _refused(session, BusinessRuleError, "equal totals", lambda: rules.match(session.db, rec, [line], ids[:1]))
    match_id = rules.match(session.db, rec, [line], ids)
    assert match_id.startswith("MATCH-")
    assert_books_balance(session)


def test_mark_as_new_posts_at_once_and_unmatch_leaves_the_posting(session):
    task = session.task
    rec = target_reconciliation(session)
    fee = task.fees[0]
    line = task.line(fee.line_number)
    highest = session.db.execute("SELECT MAX(voucher) FROM bank_transaction").fetchone()[0]
    ((match_id, voucher),) = rules.mark_as_new(session.db, rec, [line_id(session, fee.line_number)], CHARGES)
    assert voucher > highest
    posted = session.db.execute("SELECT * FROM bank_transaction WHERE voucher = ?", (voucher,)).fetchone()
    assert (posted["amount"], posted["trans_date"], posted["payment_reference"]) == (
        line.amount,
        line.booking_date,
        line.reference,
    )
    assert posted["trans_type"] == ("Fee" if line.decimal < 0 else "Interest") and posted["offset_account"] == "618160"
    assert not posted["reconciled"]
    match = rules.match_by_id(session.db, rec, match_id)
    assert "stays posted" in rules.unmatch(session.db, rec, match["id"])
    assert session.db.execute("SELECT COUNT(*) FROM bank_transaction WHERE voucher = ?", (voucher,)).fetchone()[0] == 1
    assert posted["id"] in {
        t["id"] for t in rules.open_transactions(session.db, rules.reconciliation_by_id(session.db, rec))
    }
    assert_books_balance(session)


def test_only_expense_and_revenue_accounts_take_postings():
    with pytest.raises(ValidationError, match="is not a ledger account lines can be posted to"):
        rules.posting_account("110110", "OffsetAccount")
    assert rules.posting_account(" 618160   BANK charges", "x").main_account_id == "618160"
    assert rules.posting_account("Interest income", "x").main_account_id == "801100"
    for junk in (float("nan"), None, True, [1], "x" * 500):
        with pytest.raises(ValidationError):
            rules.posting_account(junk, "OffsetAccount")


def test_marking_reconciled_is_refused_until_ready_then_everything_is_final(session):
    rec = target_reconciliation(session)
    _refused(
        session,
        BusinessRuleError,
        "statement line.* are not matched.*difference is",
        lambda: rules.mark_reconciled(session.db, rec),
    )
    solve_by_rules(session, reconcile=False)
    figures = rules.summary(session.db, rec)
    assert figures.ready and not figures.complete and figures.difference == 0
    rules.mark_reconciled(session.db, rec)
    figures = rules.summary(session.db, rec)
    assert figures.complete
    row = rules.reconciliation_by_id(session.db, rec)
    assert row["reconciled_date"] == session.db.execute("SELECT date('now')").fetchone()[0]  # the simulated clock
    assert (
        session.db.execute("SELECT status FROM bank_statement WHERE id = ?", (row["statement_id"],)).fetchone()[0]
        == "Reconciled"
    )
    task = session.task
    cleared = {v for _, vouchers in task.groups for v in vouchers}
    flags = dict(
        session.db.execute("SELECT voucher, reconciled FROM bank_transaction WHERE account_id = ?", (task.account_id,))
    )
    assert all(flags[v] for v in cleared)
    assert not any(flags[t.voucher] for t in task.transactions if t.line_number is None)  # distractors stay open
    for write in (
        lambda: rules.mark_reconciled(session.db, rec),
        lambda: rules.unmatch(session.db, rec, 1),
        lambda: rules.mark_as_new(session.db, rec, [1], CHARGES),
    ):
        _refused(session, BusinessRuleError, "already marked as reconciled", write)
    assert_books_balance(session)


def test_the_difference_is_the_open_lines_whatever_was_matched(session):
    task = session.task
    skip = {1, 2, task.fees[0].line_number}
    solve_by_rules(session, skip=skip, reconcile=False)
    figures = rules.summary(session.db, target_reconciliation(session))
    assert figures.open_line_count == len(skip)
    assert figures.difference == sum((task.line(n).decimal for n in skip), Decimal(0))
    assert_books_balance(session)


def test_lists_of_ids_are_parsed_strictly():
    assert rules.parse_numbers("12, 13", "x") == [12, 13]
    assert rules.parse_numbers(7, "x") == [7]
    assert rules.parse_list("BNK-000001,BNK-000002", "x") == ["BNK-000001", "BNK-000002"]
    for junk in ("", " ", "1,,2", "1;2", "x" * 2000, True, None, 1.5, [1], "1,1", ",".join(["1"] * 60)):
        with pytest.raises(ValidationError):
            rules.parse_numbers(junk, "x")
    with pytest.raises(ValidationError, match="not a whole number"):
        rules.parse_numbers("BNK-1", "x")


def test_a_booked_fee_has_its_transaction_and_matches_like_a_payment():
    task = task_with("booked_fee")
    line = next(x for x in task.statement_lines if x.kind == "booked_fee")
    counterpart = next(t for t in task.transactions if t.line_number == line.line_number)
    assert (
        counterpart.type == "Fee"
        and counterpart.reference == line.reference
        and line.line_number not in task.fee_accounts
    )


def test_the_audit_finds_books_written_around_the_rules(session):
    from erp_sim.workflows.bank_reconciliation.audit import books_problems

    assert books_problems(session.db) == []
    task = session.task
    line, voucher = _first_single(task)
    other = min(next(vouchers for _, vouchers in task.groups if voucher not in vouchers))
    session.db.execute(
        "INSERT INTO bank_reconciliation_match (reconciliation_id, match_id, match_type) VALUES (?, 'X', 'Match')",
        (target_reconciliation(session),),
    )
    (match,) = session.db.execute("SELECT MAX(id) FROM bank_reconciliation_match").fetchone()
    session.db.execute(
        "INSERT INTO bank_reconciliation_match_item (match_id, statement_line_id, bank_transaction_id) VALUES (?, ?, NULL), (?, NULL, ?)",
        (match, line_id(session, line), match, trans_id(session, other)),
    )
    assert any("against transactions" in problem for problem in books_problems(session.db))
