"""Generate task sets from seeds. Run by ``scripts/generate_fixtures.py``; tests rerun it.

Each expense type has one small function that lays out exactly ``item_count`` receipt
charges the way that kind of receipt is structured (per night, per day, per flight segment,
per dish). All randomness comes from ``random.Random(seed)`` and a Faker instance seeded
with the same seed, so a task is a pure function of (set, index, type, seed, item count).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING

from erp_sim.money import CENT, random_amount
from erp_sim.workflows.itemization.catalog import CATEGORIES, EXPENSE_TYPES, RECEIPT_WORDING
from erp_sim.workflows.itemization.task import ReceiptLine, Task, TaskLine

if TYPE_CHECKING:
    from faker import Faker

Charge = tuple[date, str, Decimal]  # (date, subcategory, amount)
Layout = Callable[[random.Random, date, int], list[Charge]]  # (rng, first day, charge count) -> charges


@lru_cache(maxsize=1)
def _faker() -> Faker:
    """Faker, imported on first use: the simulator imports this module's tables at reset, which need not load it
    (tests/test_startup.py's first reset, scripts/bench_startup.py)."""
    from faker import Faker

    return Faker("en_US")  # built once (slow); re-seeded per task


def _pct(amount: Decimal, percent: Decimal) -> Decimal:
    return (amount * percent / 100).quantize(CENT)


def _hotel(rng: random.Random, start: date, count: int, max_nights: int = 7) -> list[Charge]:
    per_night = ["Daily room rate", "Room tax"] + (["City tax"] if count >= 6 and rng.random() < 0.6 else [])
    nights = max(1, min(max_nights, count // len(per_night)))
    rate, tax_pct, city_tax = (
        random_amount(rng, 119, 389),
        Decimal(rng.choice(["12", "14.5", "15.75"])),
        random_amount(rng, 2.5, 7),
    )
    charges: list[Charge] = []
    for night in range(nights):
        day = start + timedelta(days=night)
        amounts = {"Daily room rate": rate, "Room tax": _pct(rate, tax_pct), "City tax": city_tax}
        charges += [(day, sub, amounts[sub]) for sub in per_night]
    extras = {
        "Breakfast": (12, 34),
        "Room service": (18, 95),
        "Parking": (15, 45),
        "Internet": (9.95, 19.95),
        "Telephone": (2, 25),
        "Laundry": (8, 60),
        "Minibar": (4, 38),
        "Resort fee": (20, 45),
    }
    for _ in range(count - len(charges)):
        sub = rng.choice(sorted(extras))
        charges.append((start + timedelta(days=rng.randrange(nights)), sub, random_amount(rng, *extras[sub])))
    return charges


def _car_rental(rng: random.Random, start: date, count: int) -> list[Charge]:
    fees = ["Rental tax", "Airport concession fee", "Vehicle license fee", "Fuel", "Additional driver"]
    per_day = ["Base rate", "Collision damage waiver", "GPS rental"][: 1 if count <= 8 else 2 if count <= 15 else 3]
    # Fill ``count`` with whole days of per-day charges plus 2-5 one-off fees.
    n_fees = next(
        (
            n
            for n in range(min(5, count - len(per_day)), 1, -1)
            if (count - n) % len(per_day) == 0 and (count - n) // len(per_day) <= 10
        ),
        None,
    )
    if n_fees is None:
        per_day, n_fees = per_day[:1], 5
    days = (count - n_fees) // len(per_day)
    rate, cdw, gps = random_amount(rng, 39, 129), random_amount(rng, 14, 32), random_amount(rng, 9, 16)
    charges: list[Charge] = []
    for d in range(days):
        amounts = {"Base rate": rate, "Collision damage waiver": cdw, "GPS rental": gps}
        charges += [(start + timedelta(days=d), sub, amounts[sub]) for sub in per_day]
    base_total = rate * days
    end = start + timedelta(days=days - 1)
    fee_amounts = {
        "Rental tax": _pct(base_total, Decimal("8.25")),
        "Airport concession fee": _pct(base_total, Decimal("11.11")),
        "Vehicle license fee": random_amount(rng, 1.5, 9),
        "Fuel": random_amount(rng, 35, 80),
        "Additional driver": random_amount(rng, 12, 15) * days,
    }
    charges += [(end, sub, fee_amounts[sub]) for sub in fees[:n_fees]]
    return charges


def _airfare(rng: random.Random, start: date, count: int) -> list[Charge]:
    per_segment = ["Base fare", "Fuel surcharge", "Passenger facility charge", "Security fee", "Government tax"]
    k = 4 if count < 10 else 5
    segments = max(1, min(4, count // k))
    charges: list[Charge] = []
    for s in range(segments):
        day = start + timedelta(days=s * rng.randint(1, 3))
        fare = random_amount(rng, 89, 640)
        amounts = {
            "Base fare": fare,
            "Fuel surcharge": random_amount(rng, 20, 180),
            "Passenger facility charge": Decimal("4.50"),
            "Security fee": Decimal("5.60"),
            "Government tax": _pct(fare, Decimal("7.5")),
        }
        charges += [(day, sub, amounts[sub]) for sub in per_segment[:k]]
    extras = {"Seat selection": (15, 89), "Checked baggage": (35, 75), "Change fee": (50, 200)}
    for _ in range(count - len(charges)):
        sub = rng.choice(sorted(extras))
        charges.append((start + timedelta(days=rng.randrange(max(1, segments))), sub, random_amount(rng, *extras[sub])))
    return charges


def _meals(rng: random.Random, start: date, count: int) -> list[Charge]:
    n_on_top = 3 if count >= 6 else 2  # tax + tip (+ service charge)
    ranges = {"Food": (9, 48), "Beverages": (3, 9), "Alcohol": (8, 22)}
    dishes = [
        (start, sub, random_amount(rng, *ranges[sub]))
        for sub in (rng.choice(["Food", "Food", "Beverages", "Alcohol"]) for _ in range(count - n_on_top))
    ]
    subtotal = sum((c[2] for c in dishes), Decimal("0"))
    on_top = [
        (start, "Sales tax", _pct(subtotal, Decimal("8.875"))),
        (start, "Tip", _pct(subtotal, Decimal(rng.choice(["15", "18", "20"])))),
    ]
    if n_on_top == 3:
        on_top.append((start, "Service charge", _pct(subtotal, Decimal("3"))))
    return dishes + on_top


def _conference(rng: random.Random, start: date, count: int) -> list[Charge]:
    charges: list[Charge] = [(start, "Registration fee", random_amount(rng, 395, 1495))]
    optional = {"Workshop fee": (95, 450), "Course materials": (25, 120), "Networking event": (45, 180)}
    for _ in range(count - 3):
        sub = rng.choice(sorted(optional))
        charges.append((start + timedelta(days=rng.randrange(3)), sub, random_amount(rng, *optional[sub])))
    subtotal = sum((c[2] for c in charges), Decimal("0"))
    charges += [
        (start, "Sales tax", _pct(subtotal, Decimal("6"))),
        (start, "Processing fee", _pct(subtotal, Decimal("2.9"))),
    ]
    return charges


LAYOUTS: dict[str, Layout] = {
    "Hotel": _hotel,
    "CarRental": _car_rental,
    "Airfare": _airfare,
    "Meals": _meals,
    "Conference": _conference,
}
MERCHANT_KINDS = {
    "Hotel": ["Grand Hotel", "Inn & Suites", "Plaza Hotel", "Conference Center Hotel", "Harbor Hotel"],
    "CarRental": ["Car Rental", "Rent-A-Car", "Auto Rentals"],
    "Airfare": ["Airlines", "Air", "Airways"],
    "Meals": ["Bistro", "Grill", "Steakhouse", "Trattoria", "Kitchen"],
    "Conference": ["Summit", "Expo", "Developer Conference", "Forum"],
}
DOCUMENT_PREFIX = {"Hotel": "FOLIO", "CarRental": "RA", "Airfare": "TKT", "Meals": "CHK", "Conference": "INV"}


def difficulty_of(count: int) -> str:
    return "easy" if count <= 8 else "medium" if count <= 15 else "hard" if count <= 22 else "long"


MAX_CHARGES = 200  # the horizon knob's range: receipt charges over all of a task's lines
MAX_LINES = 5  # lines to itemize in one instruction


def _layout(expense_type: str, max_nights: int) -> Layout:
    if max_nights != 7:
        if expense_type != "Hotel":
            raise ValueError("max_nights applies to Hotel tasks only")
        return lambda rng, start, count: _hotel(rng, start, count, max_nights)
    return LAYOUTS[expense_type]


def _receipt(rng: random.Random, expense_type: str, charges: list[Charge]) -> tuple[list[ReceiptLine], str]:
    wording = {sub: rng.choice(words) for sub, words in RECEIPT_WORDING[expense_type].items()}
    items = [
        ReceiptLine(date=d.isoformat(), description=wording[sub], subcategory=sub, amount=str(amount))
        for d, sub, amount in charges
    ]
    assert all(item.subcategory in CATEGORIES[expense_type].subcategories for item in items)
    return items, str(sum((Decimal(i.amount) for i in items), Decimal("0")).quantize(CENT))


def line_sizes(item_count: int, lines: int) -> list[int]:
    """``item_count`` charges over ``lines`` receipts, as even as possible, larger ones first."""
    return [item_count // lines + (1 if n < item_count % lines else 0) for n in range(lines)]


def generate_task(
    task_set: str,
    index: int,
    expense_type: str,
    seed: int,
    item_count: int,
    *,
    lines: int = 1,
    max_nights: int = 7,
    task_id: str | None = None,
) -> Task:
    """One task. The horizon knob: ``item_count`` receipt charges (up to 200) over ``lines`` expense lines
    (1-5) of one report, and ``max_nights`` (Hotel) for stays longer than a week. With the defaults the
    random draws are exactly those of the single-line sets, so their fixtures keep their bytes."""
    if not 1 <= lines <= MAX_LINES or not 2 * lines <= item_count <= MAX_CHARGES:
        raise ValueError(
            f"lines must be 1-{MAX_LINES} and item_count from 2 per line to {MAX_CHARGES}, got {lines}, {item_count}"
        )
    layout = _layout(expense_type, max_nights)
    sizes = line_sizes(item_count, lines)
    rng = random.Random(seed)
    fake = _faker()
    fake.seed_instance(seed)
    start = date(2026, 1, 5) + timedelta(days=rng.randrange(300))
    charges = layout(rng, start, sizes[0])
    assert len(charges) == sizes[0], (expense_type, sizes[0], len(charges))
    items, total = _receipt(rng, expense_type, charges)
    prefix = {"Hotel": "hotel", "CarRental": "car", "Airfare": "air", "Meals": "meals", "Conference": "conf"}[
        expense_type
    ]
    task = Task(
        task_id=task_id or f"{prefix}-{index:03d}",
        task_set=task_set,
        seed=seed,
        expense_type=expense_type,
        family=CATEGORIES[expense_type].family,
        difficulty=difficulty_of(item_count),
        worker_name=fake.name(),
        personnel_number=f"{rng.randint(100, 999999):06d}",
        report_number=f"EXP-{rng.randint(1000, 899999):06d}",
        line_number=rng.randint(1, 4),
        merchant=f"{fake.last_name()} {rng.choice(MERCHANT_KINDS[expense_type])}",
        transaction_date=max(d for d, _, _ in charges).isoformat(),
        currency="USD",
        header_amount=total,
        document_number=f"{DOCUMENT_PREFIX[expense_type]}-{rng.randint(10000, 99999)}",
        receipt_items=items,
    )
    if lines == 1:
        return task
    return task.model_copy(
        update={"extra_lines": _extra_lines(rng, task, layout, sizes[1:], max(d for d, _, _ in charges))}
    )


def _extra_lines(rng: random.Random, task: Task, layout: Layout, sizes: list[int], last_day: date) -> list[TaskLine]:
    """The further lines of a multi-line task: later trips with other merchants, drawn after everything else."""
    others = sorted(rng.sample([n for n in range(1, len(sizes) + 4) if n != task.line_number], len(sizes)))
    documents = {task.document_number}
    extra = []
    for line_number, size in zip(others, sizes):
        start = last_day + timedelta(days=rng.randint(3, 20))
        charges = layout(rng, start, size)
        assert len(charges) == size, (task.expense_type, size, len(charges))
        items, total = _receipt(rng, task.expense_type, charges)
        document = f"{DOCUMENT_PREFIX[task.expense_type]}-{rng.randint(10000, 99999)}"
        while document in documents:  # each line's receipt must be told apart by its number
            document = f"{DOCUMENT_PREFIX[task.expense_type]}-{rng.randint(10000, 99999)}"
        documents.add(document)
        last_day = max(d for d, _, _ in charges)
        extra.append(
            TaskLine(
                line_number=line_number,
                merchant=f"{_faker().last_name()} {rng.choice(MERCHANT_KINDS[task.expense_type])}",
                transaction_date=last_day.isoformat(),
                header_amount=total,
                document_number=document,
                receipt_items=items,
            )
        )
    return extra


def generate_hotel_50() -> list[Task]:
    """The study's 50-task hotel benchmark: 4-22 itemized lines, spread evenly over difficulty."""
    counts = [4 + (i * 19) // 50 for i in range(50)]  # 4..22, about 2-3 tasks per count
    return [generate_task("hotel_50", i, "Hotel", seed=1000 + i, item_count=counts[i]) for i in range(50)]


def generate_expense_types(per_type: int = 20) -> list[Task]:
    """Five expense types in three structural families, ``per_type`` tasks each, 4-22 items."""
    tasks = []
    for t, expense_type in enumerate(EXPENSE_TYPES):
        for i in range(per_type):
            count = 4 + (i * 19) // per_type
            tasks.append(generate_task("expense_types", i, expense_type, seed=20000 + 1000 * t + i, item_count=count))
    return tasks


# long_horizon: a ladder of sizes, LADDER_TASKS tasks per rung; within each rung the first tasks have one line,
# the rest 2-5 lines (the rung's charges split over them). Hotel stays run up to four weeks of nightly charges.
LADDER = (10, 20, 50, 100, 200)
LADDER_TASKS = 10
LADDER_LINES = (1, 1, 1, 1, 1, 2, 2, 3, 4, 5)


def generate_long_horizon() -> list[Task]:
    """Hotel tasks from 10 to 200 receipt charges (``LADDER``), 10 per rung, some over several lines."""
    return [
        generate_task(
            "long_horizon",
            k,
            "Hotel",
            seed=50000 + 100 * rung + k,
            item_count=charges,
            lines=LADDER_LINES[k],
            max_nights=28,
            task_id=f"long-{charges:03d}-{k:02d}",
        )
        for rung, charges in enumerate(LADDER)
        for k in range(LADDER_TASKS)
    ]


TASK_SETS = {
    "hotel_50": generate_hotel_50,
    "expense_types": generate_expense_types,
    "long_horizon": generate_long_horizon,
}
