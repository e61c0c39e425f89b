"""Build the rows of a task's ERP: the target report and line, its receipt, and distractors.

The worker owns 27-34 reports (so the report list needs ``LoadNextPage``), with lines of
several categories; some itemizable lines on other reports are already itemized, the
target report carries a few other lines. Everything derives from the task seed.
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from erp_sim.money import CENT
from erp_sim.workflows import Cell, Rows
from erp_sim.workflows.itemization.catalog import CATEGORIES, RECEIPT_WORDING
from erp_sim.workflows.itemization.task import Task, TaskLine
from erp_sim.workflows.itemization.taskgen import DOCUMENT_PREFIX, LAYOUTS, MERCHANT_KINDS

# Faker's word lists (a copy in data/world_names.json, checked against the pinned Faker by
# tests/simulator/test_fixtures.py), drawn with our own seeded rng: Faker's weighted sampling costs ~50 us
# a name, which made a world take ~25 ms to build, and importing Faker costs ~0.1 s at the first
# reset, where only fixture generation needs it.
WORLD_NAMES_FILE = Path(__file__).parents[2] / "data" / "world_names.json"
_NAMES = json.loads(WORLD_NAMES_FILE.read_text(encoding="utf-8"))
LAST_NAMES: list[str] = _NAMES["last_names"]
COMPANY_SUFFIXES: list[str] = _NAMES["company_suffixes"]
CITIES = [
    "Seattle",
    "Chicago",
    "Denver",
    "Austin",
    "Boston",
    "Atlanta",
    "Phoenix",
    "Portland",
    "Dallas",
    "Miami",
    "San Diego",
    "Nashville",
    "Detroit",
    "Minneapolis",
    "Charlotte",
    "Salt Lake City",
    "New York",
    "Orlando",
]

PURPOSES = [
    "Customer visit",
    "Sales kickoff",
    "Quarterly business review",
    "Partner workshop",
    "Training",
    "Trade show",
    "Site inspection",
    "Board meeting",
    "Recruiting event",
    "Project go-live",
]


class _Builder:
    def __init__(self, task: Task) -> None:
        self.task = task
        self.rng = random.Random(task.seed * 7919 + 17)
        self.rows: Rows = {name: [] for name in ["worker", "expense_report", "expense_line", "receipt", "receipt_item"]}
        self.next_id = dict.fromkeys(self.rows, 1)

    def add(self, table: str, **values: Cell) -> int:
        rec_id = self.next_id[table]
        self.next_id[table] += 1
        self.rows[table].append({"id": rec_id, **values})
        return rec_id

    def line(
        self,
        report_id: int,
        number: int,
        category: str,
        merchant: str,
        day: date,
        amount: Decimal,
        *,
        line_type: str = "Default",
        parent_line_id: int | None = None,
        subcategory: str | None = None,
        description: str = "",
    ) -> int:
        return self.add(
            "expense_line",
            report_id=report_id,
            line_number=number,
            category_id=category,
            merchant=merchant,
            transaction_date=day.isoformat(),
            amount=str(amount),
            currency="USD",
            line_type=line_type,
            parent_line_id=parent_line_id,
            subcategory=subcategory,
            description=description,
        )

    def receipt(self, line_id: int, category: str, merchant: str, charges: list[tuple[date, str, Decimal]]) -> None:
        total = sum((c[2] for c in charges), Decimal("0")).quantize(CENT)
        receipt_id = self.add(
            "receipt",
            expense_line_id=line_id,
            document_number=f"{DOCUMENT_PREFIX[category]}-{self.rng.randint(10000, 99999)}",
            merchant=merchant,
            issued_date=max(c[0] for c in charges).isoformat(),
            total=str(total),
            currency="USD",
        )
        wording = {sub: self.rng.choice(words) for sub, words in RECEIPT_WORDING[category].items()}
        for n, (day, sub, amount) in enumerate(charges, start=1):
            self.add(
                "receipt_item",
                receipt_id=receipt_id,
                item_number=n,
                item_date=day.isoformat(),
                description=wording[sub],
                amount=str(amount),
            )

    def target_receipt(self, line_id: int, line: TaskLine) -> None:
        task = self.task
        receipt_id = self.add(
            "receipt",
            expense_line_id=line_id,
            document_number=line.document_number,
            merchant=line.merchant,
            issued_date=line.transaction_date,
            total=line.header_amount,
            currency=task.currency,
        )
        for n, item in enumerate(line.receipt_items, start=1):
            self.add(
                "receipt_item",
                receipt_id=receipt_id,
                item_number=n,
                item_date=item.date,
                description=item.description,
                amount=item.amount,
            )

    def distractor_line(self, report_id: int, number: int, day: date, *, itemized: bool) -> None:
        rng = self.rng
        category = rng.choice(["Taxi", "Mileage", "Supplies", "Meals", "Hotel", "CarRental", "Airfare", "Conference"])
        if not CATEGORIES[category].itemize:
            amount = Decimal(rng.randint(800, 9500)) / 100
            company = f"{rng.choice(LAST_NAMES)} {rng.choice(COMPANY_SUFFIXES)}"
            self.line(report_id, number, category, company, day, amount.quantize(CENT))
            return
        charges = LAYOUTS[category](rng, day, rng.randint(3, 6))
        merchant = f"{rng.choice(LAST_NAMES)} {rng.choice(MERCHANT_KINDS[category])}"
        total = sum((c[2] for c in charges), Decimal("0")).quantize(CENT)
        line_id = self.line(
            report_id,
            number,
            category,
            merchant,
            max(c[0] for c in charges),
            total,
            line_type="ItemizedHeader" if itemized else "Default",
        )
        self.receipt(line_id, category, merchant, charges)
        if itemized:
            for day_, sub, amount in charges:
                self.line(
                    report_id,
                    number,
                    category,
                    merchant,
                    day_,
                    amount,
                    line_type="ItemizedLine",
                    parent_line_id=line_id,
                    subcategory=sub,
                )

    def build(self) -> Rows:
        task, rng = self.task, self.rng
        worker_id = self.add(
            "worker",
            personnel_number=task.personnel_number,
            name=task.worker_name,
            email=task.worker_name.lower().replace(" ", ".") + "@contoso.com",
        )
        report_count = rng.randint(27, 34)
        target_position = rng.randrange(report_count)
        target_number = int(task.report_number.split("-")[1])
        first_number = max(1, target_number - target_position)
        targets = {line.line_number: line for line in task.lines}
        start = date.fromisoformat(task.transaction_date) - timedelta(days=7 * target_position + 14)
        for position in range(report_count):
            number = first_number + position
            created = start + timedelta(days=7 * position)
            is_target = number == target_number
            status = "Draft" if is_target else rng.choice(["Approved", "Approved", "Submitted", "Draft"])
            report_id = self.add(
                "expense_report",
                report_number=f"EXP-{number:06d}",
                worker_id=worker_id,
                purpose=rng.choice(PURPOSES),
                destination=rng.choice(CITIES),
                status=status,
                created_date=created.isoformat(),
            )
            line_count = max(max(targets) + rng.randint(0, 2), 2) if is_target else rng.randint(1, 4)
            for line_number in range(1, line_count + 1):
                if is_target and line_number in targets:
                    target = targets[line_number]
                    line_id = self.line(
                        report_id,
                        line_number,
                        task.expense_type,
                        target.merchant,
                        date.fromisoformat(target.transaction_date),
                        target.header_decimal,
                    )
                    self.target_receipt(line_id, target)
                else:
                    self.distractor_line(
                        report_id,
                        line_number,
                        created + timedelta(days=rng.randint(0, 5)),
                        itemized=status != "Draft" or rng.random() < 0.5,
                    )
        return self.rows


def build_rows(task: Task) -> Rows:
    """The task's own rows (worker, reports, lines, receipts), table by table, ids sequential from 1."""
    return _Builder(task).build()
