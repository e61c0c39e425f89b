"""Bank reconciliation's OData entity sets: read-only views over the bank tables, and the writes they take
(a match group created or deleted; a reconciliation marked reconciled), which go through ``rules``, so a data
write obeys the worksheet's rules and cannot bypass them.
"""

from __future__ import annotations

import sqlite3
from functools import partial

from erp_sim.database.schema import load_schema
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.odata.entities import (
    BOOLEAN,
    STRING,
    DataCatalog,
    EntitySet,
    Property,
    entity_sets_by_name,
    schema_properties,
)
from erp_sim.odata.writes import record_id, record_properties
from erp_sim.workflows.bank_reconciliation import SCHEMA_FILE, rules

COLUMNS = load_schema(SCHEMA_FILE).columns


# Properties over a table's columns, typed and described by its table class.
_columns = partial(schema_properties, COLUMNS)


def _items_of(column: str, alias: str = "m") -> str:
    """The RecIds of a match's lines or transactions, comma-separated, in RecId order."""
    return (
        f"(SELECT GROUP_CONCAT(x, ',') FROM (SELECT i.{column} AS x FROM bank_reconciliation_match_item i "
        f"WHERE i.match_id = {alias}.id AND i.{column} IS NOT NULL ORDER BY i.{column}))"
    )


# Whether a statement line or transaction is in a match of its open (unreconciled) reconciliation.
_LINE_STATUS = (
    "(SELECT COALESCE(MAX(m.match_type), 'Open') FROM bank_reconciliation_match_item i JOIN bank_reconciliation_match m "
    "ON m.id = i.match_id WHERE i.statement_line_id = l.id)"
)
_TRANS_MATCHED = "EXISTS (SELECT 1 FROM bank_reconciliation_match_item i WHERE i.bank_transaction_id = t.id)"


# --- writes: one record each, inside the data tool's transaction ----------------------------------------
_MATCH_FIELDS = ["ReconciliationRecId", "StatementLineRecIds", "BankTransactionRecIds", "OffsetAccount"]


