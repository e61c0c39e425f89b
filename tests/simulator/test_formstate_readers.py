"""The one reader of the response shape: grid rows as text, control text, pagination, from constants."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.response import envelope, error_envelope, read_json, render


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


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits too: orjson would read a float
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=600, deadline=None)
@given(value=_JSON_VALUES, ensure_ascii=st.booleans(), cut=st.integers(0, 200), noise=st.text(max_size=3))
def test_read_json_reads_what_json_loads_reads(value, ensure_ascii, cut, noise):
    """Responses and trajectories are read with orjson where it gives json's value; elsewhere by json itself."""
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    for candidate in (text, text[:cut] + noise + text[cut:]):  # and a text broken anywhere
        try:
            expected: object = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError) as error:
            expected = (type(error), str(error))
        try:
            got: object = read_json(candidate)
        except (json.JSONDecodeError, RecursionError) as error:
            got = (type(error), str(error))
        assert repr(got) == repr(expected)  # repr: nan != nan, and floats keep their sign and digits


def test_read_json_leaves_long_integers_to_json():
    assert read_json('{"id": 123456789012345678901234567890}') == {"id": 123456789012345678901234567890}
    assert read_json("[-9223372036854775809, 18446744073709551616]") == [-9223372036854775809, 2**64]
