"""Itemization as the agent harness sees it: ``HARNESS``, loaded by the harness only (never by a session)."""

from __future__ import annotations

import re
from pathlib import Path

from erp_sim.workflows.faces import HarnessFace
from erp_sim.workflows.itemization import user
from erp_sim.workflows.itemization.facts import SUMMARY_FACTS
from erp_sim.workflows.itemization.failures import FAILURES
from erp_sim.workflows.itemization.scripted import PROCEDURE
from erp_sim.workflows.itemization.sop import SOP_RULES

_REPORT = re.compile(r"\bEXP-\d{6}\b")


def recognizes(instruction: str) -> bool:
    """An itemization task's instruction asks to itemize an expense on a report EXP-nnnnnn."""
    return "itemize" in instruction.lower() and _REPORT.search(instruction) is not None


HARNESS = HarnessFace(
    name="itemization",
    recognizes=recognizes,
    scripted=PROCEDURE,
    user_context=user.USER_CONTEXT,
    user_context_fields=user.user_context,
    facts=SUMMARY_FACTS,
    failures=FAILURES,
    sop=SOP_RULES,
    labels={"success": "full itemization", "progress": "remaining amount"},  # the eval table, the run page
    grade_terms=Path(__file__).with_name("grade_terms.md").read_text(encoding="utf-8"),
    progress_controls=("ItemizationRemaining",),
)
