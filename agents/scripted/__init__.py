"""A deterministic scripted agent: the offline stand-in for an LLM (its numbers are NOT LLM results).

It knows the itemization procedure and the receipt-wording -> subcategory table (what the
study's system prompt gave GPT-5), and decides each step ONLY from the messages it is shown:
no memory between steps (its reading of the messages is kept between calls only as a cache, used when
the next call's messages extend the ones read: the decision is the one a fresh reading gives). So a context policy changes what it can do, as it does for an LLM:
- it finds the report and line from the instruction and the latest form state;
- it needs the receipt's charges: from a visible receipt-viewer response, or from the
  "Receipt items" section of a structured summary. If neither is visible (a pruning policy
  evicted them) it re-opens the receipt, which costs calls and tokens;
- it compares the visible itemization grid with the charges to decide what to add, delete,
  save or close; if the grid it sees is truncated or stale, it makes the mistakes an LLM
  makes (duplicate or missing lines);
- like GPT-5 in the study, it asks the user to confirm before adding the first itemized
  line (``ask_before_itemizing``); with no user model (C1) that question stalls the episode.
With long-term memory (the ``ga_memory`` policy offers the memory tools and shows the L1
index): when the index names an SOP for the task's expense type it reads it first
(``memory_read``), then skips what the SOP makes unnecessary: the menu search (the SOP's
verified ``form_open_menu_item`` call opens the form directly) and the confirmation question
(the SOP's verified run itemized without asking, or records that its user said to add every
charge). Before closing a finished itemization it calls ``start_long_term_update``. This use
of the SOP is by construction: the agent is written to exploit exactly these two steps.
It reads the raw JSON responses and the prose form that ``acon_observation``'s structured
refinement writes (``erp_sim.agents.expense_facts.render_observation``); text it cannot read at all
counts as no form, and it starts over from the menu.

Long horizons (``long_horizon``): an instruction naming several lines is worked line by line, in
its order, from the report form (the first line not yet "Fully itemized"); each line's charges are
those of its own receipt (told apart by document number). Receipts and itemization grids longer
than a page (25 rows) are read page by page: a receipt counts as read when every row of it is
visible at once, and a paged itemization grid is checked by position (row r holds charge r).

By default its recall is perfect. ``recall_horizon=H`` (tokens) adds one synthetic failure
mode, for studies that want policies to differ in accuracy offline: each receipt charge is
misread (its cents transposed) when ``u < 1 - exp(-d / H)``, where ``d`` is how many tokens
of context lie after the message it is read from, and ``u`` is a uniform draw fixed per
(seed, instruction, charge). Facts far back in a long context are misread more often; a
fresh re-read (or a summary near the end) reads them right. The draw is fixed per charge, so
an agent that keeps reading from far back keeps the same misreading, as LLMs do. This is a
documented toy model of "context rot", not a calibrated model of any LLM.

What it reads from the messages (receipts, tool results, the user, refined form text) is ``reading``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.agents.scripted.reading import CONFIRMED, PAGE_ROWS, Charge, FormIndex, Reading, read_money, row_index
from erp_sim.agents.tokens import count_messages
from erp_sim.agents.types import AgentStep, Message, ToolSchema
from erp_sim.workflows.itemization.catalog import CATEGORIES

_REPORT = re.compile(r"\b(EXP-\d{6})\b")
_LINE = re.compile(r"\bline (\d+)\b")
_TYPE = re.compile(r"the (\w+) expense")
_TASK_LINES = re.compile(r"\bline (\d+), [^;]*?\(receipt ([A-Z]+-\d+)\)")  # a multi-line instruction's lines
_CAPTION_LINE = re.compile(r"\bline (\d+)\b")
ASK = (
    "I found {n} charges on the receipt{doc}. Before I create the itemized lines: should I add all of them "
    "as itemized lines with their subcategory, date and amount?"
)


def _arguments(text: object) -> dict:
    return _parsed_arguments(text) if isinstance(text, str) else {}


@lru_cache(maxsize=256)  # an episode repeats a few dozen calls; the dict is shared: read, never changed
def _parsed_arguments(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Recall:
    """The synthetic misreading model (see the module docstring)."""

    horizon: float  # tokens
    seed: int = 0

    def misread(self, instruction: str, index: int, distance: int) -> bool:
        digest = hashlib.sha256(f"{self.seed}/{instruction}/{index}".encode()).digest()
        uniform = int.from_bytes(digest[:8], "big") / 2**64
        return uniform < 1 - math.exp(-distance / self.horizon)


def misread_amount(amount: str) -> str:
    """The misreading: the two cent digits swapped (43.81 -> 43.18), or one more unit if they match."""
    if not re.fullmatch(r"\d+\.\d\d", amount):
        return amount
    whole, cents = amount.split(".")
    if cents[0] != cents[1]:
        return f"{whole}.{cents[1]}{cents[0]}"
    return f"{int(whole) + 1}.{cents}"


class ScriptedAgent:
    """Implements ``erp_sim.agents.types.Agent``. ``spec`` is "full" until a policy wraps it."""

    spec = "full"

    def __init__(self, *, ask_before_itemizing: bool = True, recall_horizon: float | None = None, seed: int = 0):
        if recall_horizon is not None and recall_horizon <= 0:
            raise ValueError("recall_horizon must be a positive number of tokens")
        self.ask_before_itemizing = ask_before_itemizing
        self.recall = Recall(recall_horizon, seed) if recall_horizon else None
        self._reading: Reading | None = None
        self._tools: list[ToolSchema] | None = None  # the last tools list, and whether it offers memory_read
        self._memory = False

    def reset(self) -> None:
        """Forget the last call's reading (a cache: decisions depend only on the messages shown)."""
        self._reading = None

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        if tools is not self._tools:  # the runner passes the same list every call
            self._tools, self._memory = (
                tools,
                any((tool.get("function") or {}).get("name") == "memory_read" for tool in tools),
            )
        memory = self._memory
        view = View(transcript, self.recall, self._reading)
        self._reading = view.reading
        decision = decide_on(view, ask_before_itemizing=self.ask_before_itemizing, memory=memory)
        if isinstance(decision, str):
            message: Message = {"role": "assistant", "content": decision}
        else:
            name, arguments = decision
            message = {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id(transcript, name, arguments),
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        return AgentStep(message=message, shown=list(transcript))


# json.dumps(value, sort_keys=True, default=str) builds this encoder at every call: built once, same text
_CALL_ID_JSON = json.JSONEncoder(sort_keys=True, default=str)
# stands in for the last message's text while the rest is encoded (a NUL is escaped, so no text writes this)
_TEXT_MARK = "\x00call-id-text\x00"
_TEXT_MARK_JSON = json.dumps(_TEXT_MARK)


def call_id(transcript: list[Message], name: str, arguments: dict) -> str:
    """The call's id: from the transcript's length, its last message and the call (deterministic, and new
    for each step). Its text is ``json.dumps([len(transcript), transcript[-1], name, arguments],
    sort_keys=True, default=str)``: ids stay byte-identical across versions."""
    last = transcript[-1]
    content = last.get("content")
    # the last message is usually a tool result of several KB: orjson escapes an ASCII text as json does
    # (but for DEL, which json writes as \u007f) at a fifth of the cost; the rest is json's own text
    if type(content) is str and len(content) > 256 and content.isascii() and "\x7f" not in content:
        import orjson  # here, as in erp_sim.response

        marked = _CALL_ID_JSON.encode([len(transcript), {**last, "content": _TEXT_MARK}, name, arguments])
        if marked.count(_TEXT_MARK_JSON) == 1:  # it is always there once: then only where the text goes
            head, _, tail = marked.partition(_TEXT_MARK_JSON)
            digest = hashlib.sha1(head.encode())
            digest.update(orjson.dumps(content))
            digest.update(tail.encode())
            return "call_" + digest.hexdigest()[:16]
    text = _CALL_ID_JSON.encode([len(transcript), last, name, arguments])
    return "call_" + hashlib.sha1(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=64)
def _read_instruction(instruction: str) -> tuple[str | None, str | None, str, list]:
    """(report, line, expense type, the lines of a multi-line instruction: (line number, receipt document))."""
    report = (_REPORT.search(instruction) or [None, None])[1]
    line = (_LINE.search(instruction) or [None, None])[1]
    match = _TYPE.search(instruction)
    expense_type = match.group(1) if match and match.group(1) in CATEGORIES else "Hotel"
    task_lines = _TASK_LINES.findall(instruction)
    return report, line, expense_type, task_lines if len(task_lines) > 1 else []


class View:
    """What the agent can read off the visible messages (``reading``: the last call's ``Reading``, reused
    when these messages extend its own; the view is the same either way)."""

    def __init__(self, messages: list[Message], recall: Recall | None = None, reading: Reading | None = None):
        instruction = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        self.report, self.line, self.expense_type, self.task_lines = _read_instruction(instruction)
        self.reading = Reading.of(messages, instruction, self.expense_type, self.task_lines, reading)
        read = self.reading.now
        self.state: dict | None = read["state"]  # FormState of the latest visible tool result
        self.form_index: FormIndex = read["form"]  # its grids and controls by name
        self.last_tool = read["last_tool"]
        self.last_arguments: dict = _arguments(self.reading.arguments)
        self.charges: list[Charge] | None = read["charges"]
        self.receipts = read["receipts"]  # document -> row -> (charge, message index); read, never changed here
        self.receipt_ends = read["receipt_ends"]
        self.paged_receipt = read["paged_receipt"]
        self.by_document: dict[str, list[Charge]] = {}  # document -> its charges, once every row of it was seen
        self.receipt_document = read["receipt_document"]
        self.confirmed = read["confirmed"]
        self.seen_tool_result = read["seen_tool_result"]
        self.memory = False
        self.sop_key = self.reading.sop_wanted[:-1] if read["sop_indexed"] else None
        self.sop: dict | None = read["sop"]
        self.sop_read = read["sop_read"]
        self.long_term_update_requested = read["long_term_update_requested"]
        if self.receipts and (self.task_lines or self.paged_receipt):
            self._long_receipts(instruction, messages, recall)
        elif recall is not None and self.charges:
            distance = count_messages(messages[read["charges_at"] + 1 :])
            self.charges = [
                (sub, day, misread_amount(amount) if recall.misread(instruction, n, distance) else amount)
                for n, (sub, day, amount) in enumerate(self.charges)
            ]

    def _long_receipts(self, instruction: str, messages: list[Message], recall: Recall | None) -> None:
        """Multi-line tasks and paged receipts: each document's charges, once every row of it is visible
        (misread per charge by the distance to the message its row was read from)."""
        distances: dict[int, int] = {}
        known = self.reading.whole_receipts if recall is None else {}  # misread charges depend on the call
        for document, rows in self.receipts.items():
            end = self.receipt_ends.get(document)
            kept = known.get(document)
            if kept is not None and kept[0] is rows and kept[1] == end:  # rows copied on write: the same rows
                self.by_document[document] = kept[2]
                continue
            if end is None or any(n not in rows for n in range(1, end + 1)):
                continue
            charges = []
            for n in range(1, end + 1):
                (sub, day, amount), at = rows[n]
                if recall is not None:
                    distance = distances.setdefault(at, count_messages(messages[at + 1 :]))
                    if recall.misread(f"{instruction}/{document}", n - 1, distance):
                        amount = misread_amount(amount)
                charges.append((sub, day, amount))
            self.by_document[document] = charges
            if recall is None:
                known[document] = (rows, end, charges)
        if not self.task_lines:  # one line: the receipt read last
            self.charges = self.by_document.get(self.receipt_document)

    def line_document(self, line: str | None) -> str | None:
        return next((document for number, document in self.task_lines if number == line), None)

    def charges_of(self, line: str | None) -> list[Charge] | None:
        """The charges of a multi-line task's line (by line number), or the single line's."""
        if not self.task_lines:
            return self.charges
        return self.by_document.get(self.line_document(line) or "")

    def sop_step(self, tool: str) -> dict | None:
        return next((step for step in (self.sop or {}).get("steps", []) if step.get("tool") == tool), None)

    @property
    def sop_confirms(self) -> bool:
        """A verified SOP itemized without asking, or records that the user said to add every charge."""
        if self.sop is None:
            return False
        say = self.sop_step("say")
        return say is None or bool(CONFIRMED.search(str(say.get("expect", ""))))

    @property
    def form(self) -> str | None:
        return self.state.get(K.NAME) if self.state else None


def decide(
    messages: list[Message], *, ask_before_itemizing: bool = True, recall: Recall | None = None, memory: bool = False
) -> tuple[str, dict] | str:
    """The next action: ``(tool, arguments)`` or a text message to the user."""
    return decide_on(View(messages, recall), ask_before_itemizing=ask_before_itemizing, memory=memory)


def decide_on(view: View, *, ask_before_itemizing: bool = True, memory: bool = False) -> tuple[str, dict] | str:
    """``decide`` on a view already built."""
    if view.report is None or view.line is None:
        return "I could not find the expense report number and line in your message. Which report and line should I itemize?"
    if memory and view.sop_key and not view.sop_read and not view.seen_tool_result:
        return "memory_read", {"key": view.sop_key}
    view.memory = memory
    handlers = {
        None: _no_form,
        "TrvExpenses": _report_list,
        "TrvExpenseReport": _report_form,
        "TrvReceiptViewer": _receipt_viewer,
        "TrvItemization": _itemization,
    }
    return handlers.get(view.form, lambda v, a: ("form_close_form", {}))(view, ask_before_itemizing)


def _no_form(view: View, ask: bool):
    opening = view.sop_step("form_open_menu_item")
    if opening and isinstance(opening.get("arguments"), dict) and opening["arguments"].get("name"):
        return "form_open_menu_item", {
            "name": opening["arguments"]["name"],
            "type": opening["arguments"].get("type", "Display"),
        }
    if view.last_tool == "form_find_menu_item":
        return "form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}
    return "form_find_menu_item", {"menuItemFilter": "expense reports"}


def _report_list(view: View, ask: bool):
    grid = view.form_index.grids.get("ExpenseReportsGrid") or {}
    rows = grid.get(K.ROWS, [])
    target = next((r for r in rows if r.get(K.VALUES, {}).get("TrvExpTable_ExpNumber") == view.report), None)
    if target is None:
        return "form_filter_grid", {
            "gridName": "ExpenseReportsGrid",
            "gridColumnName": "TrvExpTable_ExpNumber",
            "filterValue": view.report,
        }
    if not target.get(K.IS_SELECTED):
        return "form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": target[K.ROW_NUMBER]}
    return "form_click_control", {"controlName": "EditReport"}


