"""Bank reconciliation's OData entity sets: read-only views over the bank tables, and the writes they take
(a match group created or deleted; a reconciliation marked reconciled), which go through ``rules``, so a data
write obeys the worksheet's rules and cannot bypass them.
"""

from __future__ import annotations

import sqlite3

from erp_sim.database.schema import load_schema
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.odata.entities import STRING, DataCatalog, EntitySet, Property, property_type
from erp_sim.odata.writes import record_id, record_properties
from erp_sim.workflows.bank_reconciliation import SCHEMA_FILE, rules

COLUMNS = load_schema(SCHEMA_FILE).columns


def _prop(name: str, table: str, field: str, sql: str, *, writable: bool = False, note: str = "") -> Property:
    """A property whose type and description come from the model's field: the column ``table.field``."""
    column = COLUMNS[table][field]
    kind = property_type(column.type, column.description, field)
    return Property(name, sql, kind, " ".join(filter(None, [column.description, note])), writable)


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


_ENTITY_SETS: dict[str, EntitySet] = {
    s.name: s
    for s in [
        EntitySet(
            "BankAccounts",
            "Bank accounts",
            "bank_account",
            "bank_account a",
            (
                _prop("RecId", "bank_account", "id", "a.id"),
                _prop("AccountId", "bank_account", "account_id", "a.account_id"),
                _prop("Name", "bank_account", "name", "a.name"),
                _prop("BankName", "bank_account", "bank_name", "a.bank_name"),
                _prop("AccountNumber", "bank_account", "account_number", "a.account_number"),
                _prop("Currency", "bank_account", "currency", "a.currency"),
                _prop("MainAccountId", "bank_account", "main_account_id", "a.main_account_id"),
            ),
            ("Read-only.",),
        ),
        EntitySet(
            "MainAccounts",
            "Main accounts (the ledger accounts)",
            "main_account",
            "main_account g",
            (
                _prop("RecId", "main_account", "id", "g.id"),
                _prop("MainAccountId", "main_account", "main_account_id", "g.main_account_id"),
                _prop("Name", "main_account", "name", "g.name"),
                _prop("AccountType", "main_account", "account_type", "g.account_type"),
            ),
            ("Read-only. Statement lines can be posted (as new) to Expense and Revenue accounts.",),
        ),
        EntitySet(
            "BankStatements",
            "Bank statements (imported)",
            "bank_statement",
            "bank_statement s",
            (
                _prop("RecId", "bank_statement", "id", "s.id"),
                _prop("StatementId", "bank_statement", "statement_id", "s.statement_id"),
                _prop("AccountId", "bank_statement", "account_id", "s.account_id"),
                _prop("FromDate", "bank_statement", "from_date", "s.from_date"),
                _prop("ToDate", "bank_statement", "to_date", "s.to_date"),
                _prop("OpeningBalance", "bank_statement", "opening_balance", "s.opening_balance"),
                _prop("ClosingBalance", "bank_statement", "closing_balance", "s.closing_balance"),
                _prop("Status", "bank_statement", "status", "s.status"),
            ),
            ("Read-only. The lines are in BankStatementLines (filter on StatementRecId).",),
        ),
        EntitySet(
            "BankStatementLines",
            "Bank statement lines",
            "bank_statement_line",
            "bank_statement_line l JOIN bank_statement s ON s.id = l.statement_id",
            (
                _prop("RecId", "bank_statement_line", "id", "l.id"),
                _prop("StatementRecId", "bank_statement_line", "statement_id", "l.statement_id"),
                _prop(
                    "StatementId", "bank_statement", "statement_id", "s.statement_id", note="(The line's statement.)"
                ),
                _prop("LineNumber", "bank_statement_line", "line_number", "l.line_number"),
                _prop("BookingDate", "bank_statement_line", "booking_date", "l.booking_date"),
                _prop("Description", "bank_statement_line", "description", "l.description"),
                _prop("Reference", "bank_statement_line", "bank_reference", "l.bank_reference"),
                _prop("Amount", "bank_statement_line", "amount", "l.amount"),
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
            (
                _prop("RecId", "bank_transaction", "id", "t.id"),
                _prop("AccountId", "bank_transaction", "account_id", "t.account_id"),
                _prop("TransDate", "bank_transaction", "trans_date", "t.trans_date"),
                _prop("Voucher", "bank_transaction", "voucher", "t.voucher"),
                _prop("PaymentReference", "bank_transaction", "payment_reference", "t.payment_reference"),
                _prop("Description", "bank_transaction", "description", "t.description"),
                _prop("Amount", "bank_transaction", "amount", "t.amount"),
                _prop("TransType", "bank_transaction", "trans_type", "t.trans_type"),
                _prop("Reconciled", "bank_transaction", "reconciled", "t.reconciled"),
                Property(
                    "IsMatched",
                    _TRANS_MATCHED,
                    "Edm.Boolean",
                    "In a match group (of its open reconciliation, or of an earlier, reconciled one).",
                ),
                _prop("OffsetAccount", "bank_transaction", "offset_account", "t.offset_account"),
                _prop("StatementLineRecId", "bank_transaction", "statement_line_id", "t.statement_line_id"),
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
            (
                _prop("RecId", "bank_reconciliation", "id", "r.id"),
                _prop("AccountId", "bank_reconciliation", "account_id", "r.account_id"),
                _prop("StatementRecId", "bank_reconciliation", "statement_id", "r.statement_id"),
                _prop("StatementId", "bank_statement", "statement_id", "s.statement_id", note="(Its statement.)"),
                _prop("CutOffDate", "bank_reconciliation", "cut_off_date", "r.cut_off_date"),
                _prop(
                    "Reconciled",
                    "bank_reconciliation",
                    "reconciled",
                    "r.reconciled",
                    writable=True,
                    note="Set to true to mark as reconciled.",
                ),
                _prop("ReconciledDate", "bank_reconciliation", "reconciled_date", "r.reconciled_date"),
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
            (
                _prop("RecId", "bank_reconciliation_match", "id", "m.id"),
                _prop(
                    "ReconciliationRecId",
                    "bank_reconciliation_match",
                    "reconciliation_id",
                    "m.reconciliation_id",
                    writable=True,
                ),
                _prop("MatchId", "bank_reconciliation_match", "match_id", "m.match_id"),
                _prop("MatchType", "bank_reconciliation_match", "match_type", "m.match_type"),
                Property(
                    "StatementLineRecIds",
                    _items_of("statement_line_id"),
                    STRING,
                    "The RecIds of the match's statement lines, comma-separated.",
                    writable=True,
                ),
                Property(
                    "BankTransactionRecIds",
                    _items_of("bank_transaction_id"),
                    STRING,
                    "The RecIds of the match's bank transactions, comma-separated.",
                    writable=True,
                ),
                Property(
                    "OffsetAccount",
                    "(SELECT t.offset_account FROM bank_reconciliation_match_item i JOIN bank_transaction t ON "
                    "t.id = i.bank_transaction_id WHERE i.match_id = m.id AND m.match_type = 'New')",
                    STRING,
                    "For a New match: the ledger account its line was posted to. On create: post the line as new to it.",
                    writable=True,
                ),
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
    ]
}

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
