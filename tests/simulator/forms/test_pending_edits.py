"""The forms' unsaved edits are typed objects (erp_sim.forms.pending, and the report form's own): what grading counts, and copies that share nothing."""

from __future__ import annotations

import copy
import pickle

import pytest
from erp_support import open_itemization

from erp_sim import ErpSession, get_task
from erp_sim.forms.pending import PendingRow, RowEdits
from erp_sim.workflows.itemization.forms.expense_report import ReportEdits


@pytest.fixture
def session():
    return ErpSession(get_task("hotel_50", 6))


def test_itemization_edits_number_new_rows_and_count_them():
    edits = RowEdits()
    first, second = edits.new_key(), edits.new_key()
    assert edits.edited_line_ids() == [] and edits.new_keys() == []
    edits.put(first, PendingRow({"amount": "1.00"}))
    assert edits.edited_line_ids() == [] and edits.new_keys() == ["new-1"]
    edits.put(7, PendingRow({"amount": "2.00"}))
    edits.put(second, PendingRow({}))
    edits.put(7, PendingRow({}, deleted=True))  # an edit replaced: still one saved row edited
    assert (first, second) == ("new-1", "new-2") and edits.unsaved_count() == 3
    assert edits.edited_line_ids() == [7] and edits.new_keys() == ["new-1", "new-2"]
    with pytest.raises(TypeError):
        edits.rows[8] = PendingRow({})  # a read-only view: changes go through put
    clone = edits.copy()
    clone.drop(7)
    assert clone.edited_line_ids() == [] and clone.new_keys() == ["new-1", "new-2"]
    assert clone.new_key() == "new-3" and edits.unsaved_count() == 3 and edits.next_row == 2
    assert edits.edited_line_ids() == [7] and pickle.loads(pickle.dumps(edits)) == edits
    restored = pickle.loads(pickle.dumps(edits))
    restored.drop(7)
    assert restored.edited_line_ids() == [] and edits.edited_line_ids() == [7]
    edits.replace({9: PendingRow({}), "new-5": PendingRow({})})
    assert edits.edited_line_ids() == [9] and edits.new_keys() == ["new-5"]


def test_report_edits_lay_changes_over_saved_values():
    edits = ReportEdits()
    assert edits.unsaved_count() == 0 and edits.line_value(5, "merchant", "Saved") == "Saved"
    edits.lines[5] = {"merchant": "Changed"}
    edits.purpose = "Trip"
    assert edits.unsaved_count() == 2 and edits.line_value(5, "merchant", "Saved") == "Changed"
    clone = edits.copy()
    clone.lines[6] = {"description": "x"}
    assert 6 not in edits.lines


def test_unsaved_rows_are_typed_counted_by_grading_and_survive_pickle(session):
    open_itemization(session)
    session.call("form_click_control", {"controlName": "NewLine"})
    session.call(
        "form_set_control_values", {"controlValues": [{"controlName": "TrvExpTrans_AmountCurr", "value": "10"}]}
    )
    form = session.forms[-1]
    assert isinstance(form.pending, RowEdits) and form.pending.unsaved_count() == 1
    assert session.grade().unsaved_rows == 1
    for clone in (copy.deepcopy(form), pickle.loads(pickle.dumps(form))):
        assert clone.pending == form.pending and clone.pending is not form.pending
    report = next(f for f in session.forms if f.name == "TrvExpenseReport")
    assert report.pending is None or isinstance(report.pending, ReportEdits)
    session.call("form_close_form", {})
    session.call("form_close_form", {})  # the second close discards the unsaved row
    assert session.grade().unsaved_rows == 0
