"""The OData entity sets: read-only views over the expense tables, their properties and
descriptions (``find_entity_sets``, ``entity_metadata``).
"""

from __future__ import annotations

from dataclasses import dataclass

from erp_sim.errors import NotFoundError, ValidationError
from erp_sim.json_values import JsonObject
from erp_sim.schema import TABLE_COLUMNS

INT, STRING, DECIMAL, DATE, BOOLEAN = "Edm.Int64", "Edm.String", "Edm.Decimal", "Edm.Date", "Edm.Boolean"


# --- entity sets -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Property:
    name: str
    sql: str  # expression in the entity set's SELECT
    type: str
    description: str
    writable: bool = False


@dataclass(frozen=True)
class EntitySet:
    name: str
    label: str
    table: str
    source: str  # FROM clause of the SELECT
    properties: tuple[Property, ...]
    rules: tuple[str, ...]
    writable: bool = False

    @property
    def select_sql(self) -> str:
        columns = ", ".join(f'{p.sql} AS "{p.name}"' for p in self.properties)
        return f"SELECT {columns} FROM {self.source}"

    def find_property(self, name: str, where: str) -> Property:
        """The property called ``name`` (case-insensitive), or a ValidationError listing the valid ones."""
        for prop in self.properties:
            if prop.name.lower() == name.lower():
                return prop
        raise ValidationError(f"{where}: {self.name} has no property {name!r}. Properties: {self.property_list}.")

    @property
    def property_list(self) -> str:
        return ", ".join(p.name for p in self.properties)


def _prop(name: str, table: str, field: str, sql: str, *, writable: bool = False, note: str = "") -> Property:
    """A property whose type and description come from the model's field: the column ``table.field``."""
    column = TABLE_COLUMNS[table][field]
    if "bool" in column.type:
        kind = BOOLEAN
    elif "int" in column.type:
        kind = INT
    elif "Decimal text" in column.description:
        kind = DECIMAL
    elif field.endswith("_date"):
        kind = DATE
    else:
        kind = STRING
    return Property(name, sql, kind, " ".join(filter(None, [column.description, note])), writable)


