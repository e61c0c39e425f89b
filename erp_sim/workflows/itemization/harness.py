"""Itemization as the agent harness sees it: ``HARNESS``, loaded by the harness only (never by a session)."""

from __future__ import annotations

import re

from erp_sim.workflows.faces import folder_harness

_REPORT = re.compile(r"\bEXP-\d{6}\b")


def recognizes(instruction: str) -> bool:
    """An itemization task's instruction asks to itemize an expense on a report EXP-nnnnnn."""
    return "itemize" in instruction.lower() and _REPORT.search(instruction) is not None


# labels: the eval table's success column and the run page's chart of the work left, read off progress_controls
HARNESS = folder_harness(
    __name__,
    recognizes=recognizes,
    labels={"success": "full itemization", "progress": "remaining amount"},
    progress_controls=("ItemizationRemaining",),
)
