"""The failure taxonomy: why an episode failed, from its trajectory and final ERP state.

One category per failed episode, checked in this order (the first that applies wins, so the
most specific, state-visible cause is named before generic ones):

0. ``context_overflow``: a request would not fit the model's context window (``--context-window``
   or the server's 400 saying so); the study's motivation for context management.
   ``model_request_refused``: the model service refused a request for another reason (a content
   filter, an invalid request): the episode could not go on.
1. ``stalled_unanswered_question``: the agent asked the user and nobody answered (C1).
2. ``step_limit``: the step budget ran out (``TimeLimit`` or the runner's call cap).
3. ``invalid_tool_calls``: over a quarter of the agent's actions were malformed.
4. the task's workflow's categories (``erp_sim.workflows.faces.FailureRules``; itemization's in
   ``erp_sim.workflows.itemization.failures``: over_itemization, duplicate_line, wrong_subcategory,
   wrong_amount, then the generic ``unsaved_or_unclosed_form``, then stale_state), from the grade and
   what the agent told the user.
5. ``premature_termination``: the conversation ended (or the agent stopped) with work left.
"""

from __future__ import annotations

import re

from erp_sim import task_sets, workflows
from erp_sim.agents.trajectory import Trajectory
from erp_sim.outcomes import FailureCategory

# "HTTP 400: HTTP 400: Error code: 400 - ", as rows written before the model layer named the status once read
_REPEATED_STATUS = re.compile(r"(HTTP (\d{3}): )(?:HTTP \2: )*(?:Error code: \2(?: - )?)?")


def error_text(error: object) -> str:
    """An infrastructure or model error as a row stores it, with the HTTP status named once."""
    return _REPEATED_STATUS.sub(r"\1", str(error or ""))


def classify_failure(trajectory: Trajectory) -> FailureCategory | None:
    grade = trajectory.grade
    if grade is not None and grade.success:
        return None
    metrics = trajectory.metrics
    if trajectory.termination == "context_overflow":
        return "context_overflow"
    if trajectory.termination == "model_error":
        return "model_request_refused"
    if trajectory.termination == "stalled":
        return "stalled_unanswered_question"
    if trajectory.termination == "step_limit":
        return "step_limit"
    if metrics.steps and metrics.invalid_actions > metrics.steps / 4:
        return "invalid_tool_calls"
    said = [
        m.get("content") or "" for m in trajectory.messages if m.get("role") == "assistant" and not m.get("tool_calls")
    ]
    face = workflows.harness(task_sets.workflow_of(trajectory.task_set, fallback=True))
    return face.failures.classify(grade, said) or "premature_termination"