def _report_form(view: View, ask: bool):
    grid = view.form_index.grids.get("ExpenseLinesGrid") or {}
    rows = grid.get(K.ROWS, [])
    line = view.line
    if view.task_lines:  # several lines: the first (in the instruction's order) not yet fully itemized
        status = {
            r.get(K.VALUES, {}).get("TrvExpTrans_LineNum"): r.get(K.VALUES, {}).get("TrvExpTrans_ItemizationStatus")
            for r in rows
            if r.get(K.VALUES, {}).get("TrvExpTrans_LineType") != "ItemizedLine"
        }
        line = next((number for number, _ in view.task_lines if status.get(number) != "Fully itemized"), None)
        if line is None:
            return f"All {len(view.task_lines)} expense lines are fully itemized and saved, and the itemization form is closed: done."
    target = next(
        (
            r
            for r in rows
            if r.get(K.VALUES, {}).get("TrvExpTrans_LineNum") == line
            and r.get(K.VALUES, {}).get("TrvExpTrans_LineType") != "ItemizedLine"
        ),
        None,
    )
    if target is None:
        if formstate.grid_has_next_page(grid):
            return "form_click_control", {"controlName": "ExpenseLinesGrid", "actionId": K.LOAD_NEXT_PAGE}
        return f"I cannot find line {line} on expense report {view.report}. Could you check the line number?"
    if not target.get(K.IS_SELECTED):
        return "form_select_grid_row", {"gridName": "ExpenseLinesGrid", "rowNumber": target[K.ROW_NUMBER]}
    if view.charges_of(line) is None:
        return "form_click_control", {"controlName": "ViewReceipt"}
    return "form_click_control", {"controlName": "Itemize"}


