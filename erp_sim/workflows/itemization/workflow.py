"""Itemization as the generic layers see it: ``WORKFLOW``, loaded by the first session of an itemization task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from erp_sim.workflows import Workflow
from erp_sim.workflows.itemization import SCHEMA_FILE
from erp_sim.workflows.itemization.actions import ACTIONS
from erp_sim.workflows.itemization.forms import FORMS, MENU_ITEMS
from erp_sim.workflows.itemization.grading import GRADER
from erp_sim.workflows.itemization.oracle import oracle_calls
from erp_sim.workflows.itemization.task import Task
from erp_sim.workflows.itemization.world import build_rows, catalog_rows

if TYPE_CHECKING:
    from erp_sim.odata.entities import DataCatalog


def _clock(task: Task) -> str:
    return f"{task.transaction_date} 12:00:00"  # noon of the charge


def _data() -> DataCatalog:
    """The entity sets, at the data tools' first call: building them and importing the OData engine they
    write through costs about 10 ms (``scripts/bench_startup.py``'s first reset), which an episode of form
    tools need not pay."""
    from erp_sim.workflows.itemization.entity_sets import CATALOG

    return CATALOG


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
)
