"""What the bank reconciliation user says: the accountant's protocol as rules, and the LLM user's context.

The user answers questions about posting statement lines from ``user_answers`` (which lines to post, to
which ledger account; every other line is to be matched), never says which transaction matches which line,
checks a claim of being done against the real state, and otherwise asks the agent to carry on.

Precedence of ``reply``: a question about posting lines (or one naming a line to post) gets the user's word
on them; a claim of being done is checked against the grade (the conversation ends on success, else the user
says what is left); any other question, or message, gets a prompt to carry on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from erp_sim.workflows.bank_reconciliation import user_answers

if TYPE_CHECKING:
    from erp_sim.workflows import UserSees
    from erp_sim.workflows.bank_reconciliation.task import Task

USER_CONTEXT = Path(__file__).with_name("user_context.md")  # the LLM user's prompt template

_QUESTION = re.compile(r"\?|^\s*(should|shall|can|could|may|do|does|would|will|is|are|please confirm)\b")
_DONE = re.compile(r"\b(done|complete[d]?|finished|all set|fully reconciled|reconciled|wrapped up)\b")

CARRY_ON = (
    "Please go ahead with the reconciliation as described in my first message: match every statement line to "
    "its bank transaction(s), ask me before posting a line that has none, and mark the reconciliation as "
    "reconciled once no line is open and the unreconciled difference is exactly 0.00."
)
THANKS = "Thanks, I checked: the statement is reconciled. That's all I needed."

_GRADE_FIELDS = ("success", "unmatched_lines", "difference", "reconciled")


def _grade_fields(grade: Any) -> dict[str, Any]:
    """The grade's fields ``what_is_left`` reads, from a ``Grade``, its JSON, or an object reading it by attribute."""
    if isinstance(grade, dict):
        return {name: grade[name] for name in _GRADE_FIELDS}
    return {name: getattr(grade, name) for name in _GRADE_FIELDS}


def reply(text: str, view: UserSees) -> tuple[str, bool]:
    """The rule-based user's answer to ``text`` (the agent's message, lower-cased, whitespace collapsed):
    (the reply, whether it ends the conversation)."""
    answer = user_answers.answer(view.task, text)
    if answer is not None and _QUESTION.search(text):
        return answer, False
    if _DONE.search(text) and not _QUESTION.search(text):
        grade = _grade_fields(view.grade)
        if grade["success"]:
            return THANKS, True
        left = "; ".join(user_answers.what_is_left(grade))
        return f"It isn't finished yet: {left}. Please fix that and tell me when it's done.", False
    if answer is not None:
        return answer, False
    return CARRY_ON, False


def user_context(task: Task, grade: Any) -> dict[str, str]:
    """The fields of ``user_context.md`` but ``end_token``: who the user is, what they asked, what they may
    answer, the real state."""
    fields = _grade_fields(grade)
    state = (
        "complete: no line is open, the difference is 0.00 and it is marked reconciled"
        if fields["success"]
        else "not complete: " + "; ".join(user_answers.what_is_left(fields))
    )
    return {
        "user_name": task.user_name,
        "instruction": task.instruction(),
        "answers": user_answers.user_context(task),
        "state": state,
    }
