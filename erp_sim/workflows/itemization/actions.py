"""Itemization's business actions (``api_find_actions`` / ``api_invoke_action``): an expense line's
itemization status, and a report's validation and submission, all through ``ledger``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from erp_sim.actions import Action, Parameter, actions_by_name
from erp_sim.database import transaction
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.json_values import JsonObject
from erp_sim.money import money_text
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.catalog import CATEGORIES


def _header_line(db: sqlite3.Connection, args: dict[str, Any]) -> sqlite3.Row:
    """The expense line named by RecId, or by ReportNumber + LineNumber."""
    if "RecId" in args:
        if "ReportNumber" in args or "LineNumber" in args:
            raise ValidationError("Give either RecId, or ReportNumber and LineNumber, not both.")
        line = ledger.line_by_id(db, args["RecId"])
    else:
        if "ReportNumber" not in args or "LineNumber" not in args:
            raise ValidationError("Give RecId (the expense line's RecId), or both ReportNumber and LineNumber.")
        report = ledger.report_by_number(db, args["ReportNumber"])
        line = db.execute(
            "SELECT * FROM expense_line WHERE report_id = ? AND line_number = ? AND parent_line_id IS NULL",
            (report["id"], args["LineNumber"]),
        ).fetchone()
        if line is None:
            raise NotFoundError(f"Expense report {report['report_number']} has no line {args['LineNumber']}.")
    if line["line_type"] == "ItemizedLine":
        raise BusinessRuleError(
            f"RecId {line['id']} is an itemized line; ask for its header line, RecId {line['parent_line_id']}."
        )
    return line


def get_itemization_status(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    line = _header_line(db, args)
    report = ledger.report_by_id(db, line["report_id"])
    summary = ledger.itemization_summary(db, line["id"])
    payload = {
        "RecId": line["id"],
        "ReportNumber": report["report_number"],
        "LineNumber": line["line_number"],
        "Category": line["category_id"],
        "CategorySupportsItemization": CATEGORIES[line["category_id"]].itemize,
        "Total": money_text(summary.total),
        "Itemized": money_text(summary.itemized),
        "Remaining": money_text(summary.remaining),
        "ItemizedLineCount": summary.line_count,
        "IsComplete": summary.complete,
    }
    result = (
        f"Line {line['line_number']} of {report['report_number']}: total {payload['Total']}, itemized "
        f"{payload['Itemized']}, remaining {payload['Remaining']} ({summary.line_count} itemized line(s))."
    )
    if summary.over_itemized:
        result += " The line is over-itemized: reduce or delete itemized lines."
    return result, payload


def validate_expense_report(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    report = ledger.report_by_number(db, args["ReportNumber"])
    problems = ledger.report_problems(db, report["id"])
    payload = {
        "ReportNumber": report["report_number"],
        "Status": report["status"],
        "IsValid": not problems,
        "Problems": problems,
    }
    if not problems:
        return f"Expense report {report['report_number']} has no problems.", payload
    return f"Expense report {report['report_number']} has {len(problems)} problem(s).", payload


def submit_expense_report(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    report = ledger.report_by_number(db, args["ReportNumber"])
    with transaction(db):
        ledger.submit_report(db, report["id"])
    status = ledger.report_by_id(db, report["id"])["status"]
    return f"Expense report {report['report_number']} was submitted.", {
        "ReportNumber": report["report_number"],
        "Status": status,
    }


_REPORT_NUMBER = Parameter("ReportNumber", "Edm.String", "Expense report number, e.g. EXP-000123.")
ACTIONS = actions_by_name(
    Action(
        "GetItemizationStatus",
        "Itemization figures of one expense line: total, itemized, remaining (total minus the sum of its itemized "
        "lines) and the number of itemized lines. Name the line by RecId, or by ReportNumber and LineNumber.",
        (
            Parameter("RecId", "Edm.Int64", "RecId of the expense line (not of an itemized line).", required=False),
            Parameter(
                "ReportNumber",
                "Edm.String",
                "Expense report number, e.g. EXP-000123 (with LineNumber).",
                required=False,
            ),
            Parameter("LineNumber", "Edm.Int64", "Line number within the report (with ReportNumber).", required=False),
        ),
        get_itemization_status,
    ),
    Action(
        "ValidateExpenseReport",
        "Check an expense report before submission: lists the lines whose itemization does not add up. Changes nothing.",
        (_REPORT_NUMBER,),
        validate_expense_report,
    ),
    Action(
        "SubmitExpenseReport",
        "Submit a Draft expense report for approval. Refused while a line's itemization does not add up; after "
        "submission the report can no longer be changed.",
        (_REPORT_NUMBER,),
        submit_expense_report,
    ),
)
