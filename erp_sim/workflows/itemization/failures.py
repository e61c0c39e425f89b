"""Why an itemization episode failed: its own failure categories, checked in this order (the first that
applies wins), after the generic ones (``erp_sim.agents.failures``: a context overflow, a refused request,
a stall on an unanswered question, the step limit, invalid tool calls):

1. ``over_itemization``: saved lines exceed the header amount (the grade's remaining amount is negative).
2. ``duplicate_line``: a receipt charge was saved more times than it appears.
3. ``wrong_subcategory``: a saved line has a charge's date and amount but another subcategory.
4. ``wrong_amount``: a saved line has a charge's subcategory and date but another amount.
5. ``unsaved_or_unclosed_form`` (generic): the grade's remaining amount is 0.00 but rows are unsaved or the
   form is open.
6. ``stale_state``: the agent declared the work done, quoting a remaining of 0.00, while the
   real remaining amount was not 0.00 (it acted on an outdated form state).

Else the generic ``premature_termination``: the conversation ended (or the agent stopped) with work left.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from erp_sim.workflows.faces import FailureRules

_CLAIMS_ZERO = re.compile(r"remaining[^.\n]{0,40}?\b0\.00\b", re.IGNORECASE)

#: In the failure table's order.
CATEGORIES = ("stale_state", "wrong_subcategory", "wrong_amount", "duplicate_line", "over_itemization")


def classify(grade: Any, said: Sequence[str]) -> str | None:
    """The category of a failed episode from its grade (None: no grade source, only the transcript can tell)
    and what the agent told the user."""
    if grade is None:
        return "stale_state" if _claimed_zero(said) else None
    remaining = Decimal(grade.remaining_amount)  # the ledger's remaining, as the grade states it
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
    if _claimed_zero(said):
        return "stale_state"
    return None


def _claimed_zero(said: Sequence[str]) -> bool:
    return any(_CLAIMS_ZERO.search(text) for text in said)


FAILURES = FailureRules(categories=CATEGORIES, classify=classify)
