"""How the memory consolidator words an itemization SOP: the task's values as {parameters} (report, line,
expense type, total, receipt, merchant, date), the per-charge steps folded, the goal and what to do when a
result differs. The scripted agent looks for the same key (``scripted.sop_key``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from erp_sim.workflows.faces import SopRules

_REPORT = re.compile(r"\b(EXP-\d{6})\b")
_LINE = re.compile(r"\bline (\d+)\b")
_TYPE = re.compile(r"the (\w+) expense")
_TOTAL = re.compile(r"\bfor ([\d,]+\.\d{2}) [A-Z]{3}\b")
_RECEIPT = re.compile(r"The receipt \(([^)]+)\)")
_MERCHANT = re.compile(r"\bline \d+, (.+?), dated\b")
_DATED = re.compile(r"\bdated (\d{4}-\d{2}-\d{2})\b")
_TITLE = re.compile(r" - [^()]+ \((Trv\w+)\)")  # a form title's task-specific part (report purpose, merchant)
CHARGE_FIELDS = {
    "TrvExpTrans_ExpSubCategory": "{subcategory}",
    "TrvExpTrans_TransDate": "{date}",
    "TrvExpTrans_AmountCurr": "{amount}",
}
EACH_CHARGE = "for each receipt charge"
PROMPT = Path(__file__).with_name("consolidate.md")


def task_parameters(instruction: str) -> dict[str, str]:
    """Task-specific values named in the instruction: parameter name -> value."""
    found = {}
    for name, pattern in (
        ("report", _REPORT),
        ("line", _LINE),
        ("expense_type", _TYPE),
        ("total", _TOTAL),
        ("receipt", _RECEIPT),
        ("merchant", _MERCHANT),
        ("dated", _DATED),
    ):
        match = pattern.search(instruction)
        if match:
            found[name] = match.group(1)
    return found


def step(name: str, arguments: dict[str, Any], values: dict[str, str]) -> tuple[dict[str, Any], str]:
    """A call's arguments with a charge's fields, and the target line's row, as placeholders; the per-charge
    steps (a new line, its values) repeat for each receipt charge."""
    repeat = ""
    if name == "form_set_control_values":
        controls = arguments.get("controlValues") or []
        if any(c.get("controlName") in CHARGE_FIELDS for c in controls if isinstance(c, dict)):
            arguments = {
                **arguments,
                "controlValues": [
                    {**c, "value": CHARGE_FIELDS.get(c.get("controlName"), c.get("value"))} for c in controls
                ],
            }
            repeat = EACH_CHARGE
    if name == "form_select_grid_row" and "rowNumber" in arguments:
        row = (
            "{line}"
            if arguments.get("gridName") == "ExpenseLinesGrid" and arguments["rowNumber"] == values.get("line")
            else "{row}"
        )
        arguments = {**arguments, "rowNumber": row}
    if name == "form_click_control" and arguments.get("controlName") == "NewLine":
        repeat = EACH_CHARGE
    return arguments, repeat


def expect(text: str, values: dict[str, str]) -> str:
    """A Result text with the form titles' task part, the count of itemized lines and the line named."""
    text = _TITLE.sub(r" (\1)", re.sub(r"^\d+ itemized line", "{n} itemized line", text))
    if values.get("line"):
        text = re.sub(rf"\bline {re.escape(values['line'])}\b", "line {line}", text)
    return text


def say(text: str) -> str:
    return re.sub(r"\b\d+ charges\b", "{n} charges", text)


def sop(values: dict[str, str], steps: int) -> dict[str, Any]:
    expense_type = values.get("expense_type", "expense")
    slug = re.sub(r"[^a-z0-9]+", "_", expense_type.lower()).strip("_") or "expense"
    return {
        "key": f"sop/itemize_{slug}_expense",
        "summary": f"itemize a {expense_type} expense line from its receipt ({steps} steps)",
        "goal": f"Itemize line {{line}} of expense report {{report}} ({expense_type}, {{total}}): one saved itemized "
        "line per receipt charge, remaining 0.00, itemization form closed.",
        "parameters": sorted({*values, "subcategory", "date", "amount"}),
        "preconditions": [
            "The instruction names the report {report} and the line {line}.",
            "The receipt {receipt} is attached to the line.",
        ],
        "failure_handling": [
            "Remaining amount not 0.00 after saving: compare the saved lines with the receipt charges, fix or add lines, save again.",
            "A close with unsaved edits is refused once: save first (a second close discards the edits).",
            "An error changes nothing: read its message, fix the call and retry.",
            "The target row is not on the first page: load the next page (actionId LoadNextPage).",
        ],
    }


SOP_RULES = SopRules(parameters=task_parameters, step=step, expect=expect, say=say, sop=sop, prompt=PROMPT)
