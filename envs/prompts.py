"""The agent's system prompt for a task: its workflow's (``erp_sim.workflows.Workflow.system_prompt``).

For itemization it is what the study's system prompt gave GPT-5 (``erp_sim.workflows.itemization.prompt``):
the procedure, the valid subcategories, the receipt-wording rules and the instruction to keep going until
the remaining amount is zero. Constant per the task's kind, so agents can cache it.
"""

from __future__ import annotations

from erp_sim import workflows
from erp_sim.workflow_task import WorkflowTask


def system_prompt(task: WorkflowTask) -> str:
    """The system prompt for an agent working on ``task``."""
    return workflows.of_task(task).system_prompt(task)
