"""Expense itemization: split an expense line into itemized lines, one per receipt charge, until the
remaining amount is exactly 0.00 (the rule in prose: ``rules.md``; in code: ``ledger``).

Its task sets are ``TASK_SETS`` below (cheap to read: no pydantic); everything else the generic
layers read is ``workflow.WORKFLOW``, loaded by the first session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim.workflows import RowSource, TaskRow, TaskSets

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject
    from erp_sim.workflow_task import WorkflowTask

SCHEMA_FILE = Path(__file__).with_name("schema.json")  # compiled from ``tables`` (see there)

# Each expense-type set (``Meals``) is a view of expense_types.
FILES = {"hotel_50": "hotel_50.jsonl", "expense_types": "expense_types.jsonl", "long_horizon": "long_horizon.jsonl"}


def _stratum(fields: JsonObject) -> tuple[str, ...]:
    return fields["expense_type"], fields["difficulty"]


def _charges(fields: JsonObject) -> int:
    """Receipt charges over every line of the task."""
    return sum(len(part["receipt_items"]) for part in [fields, *fields.get("extra_lines", ())])


def _expense_type_view(name: str, rows: RowSource) -> tuple[TaskRow, ...]:
    return tuple(row for row in rows("expense_types") if row.stratum[0].lower() == name.lower())


def _expense_type_names(rows: RowSource) -> list[str]:
    return sorted({row.stratum[0] for row in rows("expense_types")})


def _parse(line: str) -> WorkflowTask:
    from erp_sim.workflows.itemization.task import Task  # pydantic loads with the first task, not at gym.make

    return Task.model_validate_json(line)


def _generate(name: str) -> list[str]:
    from erp_sim.workflows.itemization.task import task_to_json  # as in _parse: not at gym.make
    from erp_sim.workflows.itemization.taskgen import TASK_SETS

    return [task_to_json(task) for task in TASK_SETS[name]()]


# One id per fixture set and per expense type; each is the same class with its task set.
ENV_IDS = {
    "erp_sim/ExpenseItemization-v0": "hotel_50",
    "erp_sim/AllExpenseTypes-v0": "expense_types",
    "erp_sim/HotelItemization-v0": "Hotel",
    "erp_sim/CarRentalItemization-v0": "CarRental",
    "erp_sim/AirfareItemization-v0": "Airfare",
    "erp_sim/MealsItemization-v0": "Meals",
    "erp_sim/ConferenceItemization-v0": "Conference",
    "erp_sim/LongHorizon-v0": "long_horizon",
}
# Up to 200 receipt charges over 1-5 lines take two calls a charge and more: room for them.
STEP_LIMITS = {"erp_sim/LongHorizon-v0": 1500}

# long_horizon's split stratifies by size too: each rung of the ladder is split alike.
TASK_SETS = TaskSets(
    files=FILES,
    stratum=_stratum,
    size=_charges,
    parse=_parse,
    generate=_generate,
    size_stratified=frozenset({"long_horizon"}),
    view=_expense_type_view,
    view_names=_expense_type_names,
    env_ids=ENV_IDS,
    step_limits=STEP_LIMITS,
    demo_tasks={"hotel_50": "hotel-007"},  # the task the README walks through
)
