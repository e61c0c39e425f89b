"""Bank reconciliation's business actions (``api_find_actions`` / ``api_invoke_action``): a reconciliation's
figures, matching and unmatching, posting a line as new and marking reconciled, all through ``rules``. A
reconciliation is named by its statement (``StatementId``, e.g. BS-202603-OPER), lines by their number on
the statement, transactions by voucher, as an accountant names them."""

from __future__ import annotations

import sqlite3
from typing import Any

from erp_sim.actions import Action, Parameter, actions_by_name
from erp_sim.errors import NotFoundError
from erp_sim.json_values import JsonObject
from erp_sim.money import display_money, money_text
from erp_sim.workflows.bank_reconciliation import rules


def _line_ids(db: sqlite3.Connection, rec: sqlite3.Row, numbers: list[int]) -> list[int]:
    by_number = {line["line_number"]: line["id"] for line in rules.statement_lines(db, rec["statement_id"])}
    missing = [str(n) for n in numbers if n not in by_number]
    if missing:
        raise NotFoundError(f"LineNumbers: the statement has no line {', '.join(missing)} (lines 1-{len(by_number)}).")
    return [by_number[n] for n in numbers]


def _transaction_ids(db: sqlite3.Connection, rec: sqlite3.Row, vouchers: list[str]) -> list[int]:
    ids = []
    for number in vouchers:
        row = db.execute(
            "SELECT id FROM bank_transaction WHERE UPPER(voucher) = ? ORDER BY account_id = ? DESC, id",
            (number.upper(), rec["account_id"]),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"Vouchers: no bank transaction {number!r}.")
        ids.append(int(row[0]))
    return ids


def status(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    rec = rules.reconciliation_of_statement(db, args["StatementId"])
    figures = rules.summary(db, rec["id"])
    open_numbers = [line["line_number"] for line in rules.open_lines(db, rec)]
    payload: JsonObject = {
        "ReconciliationRecId": rec["id"],
        "AccountId": rec["account_id"],
        "StatementId": str(args["StatementId"]).strip().upper(),
        "CutOffDate": rec["cut_off_date"],
        "StatementTotal": money_text(figures.statement_total),
        "MatchedAmount": money_text(figures.matched_amount),
        "PostedAmount": money_text(figures.posted_amount),
        "UnreconciledDifference": money_text(figures.difference),
        "StatementLines": figures.line_count,
        "OpenStatementLines": open_numbers,
        "IsReconciled": figures.reconciled,
        "CanBeMarkedReconciled": figures.ready and not figures.reconciled,
    }
    result = (
        f"Statement {payload['StatementId']}: {figures.line_count} line(s), {len(open_numbers)} open; unreconciled "
        f"difference {display_money(figures.difference)}; {'reconciled' if figures.reconciled else 'not reconciled'}."
    )
    return result, payload


def match_lines(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    rec = rules.reconciliation_of_statement(db, args["StatementId"])
    numbers = rules.parse_numbers(args["LineNumbers"], "LineNumbers")
    vouchers = rules.parse_list(args["Vouchers"], "Vouchers")
    match_id = rules.match(db, rec["id"], _line_ids(db, rec, numbers), _transaction_ids(db, rec, vouchers))
    return (
        f"{match_id}: statement line(s) {', '.join(map(str, numbers))} matched to {', '.join(vouchers)}.",
        {"MatchId": match_id, "LineNumbers": numbers, "Vouchers": [v.upper() for v in vouchers]},
    )


def post_line(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    rec = rules.reconciliation_of_statement(db, args["StatementId"])
    account = rules.posting_account(args["OffsetAccount"], "OffsetAccount")
    ((match_id, number),) = rules.mark_as_new(db, rec["id"], _line_ids(db, rec, [args["LineNumber"]]), account)
    return (
        f"Statement line {args['LineNumber']} was posted as {number} to {account.label} and matched ({match_id}).",
        {"MatchId": match_id, "Voucher": number, "OffsetAccount": account.main_account_id},
    )


def unmatch_lines(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    rec = rules.reconciliation_of_statement(db, args["StatementId"])
    match = rules.match_by_id(db, rec["id"], args["MatchId"])
    return rules.unmatch(db, rec["id"], match["id"]), {"MatchId": match["match_id"]}


def mark_reconciled(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    rec = rules.reconciliation_of_statement(db, args["StatementId"])
    rules.mark_reconciled(db, rec["id"])
    return (
        f"The bank reconciliation of statement {str(args['StatementId']).strip().upper()} was marked as reconciled.",
        {"IsReconciled": True},
    )


_STATEMENT = Parameter("StatementId", "Edm.String", "The bank statement of the reconciliation, e.g. BS-202603-OPER.")
ACTIONS = actions_by_name(
    Action(
        "GetBankReconciliationStatus",
        "Figures of a bank reconciliation: statement total, matched and posted amounts, the unreconciled "
        "difference (statement total minus matched and posted amounts) and the open statement lines. Changes nothing.",
        (_STATEMENT,),
        status,
    ),
    Action(
        "MatchBankStatementLines",
        "Match statement lines (by line number) to bank transactions (by voucher) as one match group, as the "
        "worksheet's Match does: refused unless their amounts add up to the same total.",
        (
            _STATEMENT,
            Parameter("LineNumbers", "Edm.String", "Statement line numbers, comma-separated, e.g. 3 or 3,4."),
            Parameter(
                "Vouchers", "Edm.String", "Bank transaction vouchers, comma-separated, e.g. BNK-004471,BNK-004472."
            ),
        ),
        match_lines,
    ),
    Action(
        "MarkBankStatementLineAsNew",
        "Post a statement line that has no bank transaction (a bank charge, interest) at once as a new bank "
        "transaction to a ledger account, and match it. A posting is final.",
        (
            _STATEMENT,
            Parameter("LineNumber", "Edm.Int64", "The statement line's number."),
            Parameter("OffsetAccount", "Edm.String", "The ledger account to post to, e.g. 618160."),
        ),
        post_line,
    ),
    Action(
        "UnmatchBankStatementLines",
        "Undo a match group (a posted line's transaction stays posted and is open again).",
        (_STATEMENT, Parameter("MatchId", "Edm.String", "The match, e.g. MATCH-00012.")),
        unmatch_lines,
    ),
    Action(
        "MarkBankReconciliationAsReconciled",
        "Mark a bank reconciliation as reconciled: refused while a statement line is open or the unreconciled "
        "difference is not exactly 0.00. Afterwards it can no longer change.",
        (_STATEMENT,),
        mark_reconciled,
    ),
)
