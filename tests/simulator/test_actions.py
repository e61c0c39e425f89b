"""Business actions: discovery, parameter checks, itemization status, validation and submission."""

from __future__ import annotations

import pytest

from erp_sim import actions, database, odata
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.money import money_text
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.actions import ACTIONS
from erp_sim.workflows.itemization.catalog import CATEGORIES
from erp_sim.workflows.itemization.entity_sets import CATALOG


@pytest.fixture
def target(db, task) -> int:
    return db.execute(
        "SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id "
        "WHERE r.report_number = ? AND l.line_number = ? AND l.parent_line_id IS NULL",
        (task.report_number, task.line_number),
    ).fetchone()[0]


def itemize_fully(db, task, target):
    odata.create_entities(
        CATALOG,
        db,
        "ExpenseLines",
        [
            {"ParentRecId": target, "Subcategory": r.subcategory, "TransactionDate": r.date, "Amount": r.amount}
            for r in task.receipt_items
        ],
    )


def other_draft_itemizable_lines(db, task, target) -> list[int]:
    return [
        r[0]
        for r in db.execute(
            "SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id JOIN expense_category c "
            "ON c.category_id = l.category_id WHERE r.report_number = ? AND l.parent_line_id IS NULL AND c.itemize AND l.id <> ?",
            (task.report_number, target),
        )
    ]


def test_find_actions():
    assert [a["Name"] for a in actions.find_actions(ACTIONS, "")] == [
        "GetItemizationStatus",
        "ValidateExpenseReport",
        "SubmitExpenseReport",
    ]
    [status] = actions.find_actions(ACTIONS, "itemization remaining")
    assert status["Name"] == "GetItemizationStatus"
    assert {p["Name"]: p["Required"] for p in status["Parameters"]} == {
        "RecId": False,
        "ReportNumber": False,
        "LineNumber": False,
    }
    assert [a["Name"] for a in actions.find_actions(ACTIONS, "SUBMIT report")] == ["SubmitExpenseReport"]
    assert actions.find_actions(ACTIONS, "refund") == []


def test_itemization_status_by_rec_id_and_by_report_line(db, task, target):
    result, status = actions.invoke_action(ACTIONS, db, "GetItemizationStatus", {"RecId": target})
    assert status == {
        "RecId": target,
        "ReportNumber": task.report_number,
        "LineNumber": task.line_number,
        "Category": "Hotel",
        "CategorySupportsItemization": True,
        "Total": task.header_amount,
        "Itemized": "0.00",
        "Remaining": task.header_amount,
        "ItemizedLineCount": 0,
        "IsComplete": False,
    }
    assert result.endswith(f"remaining {task.header_amount} (0 itemized line(s)).")
    odata.create_entities(
        CATALOG,
        db,
        "ExpenseLines",
        [{"ParentRecId": target, "Subcategory": "Room tax", "TransactionDate": "2026-08-12", "Amount": "20.32"}],
    )
    _, by_number = actions.invoke_action(
        ACTIONS,
        db,
        "getitemizationstatus",
        {"reportnumber": task.report_number.lower(), "LineNumber": str(task.line_number)},
    )
    assert by_number["RecId"] == target and by_number["Itemized"] == "20.32" and by_number["ItemizedLineCount"] == 1
    assert by_number["Remaining"] == money_text(ledger.itemization_summary(db, target).remaining)


def test_itemization_status_complete_and_over_itemized(db, task, target):
    itemize_fully(db, task, target)
    _, status = actions.invoke_action(ACTIONS, db, "GetItemizationStatus", {"RecId": target})
    assert (
        status["Remaining"] == "0.00"
        and status["IsComplete"]
        and status["ItemizedLineCount"] == len(task.receipt_items)
    )
    odata.create_entities(
        CATALOG,
        db,
        "ExpenseLines",
        [{"ParentRecId": target, "Subcategory": "Minibar", "TransactionDate": "2026-08-12", "Amount": 5}],
    )
    result, status = actions.invoke_action(ACTIONS, db, "GetItemizationStatus", {"RecId": target})
    assert status["Remaining"] == "-5.00" and not status["IsComplete"] and "over-itemized" in result


