"""Money is ``Decimal`` with exactly two places, end to end; floats never touch an amount."""

from __future__ import annotations

import math
import random
import re
from decimal import Decimal

from erp_sim.errors import ValidationError

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
# No single expense line in the simulated company comes near this; larger inputs are typos.
MONEY_CAP = Decimal("1000000.00")


# What an amount may look like as text: ASCII digits, at most two decimals, and thousands
# separators only as the forms display them ("1,234.50"). No signs, exponents, underscores,
# other scripts' digits or a bare trailing point: a form refuses them when they are set.
_AMOUNT_TEXT = re.compile(r"(?:[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+)(?:\.[0-9]{1,2})?")
_FORMAT = "ASCII digits with at most two decimals and optional thousands separators, like 1234.50 or 1,234.50"


def parse_money(value: object, control: str) -> Decimal:
    """Parse an amount greater than 0.00 from a JSON number or the form's text, or say which rule failed.

    The one money parser of forms, data tools and actions, so a value is refused when it is set,
    with the same message everywhere. ``control`` names the field, so an agent knows what to fix.
    """
    if isinstance(value, bool) or value is None:
        raise ValidationError(f"{control}: expected an amount (number or numeric string), got {value!r}.")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValidationError(f"{control}: amount must be a finite number, got {value!r}.")
        amount = Decimal(repr(value))  # shortest repr: 12.3 -> "12.3", never 12.300000000000001
    elif isinstance(value, int):
        if abs(value) > MONEY_CAP:  # before str(): huge ints are slow (or refused) to print
            raise ValidationError(f"{control}: amount exceeds the limit of {MONEY_CAP:,}.")
        amount = Decimal(value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValidationError(f"{control}: amount must be a finite number, got {value}.")
        amount = value
    elif isinstance(value, str):
        amount = _amount_from_text(value, control)
    else:
        raise ValidationError(f"{control}: expected an amount (number or numeric string), got {type(value).__name__}.")
    if amount <= 0:
        raise ValidationError(
            f"{control}: amount must be greater than 0.00 (no negative or zero amounts), got {value!r}."
        )
    if amount > MONEY_CAP:
        raise ValidationError(f"{control}: amount {amount} exceeds the limit of {MONEY_CAP:,}.")
    if amount != amount.quantize(CENT):
        raise ValidationError(f"{control}: amount {str(value).strip()} has more than two decimal places.")
    return amount.quantize(CENT)


def _amount_from_text(value: str, control: str) -> Decimal:
    text = value.strip()
    if len(text) > 32:
        raise ValidationError(f"{control}: amount text is too long ({len(value)} characters).")
    if _AMOUNT_TEXT.fullmatch(text):
        return Decimal(text.replace(",", ""))
    if _AMOUNT_TEXT.fullmatch(text.lstrip("-")) and text.startswith("-"):
        raise ValidationError(
            f"{control}: amount must be greater than 0.00 (no negative or zero amounts), got {value!r}."
        )
    if re.fullmatch(r"[0-9,]*\.[0-9]{3,}", text):
        raise ValidationError(f"{control}: amount {str(value).strip()} has more than two decimal places.")
    raise ValidationError(f"{control}: {value!r} is not a number in the form's format: {_FORMAT}.")


def money_text(amount: Decimal) -> str:
    """The canonical text of an amount: plain, two places, no grouping ("1234.50")."""
    return str(amount.quantize(CENT))


def display_money(amount: Decimal) -> str:
    """An amount as D365 shows it in a form: grouped, two places ("1,234.50")."""
    return f"{amount.quantize(CENT):,}"


def random_amount(rng: random.Random, low: float, high: float) -> Decimal:
    """A whole number of cents from ``low`` to ``high`` dollars, drawn from ``rng`` (task generation's amounts)."""
    return (Decimal(rng.randint(int(low * 100), int(high * 100))) / 100).quantize(CENT)
