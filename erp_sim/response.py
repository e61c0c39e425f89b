"""The ERP's response envelope, built in one place for every front end.

Key order is part of the observation: ``SessionId`` (when there is a session), ``Result``,
``Messages``, then the payload's keys (``Error`` for a failed call); the session adds
``FormState``, ``MCPActivityId`` and ``DeepLinks`` after them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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


def render(value: Mapping[str, Any]) -> str:
    """Compact JSON, as the real server's .NET serializer writes it (orjson: ~15x faster than json).

    orjson refuses integers beyond 64 bits; the standard library writes them (same bytes otherwise)."""
    import orjson  # here: gym.make imports this module and need not load orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
