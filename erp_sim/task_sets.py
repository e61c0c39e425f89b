"""Which tasks a task set holds: names, fixture files, expense-type views and the train/test split.

Kept apart from ``erp_sim.tasks`` (the pydantic ``Task`` model) and free of pydantic, so that
checking a set's name and size (``gym.make``, ``--tasks`` parsing) costs a JSON read, not the
model layer. Each row keeps the task's JSON line; ``erp_sim.tasks.load_task_set`` validates it.
"""

from __future__ import annotations

import json
import os
import random
import sys
from functools import cache
from pathlib import Path
from typing import NamedTuple


def _fixtures_dir() -> Path:
    """$ERP_SIM_FIXTURES, else the repository's fixtures/ (editable installs), else the installed copy."""
    if os.environ.get("ERP_SIM_FIXTURES"):
        return Path(os.environ["ERP_SIM_FIXTURES"])
    in_repository = Path(__file__).resolve().parent.parent / "fixtures"
    return in_repository if in_repository.is_dir() else Path(sys.prefix) / "share" / "erp-sim" / "fixtures"


FIXTURES_DIR = _fixtures_dir()

# Task sets shipped in fixtures/. Each expense-type set is a filtered view of expense_types.
TASK_SET_FILES = {
    "hotel_50": "hotel_50.jsonl",
    "expense_types": "expense_types.jsonl",
    "long_horizon": "long_horizon.jsonl",
}
# Sets whose split is stratified by size too (number of receipt charges): each rung of a ladder is split alike.
SIZE_STRATIFIED = {"long_horizon"}


class TaskRow(NamedTuple):
    """A task as its fixture line, with the fields that set membership depends on."""

    task_id: str
    expense_type: str
    difficulty: str
    line: str
    charges: int  # receipt charges over every line of the task


@cache
def task_rows(name: str) -> tuple[TaskRow, ...]:
    """The rows of a task set by name: ``hotel_50``, ``expense_types``, one expense type (``Meals``),
    or one half of a set's fixed split (``hotel_50:train``). Raises ``KeyError`` naming the known sets."""
    base, sep, split = name.partition(":")
    if sep:
        return split_rows(base, split)
    if name in TASK_SET_FILES:
        with (FIXTURES_DIR / TASK_SET_FILES[name]).open(encoding="utf-8") as lines:
            return tuple(_row(line) for line in lines if line.strip())
    by_type = tuple(row for row in task_rows("expense_types") if row.expense_type.lower() == name.lower())
    if by_type:
        return by_type
    known = sorted(TASK_SET_FILES) + sorted({row.expense_type for row in task_rows("expense_types")})
    raise KeyError(f"Unknown task set {name[:80]!r}. Known: {', '.join(known)}.")


def _row(line: str) -> TaskRow:
    fields = json.loads(line)
    charges = sum(len(part["receipt_items"]) for part in [fields, *fields.get("extra_lines", ())])
    return TaskRow(fields["task_id"], fields["expense_type"], fields["difficulty"], line.strip(), charges)


# --- train/test splits --------------------------------------------------------------------
# ACON (Kang et al., 2025, arXiv 2510.00615) optimises its compression guideline on training
# tasks and reports on held-out ones. Our split is fixed by SPLIT_SEED and stratified: within
# every (expense type, difficulty) stratum, the tasks in id order are shuffled by a Random
# seeded with the set, the stratum and SPLIT_SEED, and the first round(n * TRAIN_FRACTION)
# go to train. So every stratum is split in the same proportion, and a split never changes
# unless the fixtures or these two constants do (tests pin the sizes).
SPLITS = ("train", "test")
SPLIT_SEED = 14
TRAIN_FRACTION = 0.5


def split_rows(task_set: str, split: str) -> tuple[TaskRow, ...]:
    """The ``train`` or ``test`` half of a task set (see the comment above for the rule), in set order."""
    if split not in SPLITS:
        raise KeyError(f"Unknown split {split[:80]!r}: use {' or '.join(SPLITS)}.")
    rows = task_rows(task_set)
    strata: dict[str, list[TaskRow]] = {}
    for row in sorted(rows, key=lambda r: r.task_id):
        size = f"/{row.charges}" if task_set in SIZE_STRATIFIED else ""
        strata.setdefault(f"{row.expense_type}/{row.difficulty}{size}", []).append(row)
    train: set[str] = set()
    for stratum, members in sorted(strata.items()):
        rng = random.Random(f"{SPLIT_SEED}/{task_set}/{stratum}")
        shuffled = list(members)
        rng.shuffle(shuffled)
        train.update(r.task_id for r in shuffled[: int(len(members) * TRAIN_FRACTION + 0.5)])
    return tuple(r for r in rows if (r.task_id in train) == (split == "train"))


def resolve_tasks(selection: str) -> tuple[str, list[str]]:
    """A ``--tasks`` value -> (task set, task ids in set order); every command parses it here.

    ``SET`` (all), ``SET:train`` / ``SET:test`` (the fixed split), ``SET:id1,id2`` (those ids).
    Raises ``KeyError`` naming what is unknown.
    """
    task_set, _, rest = selection.strip().partition(":")
    task_set = task_set.strip()
    known = [row.task_id for row in task_rows(task_set)]
    rest = rest.strip()
    if rest in SPLITS:
        return task_set, [row.task_id for row in split_rows(task_set, rest)]
    chosen = [i.strip() for i in rest.split(",") if i.strip()] if rest else known
    unknown = [i for i in chosen if i not in known]
    if unknown:
        raise KeyError(
            f"Unknown task id(s) in {task_set}: {', '.join(unknown)} (or use {task_set}:train / {task_set}:test)."
        )
    return task_set, chosen
