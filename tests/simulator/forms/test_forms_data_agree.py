"""Forms and data tools agree: every render reads the current rows.

While each form is open, every tool that writes (data_create_entities, data_update_entities,
data_delete_entities, api_invoke_action) changes rows; after each write the form's totals, its
grids and its summary must all show the database as it now is, and an unsaved form edit must be
laid over the current row (not over a stale copy that would undo the data tool's change at save).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from erp_sim import ErpSession, formstate, get_task, oracle_calls
from erp_sim.money import ZERO, display_money
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.catalog import CATEGORIES
from erp_sim.workflows.itemization.task import task_of

TASK = ("hotel_50", "hotel-007")
# The oracle call after which each form is on top of the stack.
OPENED_BY = {
    "TrvExpenses": ("form_filter_grid", None),
    "TrvExpenseReport": ("form_select_grid_row", "ExpenseLinesGrid"),
    "TrvReceiptViewer": ("form_click_control", "ViewReceipt"),
    "TrvItemization": ("form_click_control", "Itemize"),
}


def open_form(session: ErpSession, form: str):
    calls = oracle_calls(session.task)
    name, args = next(calls)
    tool, detail = OPENED_BY[form]
    while True:
        response = session.call(name, args)
        assert not response.is_error, response.result
        if name == tool and detail in (None, args.get("controlName"), args.get("gridName")):
            assert response.form_state is not None and response.form_state["Name"] == form
            return response
        name, args = calls.send(response.text)


def target_line(session: ErpSession):
    report = ledger.report_by_number(session.db, task_of(session).report_number)
    return next(
        line
        for line in ledger.header_lines(session.db, report["id"])
        if line["line_number"] == task_of(session).line_number
    )


def money(value: Decimal) -> str:
    return display_money(value)


def assert_form_shows_database(session: ErpSession, state: dict) -> None:
    """The rendered form against the rows as they are now: totals, grid and summary alike."""
    db, line = session.db, target_line(session)
    report = ledger.report_by_id(db, line["report_id"])
    summary = ledger.itemization_summary(db, line["id"])
    name = state["Name"]
    if name == "TrvItemization":
        saved = ledger.itemized_lines(db, line["id"])
        assert formstate.control_value(state, "ItemizationItemized") == money(summary.itemized)
        assert formstate.control_value(state, "ItemizationRemaining") == money(summary.remaining)
        rows = [r for r in formstate.grid_rows(state, "ItemizationGrid") if r["TrvExpTrans_LineStatus"] != "New"]
        assert [
            (r["TrvExpTrans_ExpSubCategory"], r["TrvExpTrans_TransDate"], r["TrvExpTrans_AmountCurr"]) for r in rows
        ] == [(s["subcategory"], s["transaction_date"], money(Decimal(s["amount"]))) for s in saved[:25]]
        assert f"itemized {money(summary.itemized)}" in state["Summary"]
        assert f"{len(saved)} saved itemized line(s)" in state["Summary"]
        assert formstate.control_value(state, "HeaderMerchant") == line["merchant"]  # the header, read per version
        assert state["Caption"].endswith(f" {line['category_id']} {line['merchant']}")
    elif name == "TrvExpenseReport":
        lines = ledger.header_lines(db, report["id"])
        assert formstate.control_value(state, "TrvExpTable_TotalAmount") == money(
            sum((Decimal(x["amount"]) for x in lines), ZERO)
        )
        assert formstate.control_value(state, "TrvExpTable_ApprovalStatus") == report["status"]
        assert formstate.control_value(state, "TrvExpTable_Txt") == report["purpose"]
        row = next(
            r
            for r in formstate.grid_rows(state, "ExpenseLinesGrid")
            if r["TrvExpTrans_LineNum"] == str(line["line_number"])
        )
        expected_status = (
            "Not itemized"
            if summary.line_count == 0
            else "Fully itemized"
            if summary.remaining == ZERO
            else f"Remaining {money(summary.remaining)}"
        )
        assert row["TrvExpTrans_ItemizationStatus"] == expected_status
        assert row["TrvExpTrans_LineType"] == line["line_type"]
        assert formstate.control_value(state, "TrvExpTrans_ItemizedAmount") == money(summary.itemized)
        assert formstate.control_value(state, "TrvExpTrans_RemainingAmount") == money(summary.remaining)
        assert f"({report['status']})" in state["Summary"]
    elif name == "TrvExpenses":
        row = next(
            r
            for r in formstate.grid_rows(state, "ExpenseReportsGrid")
            if r["TrvExpTable_ExpNumber"] == report["report_number"]
        )
        lines = ledger.header_lines(db, report["id"])
        assert row["TrvExpTable_ApprovalStatus"] == report["status"] and row["TrvExpTable_Txt"] == report["purpose"]
        assert row["TrvExpTable_TotalAmount"] == money(sum((Decimal(x["amount"]) for x in lines), ZERO))
    else:
        assert name == "TrvReceiptViewer"
        receipt = ledger.receipt_of_line(db, line["id"])
        assert receipt is not None
        items = ledger.receipt_items(db, receipt["id"])
        assert [r["ReceiptItem_Amount"] for r in formstate.grid_rows(state, "ReceiptItemsGrid")] == [
            money(Decimal(i["amount"])) for i in items[:25]
        ]
        assert f"{len(items)} charge(s)" in state["Summary"]


def write(session: ErpSession, tool: str, **arguments) -> dict:
    response = session.call(tool, arguments)
    assert not response.is_error, (tool, response.result)
    assert response.form_state is not None
    return response.form_state


@pytest.mark.parametrize("form", sorted(OPENED_BY))
def test_every_data_tool_write_shows_in_the_open_form(form):
    session = ErpSession(get_task(*TASK))
    assert_form_shows_database(session, open_form(session, form).form_state)
    line_id = target_line(session)["id"]
    items = session.task.receipt_items

    def entity(item, **changes):
        return {
            "ParentRecId": line_id,
            "Subcategory": item.subcategory,
            "TransactionDate": item.date,
            "Amount": item.amount,
            **changes,
        }

    created = session.call(
        "data_create_entities", {"entitySetName": "ExpenseLines", "entities": [entity(i) for i in items[:2]]}
    )
    assert not created.is_error
    assert_form_shows_database(session, created.form_state)
    first, second = (r["RecId"] for r in created.envelope["Data"]["value"])
    for entity_set, changes in [
        ("ExpenseLines", {"RecId": first, "Amount": "1.00", "Subcategory": items[1].subcategory}),
        ("ExpenseReports", {"ReportNumber": session.task.report_number, "Purpose": "Changed by the data API"}),
        ("ExpenseLines", {"RecId": line_id, "Merchant": "Merchant changed by the data API"}),  # the header line
    ]:
        state = write(session, "data_update_entities", entitySetName=entity_set, entities=[changes])
        assert_form_shows_database(session, state)
    assert_form_shows_database(
        session, write(session, "data_delete_entities", entitySetName="ExpenseLines", keys=[second])
    )
    assert_form_shows_database(
        session, write(session, "data_delete_entities", entitySetName="ExpenseLines", keys=[first])
    )
    assert_form_shows_database(
        session,
        write(session, "data_create_entities", entitySetName="ExpenseLines", entities=[entity(i) for i in items]),
    )
    # The report's other itemizable lines, itemized through the data API from their receipts, so it can be submitted.
    for other in other_unitemized_lines(session, line_id):
        receipt = ledger.receipt_of_line(session.db, other["id"])
        charges = ledger.receipt_items(session.db, receipt["id"])
        assert_form_shows_database(
            session,
            write(
                session,
                "data_create_entities",
                entitySetName="ExpenseLines",
                entities=[
                    {
                        "ParentRecId": other["id"],
                        "Subcategory": CATEGORIES[other["category_id"]].subcategories[0],
                        "TransactionDate": c["item_date"],
                        "Amount": c["amount"],
                    }
                    for c in charges
                ],
            ),
        )
    assert_form_shows_database(
        session,
        write(
            session,
            "api_invoke_action",
            actionName="SubmitExpenseReport",
            parameters={"ReportNumber": session.task.report_number},
        ),
    )
    assert ledger.report_by_number(session.db, session.task.report_number)["status"] == "Submitted"


def other_unitemized_lines(session: ErpSession, line_id: int) -> list:
    report_id = ledger.line_by_id(session.db, line_id)["report_id"]
    return [
        line
        for line in ledger.header_lines(session.db, report_id)
        if line["id"] != line_id
        and CATEGORIES[line["category_id"]].itemize
        and ledger.itemization_summary(session.db, line["id"]).line_count == 0
    ]


def select_saved_row(session: ErpSession, number: int) -> None:
    response = session.call("form_select_grid_row", {"gridName": "ItemizationGrid", "rowNumber": str(number)})
    assert not response.is_error, response.result


def test_an_unsaved_edit_lies_over_the_current_row_and_keeps_data_tool_changes():
    session = ErpSession(get_task(*TASK))
    open_form(session, "TrvItemization")
    line_id, item = target_line(session)["id"], session.task.receipt_items[0]
    created = session.call(
        "data_create_entities",
        {
            "entitySetName": "ExpenseLines",
            "entities": [
                {
                    "ParentRecId": line_id,
                    "Subcategory": item.subcategory,
                    "TransactionDate": item.date,
                    "Amount": item.amount,
                }
            ],
        },
    )
    rec_id = created.envelope["Data"]["value"][0]["RecId"]
    form = session.call("form_find_controls", {"controlSearchTerm": "Itemiz"})
    assert formstate.grid_rows(form.form_state, "ItemizationGrid")[0]["TrvExpTrans_LineStatus"] == "Saved"
    select_saved_row(session, 1)
    assert not session.call(
        "form_set_control_values", {"controlValues": [{"controlName": "TrvExpTrans_AmountCurr", "value": "5.00"}]}
    ).is_error
    # The data API changes another field of the same line while the form holds the unsaved amount.
    state = write(
        session,
        "data_update_entities",
        entitySetName="ExpenseLines",
        entities=[{"RecId": rec_id, "Subcategory": "Parking"}],
    )
    row = formstate.grid_rows(state, "ItemizationGrid")[0]
    assert (row["TrvExpTrans_ExpSubCategory"], row["TrvExpTrans_AmountCurr"], row["TrvExpTrans_LineStatus"]) == (
        "Parking",
        "5.00",
        "Modified",
    )
    assert formstate.control_value(state, "TrvExpTrans_ExpSubCategory") == "Parking"
    assert formstate.control_value(state, "ItemizationItemized") == money(Decimal(item.amount))  # saved rows only
    assert not session.call("form_save_form", {}).is_error
    saved = ledger.line_by_id(session.db, rec_id)
    assert (saved["subcategory"], saved["amount"]) == ("Parking", "5.00")  # neither change lost


def test_an_unsaved_edit_of_a_line_deleted_by_the_data_api_is_dropped_with_a_warning():
    session = ErpSession(get_task(*TASK))
    open_form(session, "TrvItemization")
    line_id, items = target_line(session)["id"], session.task.receipt_items
    created = session.call(
        "data_create_entities",
        {
            "entitySetName": "ExpenseLines",
            "entities": [
                {"ParentRecId": line_id, "Subcategory": i.subcategory, "TransactionDate": i.date, "Amount": i.amount}
                for i in items[:2]
            ],
        },
    )
    first = created.envelope["Data"]["value"][0]["RecId"]
    select_saved_row(session, 1)
    assert not session.call(
        "form_set_control_values", {"controlValues": [{"controlName": "TrvExpTrans_AmountCurr", "value": "5.00"}]}
    ).is_error
    deleted = session.call("data_delete_entities", {"entitySetName": "ExpenseLines", "keys": [first]})
    assert not deleted.is_error
    assert any("deleted outside this form" in m["Text"] for m in deleted.envelope["Messages"])
    state = deleted.form_state
    assert "0 unsaved row(s)" in state["Summary"] and not state["HasUnsavedChanges"]
    assert_form_shows_database(session, state)
    assert session.call("form_save_form", {}).result == "There were no changes to save."
    assert not session.call("form_close_form", {}).is_error


@pytest.mark.parametrize("pending", ["DeleteLine", "edit"])
def test_a_pending_change_never_lands_on_a_line_that_came_after_its_own_was_deleted(pending):
    """Deleted behind a form on top (the receipt viewer), a line's pending change is dropped: the line created
    next gets a new RecId (never a reused one), so the save leaves it as created."""
    session = ErpSession(get_task(*TASK))
    open_form(session, "TrvItemization")
    line_id, items = target_line(session)["id"], session.task.receipt_items

    def create(item) -> int:
        entity = {"ParentRecId": line_id, "Subcategory": item.subcategory, "TransactionDate": item.date}
        created = session.call(
            "data_create_entities", {"entitySetName": "ExpenseLines", "entities": [{**entity, "Amount": item.amount}]}
        )
        return created.envelope["Data"]["value"][0]["RecId"]

    first = create(items[0])
    select_saved_row(session, 1)
    if pending == "DeleteLine":
        assert not session.call("form_click_control", {"controlName": "DeleteLine"}).is_error
    else:
        change = [{"controlName": "TrvExpTrans_AmountCurr", "value": "99.99"}]
        assert not session.call("form_set_control_values", {"controlValues": change}).is_error
    assert session.call("form_click_control", {"controlName": "ViewReceipt"}).form_state["Name"] == "TrvReceiptViewer"
    assert not session.call("data_delete_entities", {"entitySetName": "ExpenseLines", "keys": [first]}).is_error
    second = create(items[1])
    assert second != first  # RecIds are never reused
    back = session.call("form_close_form", {})
    assert any("deleted outside this form" in m["Text"] for m in back.envelope["Messages"])
    assert session.call("form_save_form", {}).result == "There were no changes to save."
    saved = ledger.line_by_id(session.db, second)
    assert (saved["subcategory"], saved["amount"]) == (items[1].subcategory, items[1].amount)
