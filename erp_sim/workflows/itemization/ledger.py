"""Itemization's business rules: reads and rule-checked writes on the expense tables, shared by forms,
data tools and actions, and the zero-remainder rule itself (``ItemizationSummary``; in prose: rules.md).

Every write goes through a function here, inside ``erp_sim.database.transaction``, so a form save, an
OData create and an action obey the same rules and either apply whole or not at all.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, cast

from erp_sim.database import record_by_id
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.money import ZERO, money_text, parse_money
from erp_sim.values import parse_date, parse_text
from erp_sim.workflows.itemization.catalog import CATEGORIES

if TYPE_CHECKING:
    from erp_sim.forms.base import FormHost


# --- reads -----------------------------------------------------------------------------------
def report_by_id(db: sqlite3.Connection, report_id: int) -> sqlite3.Row:
    return record_by_id(db, "expense_report", report_id, "Expense report")


def report_by_number(db: sqlite3.Connection, number: str) -> sqlite3.Row:
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM expense_report WHERE report_number = ?", (str(number).strip().upper(),)
    ).fetchone()
    if row is None:
        raise NotFoundError(f"Expense report {number!r} does not exist.")
    return row


def line_by_id(db: sqlite3.Connection, line_id: int) -> sqlite3.Row:
    return record_by_id(db, "expense_line", line_id, "Expense line")


def header_lines(db: sqlite3.Connection, report_id: int) -> list[sqlite3.Row]:
    """A report's expense lines in line order, without itemized lines (those belong to their header)."""
    return db.execute(
        "SELECT * FROM expense_line WHERE report_id = ? AND line_type != 'ItemizedLine' ORDER BY line_number, id",
        (report_id,),
    ).fetchall()


def itemized_lines(db: sqlite3.Connection, header_id: int) -> list[sqlite3.Row]:
    return db.execute("SELECT * FROM expense_line WHERE parent_line_id = ? ORDER BY id", (header_id,)).fetchall()


