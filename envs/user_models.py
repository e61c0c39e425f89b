"""The simulated user inside the env, and the small protocol any user model implements.

The study (C2-C4) put a second model in the conversation as the "user", guided by a strict
completion protocol (for itemization: the task is done only when the itemized lines are saved, the
remaining amount is 0.00 and the form is closed). ``RuleBasedUser`` follows the task's workflow's
protocol deterministically (what its user says is the workflow's: ``Workflow.user_reply``); an LLM
user (in ``agents``) implements the same two methods.

Protocol (kept small on purpose):

- ``reset(task)``: a new conversation about ``task`` starts; forget the previous one.
- ``reply(message, view) -> UserReply``: answer one agent message. ``view`` gives the task,
  the turn number and the real grade of the ERP state (the user can look at the ERP, the
  agent's claims are not taken on trust). ``UserReply.ends_conversation`` ends the episode.

The env enforces ``max_user_turns`` itself, so a user model never has to count.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from erp_sim import workflows

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask


class UserReply(NamedTuple):
    text: str
    ends_conversation: bool = False


class UserView:
    """What the user may look at when replying. ``grade`` is computed on first access only."""

    def __init__(self, task: WorkflowTask, turn: int, grade: Callable[[], Any]):
        self.task = task
        self.turn = turn  # 1-based number of this agent message
        self._grade = grade

    @cached_property
    def grade(self) -> Any:
        """The full grade (the workflow's grade model, ``erp_sim.Grade`` for itemization)."""
        return self._grade()


@runtime_checkable
class UserModel(Protocol):
    def reset(self, task: WorkflowTask) -> None: ...

    def reply(self, message: str, view: UserView) -> UserReply: ...


# --- the rule-based user ---------------------------------------------------------------------
class RuleBasedUser:
    """The task's workflow's user protocol as rules (``erp_sim.workflows.Workflow.user_reply``: for
    itemization, the study's, in ``erp_sim.workflows.itemization.user``); deterministic, stateless
    between messages. The message is read lower-cased with its whitespace collapsed."""

    def __init__(self) -> None:
        self.task: WorkflowTask | None = None

    def reset(self, task: WorkflowTask) -> None:
        self.task = task

    def reply(self, message: str, view: UserView) -> UserReply:
        text = " ".join(str(message).lower().split())
        return UserReply(*workflows.of_task(view.task).user_reply(text, view))


def make_user_model(spec: str | UserModel | None) -> UserModel | None:
    """``"rule"`` -> ``RuleBasedUser()``; ``None`` or ``"none"`` -> no user (the study's C1); objects pass through."""
    if spec is None or (isinstance(spec, str) and spec.lower() == "none"):
        return None
    if isinstance(spec, str):
        if spec.lower() == "rule":
            return RuleBasedUser()
        raise ValueError(f"user_model must be 'rule', 'none', None or a UserModel object, got {spec!r}")
    if not isinstance(spec, UserModel):
        raise TypeError(f"user_model {spec!r} does not implement reset(task) and reply(message, view)")
    return spec
