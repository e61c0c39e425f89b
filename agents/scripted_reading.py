"""What the scripted agent reads: receipts, tool results, the user's messages and the refined (compact) form text."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from operator import methodcaller
from typing import NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.agents.memory.memory_tools import MEMORY_TOOLS
from erp_sim.agents.memory.store import parse_steps
from erp_sim.agents.tokens import same_prefix
from erp_sim.agents.types import Message
from erp_sim.catalog import wording_to_subcategory

_SUMMARY_ITEMS = re.compile(r"^Receipt items \(\d+\):\n((?:\s+\d+\..*\n?)+)", re.MULTILINE)
_SUMMARY_ITEM = re.compile(r"^\s*\d+\.\s+(\d{4}-\d{2}-\d{2})\s+\|\s+(.+?)\s+\|\s+([\d,]+\.\d{2})\b", re.MULTILINE)
CONFIRMED = re.compile(r"\byes\b.*\badd\b", re.IGNORECASE | re.DOTALL)
_SUMMARY_DOCUMENT = re.compile(r"^Receipt: document (\S+?),", re.MULTILINE)
Charge = tuple[str, str, str]  # (subcategory, date, amount "123.45")
_CONTENT = methodcaller("get", "content")
READ_CACHE_SIZE = 4096  # messages whose reading is kept (an episode shows a few hundred)


def read_money(text: object) -> str | None:
    return _money(str(text))


@lru_cache(maxsize=READ_CACHE_SIZE)  # every call re-reads the grid rows it is shown: the same few amounts
def _money(text: str) -> str | None:
    try:
        return str(Decimal(text.replace(",", "")).quantize(Decimal("0.01")))
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


# -- reading a transcript: the scripted agent's fold over the messages it is shown ---------------
def parse_sop(text: str) -> dict | None:
    """The steps of an SOP as memory_read shows it, or None (an error text)."""
    steps = parse_steps(text) if text.startswith("sop/") else []
    return {"steps": [step.model_dump() for step in steps]} if steps else None


class Reading:
    """What the messages shown so far say, read in order (the part of ``View`` that depends on every message).

    ``Reading.of`` reads only the messages after the last call's when the new list starts with the
    last one's very objects (with the same content objects): full history resends them all, and
    re-reading them made each call cost the whole history. Anything else is read from the start.
    The result is what reading the whole list gives: a tool result's call is looked up among all
    the list's calls, so the shortcut is not taken once a call id repeats or a result's call was
    missing (a later call could change how it reads).
    """

    def __init__(self, instruction: str, expense_type: str, task_lines: list) -> None:
        self.instruction, self.expense_type, self.task_lines = instruction, expense_type, task_lines
        self.messages: list[Message] = []  # the objects read, and their contents (replaced content: read again)
        self.contents: list[object] = []
        self.calls: dict[object, tuple[object, object]] = {}  # call id -> (tool name, arguments text)
        self.regular = True  # False once a call id repeated or a result's call was missing
        self.sop_wanted = f"sop/itemize_{expense_type.lower()}_expense:"
        self.sop_indexed = False  # the memory index (a system message) lists this expense type's SOP
        self.long_term_update_requested = False
        self.state: dict | None = None  # FormState of the latest tool result
        self.last_tool: object = None
        self.last_call: object = None  # the call id of the latest tool result (its arguments are read at the end)
        self.charges: list[Charge] | None = None
        self.charges_at = 0  # index of the message the charges were read from
        self.receipt_document = ""
        self.receipts: dict[str, dict[int, tuple[Charge, int]]] = {}  # document -> row -> (charge, message index)
        self.receipt_ends: dict[str, int] = {}  # document -> its last row (seen on a page without a next one)
        self.paged_receipt = False
        self.confirmed = False
        self.seen_tool_result = False
        self.sop: dict | None = None  # the SOP as memory_read returned it
        self.sop_read = False

    @classmethod
    def of(
        cls, messages: list[Message], instruction: str, expense_type: str, task_lines: list, last: Reading | None
    ) -> Reading:
        continued = last is not None and last._continues(messages, instruction, expense_type, task_lines)
        if continued and last is not None and last._read(messages, len(last.messages)):
            return last
        reading = cls(instruction, expense_type, task_lines)
        reading._read(messages, 0)
        return reading

    def _continues(self, messages: list[Message], instruction: str, expense_type: str, task_lines: list) -> bool:
        known = len(self.messages)
        return (
            self.regular
            and 0 < known <= len(messages)
            and (instruction, expense_type, task_lines) == (self.instruction, self.expense_type, self.task_lines)
            and same_prefix(messages, self.messages) == known
            and same_prefix(list(map(_CONTENT, messages[:known])), self.contents) == known
        )

    def _read(self, messages: list[Message], start: int) -> bool:
        """Read ``messages[start:]``; False (nothing changed) when a new call id repeats an earlier one."""
        new = messages[start:]
        made = [
            (c["id"], c["function"]["name"], c["function"].get("arguments"))
            for m in new
            for c in m.get("tool_calls") or []
        ]
        calls = {call_id: (name, arguments) for call_id, name, arguments in made}
        unique = len(calls) == len(made) and calls.keys().isdisjoint(self.calls)
        if start and not unique:
            return False
        self.regular = self.regular and unique  # a list read whole: a repeated id keeps its last call, as one map does
        self.calls.update(calls)
        self.long_term_update_requested = self.long_term_update_requested or any(
            name == "start_long_term_update" for name, _ in calls.values()
        )
        first = messages[0] if messages else None
        for position, message in enumerate(new, start=start):
            role = message.get("role")
            if role == "system":
                self.sop_indexed = self.sop_indexed or self.sop_wanted in str(message.get("content") or "")
            if position:
                self._read_one(message, role, position, first)
        self.messages += new
        self.contents += map(_CONTENT, new)
        return True

    def _read_one(self, message: Message, role: object, position: int, first: Message | None) -> None:
        content = message.get("content") or ""
        if role == "tool":
            call_id = message.get("tool_call_id")
            call = self.calls.get(call_id)
            if call is None:
                self.regular = False
            name = call[0] if call is not None else None
            if name in MEMORY_TOOLS:
                if name == "memory_read":
                    self.sop_read = True
                    self.sop = parse_sop(content) or self.sop
                return
            self.seen_tool_result = True
            self.last_tool = name if call is not None else message.get("name")
            self.last_call = call_id
            self.state, receipt = read_tool_result(content, self.expense_type)
            if receipt is not None:
                self.charges, self.receipt_document = list(receipt.charges), receipt.document
                self._keep_rows(receipt.document, list(receipt.rows), self.charges, position, receipt.more)
                self.charges_at = position
        elif role == "user" and message is not first:
            confirms, summary, document = read_user_message(content, self.expense_type)
            if confirms:
                self.confirmed = True
            if self.charges is None and summary is not None:  # the "Receipt items" of a structured summary
                self.charges = list(summary)
                if document:
                    self._keep_rows(document, list(range(1, len(summary) + 1)), self.charges, position, False)
                    if (
                        self.task_lines
                    ):  # several receipts: name the one asked about (one line's question keeps its words)
                        self.receipt_document = document
                self.charges_at = position

    def last_arguments(self) -> object:
        """The arguments text of the latest tool result's call (None: no such call)."""
        call = self.calls.get(self.last_call)
        return call[1] if call is not None else None

    def _keep_rows(self, document: str, numbers: list[int], charges: list[Charge], position: int, more: bool) -> None:
        known = self.receipts.setdefault(document, {})
        self.paged_receipt = self.paged_receipt or more or max(numbers, default=0) > PAGE_ROWS
        for number, charge in zip(numbers, charges):
            known[number] = (charge, position)
        if not more and numbers:
            self.receipt_ends[document] = max(numbers)
