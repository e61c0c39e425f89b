"""Itemization as the generic layers see it: ``WORKFLOW``, loaded by the first session of an itemization task."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from erp_sim.workflows import TaskPrompt, Workflow, folder_workflow
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


def _task_prompt_text(brief: Mapping[str, str]) -> str:
    return f"{brief['instruction']}\n\nSubcategory rules:\n{brief['mapping_rules']}"


TASK_PROMPT = TaskPrompt(
    name="itemization_task",
    description="The user's request for this session's task, with the receipt-wording-to-subcategory rules.",
    text=_task_prompt_text,
    kind="expense-itemization",
    resource_description="This session's task: id, instruction and subcategory rules (no answers).",
)

WORKFLOW: Workflow[Task] = folder_workflow(sys.modules[__name__])
