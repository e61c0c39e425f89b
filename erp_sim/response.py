"""The ERP's response envelope, built in one place for every front end.

Key order is part of the observation: ``SessionId`` (when there is a session), ``Result``,
``Messages``, then the payload's keys (``Error`` for a failed call); the session adds
``FormState``, ``MCPActivityId`` and ``DeepLinks`` after them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any

from erp_sim import response_keys as K


def envelope(
    session_id: str | None, result: str, messages: list[dict[str, str]], payload: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``{"SessionId", "Result", "Messages", **payload}``; ``SessionId`` left out when ``session_id`` is None."""
    built: dict[str, Any] = {} if session_id is None else {K.SESSION_ID: session_id}
    built.update({K.RESULT: result, K.MESSAGES: list(messages)})
    if payload:
        built.update(payload)
    return built


def error_message(text: str) -> dict[str, str]:
    """The ``Messages`` entry of a failed call."""
    return {K.LEVEL: K.LEVEL_ERROR, K.TEXT: text}


def error_result(message: str) -> str:
    return f"Error: {message}"


def error_payload(code: str, message: str) -> dict[str, dict[str, str]]:
    return {K.ERROR: {K.CODE: code, K.MESSAGE: message}}


def error_envelope(session_id: str | None, code: str, message: str) -> dict[str, Any]:
    """A call refused before it reached the ERP (an invalid action, an episode that is over)."""
    return envelope(session_id, error_result(message), [error_message(message)], error_payload(code, message))


@cache
def orjson_module() -> ModuleType:
    """orjson, imported on first use: gym.make imports this module and need not load it (tests/test_startup.py,
    scripts/bench_startup.py's first gym.make)."""
    import orjson

    return orjson


def render(value: Mapping[str, Any]) -> str:
    """Compact JSON, as the real server's .NET serializer writes it (orjson: ~15x faster than json).

    orjson refuses integers beyond 64 bits; the standard library writes them (same bytes otherwise)."""
    orjson = orjson_module()
    try:
        written: bytes = orjson.dumps(value)  # typed here: the loader returns the module untyped
        return written.decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# orjson reads an integer past 64 bits as a float: a text holding a run of this many digits (found on a copy
# where each digit is "0" and every other byte a space) is read by json instead.
_LONG_NUMBER = b"0" * 19
_DIGITS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))


def read_json(text: str) -> Any:
    """``json.loads(text)``: the same value, or json's own exception, read by orjson where it gives the same
    (2-3x faster on a form state). orjson refuses what json reads otherwise (NaN, Infinity, 1e400, a lone
    surrogate), and those texts go to json; so do texts with a run of 19 digits (a 64-bit integer's length).
    The one difference: orjson reads nesting up to 1,024 levels, where json raises RecursionError at about
    the interpreter's recursion limit (1,000 frames, fewer the deeper the caller's stack)."""
    orjson = orjson_module()
    raw = text.encode("utf-8", "surrogatepass")
    if _LONG_NUMBER not in raw.translate(_DIGITS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
