"""What the scripted agent reads: receipts, tool results, the user's messages and the refined (compact) form text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import repeat
from typing import Any, NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.agents.memory.memory_tools import MEMORY_TOOLS
from erp_sim.agents.memory.store import parse_steps
from erp_sim.agents.tokens import all_unchanged_objects, message_entries, next_false, unchanged_objects
from erp_sim.agents.types import Message
from erp_sim.workflows.itemization.catalog import wording_to_subcategory

_SUMMARY_ITEMS = re.compile(r"^Receipt items \(\d+\):\n((?:\s+\d+\..*\n?)+)", re.MULTILINE)
_SUMMARY_ITEM = re.compile(r"^\s*\d+\.\s+(\d{4}-\d{2}-\d{2})\s+\|\s+(.+?)\s+\|\s+([\d,]+\.\d{2})\b", re.MULTILINE)
CONFIRMED = re.compile(r"\byes\b.*\badd\b", re.IGNORECASE | re.DOTALL)
_SUMMARY_DOCUMENT = re.compile(r"^Receipt: document (\S+?),", re.MULTILINE)
Charge = tuple[str, str, str]  # (subcategory, date, amount "123.45")
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


class FormIndex(NamedTuple):
    """A FormState's grids and controls by name, from one walk of its tree: what ``erp_sim.formstate``'s
    look-ups (a walk each) find, for names that are strings."""

    grids: dict[str, dict]  # the last grid of each name (``formstate.grids``)
    first_grids: dict[str, dict]  # the first (``formstate.find_grid``, ``grid_rows``, ``has_next_page``)
    controls: dict[str, dict]  # the first control or container (``formstate.find_control``, ``control_value``)

    def grid_rows(self, name: str) -> list[dict]:
        """``formstate.grid_rows``'s rows (a row's values plus its ``RowNumber``)."""
        return formstate.grid_row_dicts(self.first_grids.get(name))

    def first_row(self, name: str) -> int:
        """The row number of the grid's first row on the page shown (0: none)."""
        grid = self.first_grids.get(name) or {}
        row = next((row for row in grid.get(K.ROWS) or [] if isinstance(row, dict)), None)
        return row_index(row.get(K.ROW_NUMBER)) if row is not None else 0

    def has_next_page(self, name: str) -> bool:
        return formstate.grid_has_next_page(self.first_grids.get(name))

    def control_value(self, name: str) -> Any:
        control = self.controls.get(name)
        return control.get(K.VALUE) if control else None


def index_form(state: dict | None) -> FormIndex:
    grids: dict[str, dict] = {}
    first_grids: dict[str, dict] = {}
    controls: dict[str, dict] = {}
    for kind, control in formstate.walk_controls((state or {}).get(K.FORM)):
        name = control.get(K.NAME)
        if not isinstance(name, str):  # looked up by string names only
            continue
        if kind == K.GRID:
            grids[name] = control
            first_grids.setdefault(name, control)
        else:
            controls.setdefault(name, control)
    return FormIndex(grids, first_grids, controls)


NO_FORM = index_form(None)


class ToolResult(NamedTuple):
    """What one tool result shows: its FormState (None: no form), that form indexed, and the receipt page
    a receipt viewer shows."""

    state: dict | None
    form: FormIndex
    receipt: ReceiptPage | None


@lru_cache(maxsize=READ_CACHE_SIZE)
def read_tool_result(content: str, expense_type: str) -> ToolResult:
    state = formstate.form_state(content) if formstate.parse_response(content) else parse_refined(content)
    form = index_form(state) if state else NO_FORM
    receipt = (
        _read_receipt(form, wording_to_subcategory(expense_type))
        if state and state.get(K.NAME) == "TrvReceiptViewer"
        else None
    )
    return ToolResult(state, form, receipt)


def _read_receipt(form: FormIndex, mapping: dict[str, str]) -> ReceiptPage | None:
    rows = form.grid_rows("ReceiptItemsGrid")
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
        str(form.control_value("Receipt_DocumentNumber") or ""),
        tuple(row_index(r.get(K.ROW_NUMBER)) for r in rows),
        form.has_next_page("ReceiptItemsGrid"),
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


