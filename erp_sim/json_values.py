"""What a value must be to enter the simulator as tool arguments or an env action: plain JSON.

Apart from ``erp_sim.erp_session`` so that the Gymnasium env can classify actions without loading
the simulator at ``gym.make``.
"""

from __future__ import annotations

import re
from typing import Any

# A JSON object as tools, responses and grades build it: text keys, values of any JSON type (readers
# that need one value's type narrow it, or read it through a model or a TypedDict).
JsonObject = dict[str, Any]
MAX_ARGUMENT_DEPTH = 32
MAX_ARGUMENT_CHARS = 200_000  # of arguments sent as JSON text (the env's action space is as long)
MAX_INT_BITS = 4_000 * 3  # well under Python's 4,300-digit limit on printing integers (~14,000 bits)


_WHOLE_NUMBER = re.compile(r"\s*\d{1,18}\s*", re.ASCII)  # int() would also read "1_0", "+3" or other scripts' digits


def whole_number(value: object) -> int | None:
    """``value`` as a RecId-like whole number: an int, or text of up to 18 ASCII digits; None for anything else
    (a bool, a float, other text)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not _WHOLE_NUMBER.fullmatch(str(value)):
        return None
    return int(value)


def json_value_problem(value: Any, path: str = "arguments", depth: int = 0) -> str | None:
    """What makes ``value`` unfit as tool arguments, or None: only JSON values, no NUL characters
    or lone surrogates in any text (SQLite and UTF-8 refuse them), no integers too long to print,
    no nesting deeper than MAX_ARGUMENT_DEPTH. Checked before any tool sees the arguments."""
    if depth > MAX_ARGUMENT_DEPTH:
        return f"{path}: nested more than {MAX_ARGUMENT_DEPTH} levels deep."
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        if "\x00" in value:
            return f"{path}: text must not contain NUL characters (\\u0000)."
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path}: text must be valid Unicode (it contains a lone surrogate such as \\ud800)."
        return None
    if isinstance(value, int):
        return f"{path}: the integer has too many digits." if value.bit_length() > MAX_INT_BITS else None
    if isinstance(value, float):  # NaN and infinities are the tools' to refuse, naming their field
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path}: keys must be text, got {type(key).__name__}."
            problem = json_value_problem(key, f"{path} key", depth + 1) or json_value_problem(
                item, f"{path}.{key[:40]}", depth + 1
            )
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_value_problem(item, f"{path}[{index}]", depth + 1)
            if problem:
                return problem
        return None
    return f"{path}: {type(value).__name__} is not a JSON value."
