"""The scripted agent's itemization: its procedure and its reading of itemization's forms.

What the study's system prompt gave GPT-5 (``prompt``): the procedure and the receipt-wording ->
subcategory table. The generic scripted agent (``erp_sim.agents.scripted``: the reading cache, the
recall model, the memory SOP, the call ids) asks its procedure (``faces.folder_procedure`` of this module)
what a message shows and what to do next, over the plain dicts of the visible messages:

- it finds the report and line from the instruction and the latest form state;
- it needs the receipt's charges: from a visible receipt-viewer response, or from the
  "Receipt items" section of a structured summary (``facts``). If neither is visible (a pruning
  policy evicted them) it re-opens the receipt, which costs calls and tokens;
- it compares the visible itemization grid with the charges to decide what to add, delete,
  save or close; if the grid it sees is truncated or stale, it makes the mistakes an LLM
  makes (duplicate or missing lines);
- like GPT-5 in the study, it asks the user to confirm before adding the first itemized
  line (``ask``); with no user model (C1) that question stalls the episode. A verified SOP (GenericAgent's
  long-term memory) that itemized without asking, or records that its user said to add every charge,
  confirms instead.

Long horizons (``long_horizon``): an instruction naming several lines is worked line by line, in
its order, from the report form (the first line not yet "Fully itemized"); each line's charges are
those of its own receipt (told apart by document number). Receipts and itemization grids longer
than a page (25 rows) are read page by page: a receipt counts as read when every row of it is
visible at once, and a paged itemization grid is checked by position (row r holds charge r).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any, NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.form_index import PAGE_ROWS, READ_CACHE_SIZE, FormIndex, read_money, row_index
from erp_sim.workflows.faces import Decision, Seen
from erp_sim.workflows.itemization.catalog import CATEGORIES, wording_to_subcategory

_REPORT = re.compile(r"\b(EXP-\d{6})\b")
_LINE = re.compile(r"\bline (\d+)\b")
_TYPE = re.compile(r"the (\w+) expense")
_TASK_LINES = re.compile(r"\bline (\d+), [^;]*?\(receipt ([A-Z]+-\d+)\)")  # a multi-line instruction's lines
_CAPTION_LINE = re.compile(r"\bline (\d+)\b")
_SUMMARY_ITEMS = re.compile(r"^Receipt items \(\d+\):\n((?:\s+\d+\..*\n?)+)", re.MULTILINE)
_SUMMARY_ITEM = re.compile(r"^\s*\d+\.\s+(\d{4}-\d{2}-\d{2})\s+\|\s+(.+?)\s+\|\s+([\d,]+\.\d{2})\b", re.MULTILINE)
# "yes" and "add" as re.IGNORECASE reads them (it folds the long s, U+017F, to s; a test checks every code point),
# without a leading \b: as a pattern's first item it makes a search try every position (``confirms``)
_YES = re.compile(r"[yY][eE][sS\u017f]\b")
_ADD = re.compile(r"[aA][dD][dD]\b")
_SUMMARY_DOCUMENT = re.compile(r"^Receipt: document (\S+?),", re.MULTILINE)
ASK = (
    "I found {n} charges on the receipt{doc}. Before I create the itemized lines: should I add all of them "
    "as itemized lines with their subcategory, date and amount?"
)
UNREADABLE = (
    "I could not find the expense report number and line in your message. Which report and line should I itemize?"
)
Charge = tuple[str, str, str]  # (subcategory, date, amount "123.45")
UserSaid = tuple[bool, tuple[Charge, ...] | None, str | None]  # what read_user reads off a user message


class Brief(NamedTuple):
    """What the instruction names: the report, the line, the expense type, and the lines of a multi-line task
    ((line number, receipt document), in its order; empty for one line)."""

    report: str | None
    line: str | None
    expense_type: str
    task_lines: tuple[tuple[str, str], ...]


def confirms(text: str) -> bool:
    """Whether ``text`` says "yes" and, anywhere after it, "add" (whole words, any case): what the regex
    ``\\byes\\b.*\\badd\\b`` (ignoring case, ``.`` matching line breaks) finds, in one pass. That regex backtracked
    from the text's end to its last "add": 1.4 ms on a 33 KB summary, at every fold of a 200-charge task."""
    yes = _word_end(text, _YES, 0)
    return yes is not None and _word_end(text, _ADD, yes) is not None


