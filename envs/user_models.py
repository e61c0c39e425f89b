"""The simulated user inside the env, and the small protocol any user model implements.

The study (C2-C4) put a second model in the conversation as the "user", guided by a strict
completion protocol: the task is done only when the itemized lines are saved, the remaining
amount is 0.00 and the form is closed. The user confirms that missing items should be added,
declines requests for receipts or other attachments, and after each itemization pass asks
the agent to verify completion. ``RuleBasedUser`` follows that protocol deterministically;
an LLM user (in ``agents``) implements the same two methods.

Protocol (kept small on purpose):

- ``reset(task)``: a new conversation about ``task`` starts; forget the previous one.
- ``reply(message, view) -> UserReply``: answer one agent message. ``view`` gives the task,
  the turn number and the real grade of the ERP state (the user can look at the ERP, the
  agent's claims are not taken on trust). ``UserReply.ends_conversation`` ends the episode.

The env enforces ``max_user_turns`` itself, so a user model never has to count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from erp_sim import Grade, Task


class UserReply(NamedTuple):
    text: str
    ends_conversation: bool = False


class UserView:
    """What the user may look at when replying. ``grade`` is computed on first access only."""

    def __init__(self, task: Task, turn: int, grade: Callable[[], Grade]):
        self.task = task
        self.turn = turn  # 1-based number of this agent message
        self._grade = grade

    @cached_property
    def grade(self) -> Grade:
        return self._grade()


@runtime_checkable
class UserModel(Protocol):
    def reset(self, task: Task) -> None: ...

    def reply(self, message: str, view: UserView) -> UserReply: ...


# --- the rule-based user ---------------------------------------------------------------------
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


class RuleBasedUser:
    """The study's user protocol as rules; deterministic, stateless between messages.

    Precedence: a request for documents (attach, upload, send ... a receipt, folio, file) is
    declined; a question about adding items or going on is confirmed; a claim of being done is
    checked against the real state (end the conversation on success, else say what is left);
    any other message gets the verification prompt once itemized lines exist, or a prompt to
    carry on before that.
    """

    def __init__(self) -> None:
        self.task: Task | None = None

    def reset(self, task: Task) -> None:
        self.task = task

    def reply(self, message: str, view: UserView) -> UserReply:
        text = " ".join(str(message).lower().split())
        is_question = bool(_QUESTION.search(text))
        if _ATTACHMENT.search(text) and _DOCUMENT.search(text) and _REQUEST.search(text):
            return UserReply(DECLINE_ATTACHMENT)
        if is_question and _CONFIRMATION.search(text):
            return UserReply(CONFIRM_ADD)
        if _DONE.search(text) and not is_question:
            return self._check_done(view)
        if is_question:
            return UserReply(CARRY_ON)
        return UserReply(VERIFY if view.grade.saved_lines else CARRY_ON)

    @staticmethod
    def _check_done(view: UserView) -> UserReply:
        grade = view.grade
        if grade.success:
            return UserReply(THANKS, ends_conversation=True)
        return UserReply(
            "It isn't finished yet: " + "; ".join(what_is_left(grade)) + ". Please fix that and tell me when it's done."
        )


def what_is_left(grade: Grade) -> list[str]:
    """The completion protocol's open points, in the user's words."""
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


def make_user_model(spec: str | UserModel | None) -> UserModel | None:
    """``"rule"`` -> ``RuleBasedUser()``; ``None`` or ``"none"`` -> no user (the study's C1); objects pass through."""
    if spec is None or (isinstance(spec, str) and spec.lower() == "none"):
        return None
    if isinstance(spec, str):
        if spec.lower() == "rule":
            return RuleBasedUser()
        raise ValueError(f"user_model must be 'rule', 'none', None or a UserModel object, got {spec!r}")
    if not isinstance(spec, UserModel):
        raise TypeError(f"user_model {spec!r} does not implement reset(task) and reply(message, view)")
    return spec
