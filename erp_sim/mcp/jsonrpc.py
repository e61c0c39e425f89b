"""One check of incoming JSON-RPC 2.0 messages for both transports (stdio lines, HTTP POST bodies).

The SDK answers some malformed messages with a -32602 carrying a pydantic dump, and drops others
without a reply (an ``id`` that is null, a float or an object passes as a notification over HTTP),
so a client waiting on that request hangs; bad params of the common calls get a bare "Invalid
request parameters". ``checked_message`` names what is wrong in one sentence: -32700 when the bytes are
not JSON, -32600 when the JSON is not one message the SDK accepts, -32602 for bad params of
``tools/call``, ``initialize`` and ``logging/setLevel``, with the request's id whenever it has a
usable one.
"""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import mcp_types as types
from pydantic import ValidationError

LEVELS = get_args(types.LoggingLevel)
_SHAPE = (
    'A JSON-RPC 2.0 message is one object with "jsonrpc": "2.0", a string "method", an "id" that is a '
    'string or an integer (none for notifications), and "params" (if any) as an object.'
)


def error_reply(code: int, message: str, ident: Any = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def usable_id(ident: Any) -> bool:
    return isinstance(ident, (str, int)) and not isinstance(ident, bool)


def _shape_problem(data: Any) -> str | None:
    if isinstance(data, list):
        return "batches are not supported (MCP 2025-06-18 removed them); send one message at a time."
    if not isinstance(data, dict):
        return f"the message is a JSON {type(data).__name__}, not an object."
    if data.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0".'
    if "id" in data and not usable_id(data["id"]):
        return '"id" must be a string or an integer (omit it for a notification).'
    if "method" in data and not isinstance(data["method"], str):
        return '"method" must be a string.'
    if "params" in data and not isinstance(data["params"], dict):
        return '"params" must be an object (or left out).'
    if "method" not in data and not ("id" in data and ("result" in data or "error" in data)):
        return 'a message needs a "method" (a request or notification) or an "id" with "result" or "error".'
    return None


def _params_problem(data: dict[str, Any]) -> str | None:
    """What the SDK would refuse with a bare "Invalid request parameters" (no detail), for the calls agents make."""
    params = data.get("params", {})
    meta = params.get("_meta", {})
    if not isinstance(meta, dict):
        return '"params._meta" must be an object.'
    if "progressToken" in meta and not usable_id(meta["progressToken"]):
        return '"params._meta.progressToken" must be a string or an integer.'
    method = data["method"]
    if method == "tools/call":
        if not isinstance(params.get("name"), str):
            return 'tools/call needs "params.name": the name of a tool from tools/list, as a string.'
        if not isinstance(params.get("arguments", {}), (dict, type(None))):
            return '"params.arguments" must be an object of the tool\'s arguments.'
    elif method == "logging/setLevel" and params.get("level") not in LEVELS:
        return f'"params.level" must be one of {", ".join(LEVELS)}.'
    elif method == "initialize":
        try:
            types.InitializeRequestParams.model_validate(params, by_name=False)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return (
                f'"params.{where}": {first["msg"]} (initialize needs protocolVersion, capabilities and clientInfo '
                f"with name and version)."
            )
    return None


def checked_message(raw: bytes) -> tuple[tuple[int, str, Any] | None, Any]:
    """(None if ``raw`` is one well-formed JSON-RPC 2.0 message the SDK accepts, otherwise the error's
    (code, message, id): the HTTP transport picks its status by the code; the message as JSON, None when it
    is not JSON)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return (-32700, "Parse error: the message starts with a byte-order mark; send plain UTF-8 JSON.", None), None
    huge: list[str] = []

    def parse_int(digits: str) -> Any:
        if len(digits.lstrip("-")) > MAX_DIGITS:  # int() would refuse it, and the parse with it: the id would be lost
            huge.append(digits)
            return _HUGE
        return int(digits)

    try:
        data = json.loads(raw, parse_int=parse_int)
    except RecursionError:  # valid JSON, deeper than the parser goes: the id is found by a scan
        return (-32600, f"Invalid Request: the message is nested too deeply. {_SHAPE}", _top_level_id(raw)), None
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        return (-32700, f"Parse error: not valid UTF-8 JSON ({str(exc)[:200]}). {_SHAPE}", None), None
    if huge:  # valid JSON too (it sets no limit), but no argument takes such a number
        ident = data.get("id") if isinstance(data, dict) else None
        reason = f"a number in the message has {len(huge[0].lstrip('-')):,} digits; at most {MAX_DIGITS:,} are taken."
        return (-32600, f"Invalid Request: {reason} {_SHAPE}", ident if usable_id(ident) else None), None
    return _message_problem(raw, data), data


MAX_DIGITS = 4300  # Python's own limit on converting digits to an int (sys.get_int_max_str_digits)
_HUGE = object()  # stands for a longer number: no usable id, never passed on
# JSON strings and brackets, in order: enough to know each key's depth without parsing (a message too deep to parse).
# Possessive, and a string left open runs to the end: one pass, never a retry from every quote inside it.
_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*+(?:"|\\?$)|[\[\]{}]')
ID_SCAN_BYTES = 4096  # where a client puts a message's id (first, or after jsonrpc and method): the scan's bound
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,19}|"(?:[^"\\]|\\.)*")\s*[,}]')


def _top_level_id(raw: bytes) -> Any:
    """The top-level "id" of a message too deep to parse, if it is a usable one and within its first
    ``ID_SCAN_BYTES`` (else None): the scan runs on the event loop, so its work is bounded whatever was sent."""
    depth = 0
    for token in _STRUCTURE.finditer(raw, 0, ID_SCAN_BYTES):
        text = token.group()
        if text in (b"{", b"["):
            depth += 1
        elif text in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and text == b'"id"' and (value := _ID_VALUE.match(raw, token.end())) is not None:
            try:
                ident = json.loads(value.group(1))
            except ValueError:
                return None
            return ident if usable_id(ident) else None
    return None


def _message_problem(raw: bytes, data: Any) -> tuple[int, str, Any] | None:
    ident = data.get("id") if isinstance(data, dict) else None
    ident = ident if usable_id(ident) else None
    if (shape := _shape_problem(data)) is not None:
        return -32600, f"Invalid Request: {shape} {_SHAPE}", ident
    if "method" in data and "id" in data and (params := _params_problem(data)) is not None:
        return -32602, f"Invalid params: {params}", ident
    try:
        types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        return None
    except ValidationError as exc:
        error = exc.errors()[0]
    if error["type"] == "json_invalid":  # json took it, the SDK's parser did not: lone surrogates, deep nesting
        reason = error["msg"].removeprefix("Invalid JSON: ")
        reason += " (strings must be valid Unicode, no lone surrogates)." if "escape" in reason else "."
    else:
        reason = "the message is not a JSON-RPC 2.0 request, notification or response."
    return -32600, f"Invalid Request: {reason} {_SHAPE}", ident