def _word_end(text: str, word: re.Pattern[str], start: int) -> int | None:
    """Where the first match of ``word`` from ``start`` on that starts a word ends (``\\b`` before it: no word
    character, as ``re`` counts them, just before), or None."""
    for match in word.finditer(text, start):
        at = match.start()
        if not at or not (text[at - 1].isalnum() or text[at - 1] == "_"):
            return match.end()
    return None


@lru_cache(maxsize=64)
def read_instruction(instruction: str) -> Brief:
    report = (_REPORT.search(instruction) or [None, None])[1]
    line = (_LINE.search(instruction) or [None, None])[1]
    match = _TYPE.search(instruction)
    expense_type = match.group(1) if match and match.group(1) in CATEGORIES else "Hotel"
    task_lines = tuple(_TASK_LINES.findall(instruction))
    return Brief(report, line, expense_type, task_lines if len(task_lines) > 1 else ())


def unreadable(brief: Brief) -> str | None:
    """The question to ask when the instruction names no report and line."""
    return UNREADABLE if brief.report is None or brief.line is None else None


def sop_key(brief: Brief) -> str:
    """The key of the SOP the consolidator writes for the task's expense type (``harness.sop_values``)."""
    return f"sop/itemize_{brief.expense_type.lower()}_expense"


# -- reading one message: what a tool result or a user message shows of the itemization -------------
class ReceiptPage(NamedTuple):
    """What one receipt-viewer result shows: its charges, their row numbers, and whether a next page exists."""

    charges: tuple[Charge, ...]
    document: str
    rows: tuple[int, ...]
    more: bool


def read_form(state: dict[str, Any], form: FormIndex, brief: Brief) -> ReceiptPage | None:
    """The receipt page a receipt viewer shows (None for any other form)."""
    if state.get(K.NAME) != "TrvReceiptViewer":
        return None
    return _read_receipt(form, wording_to_subcategory(brief.expense_type))


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
def read_user(content: str, brief: Brief) -> UserSaid:
    """(the user confirms adding the charges, the charges of a structured summary's "Receipt items"
    (``facts``' format), that receipt's document number)."""
    block = _SUMMARY_ITEMS.search(content)
    summary = _summary_charges(block.group(1), brief.expense_type) if block else ()
    document = _SUMMARY_DOCUMENT.search(content) if summary else None
    return confirms(content), summary or None, document.group(1) if document else None


@lru_cache(maxsize=READ_CACHE_SIZE)
def _summary_charges(block: str, expense_type: str) -> tuple[Charge, ...]:
    """The charges of a summary's "Receipt items" block: the same block at every fold of a task, read once."""
    mapping = wording_to_subcategory(expense_type)
    items = _SUMMARY_ITEM.findall(block)
    return tuple((mapping.get(desc.strip(), "?"), day, read_money(amount) or "?") for day, desc, amount in items)


# -- the reading's part of the itemization: folded message by message, copied on write --------------
INITIAL: dict[str, Any] = {
    "charges": None,  # list[Charge], replaced, never changed in place
    "charges_at": 0,  # index of the message the charges were read from
    "receipt_document": "",
    "receipts": {},  # document -> row -> (charge, message index); copied on write
    "receipt_ends": {},  # document -> its last row (seen on a page without a next one); copied on write
    "paged_receipt": False,
    "confirmed": False,
}


def fold_result(state: dict[str, Any], receipt: ReceiptPage, position: int, brief: Brief) -> None:
    state["charges"], state["receipt_document"] = list(receipt.charges), receipt.document
    _keep_rows(state, receipt.document, receipt.rows, receipt.charges, position, receipt.more)
    state["charges_at"] = position


def fold_user(state: dict[str, Any], said: UserSaid, position: int, brief: Brief) -> None:
    confirms, summary, document = said
    if confirms:
        state["confirmed"] = True
    if state["charges"] is None and summary is not None:  # the "Receipt items" of a structured summary
        state["charges"] = list(summary)
        if document:
            _keep_rows(state, document, range(1, len(summary) + 1), summary, position, False)
            if brief.task_lines:  # several receipts: name the one asked about (one line's question keeps its words)
                state["receipt_document"] = document
        state["charges_at"] = position


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


