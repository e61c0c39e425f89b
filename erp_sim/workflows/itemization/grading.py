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

A task with several lines (``Task.extra_lines``) is graded on each: success needs every line's
remaining at exactly 0.00 (against its own amount), no target line's itemization form open, and
strict success each line's saved lines equal to its own receipt. The grade's amounts and lists
add the lines up, and ``lines`` holds each line's figures (left out for single-line tasks, whose
grades keep their bytes).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from erp_sim.database import Row
from erp_sim.database.schema import load_schema
from erp_sim.grading import collateral
from erp_sim.grading.collateral import Expected
from erp_sim.json_values import JsonObject
from erp_sim.money import ZERO, money_text
from erp_sim.workflows import Grader
from erp_sim.workflows.itemization import SCHEMA_FILE, ledger
from erp_sim.workflows.itemization.task import Task, task_of

if TYPE_CHECKING:
    from erp_sim.forms.base import FormHost

SCHEMA = load_schema(SCHEMA_FILE)

Charge = tuple[str, str, str]  # (subcategory, date, amount)


class LineGrade(BaseModel):
    """One line of a multi-line task: remaining = its amount - its saved itemized lines."""

    line_number: int
    header_amount: str
    itemized_amount: str
    remaining_amount: str
    saved_lines: int
    expected_lines: int


class Grade(BaseModel):
    success: bool = Field(
        description="Remaining exactly 0.00 against the task's amount, all rows saved, itemization "
        "form closed, no collateral change."
    )
    strict_success: bool = Field(description="Success and saved lines equal the receipt items as a multiset.")
    itemized_fraction: float = Field(description="Saved itemized amount / header amount.")
    header_amount: str = Field(description="The task's amount of the target line (not what the ERP holds now).")
    itemized_amount: str = Field(description="Sum of saved itemized lines.")
    remaining_amount: str = Field(description="The task's header amount minus saved itemized lines.")
    saved_lines: int = Field(description="Saved itemized lines of the target line.")
    expected_lines: int = Field(description="Charges on the receipt.")
    unsaved_rows: int = Field(description="Unsaved rows in an open itemization form of the target line.")
    itemization_form_open: bool = Field(description="An itemization form of the target line is still open.")
    missing_charges: list[Charge] = Field(
        default_factory=list, description="Receipt charges with no matching saved line."
    )
    unexpected_lines: list[Charge] = Field(default_factory=list, description="Saved lines matching no receipt charge.")
    duplicate_lines: list[Charge] = Field(
        default_factory=list, description="Receipt charges saved more often than they appear."
    )
    collateral: list[str] = Field(default_factory=list, description="Changes outside the target line's itemization.")
    lines: list[LineGrade] | None = Field(
        None,
        exclude_if=lambda lines: lines is None,
        description="Per line, for tasks with several lines (absent otherwise).",
    )


def target_line_id(session: FormHost, line_number: int | None = None) -> int:
    """The RecId of the task's (first) line, or of its line ``line_number``."""
    task = task_of(session)
    row = session.db.execute(
        "SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id "
        "WHERE r.report_number = ? AND l.line_number = ? AND l.line_type != 'ItemizedLine'",
        (task.report_number, task.line_number if line_number is None else line_number),
    ).fetchone()
    return int(row[0])


def target_line_ids(session: FormHost) -> int | tuple[int, ...]:
    """The RecId of a single-line task's line, or the RecIds of a multi-line task's lines in task order."""
    task = task_of(session)
    if not task.extra_lines:
        return target_line_id(session)
    return tuple(target_line_id(session, line.line_number) for line in task.lines)


def _ids(line_ids: int | tuple[int, ...]) -> tuple[int, ...]:
    return line_ids if isinstance(line_ids, tuple) else (line_ids,)


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
    lines_settled: bool = True  # multi-line tasks: every line's own remaining is 0.00 with a saved line
    gap: Decimal | None = None  # multi-line tasks: the lines' |remaining| added (None: |summary.remaining|)

    @property
    def zero_remainder(self) -> bool:
        """The zero-remainder rule (``ledger.ItemizationSummary.complete``) on every target line, saved and closed."""
        return (
            self.summary.complete and self.lines_settled and self.unsaved_rows == 0 and not self.itemization_form_open
        )

    @property
    def distance(self) -> Decimal:
        """How far the itemization is from done, in money: over-itemizing one line does not make up for another."""
        return abs(self.summary.remaining) if self.gap is None else self.gap

    @property
    def success(self) -> bool:
        """The study's full itemization, against the task's own amount, with nothing else changed."""
        return self.zero_remainder and self.collateral_free

    @property
    def strict_success(self) -> bool:
        return self.success and self.matches_receipt

    @property
    def done_fraction(self) -> Decimal:
        """1 - distance / the task's amount, floored at 0 (0 for a task of no amount): how much is itemized."""
        total = self.summary.total
        return max(Decimal(0), 1 - self.distance / total) if total else Decimal(0)