def _page(grid: str, action: str):
    return "form_click_control", {"controlName": grid, "actionId": action}


def _paging_back(view: View, grid: str) -> bool:
    """Whether the last call paged ``grid`` back (a memoryless agent's only record of its direction)."""
    return (
        view.last_tool == "form_click_control"
        and view.last_arguments.get("controlName") == grid
        and view.last_arguments.get("actionId") == K.LOAD_PREVIOUS_PAGE
    )


def _receipt_viewer(view: View, ask: bool):
    grid = "ReceiptItemsGrid"
    if _paging_back(view, grid):  # back to the first page, then forward again
        return _page(grid, K.LOAD_PREVIOUS_PAGE if view.form_index.first_row(grid) > 1 else K.LOAD_NEXT_PAGE)
    if view.form_index.has_next_page(grid):
        return _page(grid, K.LOAD_NEXT_PAGE)
    if view.paged_receipt and view.receipt_document not in view.by_document and view.form_index.first_row(grid) > 1:
        return _page(grid, K.LOAD_PREVIOUS_PAGE)  # earlier pages are no longer in view: read them again
    return "form_close_form", {}


def _row_charge(values: dict) -> Charge | None:
    amount = read_money(values.get("TrvExpTrans_AmountCurr"))
    subcategory, day = values.get("TrvExpTrans_ExpSubCategory"), values.get("TrvExpTrans_TransDate")
    return (subcategory, day, amount) if subcategory and day and amount else None


