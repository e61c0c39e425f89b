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

#: Why a failed episode failed, in the classifier's order (``erp_sim.agents.failures``:
#: the first that applies wins).
FailureCategory = Literal[
    "context_overflow",
    "model_request_refused",
    "stalled_unanswered_question",
    "step_limit",
    "invalid_tool_calls",
    "over_itemization",
    "duplicate_line",
    "wrong_subcategory",
    "wrong_amount",
    "unsaved_or_unclosed_form",
    "stale_state",
    "premature_termination",
]

#: Report order of the failure table.
FAILURE_REPORT_ORDER: tuple[FailureCategory, ...] = (
    "context_overflow",
    "model_request_refused",
    "stalled_unanswered_question",
    "premature_termination",
    "stale_state",
    "wrong_subcategory",
    "wrong_amount",
    "duplicate_line",
    "over_itemization",
    "unsaved_or_unclosed_form",
    "invalid_tool_calls",
    "step_limit",
)
#: A failed episode the classifier left without a category (a report row, not a category).
UNCLASSIFIED = "unclassified"

ENV_TERMINATIONS: tuple[EnvTermination, ...] = get_args(EnvTermination)
HARNESS_TERMINATIONS: tuple[HarnessTermination, ...] = get_args(HarnessTermination)
FAILURE_CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)
