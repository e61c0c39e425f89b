"""Bank reconciliation as the generic layers see it: ``WORKFLOW``, loaded by the first session of one of its tasks."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from erp_sim.workflows import TaskPrompt, Workflow
from erp_sim.workflows.bank_reconciliation import SCHEMA_FILE, user
from erp_sim.workflows.bank_reconciliation.actions import ACTIONS
from erp_sim.workflows.bank_reconciliation.catalog import shared_rows
from erp_sim.workflows.bank_reconciliation.forms import FORMS, MENU_ITEMS
from erp_sim.workflows.bank_reconciliation.grading import GRADER, Progress
from erp_sim.workflows.bank_reconciliation.oracle import oracle_calls
from erp_sim.workflows.bank_reconciliation.prompt import system_prompt
from erp_sim.workflows.bank_reconciliation.task import Task
from erp_sim.workflows.bank_reconciliation.world import build_rows

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject
    from erp_sim.odata.entities import DataCatalog


def _clock(task: Task) -> str:
    """Three days after the statement's last day, at nine: when the accountant reconciles it."""
    return f"{date.fromisoformat(task.to_date) + timedelta(days=3)} 09:00:00"


def _data() -> DataCatalog:
    """The entity sets, imported on first use (the data tools' first call), as itemization's: an episode of form
    tools need not pay for them (``scripts/bench_startup.py``'s first reset)."""
    from erp_sim.workflows.bank_reconciliation.entity_sets import CATALOG

    return CATALOG


def task_info(task: Task) -> JsonObject:
    """``info["task"]``: the account, the statement and its size."""
    return {
        "task_id": task.task_id,
        "task_set": task.task_set,
        "difficulty": task.difficulty,
        "account_id": task.account_id,
        "statement_id": task.statement_id,
        "currency": task.currency,
        "statement_lines": task.line_count,
        "fee_lines": len(task.fees),
        "statement_total": f"{task.statement_total:.2f}",
    }


def describe_task(fields: JsonObject) -> str:
    return f"{fields['account_id']} statement {fields['statement_id']}, {fields['difficulty']}, {fields['statement_lines']} lines"


@lru_cache(maxsize=64)  # Progress is frozen and, while nothing changes, the same object step after step
def progress_info(state: Progress) -> JsonObject:
    """``info["grade"]``: the cheap part of the grade (the env hands out a copy)."""
    summary = state.summary
    return {
        "success": state.success,
        "reconciled_fraction": float(state.done_fraction),
        "difference": f"{summary.difference:.2f}",
        "open_lines": summary.open_line_count,
        "reconciled": summary.reconciled,
    }


def progress_line(fields: JsonObject) -> str:
    return (
        f"open lines {fields['open_lines']}, unreconciled difference {fields['difference']}, "
        f"marked reconciled: {fields['reconciled']}"
    )


def _task_prompt_text(brief: Mapping[str, str]) -> str:
    return f"{brief['instruction']}\n\nMatching rules:\n{brief['mapping_rules']}"


TASK_PROMPT = TaskPrompt(
    name="bank_reconciliation_task",
    description="The user's request for this session's task, with the rules for matching statement lines.",
    text=_task_prompt_text,
    kind="bank-reconciliation",
    resource_description="This session's task: id, instruction and matching rules (no answers).",
)

WORKFLOW: Workflow[Task] = Workflow(
    name="bank_reconciliation",
    schema_file=SCHEMA_FILE,
    shared_rows=shared_rows,
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