# -- the view: what the visible messages say about the itemization -----------------------------------
class ItemizationView:
    """What the agent can read off the visible messages about its itemization (``seen``: the generic view:
    the latest form, the last call, the memory SOP, the recall model)."""

    def __init__(self, seen: Seen):
        self.seen = seen
        brief: Brief = seen.brief
        self.report, self.line, self.expense_type, self.task_lines = brief
        read = seen.read
        self.state: dict[str, Any] | None = seen.state  # FormState of the latest visible tool result
        self.form_index: FormIndex = seen.form_index
        self.last_tool = seen.last_tool
        self.last_arguments: dict[str, Any] = seen.last_arguments
        self.charges: list[Charge] | None = read["charges"]
        self.receipts = read["receipts"]  # document -> row -> (charge, message index); read, never changed here
        self.receipt_ends = read["receipt_ends"]
        self.paged_receipt = read["paged_receipt"]
        self.by_document: dict[str, list[Charge]] = {}  # document -> its charges, once every row of it was seen
        self.receipt_document = read["receipt_document"]
        self.confirmed = read["confirmed"]
        if self.receipts and (self.task_lines or self.paged_receipt):
            self._long_receipts(seen.instruction)
        elif seen.recalls and self.charges:
            at = read["charges_at"]
            self.charges = [
                (sub, day, seen.recall(amount, seen.instruction, n, at))
                for n, (sub, day, amount) in enumerate(self.charges)
            ]

    def _long_receipts(self, instruction: str) -> None:
        """Multi-line tasks and paged receipts: each document's charges, once every row of it is visible
        (misread per charge by the distance to the message its row was read from)."""
        recall = self.seen.recall if self.seen.recalls else None
        assembled = self.seen.derived  # without recall: document -> (its rows, end, charges), per rows read
        for document, rows in self.receipts.items():
            end = self.receipt_ends.get(document)
            known = assembled.get(("receipt", document)) if recall is None else None
            if known is not None and known[0] is rows and known[1] == end:  # rows are replaced, never changed
                if known[2] is not None:
                    self.by_document[document] = list(known[2])
                continue
            charges: list[Charge] | None = None
            if end is not None and all(n in rows for n in range(1, end + 1)):
                charges = []
                for n in range(1, end + 1):
                    (sub, day, amount), at = rows[n]
                    if recall is not None:
                        amount = recall(amount, f"{instruction}/{document}", n - 1, at)
                    charges.append((sub, day, amount))
                self.by_document[document] = charges
            if recall is None:
                assembled[("receipt", document)] = (rows, end, None if charges is None else tuple(charges))
        if not self.task_lines:  # one line: the receipt read last
            self.charges = self.by_document.get(self.receipt_document)

    @property
    def memory(self) -> bool:
        return self.seen.memory

    @property
    def long_term_update_requested(self) -> bool:
        return self.seen.long_term_update_requested

    def line_document(self, line: str | None) -> str | None:
        return next((document for number, document in self.task_lines if number == line), None)

    def charges_of(self, line: str | None) -> list[Charge] | None:
        """The charges of a multi-line task's line (by line number), or the single line's."""
        if not self.task_lines:
            return self.charges
        return self.by_document.get(self.line_document(line) or "")

    @property
    def sop_confirms(self) -> bool:
        """A verified SOP itemized without asking, or records that the user said to add every charge."""
        if self.seen.sop is None:
            return False
        say = self.seen.sop_step("say")
        return say is None or confirms(str(say.get("expect", "")))

    @property
    def form(self) -> str | None:
        return self.state.get(K.NAME) if self.state else None


# -- the procedure ---------------------------------------------------------------------------------
def decide(view: ItemizationView, ask: bool) -> Decision:
    """The next step on the form in view: ``(tool, arguments)`` or a message to the user (``ask``: confirm
    with the user before the first itemized line)."""
    handlers: dict[str | None, Callable[[ItemizationView, bool], Decision]] = {
        None: _no_form,
        "TrvExpenses": _report_list,
        "TrvExpenseReport": _report_form,
        "TrvReceiptViewer": _receipt_viewer,
        "TrvItemization": _itemization,
    }
    handler = handlers.get(view.form)
    return handler(view, ask) if handler is not None else ("form_close_form", {})


