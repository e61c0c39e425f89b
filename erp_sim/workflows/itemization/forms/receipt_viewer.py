"""TrvReceiptViewer: the document attached to an expense line (hotel folio, rental agreement, bill)."""

from __future__ import annotations

import sqlite3
from decimal import Decimal

from erp_sim import response_keys as K
from erp_sim.forms.base import (
    Column,
    Control,
    FormDefinition,
    FormHost,
    Grid,
    LazyRows,
    OpenForm,
    Section,
    read_records,
)
from erp_sim.money import display_money
from erp_sim.workflows.itemization import ledger

GRID = "ReceiptItemsGrid"


class ReceiptViewer(FormDefinition):
    name = "TrvReceiptViewer"
    guidance = [
        "Each row of ReceiptItemsGrid is one charge printed on the receipt.",
        "Map each charge's wording to an expense subcategory before itemizing.",
        "Close this form with form_close_form to return to the previous form.",
    ]

    def receipt(self, session: FormHost, form: OpenForm) -> sqlite3.Row:
        row: sqlite3.Row = session.db.execute(
            "SELECT * FROM receipt WHERE id = ?", (form.context["receipt_id"],)
        ).fetchone()
        return row

    def caption(self, session: FormHost, form: OpenForm) -> str:
        receipt = self.receipt(session, form)
        return f"Receipt {receipt['document_number']} - {receipt['merchant']}"

    def summary(self, session: FormHost, form: OpenForm) -> str:
        receipt = self.receipt(session, form)
        count = len(_charges(session, receipt["id"])[0])
        return f"Receipt {receipt['document_number']} from {receipt['merchant']}: {count} charge(s), total {display_money(Decimal(receipt['total']))} {receipt['currency']}."

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        receipt = self.receipt(session, form)
        document = [
            Control("Receipt_DocumentNumber", "Document number", K.INPUT, receipt["document_number"]),
            Control("Receipt_Merchant", "Merchant", K.INPUT, receipt["merchant"]),
            Control("Receipt_IssuedDate", "Issued", K.DATE_INPUT, receipt["issued_date"]),
            Control("Receipt_Total", "Total", K.REAL_INPUT, display_money(Decimal(receipt["total"]))),
            Control("Receipt_Currency", "Currency", K.INPUT, receipt["currency"]),
        ]
        charges, ids = _charges(session, receipt["id"])
        rows = LazyRows(ids, charges, _charge_values)
        columns = [
            Column("ReceiptItem_Number", "No.", "Integer"),
            Column("ReceiptItem_Date", "Date", "Date"),
            Column("ReceiptItem_Description", "Description"),
            Column("ReceiptItem_Amount", "Amount", "Real"),
        ]
        return [
            Section("DocumentGroup", "Document", controls=document),
            Section("ChargesGroup", "Charges", grids=[Grid(GRID, "Charges", columns, rows)]),
        ]


def _charges(session: FormHost, receipt_id: int) -> tuple[list[sqlite3.Row], list[int]]:
    """The receipt's charges and their RecIds, read once per database version (the grid and the summary of
    every render read them)."""
    return read_records(session, f"receipt/{receipt_id}/items", lambda: ledger.receipt_items(session.db, receipt_id))


def _charge_values(item: sqlite3.Row) -> dict[str, str]:
    """A charge's grid values: formatted only for the rows a response shows (see ``GridRow``)."""
    return {
        "ReceiptItem_Number": str(item["item_number"]),
        "ReceiptItem_Date": item["item_date"],
        "ReceiptItem_Description": item["description"],
        "ReceiptItem_Amount": display_money(Decimal(item["amount"])),
    }
