"""Itemization as the generic layers see it: ``WORKFLOW``, loaded by the first session of an itemization task."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from erp_sim.workflows import TaskPrompt, Workflow
from erp_sim.workflows.itemization import SCHEMA_FILE, user
from erp_sim.workflows.itemization.actions import ACTIONS
from erp_sim.workflows.itemization.forms import FORMS, MENU_ITEMS
from erp_sim.workflows.itemization.grading import GRADER, Progress
from erp_sim.workflows.itemization.oracle import oracle_calls
from erp_sim.workflows.itemization.prompt import system_prompt
from erp_sim.workflows.itemization.task import Task
from erp_sim.workflows.itemization.world import build_rows, catalog_rows

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject
    from erp_sim.odata.entities import DataCatalog


def _clock(task: Task) -> str:
    return f"{task.transaction_date} 12:00:00"  # noon of the charge


def _data() -> DataCatalog:
    """The entity sets, imported on first use (the data tools' first call): building them and importing the OData engine they
    write through costs about 10 ms (``scripts/bench_startup.py``'s first reset), which an episode of form
    tools need not pay."""
    from erp_sim.workflows.itemization.entity_sets import CATALOG

    return CATALOG


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

WORKFLOW: Workflow[Task] = Workflow(
    name="itemization",
    schema_file=SCHEMA_FILE,
    shared_rows=catalog_rows,
    task_rows=build_rows,
    clock=_clock,
    forms=FORMS,
    menu_items=MENU_ITEMS,
    data=_data,
    actions=ACTIONS,
    grader=GRADER,
    oracle=oracle_calls,
    system_prompt=system_prompt,
    user_reply=user.reply,
    task_prompt=TASK_PROMPT,
    task_info=task_info,
    describe_task=describe_task,
    progress_info=progress_info,
    progress_line=progress_line,
)