def _itemization(view: View, ask: bool):
    line = (_CAPTION_LINE.search(str((view.state or {}).get(K.CAPTION, ""))) or [None, None])[1]
    charges = view.charges_of(line)
    if charges is None:
        return "form_click_control", {"controlName": "ViewReceipt"}
    grid = view.form_index.grids.get("ItemizationGrid") or {}
    rows = grid.get(K.ROWS, [])
    document = view.line_document(line) or view.receipt_document
    if ask and not rows and not view.confirmed and not view.sop_confirms:
        return ASK.format(n=len(charges), doc=f" {document}" if document else "")
    if formstate.grid_has_next_page(grid) or view.form_index.first_row("ItemizationGrid") > 1:
        return _paged_itemization(view, rows, charges)
    row_charges, missing, extra = compare_rows(rows, charges)
    selected = next((k for k, r in enumerate(rows) if r.get(K.IS_SELECTED)), None)
    if selected is not None and row_charges[selected] is None:  # a blank new row
        if missing:
            return _fill(missing[0])
        return "form_click_control", {"controlName": "DeleteLine"}
    first_extra = next((r for r, c in zip(rows, row_charges) if c in extra), None)
    if missing and first_extra is not None and len(rows) >= PAGE_ROWS and (view.task_lines or view.paged_receipt):
        # long tasks: a full page makes room first, else the new row pages the grid and is deleted there
        return _delete(first_extra)
    if missing:
        return "form_click_control", {"controlName": "NewLine"}
    if first_extra is not None:
        return _delete(first_extra)
    return _save_or_close(view, rows) or _unbalanced(charges, _remaining(view))


