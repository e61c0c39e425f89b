"""Bank reconciliation's words for the fuzzer (``scripts/fuzz_erp.py``): the names and values its random calls draw
from (its forms' names from ``reading``, its entity sets, actions and ledger accounts; plausible and malformed
values), and the entity properties and action parameters it writes."""

from __future__ import annotations

from typing import Any

from erp_sim.workflows.bank_reconciliation import reading as R

NAMES: list[Any] = [
    R.LIST_FORM,
    R.WORKSHEET_FORM,
    R.OPEN_BUTTON,
    R.WORKSHEET_BUTTON,
    R.RECONCILE_BUTTON,
    R.MATCH_BUTTON,
    R.NEW_BUTTON,
    R.UNMATCH_BUTTON,
    R.LIST_GRID,
    R.STATEMENT_GRID,
    R.TRANSACTION_GRID,
    R.MATCHED_GRID,
    *R.TAB_PAGES,
    R.OFFSET_ACCOUNT,
    R.LINE_REFERENCE,
    R.TRANS_REFERENCE,
    R.LIST_STATEMENT,
    "BankReconciliationMatches",
    "BankReconciliations",
    "BankStatementLines",
    "BankTransactions",
    "GetBankReconciliationStatus",
    "MatchBankStatementLines",
    "MarkBankStatementLineAsNew",
    "UnmatchBankStatementLines",
    "MarkBankReconciliationAsReconciled",
    "LoadNextPage",
    "Open",
    "Display",
    "x",
]
VALUES: list[Any] = [  # the script adds values of other JSON types
    "618160",
    "618160 Bank charges",
    "801100",
    "110110",
    "1",
    "2",
    "25",
    "1,2",
    "12,13",
    "BNK-",
    "MATCH-00001",
    "CPY-",
    "Marked",
    "Unmarked",
    "Open",
    "Close",
    "SELECT * FROM bank_transaction LIMIT 3",
    "$filter=MatchStatus eq 'Open'",
    "BankStatementLines(1)",
    "-35.00",
    "",
]
PROPERTIES: list[Any] = [
    "ReconciliationRecId",
    "StatementLineRecIds",
    "BankTransactionRecIds",
    "OffsetAccount",
    "RecId",
    "Reconciled",
]
PARAMETERS: list[Any] = ["StatementId", "LineNumbers", "Vouchers", "LineNumber", "OffsetAccount", "MatchId"]
