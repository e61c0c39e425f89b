"""Generate bank reconciliation task sets from seeds. Run by ``scripts/generate_fixtures.py``; tests rerun it.

A task is a pure function of (set, index, seed, line count): all randomness comes from
``random.Random(seed)``. ``generate_task`` lays out a month's statement of ``line_count`` lines (one-to-one
payments and receipts, deposit slips that cover several checks, one or more bank charges or interest lines
with no bank transaction, sometimes a fee already booked) and the target account's open bank transactions:
each line's counterparts, and distractors beside them (near-duplicate amounts, a payment and its reversal,
outstanding checks and deposits in transit, transactions after the cut-off date).
"""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from erp_sim.money import random_amount
from erp_sim.workflows.bank_reconciliation.catalog import (
    BANK_ACCOUNTS,
    COMPANY_SUFFIXES,
    FEE_ACCOUNTS,
    FEE_KINDS,
    FIRST_NAMES,
    LAST_NAMES,
    LINE_KINDS,
    USER_TITLES,
    BankAccountSpec,
    voucher,
)
from erp_sim.workflows.bank_reconciliation.task import FeePosting, LedgerTransaction, StatementLine, Task

MIN_LINES, MAX_LINES = 8, 400
# Amount ranges (dollars) per kind; charges and interest are small.
AMOUNTS: dict[str, tuple[float, float]] = {
    "customer_receipt": (250, 24000),
    "wire_in": (2000, 60000),
    "vendor_payment": (120, 18000),
    "wire_out": (1500, 45000),
    "check": (45, 9500),
    "deposit_check": (150, 9000),
    "booked_fee": (15, 140),
    "bank_fee": (5, 95),
    "interest": (0.5, 180),
}
ONE_TO_ONE = ("customer_receipt", "vendor_payment", "check", "wire_in", "wire_out")
ONE_TO_ONE_WEIGHTS = (30, 30, 20, 10, 10)
# Days from the ledger's posting to the bank's booking, per kind (checks take longest to clear).
LAGS = {
    "customer_receipt": 2,
    "wire_in": 1,
    "vendor_payment": 2,
    "wire_out": 1,
    "check": 9,
    "deposit": 1,
    "booked_fee": 3,
}


def difficulty_of(line_count: int) -> str:
    return "easy" if line_count <= 15 else "medium" if line_count <= 25 else "hard" if line_count <= 40 else "long"


@dataclass
class _Draft:
    """A transaction before vouchers are numbered (in date order, once all exist)."""

    day: date
    reference: str
    description: str
    amount: Decimal
    type: str
    kind: str
    line_number: int | None = None
    reverses: _Draft | None = None


class _Generator:
    def __init__(self, seed: int, line_count: int) -> None:
        self.rng = random.Random(seed)
        self.line_count = line_count
        self.references: set[str] = set()

    def party(self) -> str:
        return f"{self.rng.choice(LAST_NAMES)} {self.rng.choice(COMPANY_SUFFIXES)}"

    def reference(self, kind: str) -> str:
        spec = LINE_KINDS[kind]
        while True:  # unique over the period: a reference names one payment (or one deposit slip)
            text = f"{spec.prefix}{self.rng.randrange(10 ** (spec.digits - 1), 10**spec.digits)}"
            if text not in self.references:
                self.references.add(text)
                return text

    def kinds(self) -> list[str]:
        """The kinds of the statement's lines, shuffled: fees, a booked fee, deposit slips, the rest one-to-one."""
        n, rng = self.line_count, self.rng
        fees = 1 + (n >= 16 and rng.random() < 0.5) + n // 100
        booked = (n >= 10 and rng.random() < 0.7) + n // 120
        deposits = max(1, round(n * 0.12))
        rest = n - fees - booked - deposits
        kinds = [rng.choices(ONE_TO_ONE, ONE_TO_ONE_WEIGHTS)[0] for _ in range(rest)]
        kinds += ["deposit"] * deposits + ["booked_fee"] * booked
        # the first is mostly a bank charge, the others mostly interest
        kinds += ["bank_fee" if rng.random() < (0.75 if i == 0 else 0.4) else "interest" for i in range(fees)]
        rng.shuffle(kinds)
        return kinds


