"""erp_sim: a deterministic, in-process Dynamics 365 expense ERP for studying LLM agents.

    from erp_sim import open_session
    session = open_session("hotel_50", "hotel-007")
    response = session.call("form_find_menu_item", {"menuItemFilter": "expense"})
    print(response.text)            # the verbose D365-shaped JSON the agent sees
    print(session.grade())          # success, strict_success, itemized_fraction, collateral
"""

from __future__ import annotations

from erp_sim.errors import ErpError
from erp_sim.faults import FaultProfile
from erp_sim.grading import Grade, grade_session
from erp_sim.oracle import OracleError, oracle_calls, run_oracle
from erp_sim.session import VERBOSITIES, ErpSession, ToolResponse
from erp_sim.tasks import Task, get_task, load_task_set
from erp_sim.tools import TOOLS, Tool, openai_tool_schemas


def open_session(task_set: str = "hotel_50", task: "str | int | Task" = 0, **options) -> ErpSession:
    """Open a session on a task, given by id (``hotel-007``), index, or ``Task``. Options go to ``ErpSession``."""
    if not isinstance(task, Task):
        task = get_task(task_set, task)
    return ErpSession(task, **options)


__all__ = ["ErpError", "ErpSession", "FaultProfile", "Grade", "OracleError", "TOOLS", "Task", "Tool", "ToolResponse",
           "VERBOSITIES", "get_task", "grade_session", "load_task_set", "open_session", "openai_tool_schemas",
           "oracle_calls", "run_oracle"]
