"""Grading an episode from the final ERP state (and the open forms), never from the transcript.

Everything is judged against the task's original facts (its header amount and currency, and the
target line as the task built it), never against what the agent may have rewritten in the ERP:

- ``success``: the study's "full itemization": the saved itemized lines add up to the task's
  header amount exactly (remaining 0.00), no unsaved rows, the itemization form of the target
  line closed, and no collateral change. Rewriting the line's amount and itemizing the new
  amount is a collateral change, so it is not success.
- ``itemized_fraction``: saved itemized amount / the task's header amount (the study's "mean
  itemized amount").
- ``strict_success``: success, and the saved lines equal the receipt's charges as a multiset of
  (subcategory, date, amount). The study scores only the remainder; we report both.
- ``collateral``: every change outside the target line's itemization, like AppWorld's DB diffs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from erp_sim import ledger
from erp_sim.database import TABLE_NAMES, initial_dump, table_dump
from erp_sim.money import ZERO, money_text

if TYPE_CHECKING:
    from erp_sim.session import ErpSession

Charge = tuple[str, str, str]  # (subcategory, date, amount)


class Grade(BaseModel):
    success: bool = Field(description="Remaining exactly 0.00 against the task's amount, all rows saved, itemization "
                                      "form closed, no collateral change.")
    strict_success: bool = Field(description="Success and saved lines equal the receipt items as a multiset.")
    itemized_fraction: float = Field(description="Saved itemized amount / header amount.")
    header_amount: str = Field(description="The task's amount of the target line (not what the ERP holds now).")
    itemized_amount: str = Field(description="Sum of saved itemized lines.")
    remaining_amount: str = Field(description="The task's header amount minus saved itemized lines.")
    saved_lines: int = Field(description="Saved itemized lines of the target line.")
    expected_lines: int = Field(description="Charges on the receipt.")
    unsaved_rows: int = Field(description="Unsaved rows in an open itemization form of the target line.")
    itemization_form_open: bool = Field(description="An itemization form of the target line is still open.")
    missing_charges: list[Charge] = Field(default_factory=list, description="Receipt charges with no matching saved line.")
    unexpected_lines: list[Charge] = Field(default_factory=list, description="Saved lines matching no receipt charge.")
    duplicate_lines: list[Charge] = Field(default_factory=list, description="Receipt charges saved more often than they appear.")
    collateral: list[str] = Field(default_factory=list, description="Changes outside the target line's itemization.")


def target_line_id(session: "ErpSession") -> int:
    task = session.task
    row = session.db.execute(
        "SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id "
        "WHERE r.report_number = ? AND l.line_number = ? AND l.line_type != 'ItemizedLine'",
        (task.report_number, task.line_number)).fetchone()
    return int(row[0])


@dataclass(frozen=True)
class Progress:
    """The cheap part of the grade: what success needs. The collateral diff and the line matching run
    only once everything cheaper already holds (typically once per episode), and are cached per
    database version."""

    summary: ledger.ItemizationSummary  # total is the task's header amount
    unsaved_rows: int
    itemization_form_open: bool
    collateral_free: bool  # False also when not checked because something cheaper failed
    matches_receipt: bool  # saved lines == receipt charges as a multiset; checked only at success

    @property
    def zero_remainder(self) -> bool:
        summary = self.summary
        return (summary.remaining == ZERO and summary.line_count > 0 and self.unsaved_rows == 0
                and not self.itemization_form_open)

    @property
    def success(self) -> bool:
        """The study's full itemization, against the task's own amount, with nothing else changed."""
        return self.zero_remainder and self.collateral_free

    @property
    def strict_success(self) -> bool:
        return self.success and self.matches_receipt


def progress(session: "ErpSession", line_id: int, summary: ledger.ItemizationSummary | None = None) -> Progress:
    """``summary`` may be passed in by callers that know the database has not changed since they read it."""
    forms = [f for f in session.forms if f.name == "TrvItemization" and f.context.get("line_id") == line_id]
    saved = summary or ledger.itemization_summary(session.db, line_id)
    state = Progress(ledger.ItemizationSummary(session.task.header_decimal, saved.itemized, saved.line_count),
                     sum(len(f.pending.get("rows", {})) for f in forms), bool(forms), False, False)
    if not state.zero_remainder:
        return state
    collateral_free = not session.cached_read(f"grade/collateral/{line_id}", lambda: collateral_changes(session, line_id))
    matches = collateral_free and not _charge_mismatch(session, line_id)
    return replace(state, collateral_free=collateral_free, matches_receipt=matches)


def _charges(session: "ErpSession", line_id: int) -> tuple[Counter, Counter]:
    """(saved, expected) charges as multisets of (subcategory, date, amount)."""
    saved = Counter((r["subcategory"], r["transaction_date"], r["amount"]) for r in ledger.itemized_lines(session.db, line_id))
    expected = Counter((i.subcategory, i.date, money_text(Decimal(i.amount))) for i in session.task.receipt_items)
    return saved, expected


def _charge_mismatch(session: "ErpSession", line_id: int) -> bool:
    saved, expected = _charges(session, line_id)
    return saved != expected


def grade_session(session: "ErpSession") -> Grade:
    task = session.task
    line_id = target_line_id(session)
    state = progress(session, line_id)
    summary = state.summary
    saved, expected = _charges(session, line_id)
    return Grade(
        success=state.success,
        strict_success=state.success and saved == expected,
        itemized_fraction=float(summary.itemized / summary.total) if summary.total else 0.0,
        header_amount=money_text(summary.total),
        itemized_amount=money_text(summary.itemized),
        remaining_amount=money_text(summary.remaining),
        saved_lines=summary.line_count,
        expected_lines=len(task.receipt_items),
        unsaved_rows=state.unsaved_rows,
        itemization_form_open=state.itemization_form_open,
        missing_charges=sorted((expected - saved).elements()),
        unexpected_lines=sorted((saved - expected).elements()),
        duplicate_lines=sorted(c for c, n in saved.items() if c in expected for _ in range(n - expected[c])),
        collateral=list(session.cached_read(f"grade/collateral/{line_id}", lambda: collateral_changes(session, line_id))),
    )


def collateral_changes(session: "ErpSession", line_id: int) -> list[str]:
    """Row-level diff against the task's initial database, minus the target's own itemization."""
    before = initial_dump(session.task)
    after = table_dump(session.db)
    columns = {t: [d[1] for d in session.db.execute(f"PRAGMA table_info({t})")] for t in TABLE_NAMES}
    changes = []
    for table in TABLE_NAMES:
        old, new = {r[0]: r for r in before[table]}, {r[0]: r for r in after[table]}
        cols = columns[table]
        for rec_id in sorted(old.keys() | new.keys()):
            a, b = old.get(rec_id), new.get(rec_id)
            if a == b:
                continue
            if table == "expense_line" and _within_itemization(a, b, cols, line_id):
                continue
            if a is None:
                changes.append(f"{table} RecId {rec_id} created")
            elif b is None:
                changes.append(f"{table} RecId {rec_id} deleted")
            else:
                diffs = [f"{c}: {x!r} -> {y!r}" for c, x, y in zip(cols, a, b) if x != y]
                changes.append(f"{table} RecId {rec_id} changed ({'; '.join(diffs)})")
    return changes


def _within_itemization(old, new, cols: list[str], line_id: int) -> bool:
    parent = cols.index("parent_line_id")
    if all(row is None or row[parent] == line_id for row in (old, new)):
        return True
    if old is not None and new is not None and old[0] == line_id:  # the header's own line type may flip
        return all(x == y or c == "line_type" for c, x, y in zip(cols, old, new))
    return False