_EDIT = "Editable on Draft reports."
ENTITY_SETS: dict[str, EntitySet] = {
    s.name: s
    for s in [
        EntitySet(
            "ExpenseReports",
            "Expense reports",
            "expense_report",
            "expense_report r JOIN worker w ON w.id = r.worker_id",
            (
                _prop("RecId", "expense_report", "id", "r.id"),
                _prop("ReportNumber", "expense_report", "report_number", "r.report_number"),
                _prop("WorkerRecId", "expense_report", "worker_id", "r.worker_id"),
                _prop("WorkerName", "worker", "name", "w.name", note="(The report's worker.)"),
                _prop("Purpose", "expense_report", "purpose", "r.purpose", writable=True, note=_EDIT),
                _prop("Destination", "expense_report", "destination", "r.destination"),
                _prop("Status", "expense_report", "status", "r.status"),
                _prop("CreatedDate", "expense_report", "created_date", "r.created_date"),
            ),
            (
                "Reports cannot be created or deleted through the data API.",
                "Only Purpose can be updated, and only on Draft reports: give RecId (or ReportNumber) and Purpose.",
                "Submit a report with the action SubmitExpenseReport; check it first with ValidateExpenseReport.",
            ),
            writable=True,
        ),
        EntitySet(
            "ExpenseLines",
            "Expense lines (including itemized lines)",
            "expense_line",
            "expense_line l JOIN expense_report r ON r.id = l.report_id",
            (
                _prop("RecId", "expense_line", "id", "l.id"),
                _prop(
                    "ReportNumber", "expense_report", "report_number", "r.report_number", note="(The line's report.)"
                ),
                _prop(
                    "LineNumber",
                    "expense_line",
                    "line_number",
                    "l.line_number",
                    note="Itemized lines share their header's number.",
                ),
                _prop("Category", "expense_line", "category_id", "l.category_id"),
                _prop(
                    "Merchant",
                    "expense_line",
                    "merchant",
                    "l.merchant",
                    writable=True,
                    note="Editable on header and default lines.",
                ),
                _prop(
                    "TransactionDate",
                    "expense_line",
                    "transaction_date",
                    "l.transaction_date",
                    writable=True,
                    note="Editable on itemized lines.",
                ),
                _prop(
                    "Amount",
                    "expense_line",
                    "amount",
                    "l.amount",
                    writable=True,
                    note="Editable on itemized and default lines (not on an itemized header).",
                ),
                _prop("Currency", "expense_line", "currency", "l.currency"),
                _prop(
                    "LineType",
                    "expense_line",
                    "line_type",
                    "l.line_type",
                    writable=True,
                    note="Set on create only, and only to ItemizedLine.",
                ),
                _prop(
                    "ParentRecId",
                    "expense_line",
                    "parent_line_id",
                    "l.parent_line_id",
                    writable=True,
                    note="RecId of the header line; set on create only.",
                ),
                _prop(
                    "Subcategory",
                    "expense_line",
                    "subcategory",
                    "l.subcategory",
                    writable=True,
                    note="One of the header category's subcategories (see ExpenseSubcategories).",
                ),
                _prop("Description", "expense_line", "description", "l.description", writable=True, note="Editable."),
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
            writable=True,
        ),
        EntitySet(
            "ExpenseCategories",
            "Expense categories (cost types)",
            "expense_category",
            "expense_category c",
            (
                _prop("RecId", "expense_category", "id", "c.id"),
                _prop("CategoryId", "expense_category", "category_id", "c.category_id"),
                _prop("Name", "expense_category", "name", "c.name"),
                _prop("Itemize", "expense_category", "itemize", "c.itemize"),
            ),
            ("Read-only.",),
        ),
        EntitySet(
            "ExpenseSubcategories",
            "Expense subcategories",
            "expense_subcategory",
            "expense_subcategory s",
            (
                _prop("RecId", "expense_subcategory", "id", "s.id"),
                _prop("CategoryId", "expense_subcategory", "category_id", "s.category_id"),
                _prop("Name", "expense_subcategory", "name", "s.name"),
            ),
            ("Read-only. An itemized line's Subcategory must be a Name of its category.",),
        ),
        EntitySet(
            "ExpenseReceipts",
            "Expense receipts (attached documents: folios, agreements, bills)",
            "receipt",
            "receipt d",
            (
                _prop("RecId", "receipt", "id", "d.id"),
                _prop("ExpenseLineRecId", "receipt", "expense_line_id", "d.expense_line_id"),
                _prop("DocumentNumber", "receipt", "document_number", "d.document_number"),
                _prop("Merchant", "receipt", "merchant", "d.merchant"),
                _prop("IssuedDate", "receipt", "issued_date", "d.issued_date"),
                _prop("Total", "receipt", "total", "d.total"),
                _prop("Currency", "receipt", "currency", "d.currency"),
            ),
            ("Read-only. The charges are in ExpenseReceiptItems (filter on ReceiptRecId).",),
        ),
        EntitySet(
            "ExpenseReceiptItems",
            "Expense receipt items (the charges printed on a receipt)",
            "receipt_item",
            "receipt_item i",
            (
                _prop("RecId", "receipt_item", "id", "i.id"),
                _prop("ReceiptRecId", "receipt_item", "receipt_id", "i.receipt_id"),
                _prop("ItemNumber", "receipt_item", "item_number", "i.item_number"),
                _prop("ItemDate", "receipt_item", "item_date", "i.item_date"),
                _prop("Description", "receipt_item", "description", "i.description"),
                _prop("Amount", "receipt_item", "amount", "i.amount"),
            ),
            ("Read-only. Receipts print the vendor's wording, not subcategory names.",),
        ),
        EntitySet(
            "Workers",
            "Workers (employees)",
            "worker",
            "worker k",
            (
                _prop("RecId", "worker", "id", "k.id"),
                _prop("PersonnelNumber", "worker", "personnel_number", "k.personnel_number"),
                _prop("Name", "worker", "name", "k.name"),
                _prop("Email", "worker", "email", "k.email"),
            ),
            ("Read-only.",),
        ),
    ]
}


def _entity_set(name: object) -> EntitySet:
    text = str(name).strip()
    for entity in ENTITY_SETS.values():
        if entity.name.lower() == text.lower():
            return entity
    raise NotFoundError(
        f"Entity set {text!r} does not exist. Entity sets: {', '.join(ENTITY_SETS)}. "
        "Use data_find_entity_type to search."
    )


def find_entity_sets(search: str) -> list[JsonObject]:
    """Entity sets whose name, label or table name contain every word of ``search``."""
    words = search.lower().split()
    return [
        {"Name": e.name, "Label": e.label, "Table": e.table, "IsReadOnly": not e.writable}
        for e in ENTITY_SETS.values()
        if all(w in f"{e.name} {e.label} {e.table}".lower() for w in words)
    ]


def entity_metadata(entity_set: str) -> JsonObject:
    entity = _entity_set(entity_set)
    return {
        "Name": entity.name,
        "Label": entity.label,
        "Key": "RecId",
        "Properties": [
            {"Name": p.name, "Type": p.type, "Description": p.description, "IsReadOnly": not p.writable}
            for p in entity.properties
        ],
        "Rules": list(entity.rules),
    }