def _initial_state() -> dict[str, Any]:
    """The reading before any message: one dict, copied after every message (a checkpoint)."""
    return {
        "sop_indexed": False,  # the memory index (a system message) lists this expense type's SOP
        "long_term_update_requested": False,
        "unit_calls": (),  # call ids of the latest assistant message: a tool result's call must be there
        "state": None,  # FormState of the latest tool result
        "form": NO_FORM,  # that FormState's grids and controls by name
        "last_tool": None,
        "last_call": None,  # the call id of the latest tool result (its arguments are looked up at the end)
        "charges": None,  # list[Charge], replaced, never changed in place
        "charges_at": 0,  # index of the message the charges were read from
        "receipt_document": "",
        "receipts": {},  # document -> row -> (charge, message index); copied on write
        "receipt_ends": {},  # document -> its last row (seen on a page without a next one); copied on write
        "paged_receipt": False,
        "confirmed": False,
        "seen_tool_result": False,
        "sop": None,  # the SOP as memory_read returned it
        "sop_read": False,
    }


class Reading:
    """What the messages shown so far say, read in order (the part of ``View`` that depends on every message).

    The state after each message is kept (``checkpoints``), so the next call reads only from the first
    message that differs from the last call's list: not the very object with the same content and calls,
    nor a user message that reads the same (a working-memory block re-rendered with the same receipt
    items and no confirmation). Full history then reads only its new messages, a policy that rewrites
    one older message (head_tail) reads from there. The result is what reading the whole list gives,
    where a tool result's call is looked up among all the list's calls: the shortcut is taken only while
    every result's call is in its own unit and no call id ever stood for two different calls.
    """

    def __init__(self, instruction: str, expense_type: str, task_lines: list) -> None:
        self.instruction, self.expense_type, self.task_lines = instruction, expense_type, task_lines
        self.sop_wanted = f"sop/itemize_{expense_type.lower()}_expense:"
        self.messages: list[Message] = []  # the objects read, and their contents (replaced content: read again)
        self.contents: list[object] = []
        self.tool_calls: list[object] = []
        self.checkpoints: list[dict[str, Any]] = [_initial_state()]  # the state after messages[:k]
        self.calls: dict[object, tuple[object, object]] = {}  # call id -> (tool name, arguments text), ever seen
        self.regular = True  # every result's call in its unit and no id for two calls: the next call may resume
        self.now = self.checkpoints[0]  # the state after the whole list
        self.arguments: object = None  # the arguments text of the latest tool result's call
        # document -> (its rows, its last row, its charges) as View last put them together: a long receipt's
        # charges are listed once, not at every call (shared by the views: read, never changed)
        self.whole_receipts: dict[str, tuple[dict, int, list]] = {}

    @classmethod
    def of(
        cls, messages: list[Message], instruction: str, expense_type: str, task_lines: list, last: Reading | None
    ) -> Reading:
        usable = (
            last is not None
            and last.regular
            and (instruction, expense_type, task_lines) == (last.instruction, last.expense_type, last.task_lines)
        )
        if usable and last is not None:
            start = last._resume_point(messages)
            if start and last._read(messages, start, last.calls):
                return last
        reading = cls(instruction, expense_type, task_lines)
        made = [
            (c["id"], c["function"]["name"], c["function"].get("arguments"))
            for m in messages
            for c in m.get("tool_calls") or []
        ]
        calls = {call_id: (name, arguments) for call_id, name, arguments in made}  # a repeated id: its last call
        reading.regular = len(calls) == len(made)
        reading._read(messages, 0, calls)
        if not reading.regular:  # what one map over the list says (a repeated id keeps only its last call)
            reading.now["long_term_update_requested"] = any(
                name == "start_long_term_update" for name, _ in calls.values()
            )
        return reading

    def _resume_point(self, messages: list[Message]) -> int:
        """How many leading messages read as the last list's did (the checkpoint to read on from)."""
        if all_unchanged_objects(messages, self.messages, self.contents, self.tool_calls):  # the common case
            return min(len(messages), len(self.messages))
        same = unchanged_objects(messages, self.messages, self.contents, self.tool_calls)
        start = next_false(same, 0)
        while start is not None and self._reads_the_same(messages, start):
            start = next_false(same, start + 1)
        return len(same) if start is None else start

    def _reads_the_same(self, messages: list[Message], at: int) -> bool:
        """Two user messages (not the first) that read alike at the same position leave the same state
        (the old one's content as it was read: a content replaced in place is compared as read)."""
        new, old = messages[at], self.messages[at]
        if not at or new.get("role") != "user" or old.get("role") != "user":
            return False
        if new is messages[0] or old is self.messages[0]:
            return False
        read = (new.get("content") or "", self.contents[at] or "")
        if not all(isinstance(text, str) for text in read):
            return False
        return read_user_message(read[0], self.expense_type) == read_user_message(read[1], self.expense_type)

    def _read(self, messages: list[Message], start: int, calls: dict[object, tuple[object, object]]) -> bool:
        """Read ``messages[start:]`` on from the checkpoint before them; False when a call id stands for another
        call than before, or a result's call is not in its unit (this reading is then irregular, never resumed:
        the list is read whole instead). The lists are cut and extended in place (work for the new messages
        only, not a copy of the history at every call)."""
        known = self.calls
        for m in messages[start:]:
            for c in m.get("tool_calls") or []:
                call = (c["function"]["name"], c["function"].get("arguments"))
                if known.setdefault(c["id"], call) != call:
                    self.regular = False
        if start and not self.regular:
            return False
        state = dict(self.checkpoints[start])
        checkpoints = self.checkpoints
        del checkpoints[start + 1 :]
        first = messages[0] if messages else None
        for position in range(start, len(messages)):
            message = messages[position]
            if not self._read_one(state, message, position, first, calls) and start:
                self.regular = False
                return False
            checkpoints.append(dict(state))
        self.now = checkpoints[-1]
        read = messages[start:]
        for kept, entries in (
            (self.messages, read),
            (self.contents, message_entries(read, "content")),
            (self.tool_calls, message_entries(read, "tool_calls")),
        ):
            del kept[start:]
            kept.extend(entries)
        last = calls.get(self.now["last_call"])
        self.arguments = last[1] if last is not None else None
        return True

    def _read_one(
        self,
        state: dict[str, Any],
        message: Message,
        position: int,
        first: Message | None,
        calls: dict[object, tuple[object, object]],
    ) -> bool:
        """Fold one message into ``state``; False when it is a tool result whose call is not in its unit."""
        role = message.get("role")
        if role == "system" and not state["sop_indexed"]:
            state["sop_indexed"] = self.sop_wanted in str(message.get("content") or "")
        if role == "assistant":
            made = message.get("tool_calls") or []
            state["unit_calls"] = tuple([c["id"] for c in made])
            if "start_long_term_update" in [c["function"]["name"] for c in made]:
                state["long_term_update_requested"] = True
        elif role != "tool":
            state["unit_calls"] = ()
        if not position:
            return True
        content = message.get("content") or ""
        if role == "tool":
            call_id = message.get("tool_call_id")
            regular = call_id in state["unit_calls"]
            if not regular:
                self.regular = False
            call = calls.get(call_id)
            name = call[0] if call is not None else None
            if name in MEMORY_TOOLS:
                if name == "memory_read":
                    state["sop_read"] = True
                    state["sop"] = parse_sop(content) or state["sop"]
                return regular
            state["seen_tool_result"] = True
            state["last_tool"] = name if call is not None else message.get("name")
            state["last_call"] = call_id
            state["state"], state["form"], receipt = read_tool_result(content, self.expense_type)
            if receipt is not None:
                state["charges"], state["receipt_document"] = list(receipt.charges), receipt.document
                _keep_rows(state, receipt.document, receipt.rows, receipt.charges, position, receipt.more)
                state["charges_at"] = position
            return regular
        if role == "user" and message is not first:
            confirms, summary, document = read_user_message(content, self.expense_type)
            if confirms:
                state["confirmed"] = True
            if state["charges"] is None and summary is not None:  # the "Receipt items" of a structured summary
                state["charges"] = list(summary)
                if document:
                    _keep_rows(state, document, range(1, len(summary) + 1), summary, position, False)
                    if (
                        self.task_lines
                    ):  # several receipts: name the one asked about (one line's question keeps its words)
                        state["receipt_document"] = document
                state["charges_at"] = position
        return True


def _keep_rows(
    state: dict[str, Any], document: str, numbers: Sequence[int], charges: Sequence[Charge], position: int, more: bool
) -> None:
    """Keep a receipt page's rows (new dicts: the checkpoints before it keep theirs)."""
    receipts = state["receipts"] = dict(state["receipts"])
    known = receipts[document] = dict(receipts.get(document, {}))
    last = max(numbers, default=0)
    state["paged_receipt"] = state["paged_receipt"] or more or last > PAGE_ROWS
    known.update(zip(numbers, zip(charges, repeat(position))))  # row -> (charge, message index)
    if not more and numbers:
        state["receipt_ends"] = {**state["receipt_ends"], document: last}
