"""What every workflow's task is to the generic layers (session, database, grading caches, MCP).

A workflow's own task model (``erp_sim.workflows.itemization.task.Task``) has the fields its forms,
grader and oracle read; the generic layers read only these, and find the task's workflow by the
model's ``workflow`` name (``erp_sim.workflows.of_task``). It imports nothing of ours, so every
layer can name it.
"""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable


@runtime_checkable
class WorkflowTask(Protocol):
    """One episode's task: an id within its set, the seed of its world, and what the user asks."""

    workflow: ClassVar[str]  # the registry name of the task's workflow (erp_sim.workflows.PACKAGES)

    @property
    def task_id(self) -> str: ...

    @property
    def task_set(self) -> str: ...

    @property
    def seed(self) -> int: ...

    def instruction(self, *, include_receipt: bool = False) -> str:
        """The user's first message (``include_receipt``: the source documents listed in it too)."""
        ...

    def mapping_rules(self) -> str:
        """The domain rules the agent may rely on beside the instruction (the MCP task resource)."""
        ...
