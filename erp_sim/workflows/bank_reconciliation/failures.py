"""Why a bank reconciliation episode failed, from its final state and the task (its grade): the workflow's
own failure categories, beside the generic ones of ``erp_sim.outcomes`` (context overflow, a stalled
question, the step limit, invalid tool calls), which the harness checks first.

One category per failed episode, the first that applies (the most specific, state-visible cause first):

1. ``over_posted_fee``: a statement line was posted as new that the user did not authorise: it has a bank
   transaction in the ledger, it went to another ledger account than the user named, or it was posted twice
   (or its posting left unmatched). A posting is final, so this cannot be undone in the episode.
2. ``wrong_match``: a match group clears the wrong items: another payment of the same amount, a payment and
   its reversal added in, an outstanding transaction, another line's transaction.
3. ``unmatched_line``: statement lines are left open (matched to nothing, not posted).
4. ``not_marked_reconciled``: every line is cleared rightly but the reconciliation is not marked reconciled.
5. ``collateral_change``: the reconciliation is right and marked, but something else changed (another
   account's worksheet, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from erp_sim.workflows.faces import FailureRules

FailureCategory = Literal[
    "over_posted_fee", "wrong_match", "unmatched_line", "not_marked_reconciled", "collateral_change"
]
FAILURE_CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)


def classify(grade: Mapping[str, Any]) -> FailureCategory | None:
    """The category of a failed episode from its grade (``Grade.model_dump()``); None on success."""
    if grade["success"]:
        return None
    if grade["over_posted_fees"]:
        return "over_posted_fee"
    if grade["wrong_matches"]:
        return "wrong_match"
    if grade["unmatched_lines"]:
        return "unmatched_line"
    if not grade["reconciled"]:
        return "not_marked_reconciled"
    return "collateral_change"


def classify_episode(grade: Any, said: Sequence[str]) -> str | None:
    """``FailureRules.classify``: the category from the grade (a ``Grade``, its JSON, or None: no grade source,
    the transcript alone cannot tell a wrong match)."""
    if grade is None:
        return None
    fields = (
        grade if isinstance(grade, Mapping) else grade.model_dump() if hasattr(grade, "model_dump") else vars(grade)
    )
    return classify(fields)


FAILURES = FailureRules(categories=FAILURE_CATEGORIES, classify=classify_episode)
