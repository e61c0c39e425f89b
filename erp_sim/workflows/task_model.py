"""The pydantic base of every workflow's task model: what ``erp_sim.workflow_task.WorkflowTask`` asks of a
task (its id, set and seed), as fields, and frozen, as a task is once read from a fixture line.

A workflow's ``task`` module builds on it (``class Task(TaskModel)``: its own fields follow these three, so
a fixture line's JSON starts ``{"task_id":...,"task_set":...,"seed":...}``); it loads pydantic, so the cheap
registry (``TaskSets``) never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from erp_sim.forms.base import FormHost
    from erp_sim.workflow_task import WorkflowTask


class TaskModel(BaseModel):
    """One episode's task: its id within its set, the set, and the seed of its world."""

    model_config = ConfigDict(frozen=True)
    workflow: ClassVar[str]  # the registry name of the task's workflow (erp_sim.workflows.PACKAGES)
    task_id: str = Field(description="Unique id, e.g. hotel-007 or bank-007.")
    task_set: str = Field(description="The fixture set the task belongs to.")
    seed: int = Field(description="Seed of everything random in the task's world.")

    @classmethod
    def of(cls, task: WorkflowTask) -> Self:
        """A task the generic layers hand over (``erp_sim.get_task``, ``ErpSession.task``), as the workflow's own
        task it is; AssertionError for another workflow's."""
        assert isinstance(task, cls), type(task)
        return task

    @classmethod
    def of_session(cls, session: FormHost) -> Self:
        """The session's task, as the workflow's own (a session hosts its own workflow's task)."""
        return cls.of(session.task)
