from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from erp_sim.errors import ValidationError
from erp_sim.money import MONEY_CAP, display_money, parse_money


@pytest.mark.parametrize(
    "value, expected",
    [
        (12, "12.00"),
        (12.5, "12.50"),
        ("12.34", "12.34"),
        ("1,234.50", "1234.50"),
        (Decimal("0.10"), "0.10"),
        (" 7.00 ", "7.00"),
        ("12.3", "12.30"),
        ("1,000,000.00", "1000000.00"),
        ("0.01", "0.01"),
        (100.0, "100.00"),
    ],
)
def test_accepts_numbers_and_the_forms_text(value, expected):
    assert str(parse_money(value, "Amount")) == expected


@pytest.mark.parametrize(
    "value, rule",
    [
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        ("NaN", "not a number"),
        ("-Infinity", "not a number"),
        ("12.345", "two decimal places"),
        ("12.300", "two decimal places"),
        (0.1 + 0.2, "two decimal places"),
        (-1, "greater than 0.00"),
        ("-0.01", "greater than 0.00"),
        ("-0.00", "greater than 0.00"),
        (0, "greater than 0.00"),
        ("0", "greater than 0.00"),
        (0.0, "greater than 0.00"),
        (10**7, "exceeds the limit"),
        ("2000000", "exceeds the limit"),
        (10**5000, "exceeds the limit"),
        ("abc", "not a number"),
        ("", "not a number"),
        ("1e2", "not a number"),
        ("1e400", "not a number"),
        ("１２", "not a number"),
        ("١٢", "not a number"),
        ("1_000", "not a number"),
        ("+5", "not a number"),
        ("5.", "not a number"),
        (".5", "not a number"),
        ("1,23.00", "not a number"),
        ("12,34", "not a number"),
        ("1.2.3", "not a number"),
        ("0x10", "not a number"),
        (True, "expected an amount"),
        (None, "expected an amount"),
        ([1], "expected an amount"),
        ("9" * 40, "too long"),
    ],
    ids=lambda v: "huge-int" if isinstance(v, int) and v > 10**100 else repr(v)[:20],
)
def test_rejects_with_a_message_naming_control_and_rule(value, rule):
    with pytest.raises(ValidationError) as error:
        parse_money(value, "TrvExpTrans_AmountCurr")
    assert "TrvExpTrans_AmountCurr" in str(error.value)
    assert rule in str(error.value)


@given(st.decimals(min_value=Decimal("0.01"), max_value=MONEY_CAP, places=2, allow_nan=False, allow_infinity=False))
def test_round_trip_of_every_valid_amount_as_stored_and_as_displayed(amount):
    assert parse_money(str(amount), "Amount") == amount
    assert parse_money(display_money(amount), "Amount") == amount  # what the form shows can be typed back
    assert parse_money(format(amount, "f"), "Amount").as_tuple().exponent == -2


@given(st.text(max_size=12))
def test_any_text_parses_or_is_refused_with_a_validation_error(text):
    try:
        amount = parse_money(text, "Amount")
    except ValidationError as error:
        assert str(error).startswith("Amount: ")  # noqa: PT017 (hypothesis: either outcome is checked)
    else:
        assert Decimal("0.01") <= amount <= MONEY_CAP and text.strip().replace(",", "").replace(".", "").isascii()


BAD_TEXT = ["1e2", "+5", "5.", "1_000", "１２", "0", "-0.00"]


@pytest.mark.parametrize("value", BAD_TEXT)
def test_the_same_message_from_form_data_tool_and_action(value):
    """A form refuses the value when it is set; the data tools refuse it with the same message."""
    from erp_support import open_itemization

    from erp_sim import ErpSession, get_task
    from erp_sim.workflows.itemization.grading import target_line_id

    session = ErpSession(get_task("hotel_50", 0))
    open_itemization(session)
    session.call("form_click_control", {"controlName": "NewLine"})
    form = session.call(
        "form_set_control_values", {"controlValues": [{"controlName": "TrvExpTrans_AmountCurr", "value": value}]}
    )
    item = session.task.receipt_items[0]
    data = session.call(
        "data_create_entities",
        {
            "entitySetName": "ExpenseLines",
            "entities": [
                {
                    "ParentRecId": target_line_id(session),
                    "Subcategory": item.subcategory,
                    "TransactionDate": item.date,
                    "Amount": value,
                }
            ],
        },
    )
    assert form.is_error and data.is_error
    rule = form.result.split("TrvExpTrans_AmountCurr: ")[1]
    assert rule.split(", got")[0].split(" has more")[0] in data.result, (form.result, data.result)
