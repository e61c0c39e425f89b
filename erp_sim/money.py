"""Money is ``Decimal`` with exactly two places, end to end; floats never touch an amount."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from erp_sim.errors import ValidationError

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
# No single expense line in the simulated company comes near this; larger inputs are typos.
MONEY_CAP = Decimal("1000000.00")


def parse_money(value: object, control: str, *, allow_negative: bool = False) -> Decimal:
    """Parse a JSON number or numeric string into a two-place Decimal, or say which rule failed.

    ``control`` names the field in every message, so an agent knows what to fix.
    """
    if isinstance(value, bool) or value is None:
        raise ValidationError(f"{control}: expected an amount (number or numeric string), got {value!r}.")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValidationError(f"{control}: amount must be a finite number, got {value!r}.")
        text = repr(value)  # shortest repr: 12.3 -> "12.3", never 12.300000000000001
    elif isinstance(value, int):
        if abs(value) > MONEY_CAP:  # before str(): huge ints are slow (or refused) to print
            raise ValidationError(f"{control}: amount exceeds the limit of {MONEY_CAP:,}.")
        text = str(value)
    elif isinstance(value, Decimal):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip().replace(",", "")
        if len(text) > 32:
            raise ValidationError(f"{control}: amount text is too long ({len(value)} characters).")
    else:
        raise ValidationError(f"{control}: expected an amount (number or numeric string), got {type(value).__name__}.")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise ValidationError(f"{control}: {value!r} is not a number.") from None
    if not amount.is_finite():
        raise ValidationError(f"{control}: amount must be a finite number, got {value!r}.")
    if amount < 0 and not allow_negative:
        raise ValidationError(f"{control}: amount must not be negative, got {text}.")
    if abs(amount) > MONEY_CAP:
        raise ValidationError(f"{control}: amount {text} exceeds the limit of {MONEY_CAP:,}.")
    if amount != amount.quantize(CENT):
        raise ValidationError(f"{control}: amount {text} has more than two decimal places.")
    return amount.quantize(CENT)


def money_text(amount: Decimal) -> str:
    """The canonical text of an amount: plain, two places, no grouping ("1234.50")."""
    return str(amount.quantize(CENT))


def display_money(amount: Decimal) -> str:
    """An amount as D365 shows it in a form: grouped, two places ("1,234.50")."""
    return f"{amount.quantize(CENT):,}"
