from decimal import Decimal

import pytest
from hypothesis import given, strategies as st

from erp_sim.errors import ValidationError
from erp_sim.money import MONEY_CAP, parse_money


@pytest.mark.parametrize("value, expected", [
    (12, "12.00"), (12.5, "12.50"), ("12.34", "12.34"), ("1,234.50", "1234.50"), (Decimal("0.10"), "0.10"),
    (" 7.00 ", "7.00"), ("12.300", "12.30"), (0.1 + 0.2, None),
])
def test_accepts_numbers_and_numeric_strings(value, expected):
    if expected is None:  # a float with binary noise is not two-place; it must be refused, not rounded
        with pytest.raises(ValidationError, match="two decimal places"):
            parse_money(value, "Amount")
        return
    assert str(parse_money(value, "Amount")) == expected


@pytest.mark.parametrize("value, rule", [
    (float("nan"), "finite"), (float("inf"), "finite"), ("NaN", "finite"), ("-Infinity", "finite"),
    ("12.345", "two decimal places"), (-1, "negative"), ("-0.01", "negative"), (10**7, "exceeds the limit"),
    ("1e400", "exceeds the limit"), (10**5000, "exceeds the limit"), ("abc", "not a number"), ("", "not a number"),
    (True, "expected an amount"), (None, "expected an amount"), ([1], "expected an amount"), ("9" * 40, "too long"),
], ids=lambda v: "huge-int" if isinstance(v, int) and v > 10**100 else repr(v)[:20])
def test_rejects_with_a_message_naming_control_and_rule(value, rule):
    with pytest.raises(ValidationError) as error:
        parse_money(value, "TrvExpTrans_AmountCurr")
    assert "TrvExpTrans_AmountCurr" in str(error.value)
    assert rule in str(error.value)


@given(st.decimals(min_value=0, max_value=MONEY_CAP, places=2, allow_nan=False, allow_infinity=False))
def test_round_trip_of_every_valid_amount(amount):
    assert parse_money(str(amount), "Amount") == amount
    assert parse_money(format(amount, "f"), "Amount").as_tuple().exponent == -2
