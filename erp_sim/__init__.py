"""erp_sim: a deterministic, in-process Dynamics 365 expense ERP for studying LLM agents.

from erp_sim import open_session
session = open_session("hotel_50", "hotel-007")
response = session.call("form_find_menu_item", {"menuItemFilter": "expense"})
print(response.text)            # the verbose D365-shaped JSON the agent sees
print(session.grade())          # success, strict_success, itemized_fraction, collateral
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Unpack

# Public names and the module that holds each. They load on first use, so `import erp_sim` (and
# every `erp-sim` command, Gymnasium's registration) does not pay for pydantic and SQLite up front.
# ``Task`` and ``Grade`` are the itemization workflow's models (erp_sim.workflows.itemization).
_LAZY = {
    "ErpError": "erp_sim.errors",
    "FaultProfile": "erp_sim.faults",
    "Grade": "erp_sim.workflows.itemization.grading",
    "grade_session": "erp_sim.grading",
    "OracleError": "erp_sim.workflows",
    "oracle_calls": "erp_sim.oracle",
    "run_oracle": "erp_sim.oracle",
    "ErpSession": "erp_sim.erp_session",
    "ToolResponse": "erp_sim.erp_session",
    "Task": "erp_sim.workflows.itemization.task",
    "get_task": "erp_sim.task_sets",
    "load_task_set": "erp_sim.task_sets",
    "TOOLS": "erp_sim.tool_registry",
    "Tool": "erp_sim.tool_registry",
    "openai_tool_schemas": "erp_sim.tool_registry",
    "VERBOSITIES": "erp_sim.verbosity",  # the response shapes a session can render
}

if TYPE_CHECKING:
    from erp_sim.erp_session import ErpSession, SessionOptions, ToolResponse
    from erp_sim.errors import ErpError
    from erp_sim.faults import FaultProfile
    from erp_sim.grading import grade_session
    from erp_sim.oracle import oracle_calls, run_oracle
    from erp_sim.task_sets import get_task, load_task_set
    from erp_sim.tool_registry import TOOLS, Tool, openai_tool_schemas
    from erp_sim.verbosity import VERBOSITIES
    from erp_sim.workflow_task import WorkflowTask
    from erp_sim.workflows import OracleError
    from erp_sim.workflows.itemization.grading import Grade
    from erp_sim.workflows.itemization.task import Task


def __getattr__(name: str) -> Any:  # any of the _LAZY names, typed by the imports above
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'erp_sim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def open_session(
    task_set: str = "hotel_50", task: str | int | WorkflowTask = 0, **options: Unpack[SessionOptions]
) -> ErpSession:
    """Open a session on a task, given by id (``hotel-007``), index, or task object (``Task``). Options go to
    ``ErpSession``."""
    from erp_sim.erp_session import ErpSession
    from erp_sim.task_sets import get_task
    from erp_sim.workflow_task import WorkflowTask

    if not isinstance(task, WorkflowTask):
        task = get_task(task_set, task)
    return ErpSession(task, **options)


__all__ = [
    "TOOLS",
    "VERBOSITIES",
    "ErpError",
    "ErpSession",
    "FaultProfile",
    "Grade",
    "OracleError",
    "Task",
    "Tool",
    "ToolResponse",
    "get_task",
    "grade_session",
    "load_task_set",
    "open_session",
    "openai_tool_schemas",
    "oracle_calls",
    "run_oracle",
]
