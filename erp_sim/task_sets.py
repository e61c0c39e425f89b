"""Task sets: which tasks a set holds (names, fixture files, views, the train/test split), and loading them.

Every workflow owns some sets (``erp_sim.workflows.TaskSets``: its fixture files and how their lines
read); this module knows them all, by name. Reading a set's rows is free of pydantic, so checking a
set's name and size (``gym.make``, ``--tasks`` parsing) costs a JSON read; ``load_task_set`` and
``get_task`` then validate the rows with the owning workflow's task model.
"""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim import workflows
from erp_sim.workflows import TaskRow, TaskSets

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask


def _fixtures_dir() -> Path:
    """$ERP_SIM_FIXTURES, else the repository's fixtures/ (editable installs), else the installed copy."""
    if os.environ.get("ERP_SIM_FIXTURES"):
        return Path(os.environ["ERP_SIM_FIXTURES"])
    in_repository = Path(__file__).resolve().parent.parent / "fixtures"
    return in_repository if in_repository.is_dir() else Path(sys.prefix) / "share" / "erp-sim" / "fixtures"


FIXTURES_DIR = _fixtures_dir()


@cache
def task_rows(name: str) -> tuple[TaskRow, ...]:
    """The rows of a task set by name: a fixture set (``hotel_50``), a workflow's view of one (``Meals``: the
    Meals tasks of expense_types), or one half of a set's fixed split (``hotel_50:train``). Raises ``KeyError``
    naming the known sets."""
    base, sep, split = name.partition(":")
    if sep:
        return split_rows(base, split)
    owners = workflows.task_sets()
    for workflow, sets in owners.items():
        if name in sets.files:
            with (FIXTURES_DIR / sets.files[name]).open(encoding="utf-8") as lines:
                return tuple(_row(workflow, sets, line) for line in lines if line.strip())
    for sets in owners.values():
        view = sets.view(name, task_rows)
        if view:
            return view
    files = sorted(set_name for sets in owners.values() for set_name in sets.files)
    views = sorted(view_name for sets in owners.values() for view_name in sets.view_names(task_rows))
    raise KeyError(f"Unknown task set {name[:80]!r}. Known: {', '.join(files + views)}.")


def workflow_of(name: str, *, fallback: bool = False) -> str:
    """The workflow that owns a task set (a fixture set, a view of one, or a split): ``KeyError`` naming the
    known sets when it is none of them, or with ``fallback`` the first registered workflow (for records of
    a set no workflow owns, such as a hand-made trajectory)."""
    try:
        rows = task_rows(name)
    except KeyError:
        if fallback:
            return next(iter(workflows.PACKAGES))
        raise
    if rows:
        return rows[0].workflow
    base = name.partition(":")[0]
    return next(workflow for workflow, sets in workflows.task_sets().items() if base in sets.files)


def _row(workflow: str, sets: TaskSets, line: str) -> TaskRow:
    fields = json.loads(line)
    return TaskRow(fields["task_id"], workflow, sets.stratum(fields), sets.size(fields), line.strip())


# --- train/test splits --------------------------------------------------------------------
# ACON (Kang et al., 2025, arXiv 2510.00615) optimises its compression guideline on training
# tasks and reports on held-out ones. Our split is fixed by SPLIT_SEED and stratified: within
# every stratum (the workflow's TaskRow.stratum, e.g. expense type and difficulty, and the size in the sets
# its TaskSets.size_stratified names), the tasks in id order are shuffled by a Random
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
    by_size = any(task_set in sets.size_stratified for sets in workflows.task_sets().values())
    strata: dict[str, list[TaskRow]] = {}
    for row in sorted(rows, key=lambda r: r.task_id):
        strata.setdefault("/".join(row.stratum) + (f"/{row.size}" if by_size else ""), []).append(row)
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
    split = selected_split(selection)
    if split is not None:
        return task_set, [row.task_id for row in split_rows(task_set, split)]
    rest = rest.strip()
    given = [i.strip() for i in rest.split(",") if i.strip()] if rest else known
    chosen = [matching_task_id(i, known) or i for i in given]
    unknown = [i for i in chosen if i not in known]
    if unknown:
        near = sorted({m for i in unknown for m in difflib.get_close_matches(i, known, n=3, cutoff=0.6)})
        raise KeyError(
            f"Unknown task id(s) in {task_set}: {', '.join(unknown)}"
            + (f"; did you mean {', '.join(near)}?" if near else "")
            + f" (ids run {known[0]} .. {known[-1]}; or use {task_set}:train / {task_set}:test)."
        )
    return task_set, chosen


def selected_split(selection: str) -> str | None:
    """The split a ``--tasks`` value selects (``hotel_50:test`` -> ``test``); None for a whole set or task ids."""
    rest = selection.partition(":")[2].strip()
    return rest if rest in SPLITS else None


_NUMBER = re.compile(r"\d+")


def matching_task_id(given: str, known: list[str]) -> str | None:
    """``given`` if known, else the one known id that differs from it only in zero padding (``hotel-7`` is
    ``hotel-007``, ``long-10-0`` is ``long-010-00``); None when there is none, or more than one."""
    if given in known:
        return given

    def unpadded(task_id: str) -> str:
        return _NUMBER.sub(lambda number: str(int(number.group())), task_id)

    matches = [task_id for task_id in known if unpadded(task_id) == unpadded(given)]
    return matches[0] if len(matches) == 1 else None


# --- tasks ------------------------------------------------------------------------------------
def load_task_set(name: str) -> list[WorkflowTask]:
    """Load a task set by name (``hotel_50``, ``Meals``, ``hotel_50:train``: see ``task_rows``)."""
    return list(_load_task_set(name))


@cache
def _load_task_set(name: str) -> tuple[WorkflowTask, ...]:
    owners = workflows.task_sets()
    return tuple(owners[row.workflow].parse(row.line) for row in task_rows(name))


INDEX_DIGITS = 9  # a longer index is out of range of any task set
MAX_TASK_ID_SHOWN = 80  # an unknown task id is quoted this far in the error


def is_task_reference(value: object) -> bool:
    """A task id or a 0-based index; ``True`` is an int to Python, not task 1."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def get_task(task_set: str, task: str | int) -> WorkflowTask:
    """A task by id (``hotel-007``) or by 0-based index within its set."""
    if not is_task_reference(task):
        raise KeyError(f"A task is a task id (e.g. hotel-007) or a 0-based index, got {type(task).__name__}.")
    tasks = _load_task_set(task_set)
    # an index's digits are ASCII ("²" is a digit to str.isdigit, not to int) and few (int refuses 4,300)
    if isinstance(task, int) or (isinstance(task, str) and task.isascii() and task.isdigit()):
        index = int(task) if isinstance(task, int) or len(task) <= INDEX_DIGITS else -1
        if not 0 <= index < len(tasks):
            shown = str(task) if len(str(task)) <= MAX_TASK_ID_SHOWN else f"{str(task)[:MAX_TASK_ID_SHOWN]}..."
            raise KeyError(f"Task index {shown} out of range: {task_set} has {len(tasks)} tasks.")
        return tasks[index]
    task = matching_task_id(task, [candidate.task_id for candidate in tasks]) or task
    for candidate in tasks:
        if candidate.task_id == task:
            return candidate
    raise KeyError(f"No task {task[:MAX_TASK_ID_SHOWN]!r} in task set {task_set!r}.")
