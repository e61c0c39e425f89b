"""How the memory consolidator words a bank reconciliation SOP: the task's values as {parameters} (account,
statement, lines), the per-line steps (filter on the line's reference, mark, match or post) folded, the goal
and what to do when a result differs. The scripted agent looks for the same key (``scripted.SOP_KEY``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation.scripted import SOP_KEY, read_instruction
from erp_sim.workflows.faces import SopRules

EACH_LINE = "for each statement line"
PROMPT = Path(__file__).with_name("consolidate.md")
_PER_LINE_BUTTONS = {R.MATCH_BUTTON, R.NEW_BUTTON}


def task_parameters(instruction: str) -> dict[str, str]:
    brief = read_instruction(instruction)
    found = {"account": brief.account, "statement": brief.statement, "lines": str(brief.line_count or "")}
    return {name: value for name, value in found.items() if value}


def step(name: str, arguments: dict[str, Any], values: dict[str, str]) -> tuple[dict[str, Any], str]:
    """A call's arguments with a line's reference and rows as placeholders; the per-line steps repeat."""
    if name == "form_filter_grid" and arguments.get("gridName") == R.TRANSACTION_GRID:
        return {**arguments, "filterValue": "{reference}"}, EACH_LINE
    if name == "form_filter_grid" and arguments.get("filterValue") == values.get("statement"):
        return {**arguments, "filterValue": "{statement}"}, ""
    if name == "form_select_grid_row" and arguments.get("gridName") in (R.STATEMENT_GRID, R.TRANSACTION_GRID):
        return {**arguments, "rowNumber": "{row}"}, EACH_LINE
    if name == "form_set_control_values":
        controls = arguments.get("controlValues") or []
        if any(isinstance(c, dict) and c.get("controlName") == R.OFFSET_ACCOUNT for c in controls):
            return {**arguments, "controlValues": [{"controlName": R.OFFSET_ACCOUNT, "value": "{ledger_account}"}]}, ""
    if name == "form_click_control" and arguments.get("controlName") in _PER_LINE_BUTTONS:
        return arguments, EACH_LINE
    return arguments, ""


def expect(text: str, values: dict[str, str]) -> str:
    for name in ("statement", "account"):
        if values.get(name):
            text = text.replace(values[name], "{" + name + "}")
    return re.sub(r"\b\d+ (matching row|statement line|open)", r"{n} \1", text)


def say(text: str) -> str:
    return re.sub(r"\b(line|all) \d+\b", r"\1 {n}", text)


def sop(values: dict[str, str], steps: int) -> dict[str, Any]:
    return {
        "key": SOP_KEY,
        "summary": f"reconcile a bank account against its statement in the worksheet ({steps} steps)",
        "goal": "Reconcile bank account {account} against statement {statement} ({lines} lines): every line matched "
        "or posted with the user's word, unreconciled difference 0.00, marked as reconciled.",
        "parameters": sorted({*values, "reference", "row", "ledger_account"}),
        "preconditions": [
            "The instruction names the bank account {account} and the statement {statement}.",
            "The statement's reconciliation is in the bank reconciliation list, not yet reconciled.",
        ],
        "failure_handling": [
            "No bank transaction has the line's reference: ask the user whether to post it and to which ledger account.",
            "The marked amounts differ: unmark and check the transactions' references and amounts again.",
            "Mark as reconciled is refused: a line is open or the difference is not 0.00; open the worksheet again.",
            "An error changes nothing: read its message, fix the call and retry.",
        ],
    }


SOP_RULES = SopRules(parameters=task_parameters, step=step, expect=expect, say=say, sop=sop, prompt=PROMPT)
