"""The facts of an itemization task, read offline from D365-shaped tool responses: the report, the line,
the receipt's items, the itemization's amounts and lines.

The harness's structured summary (``erp_sim.agents.facts``: ACON's sections, GenericAgent's working
memory) folds every response's FormState into ``ExpenseFacts`` with ``observe``, and writes its key
variables, to-do and guardrails from these functions. Deterministic and tolerant: a missing piece of a
response is skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from erp_sim import response_keys as K
from erp_sim.formstate import control_text, find_grid, grid_has_next_page, grid_row_values, grid_total_rows
from erp_sim.workflows.faces import SummaryFacts, figures_line

REPORT_NUMBER = re.compile(r"\bEXP-\d+\b")

RECEIPT_HEADER = (("document", "Receipt_DocumentNumber"), ("merchant", "Receipt_Merchant"), ("total", "Receipt_Total"))
GUARDRAILS = (
    "Remaining must be exactly 0.00 before the work is done; over-itemizing is a failure.",
    "One itemized line per receipt item, with its date, subcategory and exact amount (two decimals).",
    "Save every itemized line, then close the itemization form.",
    "Touch only the target report and line; never edit or delete other reports or lines.",
    "Re-read the form (not memory) before acting on an amount: values change after each save.",
)


class ReceiptItem(BaseModel):
    date: str = ""
    description: str = ""
    amount: str = ""
    subcategory: str = ""


class ItemizedLine(BaseModel):
    date: str = ""
    subcategory: str = ""
    amount: str = ""
    description: str = ""
    status: str = Field("", description="Saved, New or Modified, as the grid shows it.")


class ExpenseFacts(BaseModel):
    """What the transcript so far has shown about the itemization; later observations win."""

    report: str = ""
    line: dict[str, str] = Field(default_factory=dict, description="Values of the selected expense line.")
    receipt: dict[str, str] = Field(
        default_factory=dict, description="Receipt header: document number, merchant, total."
    )
    receipt_items: dict[str, ReceiptItem] = Field(default_factory=dict, description="By receipt row number.")
    receipt_rows: int = Field(0, description="Rows of the receipt's grid over all its pages (0: not shown).")
    itemization_total: str = ""
    itemization_itemized: str = ""
    itemization_remaining: str = ""
    itemized_lines: dict[str, ItemizedLine] = Field(default_factory=dict, description="By itemization row number.")


def new_facts(task: str) -> ExpenseFacts:
    """The facts before any response: the report number the instruction names."""
    match = REPORT_NUMBER.search(task)
    return ExpenseFacts(report=match.group(0) if match else "")


def observe(facts: ExpenseFacts, name: str, caption: str, state: dict[str, Any]) -> None:
    """Fold one response's FormState (of form ``name``, captioned ``caption``) into ``facts``."""
    form = state.get(K.FORM)
    if name == "TrvExpenses":
        for _, selected, values in grid_row_values(find_grid(form, "ExpenseReportsGrid")):
            if selected and values.get("TrvExpTable_ExpNumber"):
                facts.report = values["TrvExpTable_ExpNumber"]
    elif name == "TrvExpenseReport":
        number = control_text(state, "TrvExpTable_ExpNumber") or (REPORT_NUMBER.search(caption) or [""])[0]
        if number:
            facts.report = number
        for _, selected, values in grid_row_values(find_grid(form, "ExpenseLinesGrid")):
            if selected:
                facts.line = values
    elif name == "TrvReceiptViewer":
        document = control_text(state, "Receipt_DocumentNumber")
        if document and facts.receipt.get("document", document) != document:
            facts.receipt_items = {}  # another line's receipt (a task with several lines): its rows replace the last one's
        grid = find_grid(form, "ReceiptItemsGrid")
        facts.receipt_rows = grid_total_rows(grid)
        for label, control in RECEIPT_HEADER:
            value = control_text(state, control)
            if value:
                facts.receipt[label] = value
        for number, _, values in grid_row_values(grid):
            facts.receipt_items[number] = ReceiptItem(
                date=values.get("ReceiptItem_Date", ""),
                description=values.get("ReceiptItem_Description", ""),
                amount=values.get("ReceiptItem_Amount", ""),
                subcategory=values.get("ReceiptItem_SubCategory", values.get("ReceiptItem_Subcategory", "")),
            )
    elif name == "TrvItemization":
        for field, control in (
            ("itemization_total", "ItemizationTotal"),
            ("itemization_itemized", "ItemizationItemized"),
            ("itemization_remaining", "ItemizationRemaining"),
        ):
            value = control_text(state, control)
            if value is not None:
                setattr(facts, field, value)
        grid = find_grid(form, "ItemizationGrid")
        if grid is not None:
            rows = grid_row_values(grid)
            for number, _, values in rows:
                facts.itemized_lines[number] = ItemizedLine(
                    date=values.get("TrvExpTrans_TransDate", ""),
                    subcategory=values.get("TrvExpTrans_ExpSubCategory", ""),
                    amount=values.get("TrvExpTrans_AmountCurr", ""),
                    description=values.get("TrvExpTrans_Description", ""),
                    status=values.get("TrvExpTrans_LineStatus", ""),
                )
            if not grid_has_next_page(grid):
                shown = {number for number, _, _ in rows}
                last = max((_row_index(n) for n in shown), default=0)
                for number in [n for n in facts.itemized_lines if n not in shown and _row_index(n) > last]:
                    del facts.itemized_lines[number]


