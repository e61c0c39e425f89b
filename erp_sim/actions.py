"""Business actions behind ``api_find_actions`` / ``api_invoke_action``.

An action is a name, a description, typed parameters and one function over the ledger
that returns a result sentence and a payload. Parameters are checked before anything
runs (missing, unknown, wrong type: a ValidationError naming the parameter); names of
actions and parameters match case-insensitively. Writes run in one ``ledger.transaction``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from erp_sim import ledger
from erp_sim.catalog import CATEGORIES
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.json_values import JsonObject, whole_number
from erp_sim.money import ZERO, money_text

MAX_PARAMETER_CHARS = 100


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str  # Edm.Int64 or Edm.String
    description: str
    required: bool = True


@dataclass(frozen=True)
class Action:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    run: Callable[[sqlite3.Connection, dict[str, Any]], tuple[str, JsonObject]]


# --- parameter checks ------------------------------------------------------------------------------
def _convert(param: Parameter, value: object) -> object:
    if param.type == "Edm.Int64":
        number = whole_number(value)
        if number is None:
            raise ValidationError(f"Parameter {param.name}: expected a whole number, got {value!r}.")
        return number
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"Parameter {param.name}: expected non-empty text, got {value!r}.")
    if len(value) > MAX_PARAMETER_CHARS:
        raise ValidationError(
            f"Parameter {param.name}: text is {len(value)} characters; at most {MAX_PARAMETER_CHARS}."
        )
    return value.strip()


def _arguments(action: Action, parameters: object) -> dict[str, Any]:
    if not isinstance(parameters, dict):
        raise ValidationError(
            f"parameters: expected an object of parameter name -> value, got {type(parameters).__name__}."
        )
    by_name = {p.name.lower(): p for p in action.parameters}
    names = ", ".join(p.name for p in action.parameters)
    unknown = [str(n) for n in parameters if str(n).lower() not in by_name]
    if unknown:
        raise ValidationError(f"Action {action.name} has no parameter {', '.join(unknown)}. Parameters: {names}.")
    args: dict[str, Any] = {}
    for raw_name, value in parameters.items():
        param = by_name[str(raw_name).lower()]
        if param.name in args:
            raise ValidationError(f"Parameter {param.name} is given twice.")
        if value is not None:
            args[param.name] = _convert(param, value)
    missing = [p.name for p in action.parameters if p.required and p.name not in args]
    if missing:
        raise ValidationError(
            f"Action {action.name}: parameter(s) {', '.join(missing)} must be given. Parameters: {names}."
        )
    return args


# --- actions ---------------------------------------------------------------------------------------
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
        "IsComplete": summary.line_count > 0 and summary.remaining == ZERO,
    }
    result = (
        f"Line {line['line_number']} of {report['report_number']}: total {payload['Total']}, itemized "
        f"{payload['Itemized']}, remaining {payload['Remaining']} ({summary.line_count} itemized line(s))."
    )
    if summary.remaining < ZERO:
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
    with ledger.transaction(db):
        ledger.submit_report(db, report["id"])
    status = ledger.report_by_id(db, report["id"])["status"]
    return f"Expense report {report['report_number']} was submitted.", {
        "ReportNumber": report["report_number"],
        "Status": status,
    }


_REPORT_NUMBER = Parameter("ReportNumber", "Edm.String", "Expense report number, e.g. EXP-000123.")
ACTIONS: dict[str, Action] = {
    a.name: a
    for a in [
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
                Parameter(
                    "LineNumber", "Edm.Int64", "Line number within the report (with ReportNumber).", required=False
                ),
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
    ]
}


def _describe(action: Action) -> JsonObject:
    return {
        "Name": action.name,
        "Description": action.description,
        "Parameters": [
            {"Name": p.name, "Type": p.type, "Required": p.required, "Description": p.description}
            for p in action.parameters
        ],
    }


def find_actions(search: str) -> list[JsonObject]:
    """Actions whose name or description contain every word of ``search`` (empty: all)."""
    words = search.lower().split()
    return [_describe(a) for a in ACTIONS.values() if all(w in f"{a.name} {a.description}".lower() for w in words)]


def invoke_action(db: sqlite3.Connection, name: str, parameters: Mapping[str, object]) -> tuple[str, JsonObject]:
    """Run an action; returns (result sentence, payload)."""
    action = next((a for a in ACTIONS.values() if a.name.lower() == str(name).strip().lower()), None)
    if action is None:
        raise NotFoundError(
            f"Action {name!r} does not exist. Actions: {', '.join(ACTIONS)}. Use api_find_actions to search."
        )
    return action.run(db, _arguments(action, parameters))
