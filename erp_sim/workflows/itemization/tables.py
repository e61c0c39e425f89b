"""Itemization's tables, modelled on D365's expense tables, as SQLModel classes.

D365 names in brackets: ExpenseReport [TrvExpTable], ExpenseLine [TrvExpTrans], ExpenseCategory
[TrvCostType], ExpenseSubcategory [TrvExpSubCategory]. The classes are the schema: DDL, the
entity metadata the data tools show and the column lists all come from them, compiled once into
``schema.json`` beside this file (``erp_sim.database.compile_schema``; after changing a class run
``python -m erp_sim.workflows.itemization.tables > erp_sim/workflows/itemization/schema.json``), which
is what the simulator reads (``erp_sim.database.schema``), so a run never imports SQLAlchemy. At run time
sessions read and write through plain ``sqlite3`` on a per-session copy of a template
database (an ORM round trip per call would cost more than the whole call budget).
Amounts are stored as TEXT ("1234.50") so SQLite never turns them into binary floats.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel

from erp_sim.database.compile_schema import Record, money_field, schema_text


class Company(Record, table=True):
    __tablename__ = "company"
    data_area_id: str = Field(description="Legal entity id, e.g. USMF.")
    name: str = Field(description="Legal entity name.")


class Worker(Record, table=True):
    __tablename__ = "worker"
    personnel_number: str = Field(description="Personnel number, e.g. 000123.")
    name: str = Field(description="Worker name.")
    email: str = Field(description="Work email.")


class ExpenseCategory(Record, table=True):
    __tablename__ = "expense_category"
    category_id: str = Field(description="Cost type id, e.g. Hotel.")
    name: str = Field(description="Display name.")
    itemize: bool = Field(description="Lines of this category must be itemized.")


class ExpenseSubcategory(Record, table=True):
    __tablename__ = "expense_subcategory"
    category_id: str = Field(description="Cost type the subcategory belongs to.")
    name: str = Field(description="Subcategory name, e.g. Room tax.")


class ExpenseReport(Record, table=True):
    __tablename__ = "expense_report"
    report_number: str = Field(index=True, description="Expense report number, e.g. EXP-000123.")
    worker_id: int = Field(foreign_key="worker.id", description="The worker who created the report.")
    purpose: str = Field(description="Business purpose.")
    destination: str = Field(description="Trip destination.")
    status: str = Field(description="Draft, Submitted, Approved.")
    created_date: str = Field(description="Creation date, ISO 8601.")


class ExpenseLine(Record, table=True):
    __tablename__ = "expense_line"
    # AUTOINCREMENT: a deleted line's RecId is never handed out again (D365 never reuses one), so a form's
    # pending edit of a line deleted elsewhere cannot land on a new line that took its RecId
    __table_args__ = {"sqlite_autoincrement": True}
    report_id: int = Field(foreign_key="expense_report.id", index=True, description="The report the line belongs to.")
    line_number: int = Field(description="Line number within the report.")
    category_id: str = Field(description="Cost type id.")
    merchant: str = Field(description="Merchant name.")
    transaction_date: str = Field(description="Transaction date, ISO 8601.")
    amount: str = money_field("Amount in transaction currency.")
    currency: str = Field(description="ISO currency code.")
    line_type: str = Field(description="Default, ItemizedHeader or ItemizedLine.")
    parent_line_id: int | None = Field(
        default=None, foreign_key="expense_line.id", index=True, description="For itemized lines: the header line."
    )
    subcategory: str | None = Field(default=None, description="Expense subcategory (itemized lines).")
    description: str = Field(default="", description="Free text.")


class Receipt(Record, table=True):
    __tablename__ = "receipt"
    expense_line_id: int = Field(
        foreign_key="expense_line.id", index=True, description="The expense line the receipt is attached to."
    )
    document_number: str = Field(description="Folio, agreement or bill number.")
    merchant: str = Field(description="Issuer of the receipt.")
    issued_date: str = Field(description="Issue date, ISO 8601.")
    total: str = money_field("Receipt total.")
    currency: str = Field(description="ISO currency code.")


class ReceiptItem(Record, table=True):
    __tablename__ = "receipt_item"
    receipt_id: int = Field(foreign_key="receipt.id", index=True, description="The receipt.")
    item_number: int = Field(description="Position on the receipt.")
    item_date: str = Field(description="Date of the charge, ISO 8601.")
    description: str = Field(description="The vendor's wording of the charge.")
    amount: str = money_field("Charge amount.")


TABLES: list[type[SQLModel]] = [
    Company,
    Worker,
    ExpenseCategory,
    ExpenseSubcategory,
    ExpenseReport,
    ExpenseLine,
    Receipt,
    ReceiptItem,
]


if __name__ == "__main__":  # after changing a class: python -m erp_sim.workflows.itemization.tables > .../schema.json
    print(schema_text(TABLES), end="")
