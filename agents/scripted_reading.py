"""What the scripted agent reads: receipts, tool results, the user's messages and the refined (compact) form text."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.catalog import wording_to_subcategory

_SUMMARY_ITEMS = re.compile(r"^Receipt items \(\d+\):\n((?:\s+\d+\..*\n?)+)", re.MULTILINE)
_SUMMARY_ITEM = re.compile(r"^\s*\d+\.\s+(\d{4}-\d{2}-\d{2})\s+\|\s+(.+?)\s+\|\s+([\d,]+\.\d{2})\b", re.MULTILINE)
CONFIRMED = re.compile(r"\byes\b.*\badd\b", re.IGNORECASE | re.DOTALL)
_SUMMARY_DOCUMENT = re.compile(r"^Receipt: document (\S+?),", re.MULTILINE)
Charge = tuple[str, str, str]  # (subcategory, date, amount "123.45")
READ_CACHE_SIZE = 4096  # messages whose reading is kept (an episode shows a few hundred)


def read_money(text: object) -> str | None:
    try:
        return str(Decimal(str(text).replace(",", "")).quantize(Decimal("0.01")))
    except (InvalidOperation, ValueError):
        return None


PAGE_ROWS = 25  # the ERP's grid page


def row_index(number: object) -> int:
    return int(number) if isinstance(number, str) and number.isdigit() else 0


# -- reading one message: each message is read once, not at every step (the same transcript
# messages are shown again and again; re-parsing them made every step cost the whole history).
# Cached by text; the results are shared between steps and must not be mutated.
class ReceiptPage(NamedTuple):
    """What one receipt-viewer result shows: its charges, their row numbers, and whether a next page exists."""

    charges: tuple[Charge, ...]
    document: str
    rows: tuple[int, ...]
    more: bool


@lru_cache(maxsize=READ_CACHE_SIZE)
def read_tool_result(content: str, expense_type: str) -> tuple[dict | None, ReceiptPage | None]:
    """(the FormState a tool result shows, the receipt page a receipt viewer shows)."""
    state = formstate.form_state(content) if formstate.parse_response(content) else parse_refined(content)
    receipt = (
        _read_receipt(state, wording_to_subcategory(expense_type))
        if state and state.get(K.NAME) == "TrvReceiptViewer"
        else None
    )
    return state, receipt


def _read_receipt(state: dict, mapping: dict[str, str]) -> ReceiptPage | None:
    rows = formstate.grid_rows(state, "ReceiptItemsGrid")
    charges = tuple(
        (
            mapping.get(r.get("ReceiptItem_Description", ""), "?"),
            r.get("ReceiptItem_Date", ""),
            read_money(r.get("ReceiptItem_Amount")) or "?",
        )
        for r in rows
    )
    if not charges:
        return None
    return ReceiptPage(
        charges,
        str(formstate.control_value(state, "Receipt_DocumentNumber") or ""),
        tuple(row_index(r.get(K.ROW_NUMBER)) for r in rows),
        formstate.has_next_page(state, "ReceiptItemsGrid"),
    )


@lru_cache(maxsize=READ_CACHE_SIZE)
def read_user_message(content: str, expense_type: str) -> tuple[bool, tuple[Charge, ...] | None, str | None]:
    """(the user confirms adding the charges, the charges of a structured summary's "Receipt items"
    (erp_sim.agents.expense_facts format), that receipt's document number)."""
    block = _SUMMARY_ITEMS.search(content)
    items = _SUMMARY_ITEM.findall(block.group(1)) if block else []
    mapping = wording_to_subcategory(expense_type)
    summary = tuple((mapping.get(desc.strip(), "?"), day, read_money(amount) or "?") for day, desc, amount in items)
    document = _SUMMARY_DOCUMENT.search(content) if summary else None
    return bool(CONFIRMED.search(content)), summary or None, document.group(1) if document else None


_REFINED_FORM = re.compile(r"^Form (\w+)")
_REFINED_CONTROL = re.compile(r"^  (\w+) = (.*)$")
_REFINED_GRID = re.compile(r"^  Grid (\w+) \(\d+ rows\): (.*)$")
_REFINED_ROW = re.compile(r"^    (\d+)(\*?): (.*)$")


def parse_refined(text: str) -> dict | None:
    """A FormState-shaped dict from a refined observation (see ``render_observation``), or None."""
    state: dict | None = None
    grid: dict | None = None
    for line in text.splitlines():
        if match := _REFINED_FORM.match(line):
            state = {
                K.NAME: match.group(1),
                K.CAPTION: line[len(match.group(0)) :].strip(" ()"),
                K.FORM: {K.INPUT: [], K.GRID: []},
            }
        elif state is None:
            continue
        elif match := _REFINED_GRID.match(line):
            grid = {K.NAME: match.group(1), K.COLUMNS: match.group(2).split(" | "), K.ROWS: [], K.PAGINATION: {}}
            state[K.FORM][K.GRID].append(grid)
        elif grid is not None and (match := _REFINED_ROW.match(line)):
            values = dict(zip(grid[K.COLUMNS], match.group(3).split(" | ")))
            grid[K.ROWS].append({K.ROW_NUMBER: match.group(1), K.IS_SELECTED: bool(match.group(2)), K.VALUES: values})
        elif grid is not None and line.strip() == "(more rows on the next page)":
            grid[K.PAGINATION][K.HAS_NEXT_PAGE] = True
        elif match := _REFINED_CONTROL.match(line):
            state[K.FORM][K.INPUT].append({K.NAME: match.group(1), K.VALUE: match.group(2)})
            grid = None
    return state
