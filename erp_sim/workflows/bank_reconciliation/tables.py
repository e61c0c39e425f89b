"""Bank reconciliation's tables, modelled on D365 Cash and bank management, as SQLModel classes.

D365 names in brackets: BankAccount [BankAccountTable], MainAccount [MainAccount], BankStatement
[BankStmtISOAccountStatement], BankStatementLine [BankStmtISOReportEntry], BankTransaction
[BankAccountTrans], BankReconciliation [BankReconciliationHeader], BankReconciliationMatch
[BankReconciliationMatching] and BankReconciliationMatchItem [BankReconciliationMatchingItem]. As
itemization's ``tables``, the classes are the schema's source, compiled into ``schema.json`` beside this file
(after changing a class: ``python -m erp_sim.workflows.bank_reconciliation.tables >
erp_sim/workflows/bank_reconciliation/schema.json``); sessions read the compiled copy. Amounts are signed
TEXT ("-35.00": deposits and credits positive, payments and charges negative), so SQLite never turns them
into binary floats. Table names start with ``bank_`` or ``main_`` so they never clash with another
workflow's in SQLModel's one metadata.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel

from erp_sim.database.compile_schema import Record, money_field, schema_text

# Rows that a match, an unmatch or a posting creates or deletes keep their RecIds for good (AUTOINCREMENT):
# a form's mark of a deleted row can never land on a new row that took its RecId, as D365 never reuses one.
_NEVER_REUSED = {"sqlite_autoincrement": True}


class BankAccount(Record, table=True):
    __tablename__ = "bank_account"
    account_id: str = Field(index=True, description="Bank account id, e.g. USMF OPER.")
    name: str = Field(description="Bank account name.")
    bank_name: str = Field(description="The bank that holds the account.")
    account_number: str = Field(description="The bank's account number.")
    currency: str = Field(description="ISO currency code.")
    main_account_id: str = Field(description="The ledger account the bank account posts to.")


class MainAccount(Record, table=True):
    __tablename__ = "main_account"
    main_account_id: str = Field(description="Ledger (main) account number, e.g. 618160.")
    name: str = Field(description="Account name, e.g. Bank charges.")
    account_type: str = Field(description="Expense, Revenue or Balance sheet.")


class BankStatement(Record, table=True):
    __tablename__ = "bank_statement"
    statement_id: str = Field(index=True, description="Statement identification, e.g. BS-202603-OPER.")
    account_id: str = Field(description="The bank account the statement is for.")
    from_date: str = Field(description="First booking date the statement covers, ISO 8601.")
    to_date: str = Field(description="Last booking date the statement covers, ISO 8601.")
    opening_balance: str = money_field("Balance at the start of the statement.")
    closing_balance: str = money_field("Balance at its end: the opening balance plus every line's amount.")
    status: str = Field(description="Open, or Reconciled once its reconciliation is marked reconciled.")


class BankStatementLine(Record, table=True):
    __tablename__ = "bank_statement_line"
    statement_id: int = Field(foreign_key="bank_statement.id", index=True, description="The statement (RecId).")
    line_number: int = Field(description="Position on the statement, from 1.")
    booking_date: str = Field(description="Booking date at the bank, ISO 8601.")
    description: str = Field(description="The bank's wording, e.g. ACH CREDIT FABRIKAM INC.")
    bank_reference: str = Field(description="The bank's reference: payment id, check number, deposit slip.")
    amount: str = money_field("Signed amount: credits positive, debits negative.")


class BankTransaction(Record, table=True):
    __tablename__ = "bank_transaction"
    __table_args__ = _NEVER_REUSED
    account_id: str = Field(index=True, description="The bank account the transaction is posted on.")
    trans_date: str = Field(description="Posting date, ISO 8601.")
    voucher: str = Field(description="Voucher, e.g. BNK-004471.")
    payment_reference: str = Field(description="Payment reference: payment id, check number, deposit slip.")
    description: str = Field(description="Free text of the posting.")
    amount: str = money_field("Signed amount: deposits positive, payments negative.")
    trans_type: str = Field(description="Deposit, Payment, Fee, Interest or Reversal.")
    reconciled: bool = Field(description="Reconciled with a bank statement (earlier periods' are).")
    offset_account: str | None = Field(
        default=None, description="For a transaction posted from a statement line: the ledger account it posts to."
    )
    statement_line_id: int | None = Field(
        default=None,
        foreign_key="bank_statement_line.id",
        description="For a transaction posted from a statement line (Mark as new): that line.",
    )


class BankReconciliation(Record, table=True):
    __tablename__ = "bank_reconciliation"
    account_id: str = Field(index=True, description="The bank account reconciled.")
    statement_id: int = Field(foreign_key="bank_statement.id", description="The statement reconciled (RecId).")
    cut_off_date: str = Field(description="Bank transactions after this date are left out of the worksheet.")
    reconciled: bool = Field(description="Marked as reconciled (then it can no longer change).")
    reconciled_date: str | None = Field(default=None, description="When it was marked reconciled, ISO 8601.")


class BankReconciliationMatch(Record, table=True):
    __tablename__ = "bank_reconciliation_match"
    __table_args__ = _NEVER_REUSED
    reconciliation_id: int = Field(
        foreign_key="bank_reconciliation.id", index=True, description="The reconciliation (RecId)."
    )
    match_id: str = Field(description="Match id shown on the worksheet, e.g. MATCH-00012.")
    match_type: str = Field(description="Match (statement lines to bank transactions) or New (a posted line).")


class BankReconciliationMatchItem(Record, table=True):
    __tablename__ = "bank_reconciliation_match_item"
    __table_args__ = _NEVER_REUSED
    match_id: int = Field(foreign_key="bank_reconciliation_match.id", index=True, description="The match (RecId).")
    statement_line_id: int | None = Field(
        default=None, foreign_key="bank_statement_line.id", index=True, description="A statement line of the match."
    )
    bank_transaction_id: int | None = Field(
        default=None, foreign_key="bank_transaction.id", index=True, description="A bank transaction of the match."
    )


TABLES: list[type[SQLModel]] = [
    BankAccount,
    MainAccount,
    BankStatement,
    BankStatementLine,
    BankTransaction,
    BankReconciliation,
    BankReconciliationMatch,
    BankReconciliationMatchItem,
]


if (
    __name__ == "__main__"
):  # after changing a class: python -m erp_sim.workflows.bank_reconciliation.tables > .../schema.json
    print(schema_text(TABLES), end="")
