"""Bank reconciliation as the agent harness sees it: ``HARNESS``, loaded by the harness only (never by a session)."""

from __future__ import annotations

import re
from pathlib import Path

from erp_sim.workflows.bank_reconciliation import user
from erp_sim.workflows.bank_reconciliation.facts import SUMMARY_FACTS
from erp_sim.workflows.bank_reconciliation.failures import FAILURES
from erp_sim.workflows.bank_reconciliation.scripted import PROCEDURE
from erp_sim.workflows.bank_reconciliation.sop import SOP_RULES
from erp_sim.workflows.faces import HarnessFace

_STATEMENT = re.compile(r"\bbank statement \S+")


def recognizes(instruction: str) -> bool:
    """A bank reconciliation task's instruction asks to reconcile a bank account against a bank statement."""
    return "reconcile bank account" in instruction.lower() and _STATEMENT.search(instruction) is not None


HARNESS = HarnessFace(
    name="bank_reconciliation",
    recognizes=recognizes,
    scripted=PROCEDURE,
    user_context=user.USER_CONTEXT,
    user_context_fields=user.user_context,
    facts=SUMMARY_FACTS,
    failures=FAILURES,
    sop=SOP_RULES,
    labels={"success": "reconciled", "progress": "unreconciled difference"},  # the eval table, the run page
    grade_terms=Path(__file__).with_name("grade_terms.md").read_text(encoding="utf-8"),
    progress_controls=("BankRecon_UnreconciledDifference", "Worksheet_UnreconciledDifference"),
)
