"""How an episode can end and why it failed: the one list of each, for the envs, the runner and the reports.

It lives in ``erp_sim`` (not ``erp_sim.agents``) because the envs need it and must not import the
agent harness. It imports nothing of ours.
"""

from __future__ import annotations

from typing import Literal, get_args

#: The env ends the episode: the ERP grades it a success, nobody answers the agent's question,
#: the simulated user ends the conversation, or the user's turns run out.
EnvTermination = Literal["success", "stalled", "user_ended", "user_turn_limit"]
#: The runner ends the episode: its step cap, an agent that stops talking, a failed model call
#: (``infra_error`` after retries, ``model_error``, ``context_overflow``), or a bug in the harness.
HarnessTermination = Literal[
    "step_limit", "agent_stopped", "context_overflow", "model_error", "infra_error", "harness_error"
]
Termination = Literal[EnvTermination, HarnessTermination]

#: Report order of the terminations table.
TERMINATIONS: tuple[Termination, ...] = (
    "success",
    "user_ended",
    "user_turn_limit",
    "stalled",
    "step_limit",
    "agent_stopped",
    "context_overflow",
    "model_error",
    "infra_error",
    "harness_error",
)

#: Why a failed episode failed, the generic causes in the classifier's order (``erp_sim.agents.failures``:
#: the first that applies wins). Between ``invalid_tool_calls`` and ``premature_termination`` come the
#: categories of the task's workflow (``erp_sim.workflows.faces.FailureRules``: for itemization
#: over_itemization, duplicate_line, wrong_subcategory, wrong_amount, stale_state), which may also name
#: ``unsaved_or_unclosed_form`` (the work is right but not saved, or its form not closed).
GenericFailure = Literal[
    "context_overflow",
    "model_request_refused",
    "stalled_unanswered_question",
    "step_limit",
    "invalid_tool_calls",
    "unsaved_or_unclosed_form",
    "premature_termination",
]
#: A generic category or one of a workflow's (``FailureRules.categories``).
FailureCategory = str

#: Report order of the failure table: these generic ones, each workflow's own categories, then these.
FAILURE_REPORT_HEAD: tuple[GenericFailure, ...] = (
    "context_overflow",
    "model_request_refused",
    "stalled_unanswered_question",
    "premature_termination",
)
FAILURE_REPORT_TAIL: tuple[GenericFailure, ...] = ("unsaved_or_unclosed_form", "invalid_tool_calls", "step_limit")
#: A failed episode the classifier left without a category (a report row, not a category).
UNCLASSIFIED = "unclassified"


def failure_report_order(*workflow_categories: tuple[str, ...]) -> tuple[str, ...]:
    """The failure table's rows: the generic head, each workflow's categories (in the order given), the tail."""
    own = [category for categories in workflow_categories for category in categories]
    return (*FAILURE_REPORT_HEAD, *dict.fromkeys(own), *FAILURE_REPORT_TAIL)


ENV_TERMINATIONS: tuple[EnvTermination, ...] = get_args(EnvTermination)
HARNESS_TERMINATIONS: tuple[HarnessTermination, ...] = get_args(HarnessTermination)
GENERIC_FAILURES: tuple[GenericFailure, ...] = get_args(GenericFailure)
