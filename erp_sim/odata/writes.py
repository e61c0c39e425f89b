"""OData writes (``create_entities``, ``update_entities``, ``delete_entities``): through
``erp_sim.ledger``, so they obey the forms' business rules; each call is one all-or-nothing transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import cast

from erp_sim import ledger
from erp_sim.errors import BusinessRuleError, ErpError, ValidationError
from erp_sim.json_values import JsonObject, whole_number
from erp_sim.odata_entities import EntitySet, _entity_set
from erp_sim.odata_reads import _records_by_id

MAX_BATCH = 200


# --- writes ------------------------------------------------------------------------------------
_CREATE_FIELDS: dict[str, str | None] = {
    "ParentRecId": None,
    "Subcategory": "subcategory",
    "TransactionDate": "transaction_date",
    "Amount": "amount",
    "Description": "description",
    "LineType": None,
}
_ITEMIZED_FIELDS = {
    "Subcategory": "subcategory",
    "TransactionDate": "transaction_date",
    "Amount": "amount",
    "Description": "description",
}
_LINE_FIELDS = {"Merchant": "merchant", "Description": "description", "Amount": "amount"}
_CONTROLS = {field: name for name, field in {**_ITEMIZED_FIELDS, **_LINE_FIELDS}.items()}


def _writable_set(entity_set: str, verb: str) -> EntitySet:
    entity = _entity_set(entity_set)
    if not entity.writable:
        raise BusinessRuleError(
            f"{entity.name} is read-only; records cannot be {verb}. Writable entity sets: "
            "ExpenseLines (itemized lines; header-line Merchant, Description, Amount) and "
            "ExpenseReports (Purpose)."
        )
    return entity


def _batch(items: object, name: str) -> list[object]:
    if not isinstance(items, list) or not items:
        raise ValidationError(f"{name}: expected a non-empty list.")
    if len(items) > MAX_BATCH:
        raise ValidationError(f"{name}: {len(items)} items; at most {MAX_BATCH} per call.")
    return items


def _properties(entity: EntitySet, raw: object, allowed: list[str], purpose: str) -> dict[str, object]:
    """``raw``'s properties under their canonical names; unknown or non-writable ones are refused by name."""
    if not isinstance(raw, dict):
        raise ValidationError(f"Expected an object of property -> value, got {type(raw).__name__}.")
    known = {p.name.lower(): p.name for p in entity.properties}
    values: dict[str, object] = {}
    unknown, refused = [], []
    for name, value in raw.items():
        canonical = known.get(str(name).lower())
        if canonical is None:
            unknown.append(str(name))
        elif canonical not in allowed:
            refused.append(canonical)
        elif canonical in values:
            raise ValidationError(f"Property {canonical} is given twice.")
        else:
            values[canonical] = value
    if unknown:
        raise ValidationError(
            f"Unknown propert{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
            f"of {entity.name}. {purpose} takes: {', '.join(allowed)}."
        )
    if refused:
        raise ValidationError(f"{', '.join(refused)} cannot be set here. {purpose} takes: {', '.join(allowed)}.")
    return values


def _rec_id(value: object, where: str) -> int:
    number = whole_number(value)
    if number is None:
        raise ValidationError(f"{where}: expected a RecId (a whole number), got {value!r}.")
    return number


@contextmanager
def _batch_item(label: str, count: int) -> Iterator[None]:
    """In a batch of several items, an error names the item (``entities[2]``) and says nothing was written."""
    try:
        yield
    except ErpError as exc:
        if count == 1:
            raise
        raise type(exc)(f"{label}: {exc} Nothing was written; fix this item and send the whole batch again.") from None


def create_entities(
    db: sqlite3.Connection, entity_set: str, entities: Sequence[Mapping[str, object]]
) -> list[JsonObject]:
    """Create itemized expense lines, all or nothing. Returns the created records."""
    entity = _entity_set(entity_set)
    if entity.name != "ExpenseLines":
        raise BusinessRuleError(
            f"Records of {entity.name} cannot be created through the data API. Only itemized "
            "lines can be created: entity set ExpenseLines with ParentRecId, Subcategory, "
            "TransactionDate and Amount."
        )
    _batch(entities, "entities")
    created: list[int] = []
    with ledger.transaction(db):
        for index, raw in enumerate(entities):
            with _batch_item(f"entities[{index}]", len(entities)):
                created.append(_create_itemized(db, entity, raw))
    return _records_by_id(db, entity, created)


