"""The books audited from the raw tables, apart from the rule module: what tests and fuzzers (ours and anyone's)
check after every call, whatever path wrote.

- every match group holds at least one statement line and one bank transaction, each line and transaction in
  one group at most, and its lines and transactions add up to the same amount;
- every amount is a decimal with two places;
- every reconciliation's unreconciled difference, as the rule module reports it, is its statement total minus
  the amounts of the transactions matched (Match groups) and posted (New groups) on it;
- a reconciliation marked reconciled has no open line and a difference of 0.00, and its transactions are
  reconciled.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from decimal import Decimal, InvalidOperation

from erp_sim.workflows.bank_reconciliation import rules


def _amount(text: object) -> Decimal | None:
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        return None
    return value if value == value.quantize(Decimal("0.01")) else None


def books_problems(db: sqlite3.Connection) -> list[str]:
    """What is wrong with the books (empty when they balance)."""
    problems: list[str] = []
    amounts: dict[tuple[str, int], Decimal] = {}
    for table, side in (("bank_statement_line", "l"), ("bank_transaction", "t")):
        for rec_id, text in db.execute(f"SELECT id, amount FROM {table}"):
            value = _amount(text)
            if value is None:
                problems.append(f"{table} RecId {rec_id}: amount {text!r} is not a two-place decimal")
            amounts[(side, rec_id)] = value or Decimal(0)
    items = db.execute(
        "SELECT m.id, m.reconciliation_id, m.match_type, i.statement_line_id, i.bank_transaction_id "
        "FROM bank_reconciliation_match m LEFT JOIN bank_reconciliation_match_item i ON i.match_id = m.id"
    ).fetchall()
    for side, column in (("l", 3), ("t", 4)):
        repeated = [key for key, n in Counter(row[column] for row in items if row[column] is not None).items() if n > 1]
        if repeated:
            problems.append(f"{'lines' if side == 'l' else 'transactions'} {repeated} are in more than one match")
    groups: dict[int, tuple[list[Decimal], list[Decimal]]] = {}
    for match_id, _, _, line, transaction in items:
        lines, transactions = groups.setdefault(match_id, ([], []))
        if line is not None:
            lines.append(amounts[("l", line)])
        if transaction is not None:
            transactions.append(amounts[("t", transaction)])
    for match_id, (lines, transactions) in groups.items():
        if not lines or not transactions or sum(lines) != sum(transactions):
            problems.append(f"match RecId {match_id}: lines {lines} against transactions {transactions}")
    for rec in db.execute("SELECT * FROM bank_reconciliation").fetchall():
        statement_total = sum(
            (
                amounts[("l", r)]
                for (r,) in db.execute(
                    "SELECT id FROM bank_statement_line WHERE statement_id = ?", (rec["statement_id"],)
                )
            ),
            Decimal(0),
        )
        cleared = [row for row in items if row[1] == rec["id"] and row[4] is not None]
        matched = sum((amounts[("t", row[4])] for row in cleared if row[2] == "Match"), Decimal(0))
        posted = sum((amounts[("t", row[4])] for row in cleared if row[2] == "New"), Decimal(0))
        figures = rules.summary(db, rec["id"])
        if figures.difference != statement_total - matched - posted:
            problems.append(
                f"reconciliation RecId {rec['id']}: difference {figures.difference} != {statement_total} - {matched} - {posted}"
            )
        if rec["reconciled"]:
            unreconciled = db.execute(
                "SELECT COUNT(*) FROM bank_transaction WHERE reconciled = 0 AND id IN "
                f"({','.join(str(row[4]) for row in cleared) or 'NULL'})"
            ).fetchone()[0]
            if figures.open_line_count or figures.difference or unreconciled:
                problems.append(f"reconciliation RecId {rec['id']} is marked reconciled with open work")
    return problems
