"""Itemization as the generic layers see it: ``WORKFLOW``, loaded by the first session of an itemization task."""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import TYPE_CHECKING

from erp_sim.workflows import Workflow, folder_workflow, task_prompt_with_rules
from erp_sim.workflows.itemization.grading import Progress
from erp_sim.workflows.itemization.task import Task

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject


def clock(task: Task) -> str:
    return f"{task.transaction_date} 12:00:00"  # noon of the charge


def task_info(task: Task) -> JsonObject:
    """``info["task"]`` (of a multi-line task: its first line, and the charges of all lines)."""
    return {
        "task_id": task.task_id,
        "task_set": task.task_set,
        "expense_type": task.expense_type,
        "family": task.family,
        "difficulty": task.difficulty,
        "report_number": task.report_number,
        "line_number": task.line_number,
        "header_amount": task.header_amount,
        "currency": task.currency,
        "item_count": task.item_count,
    }


def describe_task(fields: JsonObject) -> str:
    return f"{fields['expense_type']}, {fields['difficulty']}, {fields['item_count']} receipt charges"


@lru_cache(maxsize=64)  # Progress is frozen and, while nothing changes, the same object step after step
def progress_info(state: Progress) -> JsonObject:
    """``info["grade"]``: the cheap part of ``Grade`` (the env hands out a copy)."""
    summary = state.summary
    return {
        "success": state.success,
        "remaining_amount": f"{summary.remaining:.2f}",
        "itemized_fraction": float(summary.itemized / summary.total) if summary.total else 0.0,
        "saved_lines": summary.line_count,
        "unsaved_rows": state.unsaved_rows,
        "itemization_form_open": state.itemization_form_open,
    }


def progress_line(fields: JsonObject) -> str:
    return (
        f"remaining {fields['remaining_amount']}, saved lines {fields['saved_lines']}, "
        f"unsaved rows {fields['unsaved_rows']}, itemization form open: {fields['itemization_form_open']}"
    )


TASK_PROMPT = task_prompt_with_rules(
    "itemization",
    kind="expense-itemization",
    rules="subcategory rules",
    description="The user's request for this session's task, with the receipt-wording-to-subcategory rules.",
)

WORKFLOW: Workflow[Task] = folder_workflow(sys.modules[__name__])
