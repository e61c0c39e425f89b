"""Bank reconciliation as the generic layers see it: ``WORKFLOW``, loaded by the first session of one of its tasks."""

from __future__ import annotations

import sys
from datetime import date, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from erp_sim.workflows import Workflow, folder_workflow, task_prompt_with_rules
from erp_sim.workflows.bank_reconciliation.grading import Progress
from erp_sim.workflows.bank_reconciliation.task import Task

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject


def clock(task: Task) -> str:
    """Three days after the statement's last day, at nine: when the accountant reconciles it."""
    return f"{date.fromisoformat(task.to_date) + timedelta(days=3)} 09:00:00"


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


TASK_PROMPT = task_prompt_with_rules(
    "bank_reconciliation",
    kind="bank-reconciliation",
    rules="matching rules",
    description="The user's request for this session's task, with the rules for matching statement lines.",
)

WORKFLOW: Workflow[Task] = folder_workflow(sys.modules[__name__])
