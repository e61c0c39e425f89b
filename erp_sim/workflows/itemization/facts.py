"""The facts of an itemization task, read offline from D365-shaped tool responses: the report, the line,
the receipt's items, the itemization's amounts and lines.

The harness's structured summary (``erp_sim.agents.facts``: ACON's sections, GenericAgent's working
memory) folds every response's FormState into ``ExpenseFacts`` with ``observe``, and writes its key
variables, to-do and guardrails from these functions. Deterministic and tolerant: a missing piece of a
response is skipped.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import compress, count, repeat
from operator import ge, gt, ne
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from erp_sim.form_index import form_index_of
from erp_sim.formstate import grid_has_next_page, grid_row_values, grid_total_rows
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
    model_config = ConfigDict(frozen=True)  # replaced, never changed: ``RowsMemo`` reuses what it made of one

    date: str = ""
    description: str = ""
    amount: str = ""
    subcategory: str = ""


class ItemizedLine(BaseModel):
    model_config = ConfigDict(frozen=True)  # replaced, never changed: ``RowsMemo`` reuses what it made of one

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
    index = form_index_of(state)  # one walk of the tree, shared with the agent that read this response
    if name == "TrvExpenses":
        for _, selected, values in grid_row_values(index.first_grids.get("ExpenseReportsGrid")):
            if selected and values.get("TrvExpTable_ExpNumber"):
                facts.report = values["TrvExpTable_ExpNumber"]
    elif name == "TrvExpenseReport":
        number = index.control_text("TrvExpTable_ExpNumber") or (REPORT_NUMBER.search(caption) or [""])[0]
        if number:
            facts.report = number
        for _, selected, values in grid_row_values(index.first_grids.get("ExpenseLinesGrid")):
            if selected:
                facts.line = values
    elif name == "TrvReceiptViewer":
        document = index.control_text("Receipt_DocumentNumber")
        if document and facts.receipt.get("document", document) != document:
            facts.receipt_items = {}  # another line's receipt (a task with several lines): its rows replace the last one's
        grid = index.first_grids.get("ReceiptItemsGrid")
        facts.receipt_rows = grid_total_rows(grid)
        for label, control in RECEIPT_HEADER:
            value = index.control_text(control)
            if value:
                facts.receipt[label] = value
        for number, _, values in grid_row_values(grid):
            _put_row(
                facts.receipt_items,
                number,
                ReceiptItem,
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
            value = index.control_text(control)
            if value is not None:
                setattr(facts, field, value)
        grid = index.first_grids.get("ItemizationGrid")
        if grid is not None:
            rows = grid_row_values(grid)
            for number, _, values in rows:
                _put_row(
                    facts.itemized_lines,
                    number,
                    ItemizedLine,
                    date=values.get("TrvExpTrans_TransDate", ""),
                    subcategory=values.get("TrvExpTrans_ExpSubCategory", ""),
                    amount=values.get("TrvExpTrans_AmountCurr", ""),
                    description=values.get("TrvExpTrans_Description", ""),
                    status=values.get("TrvExpTrans_LineStatus", ""),
                )
            if not grid_has_next_page(grid):  # the last page: rows past its last one were deleted
                shown = {number for number, _, _ in rows}
                last = max(map(_row_index, shown), default=0)
                hidden = facts.itemized_lines.keys() - shown  # in C: a fold reads every page, this runs at each
                for number in list(compress(hidden, map(gt, map(_row_index, hidden), repeat(last)))):
                    del facts.itemized_lines[number]


def _put_row(rows: dict[str, Any], number: str, model: type[BaseModel], **values: str) -> None:
    """``rows[number] = model(**values)``, keeping the row there if it holds these values: the same object, which
    ``RowsMemo`` recognizes at pointer speed (a response shows a page of rows, most of them as they were)."""
    row = rows.get(number)
    if row is None or row.__dict__ != values:
        rows[number] = model(**values)


@lru_cache(maxsize=4_096)
def _row_index(number: str) -> int:
    return int(number) if number.isdigit() else 0


Rows = tuple[tuple[str, Any], ...]  # a dict of rows as (number, row) pairs, in order


def _first_change(current: Rows, known: Rows) -> int:
    """Where ``current`` first differs from ``known`` (their common length if nowhere): compared in C."""
    return next(compress(count(), map(ne, current, known)), min(len(current), len(known)))


class RowsMemo:
    """What ``derive`` makes of each (number, row) of a dict of rows, reused from the last call for the rows up
    to the first that is not equal to the last call's (the rows are frozen models: equal means the same
    values). The structured summary is written again at every fold, and most of its rows (every receipt
    charge, every itemized line but those of the page just read) are those of the fold before: they are
    compared in C and only the rest is derived. The list returned is shared: read it, do not change it."""

    def __init__(self, derive: Callable[[str, Any], Any]) -> None:
        self._derive = derive
        self._last: tuple[Rows, list[Any]] = ((), [])  # one tuple, swapped whole

    def __call__(self, rows: dict[str, Any]) -> list[Any]:
        current = tuple(rows.items())
        known, derived = self._last
        if current != known:
            same = _first_change(current, known)
            derived = derived[:same] + [self._derive(number, row) for number, row in current[same:]]
        self._last = (current, derived)  # also when equal rows are other objects: compared by pointer next time
        return derived


class RowsText:
    """The lines ``render`` writes of the rows of a dict, joined by newlines into one text (a block of the
    summary's key variables), written again only from the first row that is not equal to the last call's, as
    ``RowsMemo`` finds it: the text before it is a slice of the last text (no line of it is read again)."""

    def __init__(self, render: Callable[[str, Any], str]) -> None:
        self._render = render
        self._last: tuple[Rows, str, array[int]] = ((), "", array("q"))  # rows, text, where each line ends

    def __call__(self, rows: dict[str, Any]) -> str:
        current = tuple(rows.items())
        known, text, ends = self._last
        if current != known:
            same = _first_change(current, known)
            lines = [self._render(number, row) for number, row in current[same:]]
            head = text[: ends[same - 1]] if same else ""
            text = "\n".join([head, *lines]) if same else "\n".join(lines)
            ends = ends[:same]
            end = len(head)
            for line in lines:
                end += len(line) + (1 if end or ends else 0)
                ends.append(end)
        self._last = (current, text, ends)
        return text


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


_UNREAD = object()  # the amount key of a charge whose amount does not read: no saved line matches it
_NOT_SAVED = object()  # the amount key of an itemized line that is not saved: no charge matches it


def _amounts_and_ranks(rows: dict[str, ReceiptItem]) -> tuple[list[object], list[int]]:
    """The charges' amounts, and each one's rank among the charges of its amount before it."""
    amounts = [_UNREAD if (value := _amount(item.amount)) is None else value for item in rows.values()]
    seen: Counter[object] = Counter()
    ranks = []
    for amount in amounts:
        ranks.append(seen[amount])
        seen[amount] += 1
    return amounts, ranks


class _ReceiptRanks:
    """``_amounts_and_ranks`` of the receipt, kept while its rows are equal to the last call's (compared in C)."""

    def __init__(self) -> None:
        self._last: tuple[Rows, tuple[list[object], list[int]]] = ((), ([], []))

    def __call__(self, rows: dict[str, ReceiptItem]) -> tuple[list[object], list[int]]:
        current = tuple(rows.items())
        known, derived = self._last
        if current != known:
            derived = _amounts_and_ranks(rows)
        self._last = (current, derived)
        return derived


_RECEIPT_RANKS = _ReceiptRanks()
_SAVED_AMOUNTS = RowsMemo(lambda _, line: _amount(line.amount) if line.status.lower() in ("saved", "") else _NOT_SAVED)
_UNSAVED = RowsMemo(lambda _, line: line.status.lower() in ("new", "modified"))
_TODO_ITEMS = RowsMemo(lambda _, item: f"Itemize receipt item: {item.date} | {item.description} | {item.amount}")


def _missing(facts: ExpenseFacts, of: list[Any]) -> list[Any]:
    """The entries of ``of`` (one per receipt item) of the receipt items with no saved itemized line of the same
    amount: a multiset match in receipt order, where an item is matched when fewer items of its amount come
    before it than there are saved lines of that amount. In C but for the ranks, which change with the receipt."""
    amounts, ranks = _RECEIPT_RANKS(facts.receipt_items)
    saved = Counter(_SAVED_AMOUNTS(facts.itemized_lines))
    return list(compress(of, map(ge, ranks, map(saved.get, amounts, repeat(0)))))


def missing_receipt_items(facts: ExpenseFacts) -> list[ReceiptItem]:
    """Receipt items with no saved itemized line of the same amount (a multiset match, in receipt order)."""
    return _missing(facts, list(facts.receipt_items.values()))


def todo_lines(facts: ExpenseFacts, current_form: str) -> list[str]:
    todo = []
    if not facts.report:
        todo.append("Find the expense report named in the task.")
    if not facts.line:
        todo.append("Select the expense line to itemize.")
    if not facts.receipt_items:
        todo.append("Open the receipt and read its items.")
    else:
        todo += _missing(facts, _TODO_ITEMS(facts.receipt_items))
    unsaved = list(compress(facts.itemized_lines, _UNSAVED(facts.itemized_lines)))
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
    """The facts as "Key variables" lines (the harness adds the current form), joined by newlines: the rows of
    the receipt and of the itemization are one element each, of one line per row (``RowsText``)."""
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
        lines.append(_RECEIPT_LINES(facts.receipt_items))  # one element of many lines: joined the same
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
        lines.append(_ITEMIZED_LINES(facts.itemized_lines))
    return lines


_RECEIPT_LINES = RowsText(
    lambda n, i: f"  {n}. {i.date} | {i.description} | {i.amount}" + (f" | {i.subcategory}" if i.subcategory else "")
)
_ITEMIZED_LINES = RowsText(
    lambda n, line: (
        f"  {n}. {line.date} | {line.subcategory} | {line.amount} | {line.status}"
        + (f" | {line.description}" if line.description else "")
    )
)


SUMMARY_FACTS = SummaryFacts(
    new=new_facts, observe=observe, key_variables=key_variable_lines, todo=todo_lines, guardrails=GUARDRAILS
)