def _create_itemized(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = _properties(entity, raw, list(_CREATE_FIELDS), "Creating an itemized line")
    line_type = values.pop("LineType", "ItemizedLine")
    if not isinstance(line_type, str) or line_type.strip().lower() != "itemizedline":
        raise ValidationError(
            f"LineType: only itemized lines can be created, so LineType must be ItemizedLine "
            f"(or left out), got {line_type!r}."
        )
    if values.get("ParentRecId") in (None, ""):
        raise ValidationError("ParentRecId must be filled in: the RecId of the expense line to itemize.")
    header = ledger.line_by_id(db, _rec_id(values.pop("ParentRecId"), "ParentRecId"))
    ledger.itemizable_header(db, header["id"])  # category, line type and Draft checks before value checks
    raw_values = {cast(str, _CREATE_FIELDS[name]): value for name, value in values.items()}  # the None ones popped
    itemized = ledger.validate_itemized_values(header, raw_values, _CONTROLS)
    return ledger.create_itemized_line(db, header["id"], itemized)


def update_entities(
    db: sqlite3.Connection, entity_set: str, entities: Sequence[Mapping[str, object]]
) -> list[JsonObject]:
    """Update expense lines or report purposes by RecId, all or nothing. Returns the updated records."""
    entity = _writable_set(entity_set, "updated")
    _batch(entities, "entities")
    update = _update_line if entity.name == "ExpenseLines" else _update_report
    updated: list[int] = []
    with ledger.transaction(db):
        for index, raw in enumerate(entities):
            with _batch_item(f"entities[{index}]", len(entities)):
                updated.append(update(db, entity, raw))
    return _records_by_id(db, entity, list(dict.fromkeys(updated)))


def _update_line(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    allowed = ["RecId", *dict.fromkeys([*_ITEMIZED_FIELDS, *_LINE_FIELDS])]
    values = _properties(entity, raw, allowed, "Updating an expense line")
    if "RecId" not in values:
        raise ValidationError("RecId must be given to say which line to update.")
    line = ledger.line_by_id(db, _rec_id(values.pop("RecId"), "RecId"))
    if not values:
        raise ValidationError(
            f"Nothing to update for RecId {line['id']}; give at least one of {', '.join(allowed[1:])}."
        )
    if line["line_type"] == "ItemizedLine":
        wrong = [name for name in values if name not in _ITEMIZED_FIELDS]
        if wrong:
            raise ValidationError(
                f"{', '.join(wrong)}: line RecId {line['id']} is an itemized line; it takes "
                f"{', '.join(_ITEMIZED_FIELDS)} (its Merchant is the header's)."
            )
        raw_values = {field: line[field] for field in _ITEMIZED_FIELDS.values()}
        raw_values.update({_ITEMIZED_FIELDS[name]: value for name, value in values.items()})
        header = ledger.line_by_id(db, line["parent_line_id"])
        ledger.update_itemized_line(db, line["id"], ledger.validate_itemized_values(header, raw_values, _CONTROLS))
    else:
        wrong = [name for name in values if name not in _LINE_FIELDS]
        if wrong:
            raise ValidationError(
                f"{', '.join(wrong)}: line RecId {line['id']} is a {line['line_type']} line; it takes "
                f"{', '.join(_LINE_FIELDS)}. Subcategory and TransactionDate are set on itemized lines."
            )
        ledger.update_line_fields(
            db, line["id"], {_LINE_FIELDS[name]: value for name, value in values.items()}, _CONTROLS
        )
    return int(line["id"])


def _update_report(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = _properties(entity, raw, ["RecId", "ReportNumber", "Purpose"], "Updating an expense report")
    if "RecId" in values:
        report = ledger.report_by_id(db, _rec_id(values.pop("RecId"), "RecId"))
        if "ReportNumber" in values and str(values.pop("ReportNumber")).strip().upper() != report["report_number"]:
            raise ValidationError(
                f"RecId {report['id']} is report {report['report_number']}, not the ReportNumber given."
            )
    elif "ReportNumber" in values:
        report = ledger.report_by_number(db, ledger.parse_text(values.pop("ReportNumber"), "ReportNumber"))
    else:
        raise ValidationError("RecId (or ReportNumber) must be given to say which report to update.")
    if "Purpose" not in values:
        raise ValidationError(f"Nothing to update for report {report['report_number']}; only Purpose can be changed.")
    ledger.update_report_purpose(db, report["id"], values["Purpose"], "Purpose")
    return int(report["id"])


def delete_entities(db: sqlite3.Connection, entity_set: str, keys: list[int]) -> None:
    """Delete itemized expense lines by RecId, all or nothing."""
    entity = _entity_set(entity_set)
    if entity.name != "ExpenseLines":
        raise BusinessRuleError(
            f"Records of {entity.name} cannot be deleted through the data API. Only itemized "
            "lines (entity set ExpenseLines, LineType ItemizedLine) can be deleted."
        )
    ids = [_rec_id(key, f"keys[{i}]") for i, key in enumerate(_batch(keys, "keys"))]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValidationError(f"keys: RecId {', '.join(map(str, repeated))} is listed more than once.")
    with ledger.transaction(db):
        for index, line_id in enumerate(ids):
            with _batch_item(f"keys[{index}]", len(ids)):
                ledger.delete_itemized_line(db, line_id)