def progress(session: FormHost, line_id: int | tuple[int, ...]) -> Progress:
    """Cheap: it depends only on the database (cached until its next write) and the target's open forms.
    ``line_id``: what ``target_line_ids`` gives (one RecId, or a multi-line task's RecIds)."""
    ids = _ids(line_id)
    forms = [f for f in session.forms if f.name == "TrvItemization" and f.context.get("line_id") in ids]
    unsaved, form_open = sum(f.pending.unsaved_count() if f.pending is not None else 0 for f in forms), bool(forms)
    return session.cached_read(
        f"grade/progress/{line_id}/{unsaved}/{form_open}", lambda: _progress(session, ids, unsaved, form_open)
    )


def _progress(session: FormHost, ids: tuple[int, ...], unsaved: int, form_open: bool) -> Progress:
    task = task_of(session)
    per_line = [_saved_lines(session, line_id) for line_id in ids]
    itemized, count = sum((p[1] for p in per_line), ZERO), sum(p[2] for p in per_line)
    state = Progress(ledger.ItemizationSummary(task.total_decimal, itemized, count), unsaved, form_open, False, False)
    if len(ids) > 1:
        lines = [ledger.ItemizationSummary(line.header_decimal, p[1], p[2]) for line, p in zip(task.lines, per_line)]
        state = replace(
            state,
            lines_settled=all(line.complete for line in lines),
            gap=sum((abs(line.remaining) for line in lines), ZERO),
        )
    if not state.zero_remainder:
        return state
    collateral_free = not _collateral(session, ids if len(ids) > 1 else ids[0])
    matches = collateral_free and all(_same_charges(p[0], expected_charges(task, n)) for n, p in enumerate(per_line))
    return replace(state, collateral_free=collateral_free, matches_receipt=matches)


def _collateral(session: FormHost, line_id: int | tuple[int, ...]) -> list[str]:
    """``collateral_changes``, cached until the database next changes (callers must not mutate it)."""
    return session.cached_read(f"grade/collateral/{line_id}", lambda: collateral_changes(session, line_id))


def _saved_lines(session: FormHost, line_id: int) -> tuple[Counter[Charge], Decimal, int]:
    """(saved lines as a multiset of (subcategory, date, amount), their sum, their count), cached per database version
    (of the lines the itemization form reads too: ``ledger.saved_lines``)."""

    def read() -> tuple[Counter[Charge], Decimal, int]:
        saved: Counter[Charge] = Counter(
            (line["subcategory"], line["transaction_date"], line["amount"])
            for line in ledger.saved_lines(session, line_id)
        )
        return saved, sum((Decimal(c[2]) * n for c, n in saved.items()), ZERO), sum(saved.values())

    return session.cached_read(f"grade/lines/{line_id}", read)


def _same_charges(saved: Counter[Charge], expected: Counter[Charge]) -> bool:
    """The two multisets are equal. Compared as dicts: no count in them is zero (both are counted from
    charges), and ``Counter.__eq__`` walks both in Python (0.2 ms at 200 charges, at the close and the grade)."""
    return dict.__eq__(saved, expected)


_expected: dict[tuple[str, str, int, int], Counter[Charge]] = {}


def expected_charges(task: Task, line: int = 0) -> Counter[Charge]:
    """A receipt's charges as a multiset of (subcategory, date, amount), built once per task and line
    (``line``: index into ``task.lines``)."""
    key = (task.task_set, task.task_id, task.seed, line)
    if key not in _expected:
        if len(_expected) >= 256:
            _expected.pop(next(iter(_expected)))
        items = task.receipt_items if line == 0 else task.extra_lines[line - 1].receipt_items
        _expected[key] = Counter((i.subcategory, i.date, money_text(Decimal(i.amount))) for i in items)
    return _expected[key]


