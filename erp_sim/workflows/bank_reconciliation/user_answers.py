"""What the user answers when the agent asks, as data: for the rule-based user of the envs and the LLM
user's context (which the envs and agents wire; this module knows only the task).

The user knows which statement lines have no bank transaction and says to post them, and where
(``Task.fees``: "Post it to 618160 Bank charges"); a line that has a bank transaction is not to be posted
but matched. The user never says which transaction matches which line: that is the agent's work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from erp_sim.money import display_money
from erp_sim.workflows.bank_reconciliation.task import StatementLine, Task

_LINE = re.compile(r"\blines?\s*(?:no\.?|number|#)?\s*(\d{1,3}(?:\s*(?:,|and|&)\s*\d{1,3})*)", re.IGNORECASE)
_REFERENCE = re.compile(r"\b[A-Z]{3}-\d{4,6}\b", re.IGNORECASE)
_AMOUNT = re.compile(r"-?\d{1,3}(?:,\d{3})*\.\d{2}|-?\d+\.\d{2}")
_ABOUT_POSTING = re.compile(
    r"\b(post\w*|book\w*|fee|fees|charges?|interest|mark\w* (?:it |them )?as new|new transactions?|"
    r"ledger account|offset account|main account|which account|what account|gl account)\b",
    re.IGNORECASE,
)

NO_POSTING = (
    "Please don't post anything else: every other statement line has its bank transaction in the ledger. "
    "Match it there."
)


def fee_answer(task: Task, line_number: int) -> str:
    """The user's word on posting one line: where to post it, or not to post it."""
    line = task.line(line_number)
    account = task.fee_accounts.get(line_number)
    named = f"line {line.line_number} ({line.description}, {display_money(line.decimal)})"
    if account is None:
        return (
            f"No, don't post {named} as new: it is in the ledger already. Match it to its bank transaction "
            f"(payment reference {line.reference})."
        )
    fee = next(f for f in task.fees if f.line_number == line_number)
    return f"Yes, please post {named} as new, to {fee.account_label}."


def mentioned_lines(task: Task, message: str) -> list[StatementLine]:
    """The statement lines a message names: by line number, by reference, or by amount."""
    found: dict[int, StatementLine] = {}
    for group in _LINE.findall(message):
        for number in re.findall(r"\d+", group):
            if 1 <= int(number) <= task.line_count:
                found.setdefault(int(number), task.line(int(number)))
    references = {ref.upper() for ref in _REFERENCE.findall(message)}
    amounts = {text.replace(",", "").lstrip("-") for text in _AMOUNT.findall(message)}
    for line in task.statement_lines:
        if line.reference.upper() in references or line.amount.lstrip("-") in amounts:
            found.setdefault(line.line_number, line)
    return [found[n] for n in sorted(found)]


def answer(task: Task, message: str) -> str | None:
    """The user's answer to a question about posting statement lines (None: the message asks no such thing).

    A question naming lines (by number, reference or amount) gets the word on each; a question about posting
    or fee accounts that names none gets the word on every line the user wants posted."""
    lines = mentioned_lines(task, message)
    if not _ABOUT_POSTING.search(message) and not any(line.line_number in task.fee_accounts for line in lines):
        return None
    if not lines:
        return " ".join(fee_answer(task, fee.line_number) for fee in task.fees) + " " + NO_POSTING
    return " ".join(fee_answer(task, line.line_number) for line in lines)


def user_context(task: Task) -> str:
    """What an LLM user may rely on and say (and must not), as text for its prompt."""
    fees = "\n".join(f"- {fee_answer(task, fee.line_number)}" for fee in task.fees)
    return (
        f"You asked the agent to reconcile bank account {task.account_id} against statement {task.statement_id}. "
        f"When the agent asks about statement lines with no bank transaction, answer from this list only:\n{fees}\n"
        f"Any other line is in the ledger and must be matched, not posted. Never say which bank transaction "
        f"matches which line. The work is done when no line is open, the unreconciled difference is exactly 0.00 "
        f"and the reconciliation is marked as reconciled."
    )


def what_is_left(grade: Mapping[str, Any]) -> list[str]:
    """The completion rule's open points, in the user's words, from a grade (``Grade.model_dump()``)."""
    left = []
    if grade["unmatched_lines"]:
        numbers = ", ".join(map(str, grade["unmatched_lines"][:10]))
        more = "" if len(grade["unmatched_lines"]) <= 10 else f" and {len(grade['unmatched_lines']) - 10} more"
        left.append(f"statement line(s) {numbers}{more} are not matched")
    if grade["difference"] != "0.00":
        left.append(f"the unreconciled difference is {grade['difference']}, it must be exactly 0.00")
    if not grade["reconciled"]:
        left.append("the reconciliation is not marked as reconciled")
    return left or ["the reconciliation does not pass my check yet"]
