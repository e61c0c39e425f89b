"""Build the rows of a task's ERP: the target account's statement, its open transactions and open
reconciliation, and everything around them.

Around the target: one or two other bank accounts with their own open statement, transactions and
worksheet (their transactions never belong on the target's worksheet), and for every active account the
earlier months, each statement reconciled against its transactions (matched, fees posted as new) and
marked reconciled. Those months and accounts are laid out by ``taskgen.generate_task`` itself, from seeds
drawn from the task's; of an earlier month only what was reconciled is kept, so the target account's open
transactions are exactly the task's. Vouchers run in date order: earlier months below the task's
``voucher_base``, the other accounts' current months after the task's own.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal
from typing import NamedTuple

from erp_sim.workflows import Cell, Rows
from erp_sim.workflows.bank_reconciliation.catalog import BANK_ACCOUNTS, BankAccountSpec, match_number, voucher
from erp_sim.workflows.bank_reconciliation.task import Task
from erp_sim.workflows.bank_reconciliation.taskgen import generate_task

HISTORY_MONTHS = (2, 3)  # earlier months per active account (drawn)
OTHER_ACCOUNTS = (1, 2)  # other active accounts beside the target (drawn)


def _months_before(year: int, month: int, count: int) -> list[tuple[int, int]]:
    """The ``count`` months before (year, month), oldest first."""
    out = []
    for _ in range(count):
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        out.append((year, month))
    return out[::-1]


class _Builder:
    def __init__(self, task: Task) -> None:
        self.task = task
        self.rng = random.Random(task.seed * 7919 + 29)
        self.rows: Rows = {
            name: []
            for name in (
                "bank_statement",
                "bank_statement_line",
                "bank_transaction",
                "bank_reconciliation",
                "bank_reconciliation_match",
                "bank_reconciliation_match_item",
            )
        }

    def add(self, table: str, **values: Cell) -> int:
        rec_id = len(self.rows[table]) + 1
        self.rows[table].append({"id": rec_id, **values})
        return rec_id

    def statement(self, period: Task, opening: Decimal, *, reconciled: bool) -> tuple[int, dict[int, int]]:
        """A statement and its lines; returns its RecId and line number -> line RecId."""
        statement_id = self.add(
            "bank_statement",
            statement_id=period.statement_id,
            account_id=period.account_id,
            from_date=period.from_date,
            to_date=period.to_date,
            opening_balance=str(opening),
            closing_balance=str(opening + period.statement_total),
            status="Reconciled" if reconciled else "Open",
        )
        lines = {
            line.line_number: self.add(
                "bank_statement_line",
                statement_id=statement_id,
                line_number=line.line_number,
                booking_date=line.booking_date,
                description=line.description,
                bank_reference=line.reference,
                amount=line.amount,
            )
            for line in period.statement_lines
        }
        return statement_id, lines

    def transaction(
        self,
        period: Task,
        number: str,
        day: str,
        reference: str,
        description: str,
        amount: str,
        kind: str,
        *,
        reconciled: bool,
        offset_account: str | None = None,
        line_id: int | None = None,
    ) -> int:
        return self.add(
            "bank_transaction",
            account_id=period.account_id,
            trans_date=day,
            voucher=number,
            payment_reference=reference,
            description=description,
            amount=amount,
            trans_type=kind,
            reconciled=reconciled,
            offset_account=offset_account,
            statement_line_id=line_id,
        )

    def reconciliation(self, period: Task, statement_id: int, reconciled_date: str | None) -> int:
        """The period's reconciliation of its statement: marked reconciled on ``reconciled_date``, or open."""
        return self.add(
            "bank_reconciliation",
            account_id=period.account_id,
            statement_id=statement_id,
            cut_off_date=period.cut_off_date,
            reconciled=reconciled_date is not None,
            reconciled_date=reconciled_date,
        )

    def reconciled_month(self, period: Task, opening: Decimal, vouchers: list[str]) -> None:
        """An earlier month: its statement, its counterparts and posted fees, matched and marked reconciled."""
        statement_id, lines = self.statement(period, opening, reconciled=True)
        done = (date.fromisoformat(period.to_date) + timedelta(days=5)).isoformat()
        rec_id = self.reconciliation(period, statement_id, done)
        by_line: dict[int, list[int]] = {}
        for posting in reconciled_postings(period):
            trans_id = self.transaction(
                period,
                vouchers.pop(0),
                posting.date,
                posting.reference,
                posting.description,
                posting.amount,
                posting.type,
                reconciled=True,
                offset_account=posting.offset_account,
                line_id=lines[posting.line_number] if posting.offset_account else None,
            )
            by_line.setdefault(posting.line_number, []).append(trans_id)
        for line_number in sorted(by_line):
            match_id = self.add(
                "bank_reconciliation_match",
                reconciliation_id=rec_id,
                match_id="",  # numbered below from its RecId
                match_type="New" if line_number in period.fee_accounts else "Match",
            )
            self.rows["bank_reconciliation_match"][-1]["match_id"] = match_number(match_id)
            self.add(
                "bank_reconciliation_match_item",
                match_id=match_id,
                statement_line_id=lines[line_number],
                bank_transaction_id=None,
            )
            for trans_id in by_line[line_number]:
                self.add(
                    "bank_reconciliation_match_item",
                    match_id=match_id,
                    statement_line_id=None,
                    bank_transaction_id=trans_id,
                )

    def open_month(self, period: Task, opening: Decimal, vouchers: dict[str, str] | None = None) -> None:
        """The current month: its statement, the account's open transactions, an open reconciliation."""
        statement_id, _ = self.statement(period, opening, reconciled=False)
        for t in period.transactions:
            number = vouchers[t.voucher] if vouchers else t.voucher
            self.transaction(period, number, t.date, t.reference, t.description, t.amount, t.type, reconciled=False)
        self.reconciliation(period, statement_id, None)

    def build(self) -> Rows:
        task, rng = self.task, self.rng
        target = next(a for a in BANK_ACCOUNTS if a.account_id == task.account_id)
        others = rng.sample([a for a in BANK_ACCOUNTS if a is not target], rng.choice(OTHER_ACCOUNTS))
        year, month = int(task.from_date[:4]), int(task.from_date[5:7])
        current = {a.account_id: self._period(a, (year, month), rng.randint(8, 14), n) for n, a in enumerate(others)}
        history = [
            (account, [self._period(account, m, 8, 10 + 10 * n + k) for k, m in enumerate(months)])
            for n, account in enumerate([target, *others])
            for months in [_months_before(year, month, rng.choice(HISTORY_MONTHS))]
        ]
        # earlier months' vouchers, in date order, just below the task's first
        dated = sorted(
            (posting.date, period.statement_id, n)
            for _, periods in history
            for period in periods
            for n, posting in enumerate(reconciled_postings(period))
        )
        by_statement: dict[str, list[str]] = {}
        for number, (_, statement_id, _) in enumerate(dated, start=task.voucher_base - len(dated)):
            by_statement.setdefault(statement_id, []).append(voucher(number))
        for account, periods in history:
            balance = Decimal(task.opening_balance) if account is target else Decimal(rng.randint(20000, 400000))
            if account is target:  # the target's balances chain back from the task's opening balance
                balance -= sum((period.statement_total for period in periods), Decimal(0))
            for period in periods:
                self.reconciled_month(period, balance, by_statement[period.statement_id])
                balance += period.statement_total
            if account is target:
                self.open_month(task, balance)
            else:
                self.open_month(current[account.account_id], balance, self._renumbered(current[account.account_id]))
        return self.rows

    def _period(self, account: BankAccountSpec, month: tuple[int, int], lines: int, n: int) -> Task:
        return generate_task("world", n, self.task.seed * 101 + n, lines, account=account, month=month)

    _next_other = 0

    def _renumbered(self, period: Task) -> dict[str, str]:
        """Another account's current vouchers, after the task's own (in that account's date order)."""
        start = self.task.voucher_base + len(self.task.transactions) + 100 + self._next_other
        self._next_other += len(period.transactions)
        return {t.voucher: voucher(start + i) for i, t in enumerate(period.transactions)}


class Posting(NamedTuple):
    """A transaction of an earlier month as it was reconciled: a line's counterpart, or a fee posted as new."""

    date: str
    reference: str
    amount: str
    description: str
    type: str
    line_number: int
    offset_account: str | None


def reconciled_postings(period: Task) -> list[Posting]:
    """What an earlier month's reconciliation cleared, in date order: the counterparts and the posted fees."""
    postings = [
        Posting(t.date, t.reference, t.amount, t.description, t.type, t.line_number, None)
        for t in period.transactions
        if t.line_number is not None
    ]
    for fee in period.fees:
        line = period.line(fee.line_number)
        kind = "Fee" if line.decimal < 0 else "Interest"
        postings.append(
            Posting(
                line.booking_date,
                line.reference,
                line.amount,
                line.description.title(),
                kind,
                line.line_number,
                fee.main_account_id,
            )
        )
    return sorted(postings, key=lambda p: (p.date, p.reference, p.amount))


def build_rows(task: Task) -> Rows:
    """The task's own rows (statements, lines, transactions, reconciliations, matches), ids sequential from 1."""
    return _Builder(task).build()