def _create_match(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = record_properties(entity, raw, _MATCH_FIELDS, "Creating a match")
    if values.get("ReconciliationRecId") in (None, ""):
        raise ValidationError("ReconciliationRecId must be given: the RecId of the bank reconciliation.")
    rec = rules.reconciliation_by_id(db, record_id(values["ReconciliationRecId"], "ReconciliationRecId"))
    if values.get("StatementLineRecIds") in (None, ""):
        raise ValidationError("StatementLineRecIds must be given: the RecIds of the statement lines, e.g. 12 or 12,13.")
    lines = rules.parse_numbers(values["StatementLineRecIds"], "StatementLineRecIds")
    transactions, account = values.get("BankTransactionRecIds"), values.get("OffsetAccount")
    if transactions not in (None, "") and account not in (None, ""):
        raise ValidationError(
            "Give BankTransactionRecIds (to match lines to bank transactions) or OffsetAccount (to post lines "
            "as new), not both."
        )
    if transactions not in (None, ""):
        match_id = rules.match(db, rec["id"], lines, rules.parse_numbers(transactions, "BankTransactionRecIds"))
        return _match_rec_id(db, match_id)
    if account not in (None, ""):
        if len(lines) != 1:
            raise ValidationError("OffsetAccount posts one statement line per record: give one StatementLineRecIds.")
        posted = rules.mark_as_new(db, rec["id"], lines, rules.posting_account(account, "OffsetAccount"))
        return _match_rec_id(db, posted[0][0])
    raise ValidationError(
        "Give BankTransactionRecIds (the transactions the lines match) or OffsetAccount (the ledger account to post "
        "a line with no bank transaction to)."
    )


def _match_rec_id(db: sqlite3.Connection, match_id: str) -> int:
    (rec_id,) = db.execute("SELECT id FROM bank_reconciliation_match WHERE match_id = ?", (match_id,)).fetchone()
    return int(rec_id)


def _delete_match(db: sqlite3.Connection, match_rec_id: int) -> None:
    row = db.execute("SELECT reconciliation_id FROM bank_reconciliation_match WHERE id = ?", (match_rec_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"BankReconciliationMatches({match_rec_id}) does not exist.")
    rules.unmatch(db, row[0], match_rec_id)


def _update_reconciliation(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = record_properties(entity, raw, ["RecId", "Reconciled"], "Updating a bank reconciliation")
    if "RecId" not in values:
        raise ValidationError("RecId must be given to say which bank reconciliation to update.")
    rec = rules.reconciliation_by_id(db, record_id(values["RecId"], "RecId"))
    if "Reconciled" not in values:
        raise ValidationError(f"Nothing to update for RecId {rec['id']}; only Reconciled can be set (to true).")
    if values["Reconciled"] is not True:
        if values["Reconciled"] is False and not rec["reconciled"]:
            return int(rec["id"])  # already so
        raise BusinessRuleError(
            "Reconciled: only true is accepted (mark as reconciled); a reconciled reconciliation cannot be reopened."
            if values["Reconciled"] is False
            else f"Reconciled: expected true or false, got {values['Reconciled']!r}."
        )
    rules.mark_reconciled(db, rec["id"])
    return int(rec["id"])


_STATEMENT_ID = ("StatementId", "statement_id")  # of bank_statement s, joined in
_ENTITY_SETS = entity_sets_by_name(
    EntitySet(
        "BankAccounts",
        "Bank accounts",
        "bank_account",
        "bank_account a",
        _columns(
            "bank_account",
            "a",
            ("RecId", "id"),
            ("AccountId", "account_id"),
            ("Name", "name"),
            ("BankName", "bank_name"),
            ("AccountNumber", "account_number"),
            ("Currency", "currency"),
            ("MainAccountId", "main_account_id"),
        ),
        ("Read-only.",),
    ),
    EntitySet(
        "MainAccounts",
        "Main accounts (the ledger accounts)",
        "main_account",
        "main_account g",
        _columns(
            "main_account",
            "g",
            ("RecId", "id"),
            ("MainAccountId", "main_account_id"),
            ("Name", "name"),
            ("AccountType", "account_type"),
        ),
        ("Read-only. Statement lines can be posted (as new) to Expense and Revenue accounts.",),
    ),
    EntitySet(
        "BankStatements",
        "Bank statements (imported)",
        "bank_statement",
        "bank_statement s",
        _columns(
            "bank_statement",
            "s",
            ("RecId", "id"),
            _STATEMENT_ID,
            ("AccountId", "account_id"),
            ("FromDate", "from_date"),
            ("ToDate", "to_date"),
            ("OpeningBalance", "opening_balance"),
            ("ClosingBalance", "closing_balance"),
            ("Status", "status"),
        ),
        ("Read-only. The lines are in BankStatementLines (filter on StatementRecId).",),
    ),
    EntitySet(
        "BankStatementLines",
        "Bank statement lines",
        "bank_statement_line",
        "bank_statement_line l JOIN bank_statement s ON s.id = l.statement_id",
        _columns("bank_statement_line", "l", ("RecId", "id"), ("StatementRecId", "statement_id"))
        + _columns("bank_statement", "s", (*_STATEMENT_ID, "(The line's statement.)"))
        + _columns(
            "bank_statement_line",
            "l",
            ("LineNumber", "line_number"),
            ("BookingDate", "booking_date"),
            ("Description", "description"),
            ("Reference", "bank_reference"),
            ("Amount", "amount"),
        )
        + (
            Property(
                "MatchStatus",
                _LINE_STATUS,
                STRING,
                "Open (in no match), Match (matched to bank transactions) or New (posted as a new transaction).",
            ),
        ),
        ("Read-only. Match lines with BankReconciliationMatches (create), as the worksheet's Match does.",),
    ),
    EntitySet(
        "BankTransactions",
        "Bank transactions (bank account transactions)",
        "bank_transaction",
        "bank_transaction t",
        _columns(
            "bank_transaction",
            "t",
            ("RecId", "id"),
            ("AccountId", "account_id"),
            ("TransDate", "trans_date"),
            ("Voucher", "voucher"),
            ("PaymentReference", "payment_reference"),
            ("Description", "description"),
            ("Amount", "amount"),
            ("TransType", "trans_type"),
            ("Reconciled", "reconciled"),
            ("OffsetAccount", "offset_account"),
            ("StatementLineRecId", "statement_line_id"),
        )
        + (
            Property(
                "IsMatched",
                _TRANS_MATCHED,
                BOOLEAN,
                "In a match group (of its open reconciliation, or of an earlier, reconciled one).",
            ),
        ),
        (
            "Read-only: bank transactions are posted, not edited. A statement line with no bank transaction is "
            "posted as new with BankReconciliationMatches (create with OffsetAccount).",
        ),
    ),
    EntitySet(
        "BankReconciliations",
        "Bank reconciliations (worksheet headers)",
        "bank_reconciliation",
        "bank_reconciliation r JOIN bank_statement s ON s.id = r.statement_id",
        _columns(
            "bank_reconciliation", "r", ("RecId", "id"), ("AccountId", "account_id"), ("StatementRecId", "statement_id")
        )
        + _columns("bank_statement", "s", (*_STATEMENT_ID, "(Its statement.)"))
        + _columns(
            "bank_reconciliation",
            "r",
            ("CutOffDate", "cut_off_date"),
            ("Reconciled", "reconciled", "Set to true to mark as reconciled."),
            ("ReconciledDate", "reconciled_date"),
            writable=("Reconciled",),
        ),
        (
            "Update by RecId with Reconciled true to mark a reconciliation as reconciled: refused while a "
            "statement line is not matched or the unreconciled difference is not exactly 0.00. A reconciled "
            "reconciliation cannot be reopened or changed.",
            "Unreconciled difference = the statement's total minus the matched and posted bank transactions. "
            "The action GetBankReconciliationStatus reports the figures.",
        ),
        update=_update_reconciliation,
    ),
    EntitySet(
        "BankReconciliationMatches",
        "Bank reconciliation matches (match groups of statement lines and bank transactions)",
        "bank_reconciliation_match",
        "bank_reconciliation_match m",
        _columns(
            "bank_reconciliation_match",
            "m",
            ("RecId", "id"),
            ("ReconciliationRecId", "reconciliation_id"),
            ("MatchId", "match_id"),
            ("MatchType", "match_type"),
            writable=("ReconciliationRecId",),
        )
        + tuple(
            Property(name, sql, STRING, description, writable=True)
            for name, sql, description in (
                (
                    "StatementLineRecIds",
                    _items_of("statement_line_id"),
                    "The match's statement lines' RecIds, comma-separated.",
                ),
                (
                    "BankTransactionRecIds",
                    _items_of("bank_transaction_id"),
                    "The match's bank transactions' RecIds, comma-separated.",
                ),
                (
                    "OffsetAccount",
                    "(SELECT t.offset_account FROM bank_reconciliation_match_item i JOIN bank_transaction t ON "
                    "t.id = i.bank_transaction_id WHERE i.match_id = m.id AND m.match_type = 'New')",
                    "For a New match: the ledger account its line was posted to. On create: post the line as new to it.",
                ),
            )
        ),
        (
            "Create a match with ReconciliationRecId, StatementLineRecIds (e.g. 12 or 12,13) and either "
            "BankTransactionRecIds (e.g. 40,41: the lines' and the transactions' amounts must add up to the same "
            "total) or OffsetAccount (e.g. 618160: posts the one statement line at once as a new bank transaction "
            "to that ledger account; a posting is final).",
            "Lines and transactions must be open on the reconciliation: its statement's lines, and its bank "
            "account's unreconciled transactions up to the cut-off date, in no other match.",
            "Delete a match by RecId to unmatch it (a posted line's transaction stays posted).",
            "Matches of a reconciled reconciliation cannot change.",
            "Each call is all or nothing: if one entity is invalid, nothing is written.",
        ),
        create=_create_match,
        delete=_delete_match,
    ),
)

CATALOG = DataCatalog(
    entity_sets=_ENTITY_SETS,
    path_example="BankStatementLines",
    filter_example="StatementId eq 'BS-202603-OPER' and MatchStatus eq 'Open'",
    string_example="'BS-202603-OPER'",
    options_example="$filter=AccountId eq 'USMF OPER'&$top=10",
    create_hint="Only matches can be created: entity set BankReconciliationMatches with ReconciliationRecId, "
    "StatementLineRecIds and BankTransactionRecIds (or OffsetAccount).",
    update_hint="Writable entity sets: BankReconciliations (Reconciled, to mark as reconciled).",
    delete_hint="Only matches (entity set BankReconciliationMatches) can be deleted: that unmatches them.",
)
