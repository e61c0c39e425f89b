"""Bank reconciliation's task sets (bank_recon_50, bank_recon_long): sizes, difficulty, the ground truth and the
distractors of every task, splits, the world around a task, and the user's answers as data."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from bank_support import bank_task

from erp_sim import ErpSession, load_task_set
from erp_sim.database import open_database
from erp_sim.forms.base import PAGE_SIZE
from erp_sim.task_sets import split_rows
from erp_sim.workflows.bank_reconciliation import user_answers
from erp_sim.workflows.bank_reconciliation.catalog import FEE_KINDS, LINE_KINDS, POSTING_ACCOUNTS
from erp_sim.workflows.bank_reconciliation.task import as_task
from erp_sim.workflows.bank_reconciliation.taskgen import LADDER, LADDER_TASKS, SIZES, generate_task

SETS = ("bank_recon_50", "bank_recon_long")
TASKS = [as_task(t) for name in SETS for t in load_task_set(name)]


def test_bank_recon_50_spans_8_to_40_lines_over_three_difficulties():
    tasks = [as_task(t) for t in load_task_set("bank_recon_50")]
    assert [t.line_count for t in tasks] == SIZES and min(SIZES) == 8 and max(SIZES) == 40
    assert Counter(t.difficulty for t in tasks) == {"easy": 18, "medium": 16, "hard": 16}
    assert len({t.task_id for t in tasks}) == 50
    assert any(len(t.transactions) > 2 * PAGE_SIZE for t in tasks) and any(t.line_count > PAGE_SIZE for t in tasks)


def test_the_long_set_climbs_from_20_to_400_lines():
    tasks = [as_task(t) for t in load_task_set("bank_recon_long")]
    assert Counter(t.line_count for t in tasks) == dict.fromkeys(LADDER, LADDER_TASKS)
    assert LADDER[0] == 20 and LADDER[-1] == 400
    assert {t.difficulty for t in tasks if t.line_count > 40} == {"long"}


@pytest.mark.parametrize("name, train", [("bank_recon_50", 25), ("bank_recon_long", 10)])
def test_the_split_halves_every_stratum(name, train):
    rows = split_rows(name, "train")
    assert len(rows) == train and len(split_rows(name, "test")) == train
    by = (lambda r: r.stratum) if name == "bank_recon_50" else (lambda r: r.size)
    assert Counter(map(by, rows)) == Counter(map(by, split_rows(name, "test")))


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.task_id)
def test_every_task_has_a_consistent_ground_truth_and_its_distractors(task):
    lines = {line.line_number: line for line in task.statement_lines}
    assert list(lines) == list(range(1, task.line_count + 1))
    assert [line.booking_date for line in task.statement_lines] == sorted(
        line.booking_date for line in task.statement_lines
    )
    for line in task.statement_lines:
        assert line.reference.startswith(LINE_KINDS[line.kind].prefix) and line.decimal == line.decimal.quantize(
            Decimal("0.01")
        )
        assert line.decimal != 0 and line.booking_date[:7] == task.from_date[:7]
    counterparts = [t for t in task.transactions if t.line_number is not None]
    for lines_, vouchers in task.groups:  # each true group adds up to its line, under its line's reference
        (number,) = lines_
        members = [t for t in counterparts if t.voucher in vouchers]
        assert sum(t.decimal for t in members) == lines[number].decimal
        assert {t.reference for t in members} == {lines[number].reference}
        assert all(t.date <= lines[number].booking_date for t in members)
    assert {n for lines_, _ in task.groups for n in lines_} | set(task.fee_accounts) == set(lines)
    assert all(lines[n].kind in FEE_KINDS for n in task.fee_accounts)
    assert set(task.fee_accounts.values()) <= {a.main_account_id for a in POSTING_ACCOUNTS}
    statement_refs = {line.reference for line in task.statement_lines}
    kinds = Counter(t.kind for t in task.transactions)
    assert {"near_duplicate", "reversal", "outstanding", "after_cut_off"} <= set(kinds)
    for t in task.transactions:
        if t.kind == "counterpart":
            continue
        assert t.reference not in statement_refs  # a distractor never carries a line's reference
        if t.kind == "near_duplicate":
            assert any(line.amount == t.amount for line in task.statement_lines)
        assert (t.date > task.cut_off_date) == (t.kind == "after_cut_off")
    assert len({t.voucher for t in task.transactions}) == len(task.transactions)
    assert kinds["reversal"] % 2 == 0


def test_the_world_holds_the_tasks_transactions_other_accounts_and_reconciled_history():
    task = bank_task()
    db = open_database(task)
    open_target = db.execute(
        "SELECT voucher, trans_date, payment_reference, amount FROM bank_transaction WHERE account_id = ? AND reconciled = 0 ORDER BY id",
        (task.account_id,),
    ).fetchall()
    assert [tuple(r) for r in open_target] == [(t.voucher, t.date, t.reference, t.amount) for t in task.transactions]
    accounts = [r[0] for r in db.execute("SELECT DISTINCT account_id FROM bank_reconciliation")]
    assert 2 <= len(accounts) <= 3 and task.account_id in accounts
    assert db.execute("SELECT COUNT(*) FROM bank_reconciliation WHERE reconciled = 0").fetchone()[0] == len(accounts)
    assert (
        db.execute(
            "SELECT COUNT(*) FROM bank_statement_line l JOIN bank_reconciliation r ON r.statement_id = l.statement_id "
            "WHERE r.reconciled = 1 AND l.id NOT IN (SELECT statement_line_id FROM bank_reconciliation_match_item WHERE statement_line_id IS NOT NULL)"
        ).fetchone()[0]
        == 0
    )  # earlier months are wholly matched
    vouchers = [r[0] for r in db.execute("SELECT voucher FROM bank_transaction")]
    assert len(vouchers) == len(set(vouchers))
    history = [r[0] for r in db.execute("SELECT voucher FROM bank_transaction WHERE reconciled = 1")]
    assert max(history) < min(t.voucher for t in task.transactions)
    session = ErpSession(task)
    assert (
        session.call("data_find_entities_sql", {"sqlQuery": "SELECT date('now')"}).envelope["Data"]["Rows"][0][0]
        > task.to_date
    )


def test_a_task_is_a_pure_function_of_its_seed_and_size():
    assert generate_task("x", 0, 4242, 12) == generate_task("x", 0, 4242, 12)
    assert generate_task("x", 0, 4242, 12) != generate_task("x", 0, 4243, 12)
    for size in (7, 401):
        with pytest.raises(ValueError, match="line_count must be"):
            generate_task("x", 0, 1, size)


def test_the_user_answers_fee_questions_from_the_task_and_nothing_else():
    task = bank_task()
    fee = task.fees[0]
    line = task.line(fee.line_number)
    by_number = user_answers.answer(task, f"Should I post line {fee.line_number} as new? Which account?")
    assert by_number is not None and fee.account_label in by_number and "Yes" in by_number
    by_reference = user_answers.answer(task, f"What ledger account for {line.reference}?")
    assert by_reference is not None and fee.account_label in by_reference
    general = user_answers.answer(task, "There is a bank fee with no transaction. Which account should I post it to?")
    assert general is not None and all(f.account_label in general for f in task.fees)
    other = next(n for lines, _ in task.groups for n in lines)
    refused = user_answers.answer(task, f"Should I post line {other} as new?")
    assert refused is not None and refused.startswith("No") and task.line(other).reference in refused
    assert user_answers.answer(task, "I matched the first page.") is None
    context = user_answers.user_context(task)
    assert all(f.account_label in context for f in task.fees) and "Never say which bank transaction" in context
    left = user_answers.what_is_left(ErpSession(task).grade().model_dump())
    assert any("not matched" in point for point in left) and any("not marked as reconciled" in point for point in left)
