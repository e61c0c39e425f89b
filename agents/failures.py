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
4. ``over_itemization``: saved lines exceed the header amount (remaining < 0).
5. ``duplicate_line``: a receipt charge was saved more times than it appears.
6. ``wrong_subcategory``: a saved line has a charge's date and amount but another subcategory.
7. ``wrong_amount``: a saved line has a charge's subcategory and date but another amount.
8. ``unsaved_or_unclosed_form``: remaining is 0.00 but rows are unsaved or the form is open.
9. ``stale_state``: the agent declared the work done, quoting a remaining of 0.00, while the
   real remaining amount was not 0.00 (it acted on an outdated form state).
10. ``premature_termination``: the conversation ended (or the agent stopped) with work left.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal

from erp_sim.agents.trajectory import Trajectory
from erp_sim.outcomes import FailureCategory

_CLAIMS_ZERO = re.compile(r"remaining[^.\n]{0,40}?\b0\.00\b", re.IGNORECASE)
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
    if grade is None:  # no grade source: only the transcript can tell
        return "stale_state" if _claimed_zero(trajectory) else "premature_termination"
    remaining = Decimal(grade.remaining_amount)
    if remaining < 0:
        return "over_itemization"
    missing = [tuple(c) for c in grade.missing_charges]
    unexpected = [tuple(c) for c in grade.unexpected_lines]
    if grade.duplicate_lines or any(count > 1 for count in Counter(unexpected).values()):
        return "duplicate_line"
    if any((d, a) in {(md, ma) for _, md, ma in missing} for _, d, a in unexpected):
        return "wrong_subcategory"
    if any((s, d) in {(ms, md) for ms, md, _ in missing} for s, d, _ in unexpected):
        return "wrong_amount"
    if remaining == 0 and (grade.unsaved_rows or grade.itemization_form_open):
        return "unsaved_or_unclosed_form"
    if _claimed_zero(trajectory):
        return "stale_state"
    return "premature_termination"


def _claimed_zero(trajectory: Trajectory) -> bool:
    texts = [
        m.get("content") or "" for m in trajectory.messages if m.get("role") == "assistant" and not m.get("tool_calls")
    ]
    return any(_CLAIMS_ZERO.search(text) for text in texts)
