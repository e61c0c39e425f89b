"""Bank reconciliation's business rules: reads and rule-checked writes on the bank tables, shared by forms,
data tools and actions, and the completion rule itself (``ReconciliationSummary``; in prose: rules.md).

Every write goes through a function here and runs in one ``erp_sim.database.transaction``, so a worksheet
button, an OData create and an action obey the same rules and either apply whole or not at all:

- ``match``: marked statement lines to marked bank transactions of the same account, open and within the
  cut-off date, whose amounts add up to exactly the same total (otherwise refused, naming both totals);
- ``mark_as_new``: a statement line with no bank transaction is posted at once as a new bank transaction to a
  ledger account, and matched to it (a posting is final: unmatching leaves it posted);
- ``unmatch``: a match group is undone;
- ``mark_reconciled``: refused while a line is open or the difference is not 0.00; then the reconciliation,
  its transactions and its statement are reconciled for good.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import NoReturn

from erp_sim.database import record_by_id, transaction
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.money import ZERO, display_money
from erp_sim.values import parse_text
from erp_sim.workflows.bank_reconciliation.catalog import POSTING_ACCOUNTS, MainAccountSpec, match_number, voucher

MAX_ITEMS = 50  # statement lines or bank transactions in one match


# --- reads -----------------------------------------------------------------------------------
def reconciliation_by_id(db: sqlite3.Connection, rec_id: int) -> sqlite3.Row:
    return record_by_id(db, "bank_reconciliation", rec_id, "Bank reconciliation")


def statement_by_id(db: sqlite3.Connection, statement_id: int) -> sqlite3.Row:
    row: sqlite3.Row = db.execute("SELECT * FROM bank_statement WHERE id = ?", (statement_id,)).fetchone()
    return row  # a reconciliation's statement always exists (nothing deletes statements)


def reconciliation_of_statement(db: sqlite3.Connection, statement: object, field: str = "StatementId") -> sqlite3.Row:
    """The reconciliation of a statement named by its id (BS-202603-OPER), case-insensitively."""
    text = parse_text(statement, field, limit=40).strip().upper()
    row: sqlite3.Row | None = db.execute(
        "SELECT r.* FROM bank_reconciliation r JOIN bank_statement s ON s.id = r.statement_id "
        "WHERE UPPER(s.statement_id) = ?",
        (text,),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"{field}: no bank reconciliation of a statement {text!r}.")
    return row


def statement_lines(db: sqlite3.Connection, statement_id: int) -> list[sqlite3.Row]:
    return db.execute(
        "SELECT * FROM bank_statement_line WHERE statement_id = ? ORDER BY line_number, id", (statement_id,)
    ).fetchall()


def _matched(column: str) -> str:
    """SQL of the ids in ``column`` (statement_line_id or bank_transaction_id) that a match of the reconciliation
    (its RecId the one parameter) holds."""
    return (
        f"SELECT i.{column} FROM bank_reconciliation_match_item i JOIN bank_reconciliation_match m ON m.id = i.match_id "
        f"WHERE m.reconciliation_id = ? AND i.{column} IS NOT NULL"
    )


_OPEN_LINES = (
    f"SELECT * FROM bank_statement_line WHERE statement_id = ? AND id NOT IN ({_matched('statement_line_id')})"
)
_OPEN_TRANSACTIONS = (
    "SELECT * FROM bank_transaction WHERE account_id = ? AND reconciled = 0 AND trans_date <= ? "
    f"AND id NOT IN ({_matched('bank_transaction_id')})"
)


def open_lines(db: sqlite3.Connection, rec: sqlite3.Row) -> list[sqlite3.Row]:
    """The statement's lines no match of the reconciliation holds, in line order."""
    return db.execute(f"{_OPEN_LINES} ORDER BY line_number, id", (rec["statement_id"], rec["id"])).fetchall()