def generate_task(
    task_set: str,
    index: int,
    seed: int,
    line_count: int,
    *,
    task_id: str | None = None,
    account: BankAccountSpec | None = None,
    month: tuple[int, int] | None = None,
) -> Task:
    """One task: a month's statement of ``line_count`` lines (8-400) and the account's open transactions.

    ``account`` and ``month`` (year, month) are drawn from the seed unless given (the world gives them, to lay
    out the other accounts and the earlier months of a task's ERP with the same generator)."""
    if not MIN_LINES <= line_count <= MAX_LINES:
        raise ValueError(f"line_count must be {MIN_LINES}-{MAX_LINES}, got {line_count}")
    gen = _Generator(seed, line_count)
    rng = gen.rng
    account = account or rng.choice(BANK_ACCOUNTS)
    year, month_number = month or (2026, 1 + rng.randrange(10))
    first = date(year, month_number, 1)
    last = date(year, month_number, calendar.monthrange(year, month_number)[1])
    business_days = [
        first + timedelta(d) for d in range((last - first).days + 1) if (first + timedelta(d)).weekday() < 5
    ]
    # charges and interest are booked on the last business day; lines are numbered in booking order
    laid_out = sorted(
        ((business_days[-1] if kind in FEE_KINDS else rng.choice(business_days)), position, kind)
        for position, kind in enumerate(gen.kinds())
    )
    lines: list[StatementLine] = []
    drafts: list[_Draft] = []
    fees: list[FeePosting] = []
    for number, (day, _, kind) in enumerate(laid_out, start=1):
        spec = LINE_KINDS[kind]
        reference = gen.reference(kind)
        party = gen.party()
        wording = rng.choice(spec.wording)
        if kind == "deposit":
            checks = [random_amount(rng, *AMOUNTS["deposit_check"]) for _ in range(rng.choice((2, 2, 3)))]
            amount = sum(checks, Decimal(0))
            for check in checks:
                drafts.append(
                    _Draft(
                        day - timedelta(rng.randint(0, LAGS[kind])),
                        reference,
                        spec.ledger_wording.format(party=gen.party()),
                        check,
                        spec.trans_type,
                        "counterpart",
                        number,
                    )
                )
        else:
            amount = spec.sign * random_amount(rng, *AMOUNTS[kind])
            if kind in FEE_KINDS:
                fees.append(FeePosting(line_number=number, main_account_id=rng.choice(FEE_ACCOUNTS[wording])))
            else:
                drafts.append(
                    _Draft(
                        day - timedelta(rng.randint(0, LAGS[kind])),
                        reference,
                        spec.ledger_wording.format(party=party if kind != "booked_fee" else wording.lower()),
                        amount,
                        spec.trans_type,
                        "counterpart",
                        number,
                    )
                )
        description = wording.format(party=party.upper())[:30].rstrip()
        lines.append(
            StatementLine(
                line_number=number,
                booking_date=day.isoformat(),
                description=description,
                reference=reference,
                amount=str(amount),
                kind=kind,
            )
        )
    drafts += _distractors(gen, lines, drafts, business_days, last)
    drafts.sort(key=lambda d: (d.day, d.reference, d.amount))
    voucher_base = 1000 + rng.randrange(60000)
    numbers = {id(d): voucher(voucher_base + i) for i, d in enumerate(drafts)}
    transactions = [
        LedgerTransaction(
            voucher=numbers[id(d)],
            date=d.day.isoformat(),
            reference=d.reference,
            description=d.description if d.reverses is None else f"Reversal of {numbers[id(d.reverses)]}",
            amount=str(d.amount),
            type=d.type,
            line_number=d.line_number,
            kind=d.kind,
        )
        for d in drafts
    ]
    return Task(
        task_id=task_id or f"bank-{index:03d}",
        task_set=task_set,
        seed=seed,
        difficulty=difficulty_of(line_count),
        user_name=f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
        user_title=rng.choice(USER_TITLES),
        account_id=account.account_id,
        account_name=account.name,
        bank_name=account.bank_name,
        account_number=account.account_number,
        currency="USD",
        statement_id=f"BS-{first:%Y%m}-{account.code}",
        from_date=first.isoformat(),
        to_date=last.isoformat(),
        cut_off_date=last.isoformat(),
        opening_balance=str(random_amount(rng, 50000, 900000)),
        voucher_base=voucher_base,
        statement_lines=lines,
        transactions=transactions,
        fees=fees,
    )


