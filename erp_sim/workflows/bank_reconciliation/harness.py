"""Bank reconciliation as the agent harness sees it: ``HARNESS``, loaded by the harness only (never by a session)."""

from __future__ import annotations

import re

from erp_sim.workflows.faces import folder_harness

_STATEMENT = re.compile(r"\bbank statement \S+")


def recognizes(instruction: str) -> bool:
    """A bank reconciliation task's instruction asks to reconcile a bank account against a bank statement."""
    return "reconcile bank account" in instruction.lower() and _STATEMENT.search(instruction) is not None


# labels: the eval table's success column and the run page's chart of the work left, read off progress_controls
HARNESS = folder_harness(
    __name__,
    recognizes=recognizes,
    labels={"success": "reconciled", "progress": "unreconciled difference"},
    progress_controls=("BankRecon_UnreconciledDifference", "Worksheet_UnreconciledDifference"),
)