def compare_rows(rows: list[dict], charges: list[Charge]) -> tuple[list[Charge | None], list[Charge], set[Charge]]:
    """(each row's charge, None when incomplete; the charges no row holds yet, in receipt order, a charge on
    the receipt twice as often as it is missing; the charges more rows hold than the receipt has)."""
    row_charges = [_row_charge(r.get(K.VALUES, {})) for r in rows]
    held = [c for c in row_charges if c is not None]
    if held == charges[: len(held)] and (len(charges) > PAGE_ROWS or len(set(charges)) == len(charges)):
        return row_charges, charges[len(held) :], set()  # the receipt's first charges, in its order: the usual
    wanted, complete = Counter(charges), Counter(held)
    if len(charges) > PAGE_ROWS:  # the grid will page: add in receipt order, so that row r holds charge r
        unmatched = Counter(complete)
        missing = [c for c in charges if not _consume(unmatched, c)]
    else:
        missing = []
        for charge, count in wanted.items():
            missing += [charge] * (count - complete.get(charge, 0))
    return row_charges, missing, {c for c, n in complete.items() if n > wanted.get(c, 0)}


def _fill(charge: Charge):
    subcategory, day, amount = charge
    return "form_set_control_values", {
        "controlValues": [
            {"controlName": "TrvExpTrans_ExpSubCategory", "value": subcategory},
            {"controlName": "TrvExpTrans_TransDate", "value": day},
            {"controlName": "TrvExpTrans_AmountCurr", "value": amount},
        ]
    }