def open_transactions(db: sqlite3.Connection, rec: sqlite3.Row) -> list[sqlite3.Row]:
    """The account's unreconciled bank transactions up to the cut-off date that no match holds, by date."""
    return db.execute(
        f"{_OPEN_TRANSACTIONS} ORDER BY trans_date, voucher, id", (rec["account_id"], rec["cut_off_date"], rec["id"])
    ).fetchall()


def _not_matched(column: str) -> str:
    """SQL that the row ``x`` is in no match of the reconciliation (its RecId the one parameter) as ``column``: a
    lookup in the items' index on ``column``, whatever the number of matches."""
    return (
        "NOT EXISTS (SELECT 1 FROM bank_reconciliation_match_item i JOIN bank_reconciliation_match m ON m.id = i.match_id "
        f"WHERE i.{column} = x.id AND m.reconciliation_id = ?)"
    )


def _open_lines_among(db: sqlite3.Connection, rec: sqlite3.Row, ids: Sequence[int]) -> list[sqlite3.Row]:
    """Those of ``ids`` that are open lines (``open_lines``), read without the rest of the statement."""
    return db.execute(
        f"SELECT * FROM bank_statement_line x WHERE id IN ({', '.join('?' * len(ids))}) AND statement_id = ? "
        f"AND {_not_matched('statement_line_id')}",
        (*ids, rec["statement_id"], rec["id"]),
    ).fetchall()


def _open_transactions_among(db: sqlite3.Connection, rec: sqlite3.Row, ids: Sequence[int]) -> list[sqlite3.Row]:
    """Those of ``ids`` that are open bank transactions (``open_transactions``), read without the others."""
    return db.execute(
        f"SELECT * FROM bank_transaction x WHERE id IN ({', '.join('?' * len(ids))}) AND account_id = ? "
        f"AND reconciled = 0 AND trans_date <= ? AND {_not_matched('bank_transaction_id')}",
        (*ids, rec["account_id"], rec["cut_off_date"], rec["id"]),
    ).fetchall()


@dataclass(frozen=True)
class MatchItem:
    """One row of a match group: a statement line or a bank transaction."""

    match_rec_id: int
    match_id: str
    match_type: str  # Match or New
    item_id: int  # the match item's RecId: the key of its row in the worksheet's MatchedGrid
    line: sqlite3.Row | None
    transaction: sqlite3.Row | None


def match_items(db: sqlite3.Connection, rec_id: int, after: int = 0) -> list[MatchItem]:
    """Every item of the reconciliation's matches, match by match (lines first, then transactions); ``after``: only
    of the matches whose RecId is greater (RecIds only grow, so those made since that match)."""
    items: list[tuple[tuple[object, ...], MatchItem]] = []
    for side, sql in (
        (
            0,
            "SELECT m.id AS match_rec_id, m.match_id, m.match_type, i.id AS item_id, x.* FROM bank_reconciliation_match m "
            "JOIN bank_reconciliation_match_item i ON i.match_id = m.id JOIN bank_statement_line x ON x.id = i.statement_line_id "
            "WHERE m.reconciliation_id = ? AND m.id > ?",
        ),
        (
            1,
            "SELECT m.id AS match_rec_id, m.match_id, m.match_type, i.id AS item_id, x.* FROM bank_reconciliation_match m "
            "JOIN bank_reconciliation_match_item i ON i.match_id = m.id JOIN bank_transaction x ON x.id = i.bank_transaction_id "
            "WHERE m.reconciliation_id = ? AND m.id > ?",
        ),
    ):
        for row in db.execute(sql, (rec_id, after)):
            order = (row["line_number"],) if side == 0 else (row["trans_date"], row["voucher"])
            line, transaction = (row, None) if side == 0 else (None, row)
            item = MatchItem(row["match_rec_id"], row["match_id"], row["match_type"], row["item_id"], line, transaction)
            items.append(((row["match_rec_id"], side, *order), item))
    return [item for _, item in sorted(items, key=lambda pair: pair[0])]


