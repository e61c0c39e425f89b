"""Bank reconciliation as the generic layers see it: ``WORKFLOW``, loaded by the first session of one of its tasks."""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from erp_sim.workflows import Workflow
from erp_sim.workflows.bank_reconciliation import SCHEMA_FILE
from erp_sim.workflows.bank_reconciliation.actions import ACTIONS
from erp_sim.workflows.bank_reconciliation.catalog import shared_rows
from erp_sim.workflows.bank_reconciliation.forms import FORMS, MENU_ITEMS
from erp_sim.workflows.bank_reconciliation.grading import GRADER
from erp_sim.workflows.bank_reconciliation.oracle import oracle_calls
from erp_sim.workflows.bank_reconciliation.task import Task
from erp_sim.workflows.bank_reconciliation.world import build_rows

if TYPE_CHECKING:
    from erp_sim.odata.entities import DataCatalog


def _clock(task: Task) -> str:
    """Three days after the statement's last day, at nine: when the accountant reconciles it."""
    return f"{date.fromisoformat(task.to_date) + timedelta(days=3)} 09:00:00"


def _data() -> DataCatalog:
    """The entity sets, at the data tools' first call (as itemization's: an episode of form tools need not pay)."""
    from erp_sim.workflows.bank_reconciliation.entity_sets import CATALOG

    return CATALOG


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
)
