"""Dates are taken in the two forms the error names (YYYY-MM-DD, M/D/YYYY) and nothing else: any other text
is refused, never saved as another date than the one meant."""

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from erp_sim.errors import ValidationError
from erp_sim.values import parse_date


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-03-14", "2026-03-14"),
        (" 2026-03-14 ", "2026-03-14"),
        ("3/14/2026", "2026-03-14"),
        ("03/04/2026", "2026-03-04"),
        ("12/31/2025", "2025-12-31"),
    ],
)
def test_the_two_named_forms_are_taken(text, expected):
    assert parse_date(text, "TransactionDate") == expected


BAD_DATES = [
    "1/2/26",  # a two-digit year: date() took it as year 26
    "1/21/26",
    "1_0/2/2026",  # int() reads "1_0" as 10
    "+1/+2/+2026",
    "١/٢/٢٠٢٦",  # Arabic-Indic digits
    "３/４/２０２６",  # full-width digits
    "2026W011",  # ISO week dates and the basic form, which date.fromisoformat also takes
    "2026-W01-1",
    "20260102",
    "2026-3-4",
    "2026-02-30",
    "13/1/2026",
    "2026-03-14T00:00:00",
    "",
]


@pytest.mark.parametrize("text", BAD_DATES)
def test_any_other_text_is_refused_with_the_forms_named(text):
    with pytest.raises(ValidationError, match="is not a valid date; use YYYY-MM-DD or M/D/YYYY"):
        parse_date(text, "TransactionDate")


@given(st.dates())
def test_every_date_reads_back_in_both_forms(day):
    if day.year < 1000:  # four-digit years only
        return
    assert parse_date(day.isoformat(), "d") == day.isoformat()
    assert parse_date(f"{day.month}/{day.day}/{day.year}", "d") == day.isoformat()


@given(st.text(max_size=14))
def test_any_text_is_the_date_it_spells_or_refused(text):
    try:
        parsed = parse_date(text, "d")
    except ValidationError:
        return
    spelled = text.strip()
    assert spelled.isascii() and date.fromisoformat(parsed)
    if "/" in spelled:
        month, day, year = spelled.split("/")
        assert (int(year), int(month), int(day)) == tuple(map(int, parsed.split("-")))
    else:
        assert spelled == parsed


def test_a_two_digit_year_is_refused_by_the_form_and_nothing_is_saved():
    from erp_support import open_itemization

    from erp_sim import ErpSession, get_task

    session = ErpSession(get_task("hotel_50", 0))
    open_itemization(session)
    session.call("form_click_control", {"controlName": "NewLine"})
    result = session.call(
        "form_set_control_values", {"controlValues": [{"controlName": "TrvExpTrans_TransDate", "value": "1/21/26"}]}
    )
    assert result.is_error and "is not a valid date; use YYYY-MM-DD or M/D/YYYY" in result.result
    assert "0026-01-21" not in result.result