# Exact sums in SQL: amounts are two-place decimal text, so cents round-trip through REAL exactly.
_CENTS = "COALESCE(SUM(CAST(ROUND(CAST(amount AS REAL) * 100) AS INTEGER)), 0)"


def _cents(db: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> Decimal:
    (cents,) = db.execute(f"SELECT {_CENTS} {sql}", params).fetchone()
    return Decimal(cents) / 100


def statement_totals(db: sqlite3.Connection) -> dict[int, Decimal]:
    """Every statement's total, by the statement's RecId."""
    rows = db.execute(f"SELECT statement_id, {_CENTS} FROM bank_statement_line GROUP BY statement_id")
    return {statement_id: Decimal(cents) / 100 for statement_id, cents in rows}


@dataclass(frozen=True)
class ReconciliationSummary:
    """A reconciliation's figures, as saved: the one statement of the completion rule (rules.md)."""

    statement_total: Decimal  # every line of the statement
    matched_amount: Decimal  # bank transactions matched to lines (Match groups)
    posted_amount: Decimal  # transactions posted from lines (New groups)
    line_count: int
    open_line_count: int  # lines in no match
    reconciled: bool

    @property
    def difference(self) -> Decimal:
        """The unreconciled difference: the statement total minus the matched and posted amounts."""
        return self.statement_total - self.matched_amount - self.posted_amount

    @property
    def ready(self) -> bool:
        """What marking reconciled needs: no line left open and a difference of exactly 0.00."""
        return self.open_line_count == 0 and self.difference == ZERO

    @property
    def complete(self) -> bool:
        """The rule: every line matched (or posted as new), difference exactly 0.00, and marked reconciled."""
        return self.ready and self.reconciled

    def after_match(self, lines: int, match_type: str, amounts: Sequence[sqlite3.Row]) -> ReconciliationSummary:
        """The figures ``summary`` reads after one ``match`` (``match_type`` Match) or ``mark_as_new`` (New) of
        ``lines`` statement lines, whose bank transactions are ``amounts`` (the posted ones carry their lines'
        amounts): found from these without reading the reconciliation's other matches, amounts summed in cents
        as ``summary`` sums them."""
        added = sum(int(Decimal(row["amount"]) * 100) for row in amounts)
        matched, posted = self.matched_amount, self.posted_amount
        if match_type == "Match":
            matched = Decimal(int(matched * 100) + added) / 100
        else:
            posted = Decimal(int(posted * 100) + added) / 100
        return replace(self, matched_amount=matched, posted_amount=posted, open_line_count=self.open_line_count - lines)

    def problems(self) -> list[str]:
        """What keeps the reconciliation from being marked reconciled, as sentences."""
        problems = []
        if self.open_line_count:
            problems.append(f"{self.open_line_count} of {self.line_count} statement line(s) are not matched.")
        if self.difference != ZERO:
            problems.append(f"The unreconciled difference is {display_money(self.difference)}, not 0.00.")
        return problems


def summary(db: sqlite3.Connection, rec_id: int) -> ReconciliationSummary:
    rec = reconciliation_by_id(db, rec_id)
    in_matches = (
        "FROM bank_transaction WHERE id IN (SELECT i.bank_transaction_id FROM bank_reconciliation_match_item i "
        "JOIN bank_reconciliation_match m ON m.id = i.match_id WHERE m.reconciliation_id = ? AND m.match_type = ?)"
    )
    (line_count,) = db.execute(
        "SELECT COUNT(*) FROM bank_statement_line WHERE statement_id = ?", (rec["statement_id"],)
    ).fetchone()
    return ReconciliationSummary(
        statement_total=_cents(db, "FROM bank_statement_line WHERE statement_id = ?", (rec["statement_id"],)),
        matched_amount=_cents(db, in_matches, (rec_id, "Match")),
        posted_amount=_cents(db, in_matches, (rec_id, "New")),
        line_count=line_count,
        open_line_count=line_count
        - db.execute(f"SELECT COUNT(*) FROM ({_matched('statement_line_id')})", (rec_id,)).fetchone()[0],
        reconciled=bool(rec["reconciled"]),
    )


# --- values a user gives: lists of RecIds, line numbers, vouchers; a ledger account ---------------
_LIST = re.compile(r"\s*[A-Za-z0-9-]+(\s*,\s*[A-Za-z0-9-]+)*\s*", re.ASCII)


def parse_list(value: object, field: str) -> list[str]:
    """Comma-separated items (``12, 13`` or ``BNK-004471,BNK-004472``), or one whole number."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field}: expected a comma-separated list such as 12,13, got {value!r}.")
    if len(value) > 1000 or not _LIST.fullmatch(value):
        raise ValidationError(f"{field}: {value[:60]!r} is not a comma-separated list such as 12,13.")
    items = [item.strip() for item in value.split(",")]
    if len(items) > MAX_ITEMS:
        raise ValidationError(f"{field}: {len(items)} items; at most {MAX_ITEMS}.")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ValidationError(f"{field}: {', '.join(repeated)} is listed more than once.")
    return items


def parse_numbers(value: object, field: str) -> list[int]:
    items = parse_list(value, field)
    wrong = [item for item in items if not (item.isdigit() and len(item) <= 18)]
    if wrong:
        raise ValidationError(f"{field}: {', '.join(wrong)} is not a whole number.")
    return [int(item) for item in items]


def posting_account(value: object, field: str) -> MainAccountSpec:
    """The ledger account a statement line may be posted to, named by number (618160), name or both."""
    text = " ".join(parse_text(value, field, limit=80).split()).lower()
    for account in POSTING_ACCOUNTS:
        if text in (account.main_account_id, account.name.lower(), account.label.lower()):
            return account
    accounts = ", ".join(a.label for a in POSTING_ACCOUNTS)
    raise ValidationError(f"{field}: {str(value)[:60]!r} is not a ledger account lines can be posted to: {accounts}.")


# --- writes -----------------------------------------------------------------------------------
def _open_reconciliation(db: sqlite3.Connection, rec_id: int) -> sqlite3.Row:
    rec = reconciliation_by_id(db, rec_id)
    if rec["reconciled"]:
        raise BusinessRuleError(
            f"The bank reconciliation of {rec['account_id']} (cut-off {rec['cut_off_date']}) is already marked as "
            "reconciled; it can no longer change."
        )
    return rec


def _marked_open(
    ids: Sequence[int],
    open_rows: Callable[[Sequence[int]], Sequence[sqlite3.Row]],
    names: tuple[str, str],
    refuse: Callable[[int], NoReturn],
) -> list[sqlite3.Row]:
    """The rows ``ids`` marks, in that order, each one of ``open_rows(ids)`` (those of the ids that are open);
    ``refuse`` raises why the first that is not open is not. ``names``: the rows' name when none is marked, and
    when one is marked twice."""
    if not ids:
        raise ValidationError(f"Mark at least one {names[0]}.")
    if len(set(ids)) != len(ids):
        raise ValidationError(f"A {names[1]} is listed more than once.")
    open_by_id = {row["id"]: row for row in open_rows(ids)}
    for rec_id in ids:
        if rec_id not in open_by_id:
            refuse(rec_id)
    return [open_by_id[rec_id] for rec_id in ids]


def _lines_to_clear(db: sqlite3.Connection, rec: sqlite3.Row, line_ids: Sequence[int]) -> list[sqlite3.Row]:
    def refuse(line_id: int) -> NoReturn:
        row = db.execute("SELECT * FROM bank_statement_line WHERE id = ?", (line_id,)).fetchone()
        if row is None or row["statement_id"] != rec["statement_id"]:
            raise NotFoundError(f"Statement line RecId {line_id} is not on this reconciliation's statement.")
        raise BusinessRuleError(f"Statement line {row['line_number']} is already matched; unmatch it first.")

    return _marked_open(
        line_ids, lambda ids: _open_lines_among(db, rec, ids), ("bank statement line", "statement line"), refuse
    )


def _transactions_to_match(db: sqlite3.Connection, rec: sqlite3.Row, ids: Sequence[int]) -> list[sqlite3.Row]:
    def refuse(trans_id: int) -> NoReturn:
        row = db.execute("SELECT * FROM bank_transaction WHERE id = ?", (trans_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"Bank transaction RecId {trans_id} does not exist.")
        if row["account_id"] != rec["account_id"]:
            raise BusinessRuleError(
                f"Bank transaction {row['voucher']} is on bank account {row['account_id']}, not {rec['account_id']}."
            )
        if row["reconciled"]:
            raise BusinessRuleError(f"Bank transaction {row['voucher']} is already reconciled.")
        if row["trans_date"] > rec["cut_off_date"]:
            raise BusinessRuleError(
                f"Bank transaction {row['voucher']} is dated {row['trans_date']}, after the cut-off date "
                f"{rec['cut_off_date']}."
            )
        raise BusinessRuleError(f"Bank transaction {row['voucher']} is already matched; unmatch it first.")

    return _marked_open(
        ids, lambda ids: _open_transactions_among(db, rec, ids), ("bank transaction", "bank transaction"), refuse
    )


def _amount(rows: Sequence[sqlite3.Row]) -> Decimal:
    return sum((Decimal(row["amount"]) for row in rows), ZERO)


def _new_match(db: sqlite3.Connection, rec_id: int, match_type: str) -> tuple[int, str]:
    cursor = db.execute(
        "INSERT INTO bank_reconciliation_match (reconciliation_id, match_id, match_type) VALUES (?, '', ?)",
        (rec_id, match_type),
    )
    match_rec_id = int(cursor.lastrowid or 0)  # set by the INSERT just run
    db.execute(
        "UPDATE bank_reconciliation_match SET match_id = ? WHERE id = ?", (match_number(match_rec_id), match_rec_id)
    )
    return match_rec_id, match_number(match_rec_id)


def _add_items(db: sqlite3.Connection, match_rec_id: int, line_ids: Sequence[int], trans_ids: Sequence[int]) -> None:
    db.executemany(
        "INSERT INTO bank_reconciliation_match_item (match_id, statement_line_id, bank_transaction_id) VALUES (?, ?, ?)",
        [(match_rec_id, line_id, None) for line_id in line_ids] + [(match_rec_id, None, t) for t in trans_ids],
    )


def match(db: sqlite3.Connection, rec_id: int, line_ids: Sequence[int], transaction_ids: Sequence[int]) -> str:
    """Match statement lines to bank transactions (one group); returns the match id. Refused unless both sides
    are open on this reconciliation and add up to the same amount."""
    with transaction(db):
        rec = _open_reconciliation(db, rec_id)
        lines = _lines_to_clear(db, rec, line_ids)
        rows = _transactions_to_match(db, rec, transaction_ids)
        line_total, trans_total = _amount(lines), _amount(rows)
        if line_total != trans_total:
            raise BusinessRuleError(
                f"The statement lines total {display_money(line_total)} and the bank transactions total "
                f"{display_money(trans_total)}: a match needs equal totals (difference "
                f"{display_money(line_total - trans_total)}). Nothing was matched."
            )
        match_rec_id, match_id = _new_match(db, rec_id, "Match")
        _add_items(db, match_rec_id, [line["id"] for line in lines], [row["id"] for row in rows])
    return match_id


def _next_voucher(db: sqlite3.Connection) -> int:
    (highest,) = db.execute(
        "SELECT MAX(CAST(SUBSTR(voucher, 5) AS INTEGER)) FROM bank_transaction WHERE voucher LIKE 'BNK-%'"
    ).fetchone()
    return int(highest or 0) + 1


def mark_as_new(
    db: sqlite3.Connection, rec_id: int, line_ids: Sequence[int], account: MainAccountSpec
) -> list[tuple[str, str]]:
    """Post each statement line as a new bank transaction to ``account`` and match it to the line; returns
    (match id, voucher) per line. A posting is final."""
    posted = []
    with transaction(db):
        rec = _open_reconciliation(db, rec_id)
        for line in _lines_to_clear(db, rec, line_ids):
            number = voucher(_next_voucher(db))
            amount = Decimal(line["amount"])
            cursor = db.execute(
                "INSERT INTO bank_transaction (account_id, trans_date, voucher, payment_reference, description, amount,"
                " trans_type, reconciled, offset_account, statement_line_id) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (
                    rec["account_id"],
                    line["booking_date"],
                    number,
                    line["bank_reference"],
                    line["description"].title(),
                    line["amount"],
                    "Fee" if amount < 0 else "Interest",
                    account.main_account_id,
                    line["id"],
                ),
            )
            match_rec_id, match_id = _new_match(db, rec_id, "New")
            _add_items(db, match_rec_id, [line["id"]], [int(cursor.lastrowid or 0)])
            posted.append((match_id, number))
    return posted


def match_by_id(db: sqlite3.Connection, rec_id: int, match: object, field: str = "MatchId") -> sqlite3.Row:
    """A match of the reconciliation, by its id (MATCH-00012) or RecId."""
    text = parse_text(match, field, limit=40).strip().upper()
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM bank_reconciliation_match WHERE UPPER(match_id) = ? OR CAST(id AS TEXT) = ?", (text, text)
    ).fetchone()
    if row is None or row["reconciliation_id"] != rec_id:
        raise NotFoundError(f"{field}: this reconciliation has no match {text!r}.")
    return row


def unmatch(db: sqlite3.Connection, rec_id: int, match_rec_id: int) -> str:
    """Undo one match group; returns a sentence saying what was undone (a posted line's transaction stays posted)."""
    with transaction(db):
        _open_reconciliation(db, rec_id)
        row = db.execute("SELECT * FROM bank_reconciliation_match WHERE id = ?", (match_rec_id,)).fetchone()
        if row is None or row["reconciliation_id"] != rec_id:
            raise NotFoundError(f"This reconciliation has no match with RecId {match_rec_id}.")
        db.execute("DELETE FROM bank_reconciliation_match_item WHERE match_id = ?", (match_rec_id,))
        db.execute("DELETE FROM bank_reconciliation_match WHERE id = ?", (match_rec_id,))
    text = f"Match {row['match_id']} was undone."
    if row["match_type"] == "New":
        text += " The bank transaction posted from its line stays posted (a posting is final) and is open again."
    return text


def mark_reconciled(db: sqlite3.Connection, rec_id: int) -> None:
    """Mark the reconciliation reconciled: refused while a line is open or the difference is not 0.00."""
    with transaction(db):
        rec = _open_reconciliation(db, rec_id)
        figures = summary(db, rec_id)
        if not figures.ready:
            raise BusinessRuleError(
                "The bank reconciliation cannot be marked as reconciled: " + " ".join(figures.problems())
            )
        (today,) = db.execute("SELECT date('now')").fetchone()  # the simulated clock (erp_sim.database)
        db.execute("UPDATE bank_reconciliation SET reconciled = 1, reconciled_date = ? WHERE id = ?", (today, rec_id))
        db.execute(
            "UPDATE bank_transaction SET reconciled = 1 WHERE id IN (SELECT i.bank_transaction_id FROM "
            "bank_reconciliation_match_item i JOIN bank_reconciliation_match m ON m.id = i.match_id "
            "WHERE m.reconciliation_id = ? AND i.bank_transaction_id IS NOT NULL)",
            (rec_id,),
        )
        db.execute("UPDATE bank_statement SET status = 'Reconciled' WHERE id = ?", (rec["statement_id"],))
