"""DeleteLine on a saved itemized row is an unsaved edit: saved by form_save_form, discarded by a double close."""

from __future__ import annotations

import pytest
from erp_support import open_itemization

from erp_sim import ErpSession, get_task
from erp_sim.formstate import grid_rows
from erp_sim.workflows.itemization.task import task_of


def _two_saved_lines(session: ErpSession) -> None:
    open_itemization(session)
    for item in task_of(session).receipt_items[:2]:
        session.call("form_click_control", {"controlName": "NewLine"})
        response = session.call(
            "form_set_control_values",
            {
                "controlValues": [
                    {"controlName": "TrvExpTrans_ExpSubCategory", "value": item.subcategory},
                    {"controlName": "TrvExpTrans_TransDate", "value": item.date},
                    {"controlName": "TrvExpTrans_AmountCurr", "value": item.amount},
                ]
            },
        )
        assert not response.is_error, response.result
    assert not session.call("form_save_form", {}).is_error
    assert session.grade().saved_lines == 2


def _delete_first_row(session: ErpSession):
    assert not session.call("form_select_grid_row", {"gridName": "ItemizationGrid", "rowNumber": "1"}).is_error
    response = session.call("form_click_control", {"controlName": "DeleteLine"})
    assert not response.is_error and "marked for deletion" in response.result
    return response


@pytest.fixture
def session():
    return ErpSession(get_task("hotel_50", 6))


def test_delete_waits_for_save(session):
    _two_saved_lines(session)
    before = session.state_hash()
    response = _delete_first_row(session)
    assert session.state_hash() == before  # nothing written yet
    assert len(grid_rows(response.form_state, "ItemizationGrid")) == 1  # the row is hidden
    grade = session.grade()
    assert grade.saved_lines == 2 and grade.unsaved_rows == 1
    assert session.call("form_click_control", {"controlName": "DeleteLine"}).is_error  # nothing selected any more
    assert not session.call("form_save_form", {}).is_error
    grade = session.grade()
    assert grade.saved_lines == 1 and grade.unsaved_rows == 0
    assert session.grade().itemized_amount == session.task.receipt_items[1].amount


def test_double_close_discards_the_deletion(session):
    _two_saved_lines(session)
    before = session.state_hash()
    _delete_first_row(session)
    first = session.call("form_close_form", {})
    assert "unsaved changes" in first.result and session.forms[-1].name == "TrvItemization"
    assert not session.call("form_close_form", {}).is_error
    assert session.state_hash() == before and session.grade().saved_lines == 2


def test_deleting_every_line_then_saving_resets_the_header(session):
    _two_saved_lines(session)
    _delete_first_row(session)
    _delete_first_row(session)
    assert not session.call("form_save_form", {}).is_error
    line_type = session.db.execute(
        "SELECT line_type FROM expense_line WHERE id = ?", (session.forms[-1].context["line_id"],)
    ).fetchone()[0]
    assert session.grade().saved_lines == 0 and line_type == "Default"
