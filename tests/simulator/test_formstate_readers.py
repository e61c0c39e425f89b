"""The one reader of the response shape: grid rows as text, control text, pagination, from constants."""

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.response import envelope, error_envelope, render


def _state() -> dict:
    grid = {
        K.NAME: "G",
        K.ROWS: [
            {K.ROW_NUMBER: "1", K.IS_SELECTED: True, K.VALUES: {"Amount": 12.5, "Note": None, "Text": "x"}},
            "not a row",
            {K.SELECTED_LEGACY: True, K.VALUES: "not values"},
        ],
        K.PAGINATION: {K.TOTAL_ROWS: 30, K.HAS_NEXT_PAGE: True},
    }
    group = {K.NAME: "Header", K.CHILDREN: {K.INPUT: [{K.NAME: "Total", K.VALUE: None}], K.GRID: [grid]}}
    return {K.NAME: "F", K.FORM: {"Group": [group]}}


def test_grid_row_values_are_text_with_numbers_and_selection():
    grid = formstate.find_grid(_state()[K.FORM], "G")
    assert formstate.grid_row_values(grid) == [
        ("1", True, {"Amount": "12.5", "Note": "", "Text": "x"}),
        ("3", True, {}),  # no number: its position; "Selected" as older samples spell it
    ]
    assert formstate.grid_row_values(None) == []


def test_control_text_tells_a_missing_control_from_an_empty_one():
    assert formstate.control_text(_state(), "Total") == ""
    assert formstate.control_text(_state(), "Nope") is None


def test_pagination_readers():
    grid = formstate.find_grid(_state()[K.FORM], "G")
    assert formstate.grid_has_next_page(grid) and formstate.has_next_page(_state(), "G")
    assert formstate.grid_total_rows(grid) == 30
    assert not formstate.grid_has_next_page({K.PAGINATION: "bad"}) and formstate.grid_total_rows({}) == 0


def test_the_envelope_is_written_with_the_keys_readers_use():
    text = render({**envelope("s1", "ok", []), K.FORM_STATE: _state()})
    assert formstate.form_state(text)[K.NAME] == "F"
    failed = error_envelope(None, "E1", "bad")
    assert list(failed) == [K.RESULT, K.MESSAGES, K.ERROR] and failed[K.ERROR] == {K.CODE: "E1", K.MESSAGE: "bad"}
    assert failed[K.MESSAGES] == [{K.LEVEL: K.LEVEL_ERROR, K.TEXT: "bad"}]
