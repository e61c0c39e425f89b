"""What a user types into a field, parsed: dates and text (amounts: ``erp_sim.money``).

The parsers of forms, data tools and actions alike, so a value is refused when it is set, with the
same message everywhere; ``control`` names the field, so an agent knows what to fix.
"""

from __future__ import annotations

import re
from datetime import date

from erp_sim.errors import ValidationError

MAX_TEXT = 250  # D365's Description/Name fields are short strings

# The two forms the error names, in ASCII digits with a four-digit year: anything else (a two-digit year, ISO
# week or basic dates that date.fromisoformat also takes, digits int() reads like "1_0" or "٣") would save
# another date than the one meant, silently.
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_US_DATE = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})", re.ASCII)


def parse_date(value: object, control: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{control}: expected a date string like 2026-03-14, got {type(value).__name__}.")
    text = value.strip()
    if len(text) > 32:
        raise ValidationError(f"{control}: date text is too long.")
    iso, us = _ISO_DATE.fullmatch(text), _US_DATE.fullmatch(text)
    try:
        if iso is not None:
            return date(*map(int, iso.groups())).isoformat()
        if us is not None:
            month, day, year = map(int, us.groups())
            return date(year, month, day).isoformat()
    except ValueError:  # a day or month out of range
        pass
    raise ValidationError(f"{control}: {value!r} is not a valid date; use YYYY-MM-DD or M/D/YYYY.")


def parse_text(value: object, control: str, *, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValidationError(f"{control}: expected text, got {type(value).__name__}.")
    text = str(value)
    if len(text) > limit:
        raise ValidationError(f"{control}: text is {len(text)} characters; the field holds at most {limit}.")
    return text
