"""Facts an expense-itemization agent needs, read offline from D365-shaped tool responses.

The ERP answers every tool call with a JSON text block shaped like the D365 ERP MCP
server's: ``{"SessionId", "Result", "Messages": [{"Level", "Text"}], "FormState": {"Name",
"Caption", "Form": {"Input": [...], "RealInput": [...], "Grid": [{"Name", "Columns",
"Rows": [{"RowNumber", "Selected", "Values": {...}}], ...}], "Group": [{"Children": {...}}],
...}, ...}, ...}``. This module folds a transcript into ``ExpenseFacts`` (report, line,
receipt items, itemization amounts and lines, actions, warnings) and renders them as the
sections an ACON-style summary has: task, key variables, completed, to-do, guardrails.

Everything here is deterministic and tolerant: a missing piece of a response is skipped,
a response that is not JSON only contributes its text to the action log.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from erp_sim import response_keys as K
from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import Message
from erp_sim.formstate import (
    control_text,
    find_grid,
    grid_has_next_page,
    grid_row_values,
    grid_total_rows,
    parse_response,
    text_of,
    walk_controls,
)

REPORT_NUMBER = re.compile(r"\bEXP-\d+\b")
MAX_ACTIONS_SHOWN = 15
MAX_NOTES = 8

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
    """What the transcript so far has shown about the task; later observations win."""

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
    current_form: str = ""
    current_caption: str = ""
    forms_seen: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list, description="One line per tool call: call -> result.")
    notes: list[str] = Field(default_factory=list, description="Latest warnings and errors, deduplicated.")
    user_messages: list[str] = Field(default_factory=list)
    open_calls: dict[str, str] = Field(default_factory=dict, description="Calls still waiting for their result.")


# -- reading one response: erp_sim.formstate is the one reader of the response shape ----------
def observe_response(facts: ExpenseFacts, response: dict[str, Any]) -> None:
    """Fold one parsed tool response into ``facts``."""
    for message in response.get(K.MESSAGES) or []:
        if isinstance(message, dict) and message.get(K.LEVEL) in (K.LEVEL_WARNING, K.LEVEL_ERROR):
            _note(facts, f"{message[K.LEVEL]}: {text_of(message.get(K.TEXT))}")
    state = response.get(K.FORM_STATE)
    if not isinstance(state, dict):
        return
    name, caption = text_of(state.get(K.NAME)), text_of(state.get(K.CAPTION))
    facts.current_form, facts.current_caption = name, caption
    if name and name not in facts.forms_seen:
        facts.forms_seen.append(name)
    form = state.get(K.FORM)
    if name == "TrvExpenses":
        for _, selected, values in grid_row_values(find_grid(form, "ExpenseReportsGrid")):
            if selected and values.get("TrvExpTable_ExpNumber"):
                facts.report = values["TrvExpTable_ExpNumber"]
    elif name == "TrvExpenseReport":
        number = control_text(state, "TrvExpTable_ExpNumber") or _first_match(REPORT_NUMBER, caption)
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


def _first_match(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    return match.group(0) if match else ""


def _note(facts: ExpenseFacts, note: str) -> None:
    if note in facts.notes:
        facts.notes.remove(note)
    facts.notes.append(note)
    del facts.notes[:-MAX_NOTES]


# -- reading a transcript ------------------------------------------------------------------
def compact_arguments(arguments: str, limit: int = 60) -> str:
    try:
        value = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return _shorten(arguments, limit)
    if not isinstance(value, dict):
        return _shorten(json.dumps(value, ensure_ascii=False), limit)
    return ", ".join(f"{k}={_shorten(text_of(v), limit)}" for k, v in value.items())


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_line(content: str) -> str:
    """One line saying what a tool response reported."""
    response = parse_response(content)
    if response is None:
        return _shorten(content, 100)
    parts = [text_of(response.get(K.RESULT))] if response.get(K.RESULT) else []
    errors = [
        text_of(m.get(K.TEXT))
        for m in response.get(K.MESSAGES) or []
        if isinstance(m, dict) and m.get(K.LEVEL) == K.LEVEL_ERROR
    ]
    if errors:
        parts.append("error: " + "; ".join(errors))
    state = response.get(K.FORM_STATE)
    if isinstance(state, dict) and state.get(K.NAME):
        parts.append(f"form {state[K.NAME]}")
    return _shorten(" | ".join(parts) or "(no result text)", 160)


def observe_messages(facts: ExpenseFacts, messages: list[Message]) -> None:
    """Fold transcript messages (any roles) into ``facts``, in order."""
    calls = facts.open_calls
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                calls[call.get("id", "")] = (
                    f"{function.get('name', '?')}({compact_arguments(function.get('arguments', ''))})"
                )
        elif role == "tool":
            content = message_text(message.get("content"))
            call = calls.pop(message.get("tool_call_id", ""), f"{message.get('name', 'tool')}(?)")
            facts.actions.append(f"{call} -> {result_line(content)}")
            response = parse_response(content)
            if response is not None:
                observe_response(facts, response)
            elif content.lower().startswith(("error", "toolerror", "invalid")):
                _note(facts, _shorten(content, 160))
        elif role == "user":
            facts.user_messages.append(_shorten(message_text(message.get("content")), 200))
            del facts.user_messages[:-3]


def copy_facts(facts: ExpenseFacts) -> ExpenseFacts:
    """An independent copy, cheaply: containers are copied, their items are replaced, never mutated."""
    update = {name: type(value)(value) for name, value in facts.__dict__.items() if isinstance(value, (list, dict))}
    return facts.model_copy(update=update)


def facts_from_messages(messages: list[Message], task: str = "") -> ExpenseFacts:
    facts = ExpenseFacts(report=_first_match(REPORT_NUMBER, task))
    observe_messages(facts, messages)
    return facts


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


def todo_lines(facts: ExpenseFacts) -> list[str]:
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
    if remaining == 0 and not unsaved and facts.current_form == "TrvItemization":
        todo.append("Remaining is 0.00 and lines are saved: close the itemization form.")
    return todo or ["Verify remaining is 0.00 with all lines saved and the form closed, then report to the user."]


# -- rendering -----------------------------------------------------------------------------
def task_line(task: str, limit: int = 400) -> str:
    return _shorten(task, limit) if task else "(no task instruction)"


def key_variable_lines(facts: ExpenseFacts) -> list[str]:
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
    amounts = [
        (label, value)
        for label, value in (
            ("total", facts.itemization_total),
            ("itemized", facts.itemization_itemized),
            ("remaining", facts.itemization_remaining),
        )
        if value
    ]
    if amounts:
        lines.append("Itemization: " + ", ".join(f"{label} {value}" for label, value in amounts))
    if facts.itemized_lines:
        lines.append(f"Itemized lines ({len(facts.itemized_lines)}):")
        lines += [
            f"  {n}. {line.date} | {line.subcategory} | {line.amount} | {line.status}"
            + (f" | {line.description}" if line.description else "")
            for n, line in facts.itemized_lines.items()
        ]
    if facts.current_form:
        lines.append(
            f"Current form: {facts.current_form}" + (f" ({facts.current_caption})" if facts.current_caption else "")
        )
    return lines or ["(none observed yet)"]


def completed_lines(facts: ExpenseFacts) -> list[str]:
    shown = facts.actions[-MAX_ACTIONS_SHOWN:]
    earlier = len(facts.actions) - len(shown)
    lines = [f"({earlier} earlier actions not listed)"] if earlier else []
    lines += [f"- {action}" for action in shown]
    return lines or ["(no tool calls yet)"]


def guardrail_lines(facts: ExpenseFacts) -> list[str]:
    lines = [f"- {rule}" for rule in GUARDRAILS]
    lines += [f"- Seen: {note}" for note in facts.notes]
    return lines


def render_summary(task: str, facts: ExpenseFacts) -> str:
    """The ACON-style sections, as plain text."""
    sections = [
        ("Task", [task_line(task)]),
        ("Key variables", key_variable_lines(facts)),
        ("Completed", completed_lines(facts)),
        ("To-do", [f"- {line}" for line in todo_lines(facts)]),
        ("Guardrails", guardrail_lines(facts)),
    ]
    if facts.user_messages:
        sections.insert(3, ("User said", [f"- {m}" for m in facts.user_messages]))
    return "\n\n".join(f"## {title}\n" + "\n".join(lines) for title, lines in sections)


def render_observation(content: str, limit: int = 2000) -> str:
    """A compact, deterministic rewrite of one tool response: result, messages, values, grids.

    Drops what the agent never acts on (session and activity ids, deep links, labels,
    guidance, button metadata) and keeps every control value and grid row.
    """
    if not content.strip():
        return "(empty response)"
    response = parse_response(content)
    if response is None:
        return content if len(content) <= limit else content[: limit // 2] + "\n…\n" + content[-limit // 2 :]
    lines = []
    if response.get(K.RESULT):
        lines.append(f"Result: {text_of(response[K.RESULT])}")
    for message in response.get(K.MESSAGES) or []:
        if isinstance(message, dict):
            lines.append(f"{message.get(K.LEVEL, 'Info')}: {text_of(message.get(K.TEXT))}")
    state = response.get(K.FORM_STATE)
    if isinstance(state, dict):
        head = f"Form {text_of(state.get(K.NAME))}"
        if state.get(K.CAPTION):
            head += f" ({text_of(state[K.CAPTION])})"
        lines.append(head)
        for control_type, control in walk_controls(state.get(K.FORM)):
            if control_type == K.GRID:
                lines += _grid_lines(control)
            elif control_type not in K.CONTAINER_TYPES and K.VALUE in control:
                lines.append(f"  {control.get(K.NAME, '?')} = {text_of(control.get(K.VALUE))}")
        buttons = [name for b in state.get(K.BUTTONS) or [] if isinstance(b, dict) and (name := b.get(K.NAME))]
        if buttons:
            lines.append("Buttons: " + ", ".join(buttons))
    if not lines:
        lines.append(_shorten(content, limit))
    return "\n".join(lines)


def _grid_lines(grid: dict[str, Any]) -> list[str]:
    rows = grid_row_values(grid)
    columns = [c.get(K.NAME, "?") if isinstance(c, dict) else str(c) for c in grid.get(K.COLUMNS) or []]
    lines = [f"  Grid {grid.get(K.NAME, '?')} ({len(rows)} rows): " + " | ".join(columns)]
    for number, selected, values in rows:
        cells = [values.get(c, "") for c in columns] if columns else list(values.values())
        lines.append(f"    {number}{'*' if selected else ''}: " + " | ".join(cells))
    if grid_has_next_page(grid):
        lines.append("    (more rows on the next page)")
    return lines
