"""Itemization's OData entity sets: read-only views over the expense tables, their properties and
descriptions, and the writes they take (itemized lines; header-line fields; a report's purpose), which go
through ``ledger``, so they obey the forms' business rules.
"""

from __future__ import annotations

import sqlite3
from functools import partial
from typing import cast

from erp_sim.database.schema import load_schema
from erp_sim.errors import ValidationError
from erp_sim.odata.entities import DataCatalog, EntitySet, entity_sets_by_name, schema_properties
from erp_sim.odata.writes import record_id, record_properties
from erp_sim.values import parse_text
from erp_sim.workflows.itemization import SCHEMA_FILE, ledger

COLUMNS = load_schema(SCHEMA_FILE).columns


# Properties over a table's columns, typed and described by its table class.
_columns = partial(schema_properties, COLUMNS)


# --- writes: one record each, inside the data tool's transaction ----------------------------------------
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


def _create_itemized(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = record_properties(entity, raw, list(_CREATE_FIELDS), "Creating an itemized line")
    line_type = values.pop("LineType", "ItemizedLine")
    if not isinstance(line_type, str) or line_type.strip().lower() != "itemizedline":
        raise ValidationError(
            f"LineType: only itemized lines can be created, so LineType must be ItemizedLine "
            f"(or left out), got {line_type!r}."
        )
    if values.get("ParentRecId") in (None, ""):
        raise ValidationError("ParentRecId must be filled in: the RecId of the expense line to itemize.")
    header = ledger.line_by_id(db, record_id(values.pop("ParentRecId"), "ParentRecId"))
    ledger.itemizable_header(db, header["id"])  # category, line type and Draft checks before value checks
    raw_values = {cast(str, _CREATE_FIELDS[name]): value for name, value in values.items()}  # the None ones popped
    itemized = ledger.validate_itemized_values(header, raw_values, _CONTROLS)
    return ledger.create_itemized_line(db, header["id"], itemized)


def _update_line(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    allowed = ["RecId", *dict.fromkeys([*_ITEMIZED_FIELDS, *_LINE_FIELDS])]
    values = record_properties(entity, raw, allowed, "Updating an expense line")
    if "RecId" not in values:
        raise ValidationError("RecId must be given to say which line to update.")
    line = ledger.line_by_id(db, record_id(values.pop("RecId"), "RecId"))
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
    values = record_properties(entity, raw, ["RecId", "ReportNumber", "Purpose"], "Updating an expense report")
    if "RecId" in values:
        report = ledger.report_by_id(db, record_id(values.pop("RecId"), "RecId"))
        if "ReportNumber" in values and str(values.pop("ReportNumber")).strip().upper() != report["report_number"]:
            raise ValidationError(
                f"RecId {report['id']} is report {report['report_number']}, not the ReportNumber given."
            )
    elif "ReportNumber" in values:
        report = ledger.report_by_number(db, parse_text(values.pop("ReportNumber"), "ReportNumber"))
    else:
        raise ValidationError("RecId (or ReportNumber) must be given to say which report to update.")
    if "Purpose" not in values:
        raise ValidationError(f"Nothing to update for report {report['report_number']}; only Purpose can be changed.")
    ledger.update_report_purpose(db, report["id"], values["Purpose"], "Purpose")
    return int(report["id"])


_EDIT = "Editable on Draft reports."
_ENTITY_SETS = entity_sets_by_name(
    EntitySet(
        "ExpenseReports",
        "Expense reports",
        "expense_report",
        "expense_report r JOIN worker w ON w.id = r.worker_id",
        _columns(
            "expense_report", "r", ("RecId", "id"), ("ReportNumber", "report_number"), ("WorkerRecId", "worker_id")
        )
        + _columns("worker", "w", ("WorkerName", "name", "(The report's worker.)"))
        + _columns(
            "expense_report",
            "r",
            ("Purpose", "purpose", _EDIT),
            ("Destination", "destination"),
            ("Status", "status"),
            ("CreatedDate", "created_date"),
            writable=("Purpose",),
        ),
        (
            "Reports cannot be created or deleted through the data API.",
            "Only Purpose can be updated, and only on Draft reports: give RecId (or ReportNumber) and Purpose.",
            "Submit a report with the action SubmitExpenseReport; check it first with ValidateExpenseReport.",
        ),
        update=_update_report,
    ),
    EntitySet(
        "ExpenseLines",
        "Expense lines (including itemized lines)",
        "expense_line",
        "expense_line l JOIN expense_report r ON r.id = l.report_id",
        _columns("expense_line", "l", ("RecId", "id"))
        + _columns("expense_report", "r", ("ReportNumber", "report_number", "(The line's report.)"))
        + _columns(
            "expense_line",
            "l",
            ("LineNumber", "line_number", "Itemized lines share their header's number."),
            ("Category", "category_id"),
            ("Merchant", "merchant", "Editable on header and default lines."),
            ("TransactionDate", "transaction_date", "Editable on itemized lines."),
            ("Amount", "amount", "Editable on itemized and default lines (not on an itemized header)."),
            ("Currency", "currency"),
            ("LineType", "line_type", "Set on create only, and only to ItemizedLine."),
            ("ParentRecId", "parent_line_id", "RecId of the header line; set on create only."),
            ("Subcategory", "subcategory", "One of the header category's subcategories (see ExpenseSubcategories)."),
            ("Description", "description", "Editable."),
            writable=("Merchant", "TransactionDate", "Amount", "LineType", "ParentRecId", "Subcategory", "Description"),
        ),
        (
            "Create only itemized lines: each entity gives ParentRecId (the RecId of the expense line to itemize), "
            "Subcategory, TransactionDate (YYYY-MM-DD) and Amount (greater than 0.00, two decimals at most), "
            "optionally Description and LineType (which must be ItemizedLine).",
            "The header line's category must support itemization, and Subcategory must be one of that category's "
            "subcategories (entity set ExpenseSubcategories).",
            "Only lines of Draft reports can be created, updated or deleted.",
            "Update by RecId: itemized lines accept Subcategory, TransactionDate, Amount and Description; header and "
            "default lines accept Merchant, Description and Amount (not the Amount of a line that has itemized lines).",
            "Only itemized lines can be deleted (by RecId).",
            "Remaining = the header line's Amount minus the sum of its itemized lines' Amount; the itemization is "
            "complete at exactly 0.00. Over-itemization is accepted but leaves a negative remaining amount. "
            "The action GetItemizationStatus reports the figures.",
            "Each call is all or nothing: if one entity is invalid, nothing is written.",
        ),
        create=_create_itemized,
        update=_update_line,
        delete=ledger.delete_itemized_line,
    ),
    EntitySet(
        "ExpenseCategories",
        "Expense categories (cost types)",
        "expense_category",
        "expense_category c",
        _columns(
            "expense_category",
            "c",
            ("RecId", "id"),
            ("CategoryId", "category_id"),
            ("Name", "name"),
            ("Itemize", "itemize"),
        ),
        ("Read-only.",),
    ),
    EntitySet(
        "ExpenseSubcategories",
        "Expense subcategories",
        "expense_subcategory",
        "expense_subcategory s",
        _columns("expense_subcategory", "s", ("RecId", "id"), ("CategoryId", "category_id"), ("Name", "name")),
        ("Read-only. An itemized line's Subcategory must be a Name of its category.",),
    ),
    EntitySet(
        "ExpenseReceipts",
        "Expense receipts (attached documents: folios, agreements, bills)",
        "receipt",
        "receipt d",
        _columns(
            "receipt",
            "d",
            ("RecId", "id"),
            ("ExpenseLineRecId", "expense_line_id"),
            ("DocumentNumber", "document_number"),
            ("Merchant", "merchant"),
            ("IssuedDate", "issued_date"),
            ("Total", "total"),
            ("Currency", "currency"),
        ),
        ("Read-only. The charges are in ExpenseReceiptItems (filter on ReceiptRecId).",),
    ),
    EntitySet(
        "ExpenseReceiptItems",
        "Expense receipt items (the charges printed on a receipt)",
        "receipt_item",
        "receipt_item i",
        _columns(
            "receipt_item",
            "i",
            ("RecId", "id"),
            ("ReceiptRecId", "receipt_id"),
            ("ItemNumber", "item_number"),
            ("ItemDate", "item_date"),
            ("Description", "description"),
            ("Amount", "amount"),
        ),
        ("Read-only. Receipts print the vendor's wording, not subcategory names.",),
    ),
    EntitySet(
        "Workers",
        "Workers (employees)",
        "worker",
        "worker k",
        _columns(
            "worker",
            "k",
            ("RecId", "id"),
            ("PersonnelNumber", "personnel_number"),
            ("Name", "name"),
            ("Email", "email"),
        ),
        ("Read-only.",),
    ),
)

CATALOG = DataCatalog(
    entity_sets=_ENTITY_SETS,
    path_example="ExpenseLines",
    filter_example="Category eq 'Hotel' and Amount gt 100",
    string_example="'Hotel'",
    options_example="$filter=Category eq 'Hotel'&$top=10",
    create_hint="Only itemized lines can be created: entity set ExpenseLines with ParentRecId, Subcategory, "
    "TransactionDate and Amount.",
    update_hint="Writable entity sets: ExpenseLines (itemized lines; header-line Merchant, Description, Amount) and "
    "ExpenseReports (Purpose).",
    delete_hint="Only itemized lines (entity set ExpenseLines, LineType ItemizedLine) can be deleted.",
)
