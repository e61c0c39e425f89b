"""The facts of a bank reconciliation task, read offline from the worksheet's and header's responses: the
statement, its open lines (reference and amount), the match groups, the postings, the figures.

The harness's structured summary (``erp_sim.agents.facts``: ACON's sections, GenericAgent's working memory)
folds every response's FormState into ``ReconciliationFacts`` with ``observe``. The open lines are rendered in
the format the scripted agent reads back from a summary (``scripted._SUMMARY_LINE``), so a summary carries
the lines read on earlier pages. Deterministic and tolerant: a missing piece of a response is skipped.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from erp_sim import formstate
from erp_sim.money import display_money
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.faces import SummaryFacts, figures_line

_STATEMENT = re.compile(r"\bbank statement (\S+) ")
GUARDRAILS = (
    "Match a statement line only to bank transactions with its reference whose amounts add up to the line's.",
    "Leave open what the statement does not show (uncashed checks, a payment and its reversal, after the cut-off).",
    "Post a line as new only with the user's word, to the ledger account they name, once.",
    "Mark reconciled only when no line is open and the unreconciled difference is exactly 0.00.",
    "Touch only this account's reconciliation.",
)


class OpenLine(BaseModel):
    reference: str = ""
    amount: str = ""
    description: str = ""


class ReconciliationFacts(BaseModel):
    """What the transcript so far has shown about the reconciliation; later observations win."""

    statement: str = ""
    lines: dict[int, OpenLine] = Field(default_factory=dict, description="Statement lines seen open, by number.")
    cleared: list[int] = Field(
        default_factory=list, description="Lines seen cleared: in a match, or gone from the open statement grid."
    )
    matched: dict[str, list[str]] = Field(default_factory=dict, description="Match id -> its documents.")
    posted: dict[str, str] = Field(default_factory=dict, description="Posted line -> ledger account.")
    open_lines: str = ""
    difference: str = ""
    reconciled: str = ""
    statement_page: str = Field("", description="The statement grid's rows in view, e.g. 26-40 of 40.")


def new_facts(task: str) -> ReconciliationFacts:
    match = _STATEMENT.search(task)
    return ReconciliationFacts(statement=match.group(1) if match else "")


def observe(facts: ReconciliationFacts, name: str, caption: str, state: dict[str, Any]) -> None:
    """Fold one response's FormState (of form ``name``) into ``facts``."""
    if name == R.WORKSHEET_FORM:
        rows = R.statement_rows(state)
        for row in rows:
            facts.lines[row.line_number] = OpenLine(
                reference=row.reference, amount=display_money(row.amount), description=row.description
            )
        grid = formstate.find_grid(state.get("Form"), R.STATEMENT_GRID)
        if grid is not None:
            page = grid.get("Pagination") or {}
            facts.statement_page = (
                f"{page.get('FirstRow', '?')}-{page.get('LastRow', '?')} of {page.get('TotalRows', '?')}"
            )
            if not grid.get("Filters"):
                _clear_unshown(facts, {row.line_number for row in rows}, page)
        for item in R.matched_rows(state):
            documents = facts.matched.setdefault(item.match_id, [])
            if item.document not in documents:
                documents.append(item.document)
            if item.document.startswith("Line "):
                number = int(item.document.split()[1]) if item.document.split()[1].isdigit() else 0
                if number:
                    _clear(facts, [number])
                if item.match_type == "New" and item.offset_account:
                    facts.posted[item.document] = item.offset_account
        for field, control in (("open_lines", R.OPEN_LINES), ("difference", R.DIFFERENCE)):
            value = formstate.control_value(state, control)
            if value is not None:
                setattr(facts, field, str(value))
        if facts.open_lines == "0":
            _clear(facts, facts.lines)
    elif name == R.HEADER_FORM:
        for field, control in (
            ("difference", R.HEADER_DIFFERENCE),
            ("reconciled", R.HEADER_RECONCILED),
            ("open_lines", "BankRecon_OpenStatementLines"),
        ):
            value = formstate.control_value(state, control)
            if value is not None:
                setattr(facts, field, str(value))


def _clear_unshown(facts: ReconciliationFacts, shown: set[int], page: dict[str, Any]) -> None:
    """An unfiltered page of the statement grid lists the open lines in order: a line it would show but does
    not is cleared (between the page's first and last line; before it on the first page; after it on the last)."""
    first_page, last_page = page.get("FirstRow") in (1, None), not page.get("HasNextPage")
    low, high = (min(shown), max(shown)) if shown else (0, 0)
    gone = [
        n
        for n in facts.lines
        if n not in shown and (low < n < high or (first_page and n < low) or (last_page and n > high) or not shown)
    ]
    _clear(facts, gone)


def _clear(facts: ReconciliationFacts, numbers: Any) -> None:
    for number in sorted(numbers):
        if number not in facts.cleared:
            facts.cleared.append(number)


def key_variable_lines(facts: ReconciliationFacts) -> list[str]:
    lines = []
    if facts.statement:
        lines.append(f"Statement: {facts.statement}")
    lines += figures_line(
        "Reconciliation",
        (("open lines", facts.open_lines), ("difference", facts.difference), ("reconciled", facts.reconciled)),
    )
    if facts.statement_page:
        lines.append(f"Statement grid page in view: rows {facts.statement_page}")
    still_open = {n: line for n, line in sorted(facts.lines.items()) if n not in facts.cleared}
    if still_open:
        lines.append(f"Open statement lines ({len(still_open)}, as last seen on the statement grid):")
        lines += [f"  {n}. {line.reference} | {line.amount} | {line.description}" for n, line in still_open.items()]
    if facts.matched:
        lines.append(f"Match groups ({len(facts.matched)}):")
        lines += [f"  {match_id}: {', '.join(documents)}" for match_id, documents in facts.matched.items()]
    if facts.posted:
        lines.append("Posted as new: " + ", ".join(f"{line} to {account}" for line, account in facts.posted.items()))
    return lines


def todo_lines(facts: ReconciliationFacts, current_form: str) -> list[str]:
    todo = []
    if not facts.lines:
        todo.append("Open the worksheet and read every page of the statement lines.")
    for n, line in sorted(facts.lines.items()):
        if n not in facts.cleared:
            todo.append(f"Clear statement line {n}: {line.reference} | {line.amount}")
            if len(todo) >= 5:
                break
    if facts.difference and facts.difference not in ("0.00", "0"):
        todo.append(f"The unreconciled difference is {facts.difference}; bring it to exactly 0.00.")
    if facts.open_lines == "0" and facts.reconciled != "Yes":
        todo.append("No line is open: close the worksheet and mark the reconciliation as reconciled.")
    return todo or ["Verify no line is open, the difference is 0.00 and it is marked reconciled, then tell the user."]


SUMMARY_FACTS = SummaryFacts(
    new=new_facts, observe=observe, key_variables=key_variable_lines, todo=todo_lines, guardrails=GUARDRAILS
)