def _distractors(
    gen: _Generator, lines: list[StatementLine], drafts: list[_Draft], business_days: list[date], last: date
) -> list[_Draft]:
    """Open transactions no statement line clears: near-duplicate amounts (another payment of the same amount),
    a payment and its reversal, outstanding checks and deposits in transit, and postings after the cut-off."""
    rng, n = gen.rng, gen.line_count
    out: list[_Draft] = []
    singles = [line for line in lines if line.kind in ONE_TO_ONE]
    true_day = {d.line_number: d.day for d in drafts}
    for line in rng.sample(singles, min(len(singles), max(1, n // 8))):
        spec = LINE_KINDS[line.kind]
        day = rng.choice([d for d in business_days if d != true_day[line.line_number]])
        out.append(
            _Draft(
                day,
                gen.reference(line.kind),
                spec.ledger_wording.format(party=gen.party()),
                line.decimal,
                spec.trans_type,
                "near_duplicate",
            )
        )
    for _ in range(1 if n < 30 else 2 + n // 150):
        spec = LINE_KINDS["vendor_payment"]
        reference, amount = gen.reference("vendor_payment"), random_amount(rng, *AMOUNTS["vendor_payment"])
        day = rng.choice(business_days[:-3])
        payment = _Draft(day, reference, spec.ledger_wording.format(party=gen.party()), -amount, "Payment", "reversal")
        out += [
            payment,
            _Draft(day + timedelta(rng.randint(1, 3)), reference, "", amount, "Reversal", "reversal", reverses=payment),
        ]
    for _ in range(2 + n // 10):
        kind = rng.choice(("check", "check", "customer_receipt", "deposit"))
        spec = LINE_KINDS[kind]
        amount = spec.sign * random_amount(rng, *AMOUNTS["deposit_check" if kind == "deposit" else kind])
        out.append(
            _Draft(
                rng.choice(business_days[-5:]),
                gen.reference(kind),
                spec.ledger_wording.format(party=gen.party()),
                amount,
                spec.trans_type,
                "outstanding",
            )
        )
    for _ in range(1 + rng.randrange(3)):
        kind = rng.choice(("vendor_payment", "customer_receipt", "check"))
        spec = LINE_KINDS[kind]
        out.append(
            _Draft(
                last + timedelta(rng.randint(1, 6)),
                gen.reference(kind),
                spec.ledger_wording.format(party=gen.party()),
                spec.sign * random_amount(rng, *AMOUNTS[kind]),
                spec.trans_type,
                "after_cut_off",
            )
        )
    return out


# bank_recon_50's sizes: 18 easy (8-15 lines), 16 medium (16-25), 16 hard (26-40), each range spread evenly (even
# strata, so the stratified split is 25/25 as hotel_50's).
SIZES = (
    [8 + (i * 8) // 18 for i in range(18)]
    + [16 + (i * 10) // 16 for i in range(16)]
    + [26 + (i * 15) // 16 for i in range(16)]
)


def generate_bank_recon_50() -> list[Task]:
    """50 tasks of 8-40 statement lines over three difficulties (easy 8-15, medium 16-25, hard 26-40)."""
    counts = SIZES
    return [generate_task("bank_recon_50", i, seed=70000 + i, line_count=counts[i]) for i in range(50)]


# bank_recon_long: a ladder of statement sizes, LADDER_TASKS tasks per rung, to where full history no longer fits.
LADDER = (20, 50, 100, 200, 400)
LADDER_TASKS = 4


def generate_bank_recon_long() -> list[Task]:
    """Statements of 20 to 400 lines (``LADDER``), four per rung."""
    return [
        generate_task(
            "bank_recon_long", k, seed=80000 + 100 * rung + k, line_count=size, task_id=f"bank-long-{size:03d}-{k:02d}"
        )
        for rung, size in enumerate(LADDER)
        for k in range(LADDER_TASKS)
    ]


TASK_SETS = {"bank_recon_50": generate_bank_recon_50, "bank_recon_long": generate_bank_recon_long}