def receipt_of_line(db: sqlite3.Connection, line_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute("SELECT * FROM receipt WHERE expense_line_id = ?", (line_id,)).fetchone()
    return row


def receipt_items(db: sqlite3.Connection, receipt_id: int) -> list[sqlite3.Row]:
    return db.execute("SELECT * FROM receipt_item WHERE receipt_id = ? ORDER BY item_number", (receipt_id,)).fetchall()


@dataclass(frozen=True)
class ItemizationSummary:
    """An expense line's itemization, as saved: the one statement of the zero-remainder rule (rules.md)."""

    total: Decimal
    itemized: Decimal
    line_count: int

    @property
    def remaining(self) -> Decimal:
        """The header amount minus the sum of saved itemized lines."""
        return self.total - self.itemized

    @property
    def complete(self) -> bool:
        """The rule: fully itemized when the remaining amount is exactly 0.00 with at least one saved line."""
        return self.line_count > 0 and self.remaining == ZERO

    @property
    def over_itemized(self) -> bool:
        """The saved lines add up to more than the header amount (accepted while editing, never complete)."""
        return self.remaining < ZERO


def itemization_summary(db: sqlite3.Connection, header_id: int) -> ItemizationSummary:
    header = line_by_id(db, header_id)
    # the amounts alone (a 200-line itemization's full rows cost 0.35 ms); their sum is exact in any order
    return _summary_of(header, [Decimal(amount) for (amount,) in db.execute(_AMOUNTS, (header_id,))])


_AMOUNTS = "SELECT amount FROM expense_line WHERE parent_line_id = ?"


def _summary_of(header: sqlite3.Row, amounts: list[Decimal]) -> ItemizationSummary:
    return ItemizationSummary(Decimal(header["amount"]), sum(amounts, ZERO), len(amounts))


def saved_lines(session: FormHost, header_id: int) -> list[sqlite3.Row]:
    """``itemized_lines``, read once per database version: the itemization form's grid and totals, the expense
    report's status column and the grade all read them (a save of 200 rows read them three times over). Not
    inside a write (see ``saved_summary``); callers must not mutate them."""
    return session.cached_read(f"itemization/{header_id}/lines", lambda: itemized_lines(session.db, header_id))


def saved_summary(session: FormHost, header_id: int) -> ItemizationSummary:
    """``itemization_summary`` of the ``saved_lines``, once per database version: the itemization form's totals
    and summary and the expense report's status column and line details all show it. Not inside a write: a
    value read there would outlive a rollback (the version counts the rolled-back writes)."""

    def summary() -> ItemizationSummary:
        header = line_by_id(session.db, header_id)
        return _summary_of(header, [Decimal(line["amount"]) for line in saved_lines(session, header_id)])

    return session.cached_read(f"itemization/{header_id}/summary", summary)


# --- value parsing of the expense fields (dates, text, money: erp_sim.values, erp_sim.money) -------------
def parse_subcategory(value: object, category_id: str, control: str) -> str:
    """Case-insensitive match against the category's subcategories; the canonical name is stored."""
    text = parse_text(value, control).strip()
    names = CATEGORIES[category_id].subcategories
    for name in names:
        if name.lower() == text.lower():
            return name
    raise ValidationError(
        f"{control}: the value {text!r} is not found in the related table of {category_id} subcategories. "
        f"Valid values: {', '.join(names)}."
    )


# --- writes -----------------------------------------------------------------------------------
def _draft_report_of(db: sqlite3.Connection, line: sqlite3.Row) -> sqlite3.Row:
    report = report_by_id(db, line["report_id"])
    if report["status"] != "Draft":
        raise BusinessRuleError(
            f"Expense report {report['report_number']} is {report['status']}; only Draft reports can be changed."
        )
    return report


def itemizable_header(db: sqlite3.Connection, header_id: int) -> sqlite3.Row:
    header = line_by_id(db, header_id)
    if header["line_type"] == "ItemizedLine":
        raise BusinessRuleError(f"Line RecId {header_id} is itself an itemized line; itemize its header line instead.")
    if not CATEGORIES[header["category_id"]].itemize:
        raise BusinessRuleError(f"Expense category {header['category_id']} does not support itemization.")
    _draft_report_of(db, header)
    return header


KnownParses = dict[tuple[str, type, object], str]  # (field, the value's type, the value) -> its parse


@dataclass(frozen=True)
class ItemizedValues:
    subcategory: str
    transaction_date: str
    amount: Decimal
    description: str = ""


def validate_itemized_values(
    header: sqlite3.Row, raw: Mapping[str, object], controls: dict[str, str], known: KnownParses | None = None
) -> ItemizedValues:
    """Check a full set of itemized-line values. ``controls`` names each field as the caller shows it.
    ``known``: a dict kept over the rows of one save (one header, one ``controls``), where the date, subcategory
    and description parses are remembered by value (a long itemization repeats a few of each: its 200 rows
    cost 200 parses of each field otherwise); a value that fails is never kept, so it fails again with the
    same message."""
    missing = [controls[k] for k in ("subcategory", "transaction_date", "amount") if raw.get(k) in (None, "")]
    if missing:
        raise ValidationError(f"Field(s) {', '.join(missing)} must be filled in.")
    amount = parse_money(raw["amount"], controls["amount"])
    known = {} if known is None else known
    return ItemizedValues(
        subcategory=_known_parse(
            known,
            "subcategory",
            raw["subcategory"],
            lambda v: parse_subcategory(v, header["category_id"], controls["subcategory"]),
        ),
        transaction_date=_known_parse(
            known, "transaction_date", raw["transaction_date"], lambda v: parse_date(v, controls["transaction_date"])
        ),
        amount=amount,
        description=_known_parse(
            known,
            "description",
            raw.get("description") or "",
            lambda v: parse_text(v, controls.get("description", "Description")),
        ),
    )


def _known_parse(known: KnownParses, field: str, value: object, parse: Callable[[object], str]) -> str:
    """``parse(value)``, remembered in ``known`` under the field, the value and its type (1, 1.0 and True are
    equal keys that parse differently)."""
    key = (field, type(value), value)
    try:
        parsed: str = known[key]
    except KeyError:
        parsed = known[key] = parse(value)
    except TypeError:  # an unhashable value: always refused by the parsers, never kept
        parsed = parse(value)
    return parsed


def create_itemized_line(db: sqlite3.Connection, header_id: int, values: ItemizedValues) -> int:
    header = itemizable_header(db, header_id)
    line_id = insert_itemized_line(db, header, values)
    mark_itemized_header(db, header_id)
    return line_id


def insert_itemized_line(db: sqlite3.Connection, header: sqlite3.Row, values: ItemizedValues) -> int:
    """The INSERT of ``create_itemized_line``, under a header ``itemizable_header`` returned (a form saving many
    new rows checks its header once and marks it once, ``mark_itemized_header``, not per row)."""
    cursor = db.execute(_INSERT_LINE, _line_parameters(header, values))
    return cast(int, cursor.lastrowid)  # set by the INSERT just run


def insert_itemized_lines(db: sqlite3.Connection, header: sqlite3.Row, rows: list[ItemizedValues]) -> None:
    """``insert_itemized_line`` of each, in order (the RecIds follow in that order, as one INSERT after the other
    gives them): from ``_JSON_INSERT_ROWS`` rows, one INSERT over a JSON array of the rows' values, 0.6x the cost
    of the INSERT run per row at 200 rows (below ~20 rows the JSON costs more than it saves)."""
    if not rows:
        return
    if len(rows) < _JSON_INSERT_ROWS or not all(_json_safe(values.description) for values in rows):
        db.executemany(_INSERT_LINE, [_line_parameters(header, values) for values in rows])
        return
    values_json = json.dumps([_value_parameters(values) for values in rows])
    db.execute(_INSERT_LINES, (*_header_parameters(header), values_json))


_JSON_INSERT_ROWS = 20


def _json_safe(text: str) -> bool:
    """Whether ``text`` passes through JSON into SQLite unchanged (ASCII without NUL: SQLite's JSON cuts a text at
    a NUL, and stores a lone surrogate that sqlite3 refuses to bind). Of a line's values only the description is
    free text: the others are a catalog name, an ISO date and a money text."""
    return text.isascii() and "\x00" not in text


_LINE_COLUMNS = (
    "report_id, line_number, category_id, merchant, currency, parent_line_id,"  # the header's (_header_parameters)
    " transaction_date, amount, subcategory, description,"  # the line's own (_value_parameters)
    " line_type"
)
_INSERT_LINE = f"INSERT INTO expense_line ({_LINE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ItemizedLine')"
_INSERT_LINES = (  # json_extract, not ->>: SQLite before 3.38 has JSON functions but not the operators
    f"INSERT INTO expense_line ({_LINE_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, json_extract(value, '$[0]'),"
    " json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), 'ItemizedLine'"
    " FROM json_each(?) ORDER BY key"
)


def _header_parameters(header: sqlite3.Row) -> tuple[object, ...]:
    """What an itemized line copies from its header, in ``_LINE_COLUMNS`` order."""
    return (
        header["report_id"],
        header["line_number"],
        header["category_id"],
        header["merchant"],
        header["currency"],
        header["id"],
    )


def _value_parameters(values: ItemizedValues) -> tuple[str, str, str, str]:
    """An itemized line's own values, in ``_LINE_COLUMNS`` order."""
    return (values.transaction_date, money_text(values.amount), values.subcategory, values.description)


def _line_parameters(header: sqlite3.Row, values: ItemizedValues) -> tuple[object, ...]:
    """The parameters of ``_INSERT_LINE``."""
    return (*_header_parameters(header), *_value_parameters(values))


def mark_itemized_header(db: sqlite3.Connection, header_id: int) -> None:
    db.execute("UPDATE expense_line SET line_type = 'ItemizedHeader' WHERE id = ?", (header_id,))


def _itemized_line(db: sqlite3.Connection, line_id: int, header_id: int | None) -> sqlite3.Row:
    line = line_by_id(db, line_id)
    if line["line_type"] != "ItemizedLine":
        raise BusinessRuleError(f"Line RecId {line_id} is not an itemized line.")
    # A form's unsaved row names a RecId; if that line was deleted meanwhile, SQLite may have given
    # the RecId to another header's new line, which the form must not write.
    if header_id is not None and line["parent_line_id"] != header_id:
        raise NotFoundError(
            f"Itemized line RecId {line_id} no longer belongs to this expense line; it was deleted "
            "elsewhere. Close the form without saving and open it again."
        )
    _draft_report_of(db, line)
    return line


def update_itemized_line(
    db: sqlite3.Connection, line_id: int, values: ItemizedValues, header_id: int | None = None
) -> None:
    """Write an itemized line's values; ``header_id``, when given, is the header it must still belong to."""
    _itemized_line(db, line_id, header_id)
    db.execute(
        "UPDATE expense_line SET subcategory = ?, transaction_date = ?, amount = ?, description = ? WHERE id = ?",
        (values.subcategory, values.transaction_date, money_text(values.amount), values.description, line_id),
    )


def delete_itemized_line(db: sqlite3.Connection, line_id: int, header_id: int | None = None) -> None:
    line = _itemized_line(db, line_id, header_id)
    db.execute("DELETE FROM expense_line WHERE id = ?", (line_id,))
    if not itemized_lines(db, line["parent_line_id"]):
        db.execute("UPDATE expense_line SET line_type = 'Default' WHERE id = ?", (line["parent_line_id"],))


# Fields of a header (non-itemized) line that a user may edit, and their parsers.
EDITABLE_LINE_FIELDS: dict[str, Callable[[object, str], object]] = {
    "merchant": parse_text,
    "description": parse_text,
    "amount": parse_money,
}


def update_line_fields(
    db: sqlite3.Connection, line_id: int, changes: Mapping[str, object], controls: dict[str, str]
) -> None:
    line = line_by_id(db, line_id)
    if line["line_type"] == "ItemizedLine":
        raise BusinessRuleError(f"Line RecId {line_id} is an itemized line; edit it in the itemization form.")
    _draft_report_of(db, line)
    for field, value in changes.items():
        if field not in EDITABLE_LINE_FIELDS:
            raise ValidationError(f"{controls.get(field, field)}: the field cannot be edited.")
        parsed = EDITABLE_LINE_FIELDS[field](value, controls.get(field, field))
        if field == "amount":
            if line["line_type"] == "ItemizedHeader":
                raise BusinessRuleError(
                    "The amount of an itemized expense cannot be changed; delete its itemized lines first."
                )
            parsed = money_text(cast(Decimal, parsed))  # parse_money's
        db.execute(f"UPDATE expense_line SET {field} = ? WHERE id = ?", (parsed, line_id))


def update_report_purpose(db: sqlite3.Connection, report_id: int, purpose: object, control: str) -> None:
    report = report_by_id(db, report_id)
    if report["status"] != "Draft":
        raise BusinessRuleError(
            f"Expense report {report['report_number']} is {report['status']}; only Draft reports can be changed."
        )
    db.execute("UPDATE expense_report SET purpose = ? WHERE id = ?", (parse_text(purpose, control), report_id))


def report_problems(db: sqlite3.Connection, report_id: int) -> list[str]:
    """What blocks submission: itemizable lines whose itemization does not add up to zero."""
    problems = []
    for line in header_lines(db, report_id):
        if not CATEGORIES[line["category_id"]].itemize:
            continue
        summary = itemization_summary(db, line["id"])
        if not summary.complete:
            problems.append(
                f"Line {line['line_number']} ({line['category_id']}, {line['merchant']}): "
                f"{money_text(summary.remaining)} of {money_text(summary.total)} is not itemized."
            )
    return problems


def submit_report(db: sqlite3.Connection, report_id: int) -> None:
    report = report_by_id(db, report_id)
    if report["status"] != "Draft":
        raise BusinessRuleError(f"Expense report {report['report_number']} is already {report['status']}.")
    problems = report_problems(db, report_id)
    if problems:
        raise BusinessRuleError("The expense report cannot be submitted: " + " ".join(problems))
    db.execute("UPDATE expense_report SET status = 'Submitted' WHERE id = ?", (report_id,))