@pytest.mark.parametrize(
    "parameters, error, message",
    [
        ({}, ValidationError, "Give RecId .* or both ReportNumber and LineNumber"),
        ({"ReportNumber": "EXP-837960"}, ValidationError, "both ReportNumber and LineNumber"),
        ({"RecId": 1, "LineNumber": 1}, ValidationError, "either RecId, or ReportNumber and LineNumber"),
        ({"RecId": "abc"}, ValidationError, "Parameter RecId: expected a whole number"),
        ({"RecId": True}, ValidationError, "Parameter RecId: expected a whole number"),
        ({"RecId": 2.5}, ValidationError, "Parameter RecId: expected a whole number"),
        ({"ReportNumber": 5, "LineNumber": 1}, ValidationError, "Parameter ReportNumber: expected non-empty text"),
        ({"ReportNumber": "E" * 101, "LineNumber": 1}, ValidationError, "at most 100"),
        ({"Line": 1}, ValidationError, "no parameter Line. Parameters: RecId, ReportNumber, LineNumber"),
        ({"RecId": 1, "recid": 2}, ValidationError, "given twice"),
        ({"RecId": 999999}, NotFoundError, "RecId 999999 does not exist"),
        ({"ReportNumber": "EXP-000000", "LineNumber": 1}, NotFoundError, "'EXP-000000' does not exist"),
        ({"ReportNumber": "EXP-837960", "LineNumber": 99}, NotFoundError, "has no line 99"),
    ],
)
def test_itemization_status_parameter_errors(db, parameters, error, message):
    with pytest.raises(error, match=message):
        actions.invoke_action(ACTIONS, db, "GetItemizationStatus", parameters)


def test_itemization_status_of_an_itemized_line_points_to_its_header(db):
    line_id, parent = db.execute(
        "SELECT id, parent_line_id FROM expense_line WHERE line_type = 'ItemizedLine' LIMIT 1"
    ).fetchone()
    with pytest.raises(BusinessRuleError, match=f"header line, RecId {parent}"):
        actions.invoke_action(ACTIONS, db, "GetItemizationStatus", {"RecId": line_id})


def test_unknown_action_and_bad_parameters_object(db):
    with pytest.raises(NotFoundError, match="Action 'ApproveReport' does not exist. Actions: GetItemizationStatus"):
        actions.invoke_action(ACTIONS, db, "ApproveReport", {})
    with pytest.raises(ValidationError, match="expected an object"):
        actions.invoke_action(ACTIONS, db, "ValidateExpenseReport", ["EXP-1"])
    with pytest.raises(ValidationError, match="ReportNumber must be given"):
        actions.invoke_action(ACTIONS, db, "ValidateExpenseReport", {"ReportNumber": None})


def test_validate_then_submit(db, task, target):
    before = database.state_hash(db)
    result, report = actions.invoke_action(ACTIONS, db, "ValidateExpenseReport", {"ReportNumber": task.report_number})
    assert not report["IsValid"] and report["Status"] == "Draft" and "problem(s)" in result
    assert any(problem.startswith(f"Line {task.line_number} (Hotel") for problem in report["Problems"])
    with pytest.raises(BusinessRuleError, match="cannot be submitted"):
        actions.invoke_action(ACTIONS, db, "SubmitExpenseReport", {"ReportNumber": task.report_number})
    assert database.state_hash(db) == before

    itemize_fully(db, task, target)
    for line_id in other_draft_itemizable_lines(db, task, target):
        remaining = ledger.itemization_summary(db, line_id).remaining
        if remaining:
            category = ledger.line_by_id(db, line_id)["category_id"]
            odata.create_entities(
                CATALOG,
                db,
                "ExpenseLines",
                [
                    {
                        "ParentRecId": line_id,
                        "Subcategory": CATEGORIES[category].subcategories[0],
                        "TransactionDate": "2026-08-12",
                        "Amount": str(remaining),
                    }
                ],
            )
    result, report = actions.invoke_action(ACTIONS, db, "validateexpensereport", {"ReportNumber": task.report_number})
    assert report == {"ReportNumber": task.report_number, "Status": "Draft", "IsValid": True, "Problems": []}
    assert result == f"Expense report {task.report_number} has no problems."

    result, submitted = actions.invoke_action(ACTIONS, db, "SubmitExpenseReport", {"ReportNumber": task.report_number})
    assert submitted == {"ReportNumber": task.report_number, "Status": "Submitted"} and "was submitted" in result
    with pytest.raises(BusinessRuleError, match="already Submitted"):
        actions.invoke_action(ACTIONS, db, "SubmitExpenseReport", {"ReportNumber": task.report_number})
    with pytest.raises(BusinessRuleError, match="only Draft reports"):
        odata.create_entities(
            CATALOG,
            db,
            "ExpenseLines",
            [{"ParentRecId": target, "Subcategory": "Minibar", "TransactionDate": "2026-08-12", "Amount": 1}],
        )


def test_submit_unknown_report(db):
    with pytest.raises(NotFoundError, match="does not exist"):
        actions.invoke_action(ACTIONS, db, "SubmitExpenseReport", {"ReportNumber": "EXP-000000"})
