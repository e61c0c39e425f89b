"""What the itemization user says: the study's user protocol as rules, and the LLM user's task context.

The study (C2-C4) put a second model in the conversation as the "user", guided by a strict
completion protocol: the task is done only when the itemized lines are saved, the remaining
amount is 0.00 and the form is closed. The user confirms that missing items should be added,
declines requests for receipts or other attachments, and after each itemization pass asks
the agent to verify completion. ``reply`` follows that protocol deterministically (the env's
``RuleBasedUser`` asks it); ``user_context`` fills ``user_context.md`` for an LLM user.

Precedence of ``reply``: a request for documents (attach, upload, send ... a receipt, folio, file) is
declined; a question about adding items or going on is confirmed; a claim of being done is
checked against the real state (end the conversation on success, else say what is left);
any other message gets the verification prompt once itemized lines exist, or a prompt to
carry on before that.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from erp_sim.workflows import UserSees
    from erp_sim.workflows.itemization.task import Task

USER_CONTEXT = Path(__file__).with_name("user_context.md")  # the LLM user's prompt template

_ATTACHMENT = re.compile(r"\b(attach\w*|upload\w*|scan\w*|photo|copy of|send (me|us|over)|provide|share|forward)\b")
_DOCUMENT = re.compile(
    r"\b(receipts?|folios?|documents?|invoices?|files?|attachments?|bills?|statements?|agreements?)\b"
)
_REQUEST = re.compile(r"\?|\b(please|need|needs|require[sd]?|would like|could you|can you|kindly)\b")
_QUESTION = re.compile(r"\?|^\s*(should|shall|can|could|may|do|does|would|will|is|are|please confirm)\b")
_CONFIRMATION = re.compile(r"\b(add|adding|missing|create|include|proceed|continue|go ahead|confirm|ok(ay)?)\b")
_DONE = re.compile(r"\b(done|complete[d]?|finished|all set|fully itemi[sz]ed|wrapped up)\b")

DECLINE_ATTACHMENT = (
    "I can't send anything else: the receipt is already attached to the expense line in the system. "
    "Please read the charges from it there and carry on with the itemization."
)
CONFIRM_ADD = (
    "Yes, please add every missing charge from the receipt as its own itemized line, with the right "
    "subcategory, date and amount. Then save, check that the remaining amount is exactly 0.00 and close "
    "the itemization form."
)
VERIFY = (
    "Thanks. Please verify that the itemization's remaining amount is exactly 0.00, that every itemized line "
    "is saved, and that the itemization form is closed."
)
CARRY_ON = (
    "Please go ahead with the itemization as described in my first message: one itemized line per receipt "
    "charge, saved, remaining amount exactly 0.00, and the itemization form closed."
)
THANKS = "Thanks, I checked: the itemization is complete. That's all I needed."


def reply(text: str, view: UserSees) -> tuple[str, bool]:
    """The rule-based user's answer to ``text`` (the agent's message, lower-cased, whitespace collapsed):
    (the reply, whether it ends the conversation)."""
    is_question = bool(_QUESTION.search(text))
    if _ATTACHMENT.search(text) and _DOCUMENT.search(text) and _REQUEST.search(text):
        return DECLINE_ATTACHMENT, False
    if is_question and _CONFIRMATION.search(text):
        return CONFIRM_ADD, False
    if _DONE.search(text) and not is_question:
        grade = view.grade
        if grade.success:
            return THANKS, True
        return "It isn't finished yet: " + "; ".join(
            what_is_left(grade)
        ) + ". Please fix that and tell me when it's done.", False
    if is_question:
        return CARRY_ON, False
    return (VERIFY if view.grade.saved_lines else CARRY_ON), False


def what_is_left(grade: Any) -> list[str]:
    """The completion protocol's open points, in the user's words (``grade``: a ``Grade``, or an object
    reading a grade's JSON by attribute, as ``erp_sim.envs.mcp_env``'s remote grade)."""
    left = []
    lines = getattr(grade, "lines", None)  # a task with several lines: each line's own remaining must be 0.00
    if lines:  # (a Grade's LineGrade models, or the dicts of a grade read back from JSON)
        for line in (line if isinstance(line, dict) else line.model_dump() for line in lines):
            if line["remaining_amount"] != "0.00":
                left.append(
                    f"line {line['line_number']}'s remaining amount is {line['remaining_amount']}, it must be exactly 0.00"
                )
    elif grade.remaining_amount != "0.00":
        left.append(f"the remaining amount is {grade.remaining_amount}, it must be exactly 0.00")
    if grade.saved_lines == 0:
        left.append("no itemized line is saved")
    if grade.unsaved_rows:
        left.append(f"{grade.unsaved_rows} itemized line(s) are not saved")
    if grade.itemization_form_open:
        left.append("the itemization form is still open")
    return left or ["the itemization does not pass the check yet"]


def user_context(task: Task, grade: Any) -> dict[str, str]:
    """The fields of ``user_context.md`` but ``end_token``: who the user is, what they asked, the real state."""
    state = (
        "complete: all three conditions hold" if grade.success else "not complete: " + "; ".join(what_is_left(grade))
    )
    return {"worker_name": task.worker_name, "instruction": task.instruction(), "state": state}