def grade_session(
    session: FormHost, line_id: int | tuple[int, ...] | None = None, state: Progress | None = None
) -> Grade:
    """The full grade. ``line_id`` (the target's RecId) and ``state`` (its current ``progress``) may be
    passed by callers that know them."""
    return Grade.model_validate(grade_dict(session, line_id, state))


def grade_dict(
    session: FormHost, line_id: int | tuple[int, ...] | None = None, state: Progress | None = None
) -> JsonObject:
    """The full grade as ``Grade.model_dump(mode="json")`` would give it, without the model's cost (the env
    puts it in the terminating step's ``info``)."""
    task = task_of(session)
    line_id = target_line_ids(session) if line_id is None else line_id
    state = state or progress(session, line_id)
    summary = state.summary
    ids = _ids(line_id)
    per_line = [(_saved_lines(session, i), expected_charges(task, n)) for n, i in enumerate(ids)]
    if len(ids) == 1:
        saved, expected = per_line[0][0][0], per_line[0][1]
    else:  # lines are told apart by their own receipts; the lists below name charges of any line
        saved = sum((p[0][0] for p in per_line), Counter())
        expected = sum((p[1] for p in per_line), Counter())
    strict = all(_same_charges(p[0][0], p[1]) for p in per_line)
    grade: JsonObject = {
        "success": state.success,
        "strict_success": state.success and strict,
        "itemized_fraction": float(summary.itemized / summary.total) if summary.total else 0.0,
        "header_amount": money_text(summary.total),
        "itemized_amount": money_text(summary.itemized),
        "remaining_amount": money_text(summary.remaining),
        "saved_lines": summary.line_count,
        "expected_lines": task.item_count,
        "unsaved_rows": state.unsaved_rows,
        "itemization_form_open": state.itemization_form_open,
        "missing_charges": [list(c) for c in sorted((expected - saved).elements())],
        "unexpected_lines": [list(c) for c in sorted((saved - expected).elements())],
        "duplicate_lines": [
            list(c) for c in sorted(c for c, n in saved.items() if c in expected for _ in range(n - expected[c]))
        ],
        "collateral": list(_collateral(session, line_id)),
    }
    if len(ids) > 1:
        grade["lines"] = [
            {
                "line_number": line.line_number,
                "header_amount": money_text(line.header_decimal),
                "itemized_amount": money_text(p[0][1]),
                "remaining_amount": money_text(line.header_decimal - p[0][1]),
                "saved_lines": p[0][2],
                "expected_lines": len(line.receipt_items),
            }
            for line, p in zip(task.lines, per_line)
        ]
    return grade


def _asked_for(line_id: int | tuple[int, ...]) -> Expected:
    """What the task asks to change: the target lines' own itemization (``_within_itemization``)."""
    ids = _ids(line_id)  # once per diff, not per touched row (a 200-row itemization touches 201)
    return lambda table, cols, old, new: table == "expense_line" and _within_itemization(old, new, cols, ids)


def collateral_changes(session: FormHost, line_id: int | tuple[int, ...]) -> list[str]:
    """Row-level diff against the task's initial database, minus the target lines' own itemization."""
    return collateral.collateral_changes(session.db, session.task, SCHEMA, _asked_for(line_id))


def full_collateral_changes(session: FormHost, line_id: int | tuple[int, ...]) -> list[str]:
    """The same diff over every row of every table (slow; what tests check the logged diff against)."""
    return collateral.full_collateral_changes(session.db, session.task, SCHEMA, _asked_for(line_id))


def _within_itemization(old: Row | None, new: Row | None, cols: list[str], ids: tuple[int, ...]) -> bool:
    parent = cols.index("parent_line_id")
    if (old is None or old[parent] in ids) and (new is None or new[parent] in ids):
        return True
    if old is not None and new is not None and old[0] in ids:  # the header's own line type may flip
        return all(x == y or c == "line_type" for c, x, y in zip(cols, old, new))
    return False


def episode_target(session: FormHost) -> int | tuple[int, ...]:
    """``target_line_ids``, with the receipt's charges built here (once per task: the env finds the target at
    reset) rather than in a step."""
    expected_charges(task_of(session))
    return target_line_ids(session)


GRADER: Grader[int | tuple[int, ...], Progress] = Grader(
    model=Grade, target=episode_target, progress=progress, grade=grade_dict, fraction="itemized_fraction"
)