def _row_index(number: str) -> int:
    return int(number) if number.isdigit() else 0


# -- what is left to do --------------------------------------------------------------------
@lru_cache(maxsize=4_096)  # a summary reads every charge's and line's amount at every fold: the texts repeat
def _amount(text: str) -> Decimal | None:
    cleaned = _NOT_AMOUNT.sub("", text or "")
    try:
        return Decimal(cleaned).quantize(_CENT) if cleaned else None
    except InvalidOperation:
        return None


_NOT_AMOUNT = re.compile(r"[^\d.\-]")
_CENT = Decimal("0.01")


def missing_receipt_items(facts: ExpenseFacts) -> list[ReceiptItem]:
    """Receipt items with no saved itemized line of the same amount (a multiset match, in receipt order)."""
    saved = Counter(
        _amount(line.amount) for line in facts.itemized_lines.values() if line.status.lower() in ("saved", "")
    )
    missing = []
    for item in facts.receipt_items.values():
        amount = _amount(item.amount)
        if amount is not None and saved[amount] > 0:
            saved[amount] -= 1
        else:
            missing.append(item)
    return missing


def todo_lines(facts: ExpenseFacts, current_form: str) -> list[str]:
    todo = []
    if not facts.report:
        todo.append("Find the expense report named in the task.")
    if not facts.line:
        todo.append("Select the expense line to itemize.")
    if not facts.receipt_items:
        todo.append("Open the receipt and read its items.")
    else:
        for item in missing_receipt_items(facts):
            todo.append(f"Itemize receipt item: {item.date} | {item.description} | {item.amount}")
    unsaved = [n for n, line in facts.itemized_lines.items() if line.status.lower() in ("new", "modified")]
    if unsaved:
        todo.append(f"Save itemized rows {', '.join(unsaved)}.")
    remaining = _amount(facts.itemization_remaining)
    if remaining is not None and remaining != 0:
        todo.append(f"Remaining is {facts.itemization_remaining}; bring it to exactly 0.00.")
    if remaining == 0 and not unsaved and current_form == "TrvItemization":
        todo.append("Remaining is 0.00 and lines are saved: close the itemization form.")
    return todo or ["Verify remaining is 0.00 with all lines saved and the form closed, then report to the user."]


# -- rendering -----------------------------------------------------------------------------
def key_variable_lines(facts: ExpenseFacts) -> list[str]:
    """The facts as "Key variables" lines (the harness adds the current form)."""
    lines = []
    if facts.report:
        lines.append(f"Report: {facts.report}")
    if facts.line:
        lines.append("Line: " + ", ".join(f"{k}={v}" for k, v in facts.line.items()))
    if facts.receipt:
        lines.append("Receipt: " + ", ".join(f"{label} {value}" for label, value in facts.receipt.items()))
    if facts.receipt_items:
        read = len(facts.receipt_items)  # a receipt longer than a page says how much of it was read
        lines.append(
            f"Receipt items ({read} of {facts.receipt_rows} read):"
            if facts.receipt_rows > read
            else f"Receipt items ({read}):"
        )
        lines += [
            f"  {n}. {i.date} | {i.description} | {i.amount}" + (f" | {i.subcategory}" if i.subcategory else "")
            for n, i in facts.receipt_items.items()
        ]
    lines += figures_line(
        "Itemization",
        (
            ("total", facts.itemization_total),
            ("itemized", facts.itemization_itemized),
            ("remaining", facts.itemization_remaining),
        ),
    )
    if facts.itemized_lines:
        lines.append(f"Itemized lines ({len(facts.itemized_lines)}):")
        lines += [
            f"  {n}. {line.date} | {line.subcategory} | {line.amount} | {line.status}"
            + (f" | {line.description}" if line.description else "")
            for n, line in facts.itemized_lines.items()
        ]
    return lines


SUMMARY_FACTS = SummaryFacts(
    new=new_facts, observe=observe, key_variables=key_variable_lines, todo=todo_lines, guardrails=GUARDRAILS
)
