"""Itemization's words for the fuzzer (``scripts/fuzz_erp.py``): the names and values its random calls draw from
(the forms', controls', grids', entity sets' and actions' names; plausible and malformed field values), and the
entity properties and action parameters it writes."""

from __future__ import annotations

from typing import Any

NAMES: list[Any] = [
    "TrvExpenses",
    "TrvExpTrans_AmountCurr",
    "TrvExpTrans_ExpSubCategory",
    "TrvExpTrans_TransDate",
    "TrvExpTrans_Description",
    "TrvExpTrans_MerchantId",
    "NewLine",
    "DeleteLine",
    "Itemize",
    "EditReport",
    "ViewReceipt",
    "SubmitReport",
    "ExpenseReportsGrid",
    "ExpenseLinesGrid",
    "ItemizationGrid",
    "ReceiptItemsGrid",
    "LoadNextPage",
    "TrvExpTable_ExpNumber",
    "ExpenseLines",
    "ExpenseReports",
    "ReceiptItems",
    "Receipts",
    "GetItemizationStatus",
    "ValidateExpenseReport",
    "SubmitExpenseReport",
    "Display",
    "Room tax",
    "Hotel",
    "x",
]
VALUES: list[Any] = [  # the script adds values of other JSON types
    "12.50",
    "1,234.50",
    "0",
    "-5",
    "1e2",
    "+5",
    "5.",
    "２",
    "2026-03-14",
    "3/14/2026",
    "Room tax",
    "Parking",
    "1",
    "2",
    "25",
    "",
    " ",
    "EXP-000001",
    "SELECT * FROM expense_line LIMIT 3",
    "SELECT 1",
    "ExpenseLines(1)",
    "$top=2",
    "$filter=Amount gt 10",
    "Draft",
    "Marked",
    "Open",
    "Close",
]
PROPERTIES: list[Any] = [
    "RecId",
    "ParentRecId",
    "Amount",
    "Subcategory",
    "TransactionDate",
    "Purpose",
    "ReportNumber",
    "Merchant",
]
PARAMETERS: list[Any] = ["RecId", "ReportNumber", "LineNumber"]
