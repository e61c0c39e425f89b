"""ACON's train and test task sets: the default test set, and the overlap between the two that acon optimize refuses."""

from __future__ import annotations

from erp_sim.task_sets import resolve_tasks, task_rows


def overlapping_tasks(tasks: str, test_tasks: str) -> list[str]:
    """Test tasks that are also train tasks (the same fixture line: an expense-type view such as
    ``Hotel`` holds expense_types' tasks; hotel_50's ``hotel-001`` is another task than theirs)."""
    if test_tasks == "none":
        return []

    def lines(selection: str) -> dict[str, str]:
        task_set, ids = resolve_tasks(selection)
        by_id = {row.task_id: row.line for row in task_rows(task_set)}
        return {by_id[task_id]: task_id for task_id in ids}

    train = lines(tasks)
    return [task_id for line, task_id in lines(test_tasks).items() if line in train]


def overlap_message(tasks: str, test_tasks: str, shared: list[str]) -> str:
    named = ", ".join(shared[:5]) + (f" and {len(shared) - 5} more" if len(shared) > 5 else "")
    return (
        f"--tasks {tasks} and --test-tasks {test_tasks} share {len(shared)} task(s) ({named}): "
        "a test task must not be a train task"
    )


def default_test_tasks(tasks: str) -> str:
    task_set, _, part = tasks.partition(":")
    return f"{task_set}:test" if part.strip() == "train" else "none"