def _no_form(view: ItemizationView, ask: bool) -> Decision:
    opening = view.seen.sop_menu_item()
    if opening is not None:
        return "form_open_menu_item", opening
    if view.last_tool == "form_find_menu_item":
        return "form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}
    return "form_find_menu_item", {"menuItemFilter": "expense reports"}


def _report_list(view: ItemizationView, ask: bool) -> Decision:
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


def _report_form(view: ItemizationView, ask: bool) -> Decision:
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


def _page(grid: str, action: str) -> Decision:
    return "form_click_control", {"controlName": grid, "actionId": action}


def _paging_back(view: ItemizationView, grid: str) -> bool:
    """Whether the last call paged ``grid`` back (a memoryless agent's only record of its direction)."""
    return (
        view.last_tool == "form_click_control"
        and view.last_arguments.get("controlName") == grid
        and view.last_arguments.get("actionId") == K.LOAD_PREVIOUS_PAGE
    )


def _receipt_viewer(view: ItemizationView, ask: bool) -> Decision:
    grid = "ReceiptItemsGrid"
    if _paging_back(view, grid):  # back to the first page, then forward again
        return _page(grid, K.LOAD_PREVIOUS_PAGE if view.form_index.first_row(grid) > 1 else K.LOAD_NEXT_PAGE)
    if view.form_index.has_next_page(grid):
        return _page(grid, K.LOAD_NEXT_PAGE)
    if view.paged_receipt and view.receipt_document not in view.by_document and view.form_index.first_row(grid) > 1:
        return _page(grid, K.LOAD_PREVIOUS_PAGE)  # earlier pages are no longer in view: read them again
    return "form_close_form", {}


def _row_charge(values: dict[str, Any]) -> Charge | None:
    amount = read_money(values.get("TrvExpTrans_AmountCurr"))
    subcategory, day = values.get("TrvExpTrans_ExpSubCategory"), values.get("TrvExpTrans_TransDate")
    return (subcategory, day, amount) if subcategory and day and amount else None


def _itemization(view: ItemizationView, ask: bool) -> Decision:
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


def compare_rows(
    rows: list[dict[str, Any]], charges: list[Charge]
) -> tuple[list[Charge | None], list[Charge], set[Charge]]:
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


def _fill(charge: Charge) -> Decision:
    subcategory, day, amount = charge
    return "form_set_control_values", {
        "controlValues": [
            {"controlName": "TrvExpTrans_ExpSubCategory", "value": subcategory},
            {"controlName": "TrvExpTrans_TransDate", "value": day},
            {"controlName": "TrvExpTrans_AmountCurr", "value": amount},
        ]
    }


def _select(row: dict[str, Any]) -> Decision:
    return "form_select_grid_row", {"gridName": "ItemizationGrid", "rowNumber": row[K.ROW_NUMBER]}


def _delete(row: dict[str, Any]) -> Decision:
    return ("form_click_control", {"controlName": "DeleteLine"}) if row.get(K.IS_SELECTED) else _select(row)


def _remaining(view: ItemizationView) -> str | None:
    return read_money(view.form_index.control_value("ItemizationRemaining"))


def _save_or_close(view: ItemizationView, rows: list[dict[str, Any]]) -> Decision | None:
    """Save unsaved rows; close once remaining is 0.00; None when neither applies."""
    if any(r.get(K.VALUES, {}).get("TrvExpTrans_LineStatus") != "Saved" for r in rows):
        return "form_save_form", {}
    if _remaining(view) == "0.00":
        if view.memory and not view.long_term_update_requested:
            return "start_long_term_update", {}
        return "form_close_form", {}
    return None


def _consume(counts: Counter[Charge], charge: Charge) -> bool:
    if counts[charge] > 0:
        counts[charge] -= 1
        return True
    return False


def _unbalanced(charges: list[Charge], remaining: str | None) -> str:
    return (
        f"All {len(charges)} receipt charges are saved but the remaining amount is {remaining}, not 0.00. "
        "Should I investigate the difference?"
    )


def _paged_itemization(view: ItemizationView, rows: list[dict[str, Any]], charges: list[Charge]) -> Decision:
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


VIEW = ItemizationView  # the view of the procedure ``faces.folder_procedure`` builds of this module
