"""Grading a session from the final ERP state (and the open forms), never from the transcript.

Each workflow grades its own tasks (``erp_sim.workflows.Grader``: e.g. itemization's zero-remainder
rule and strict success against the receipt); these entry points find the session's grader, and
``collateral`` is the diff every grader shares: what changed that the task did not ask for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from erp_sim.forms.base import FormHost

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject
    from erp_sim.workflows import Progress, Workflow


class GradedSession(FormHost, Protocol):
    """What grading reads of a session: the forms' host, and the workflow it runs."""

    workflow: Workflow[Any]


def grade_dict(session: GradedSession, target: Any = None, state: Progress | None = None) -> JsonObject:
    """The full grade as its model's JSON, without the model's cost. ``target`` (what the task's grade is
    about, the grader's ``target``) and ``state`` (its current ``progress``) may be passed by callers that
    know them."""
    grader = session.workflow.grader
    return grader.grade(session, grader.target(session) if target is None else target, state)


def grade_session(session: GradedSession, target: Any = None, state: Progress | None = None) -> Any:
    """The full grade: the workflow's grade model (``erp_sim.Grade`` for itemization; see ``grade_dict``)."""
    return session.workflow.grader.model.model_validate(grade_dict(session, target, state))