def _select(row: dict):
    return "form_select_grid_row", {"gridName": "ItemizationGrid", "rowNumber": row[K.ROW_NUMBER]}


def _delete(row: dict):
    return ("form_click_control", {"controlName": "DeleteLine"}) if row.get(K.IS_SELECTED) else _select(row)


def _remaining(view: View) -> str | None:
    return read_money(view.form_index.control_value("ItemizationRemaining"))


def _save_or_close(view: View, rows: list[dict]):
    """Save unsaved rows; close once remaining is 0.00; None when neither applies."""
    if any(r.get(K.VALUES, {}).get("TrvExpTrans_LineStatus") != "Saved" for r in rows):
        return "form_save_form", {}
    if _remaining(view) == "0.00":
        if view.memory and not view.long_term_update_requested:
            return "start_long_term_update", {}
        return "form_close_form", {}
    return None


def _consume(counts: Counter, charge: Charge) -> bool:
    if counts[charge] > 0:
        counts[charge] -= 1
        return True
    return False


def _unbalanced(charges: list[Charge], remaining: str | None) -> str:
    return (
        f"All {len(charges)} receipt charges are saved but the remaining amount is {remaining}, not 0.00. "
        "Should I investigate the difference?"
    )


def _paged_itemization(view: View, rows: list[dict], charges: list[Charge]):
    """A grid longer than a page: row r must hold charge r (lines are added in receipt order, and a new row
    is shown on the last page). Wrong rows on the visible page are corrected in place (rows beyond the
    receipt deleted), the last page is filled up; when all is saved and remaining is not 0.00, every
    page is checked (back to the first, then forward) before the user is asked."""
    grid = "ItemizationGrid"
    for row in rows:
        number, charge = row_index(row.get(K.ROW_NUMBER)), _row_charge(row.get(K.VALUES, {}))
        if charge is None and row.get(K.IS_SELECTED):  # a blank new row
            if number <= len(charges):
                return _fill(charges[number - 1])
            return "form_click_control", {"controlName": "DeleteLine"}
        if number > len(charges):
            return _delete(row)
        if charge != charges[number - 1]:
            if len(charges) <= PAGE_ROWS:  # a short receipt on a grid paged by extra rows: as before, delete
                return _delete(row)
            # corrected in place: deleting would shift every later row of a long receipt
            return _fill(charges[number - 1]) if row.get(K.IS_SELECTED) else _select(row)
    if _paging_back(view, grid):  # checking every page: back to the first, then forward
        return _page(grid, K.LOAD_PREVIOUS_PAGE if view.form_index.first_row(grid) > 1 else K.LOAD_NEXT_PAGE)
    if view.form_index.has_next_page(grid):
        return _page(grid, K.LOAD_NEXT_PAGE)
    last = max((row_index(r.get(K.ROW_NUMBER)) for r in rows), default=0)
    if last < len(charges):
        return "form_click_control", {"controlName": "NewLine"}
    done = _save_or_close(view, rows)
    if done:
        return done
    if len(charges) > PAGE_ROWS and (view.state or {}).get(K.HAS_UNSAVED_CHANGES):  # corrections on other pages
        return "form_save_form", {}
    if view.last_tool == "form_click_control" and view.last_arguments.get("actionId") == K.LOAD_NEXT_PAGE:
        return _unbalanced(charges, _remaining(view))  # every page was checked on the way here
    return _page(grid, K.LOAD_PREVIOUS_PAGE)
