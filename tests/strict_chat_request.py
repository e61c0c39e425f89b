"""What the real Chat Completions API refuses, as the fake server checks it.

``rejection(body)`` returns ``None`` for a request the API would accept, else the
``{"message", "param", "code"}`` of its HTTP 400 answer. The rules follow openai-python's
request types (``completion_create_params``, the message params) and the API's own
server-side checks (tool-call ordering, numeric ranges, name patterns); the wording copies
the API's, typo ("preceeding") included, so a test can match what a real run would log.
Only refusals the API makes are here: a looser fake hides bugs, a stricter one invents them.
"""

from __future__ import annotations

import re
from typing import Any

from strict_request_support import Rejected, check_keys, refusal

# openai-python 1.x/2.x ``CompletionCreateParams`` keys (``stream`` included: we send False).
REQUEST_KEYS = frozenset(
    {
        "messages",
        "model",
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "metadata",
        "modalities",
        "moderation",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
# The keys each role's message param allows, and the content-part types it takes.
MESSAGE_KEYS = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal", "function_call", "audio"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
    "function": frozenset({"role", "content", "name"}),
}
PART_TYPES = {
    "system": ("text",),
    "developer": ("text",),
    "tool": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
PART_FIELD = {
    "text": "text",
    "refusal": "refusal",
    "image_url": "image_url",
    "input_audio": "input_audio",
    "file": "file",
}
ROLES = ("system", "assistant", "user", "function", "tool", "developer")
MESSAGE_NAME = re.compile(r"^[^\s<|\\/>]+$")
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_FUNCTION_NAME = 64
MAX_TOOLS = 128
# parameter -> (minimum, maximum, integer?) as the API bounds them
NUMERIC_RANGES = {
    "temperature": (0, 2, False),
    "top_p": (0, 1, False),
    "presence_penalty": (-2, 2, False),
    "frequency_penalty": (-2, 2, False),
    "n": (1, None, True),
    "max_tokens": (1, None, True),
    "max_completion_tokens": (1, None, True),
    "top_logprobs": (0, 20, True),
}
ONLY_WITH_TOOLS = ("tool_choice", "parallel_tool_calls")
UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)
ORPHAN_TOOL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)


def rejection(body: Any) -> dict[str, Any] | None:
    """The API's 400 error for ``body`` (``{"message", "param", "code"}``), or None when it would be accepted."""
    refused = refusal(_check_request, body)
    return None if refused is None else {"message": refused.message, "param": refused.param, "code": refused.code}


def _check_request(body: Any) -> None:
    check_keys(
        body,
        REQUEST_KEYS,
        "We could not parse the JSON body of your request.",
        lambda key: Rejected(f"Unrecognized request argument supplied: {key}"),
    )
    if "model" not in body:
        raise Rejected("you must provide a model parameter")
    if not isinstance(body["model"], str):
        raise _invalid_type("model", "a string", body["model"])
    if "messages" not in body:
        raise Rejected("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _invalid_type("messages", "an array", messages)
    if not messages:
        raise _empty_array("messages")
    for index, message in enumerate(messages):
        _check_message(message, f"messages[{index}]")
    _check_tool_call_order(messages)
    _check_tools(body)
    _check_numbers(body)


def _check_message(message: Any, where: str) -> None:
    if not isinstance(message, dict):
        raise _invalid_type(where, "an object", message)
    if "role" not in message:
        raise Rejected(f"Missing required parameter: '{where}.role'.", f"{where}.role", "missing_required_parameter")
    role = message["role"]
    if role not in ROLES:
        raise Rejected(
            f"Invalid value: {_repr(role)}. Supported values are: "
            + ", ".join(f"'{r}'" for r in ROLES[:-1])
            + f", and '{ROLES[-1]}'.",
            f"{where}.role",
            "invalid_value",
        )
    _no_extra_keys(message, MESSAGE_KEYS[role], where)
    if "name" in message:
        name = message["name"]
        if not isinstance(name, str):
            raise _invalid_type(f"{where}.name", "a string", name)
        if not MESSAGE_NAME.match(name):
            raise Rejected(
                f"Invalid '{where}.name': string does not match pattern. Expected a string that matches "
                f"the pattern '{MESSAGE_NAME.pattern}'.",
                f"{where}.name",
                "invalid_value",
            )
    if role == "assistant":
        if message.get("tool_calls") is not None:
            _check_tool_calls(message["tool_calls"], f"{where}.tool_calls")
        if message.get("content") is None and not message.get("tool_calls") and message.get("function_call") is None:
            raise Rejected("Invalid value for 'content': expected a string, got null.", f"{where}.content")
        if message.get("content") is not None:
            _check_content(message["content"], role, f"{where}.content")
        return
    if role == "tool" and "tool_call_id" not in message:
        raise Rejected(
            f"Missing required parameter: '{where}.tool_call_id'.",
            f"{where}.tool_call_id",
            "missing_required_parameter",
        )
    if role == "tool" and not isinstance(message["tool_call_id"], str):
        raise _invalid_type(f"{where}.tool_call_id", "a string", message["tool_call_id"])
    if "content" not in message:
        raise Rejected(
            f"Missing required parameter: '{where}.content'.", f"{where}.content", "missing_required_parameter"
        )
    if role == "function":
        if message["content"] is not None and not isinstance(message["content"], str):
            raise _invalid_type(f"{where}.content", "a string", message["content"])
        return
    _check_content(message["content"], role, f"{where}.content")


def _check_content(content: Any, role: str, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _invalid_type(where, "one of a string or array of objects", content)
    allowed = PART_TYPES[role]
    for index, part in enumerate(content):
        at = f"{where}[{index}]"
        if not isinstance(part, dict):
            raise _invalid_type(at, "an object", part)
        kind = part.get("type")
        if kind not in allowed:
            raise Rejected(
                f"Invalid value: {_repr(kind)}. Supported values are: " + " and ".join(f"'{k}'" for k in allowed) + ".",
                f"{at}.type",
                "invalid_value",
            )
        field = PART_FIELD[kind]
        _no_extra_keys(part, ("type", field), at)
        if field not in part:
            raise Rejected(
                f"Missing required parameter: '{at}.{field}'.", f"{at}.{field}", "missing_required_parameter"
            )
        expected_string = kind in ("text", "refusal")
        if expected_string != isinstance(part[field], str) or (
            not expected_string and not isinstance(part[field], dict)
        ):
            raise _invalid_type(f"{at}.{field}", "a string" if expected_string else "an object", part[field])


def _check_tool_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise _invalid_type(where, "an array", calls)
    if not calls:
        raise _empty_array(where)
    for index, call in enumerate(calls):
        at = f"{where}[{index}]"
        kind = _typed_item(call, at, ("id",))
        if not isinstance(call["id"], str):
            raise _invalid_type(f"{at}.id", "a string", call["id"])
        fields = ("name", "arguments") if kind == "function" else ("name", "input")
        inner = call[kind]
        if not isinstance(inner, dict):
            raise _invalid_type(f"{at}.{kind}", "an object", inner)
        _no_extra_keys(inner, fields, f"{at}.{kind}")
        for field in fields:
            if field not in inner:
                raise Rejected(
                    f"Missing required parameter: '{at}.{kind}.{field}'.",
                    f"{at}.{kind}.{field}",
                    "missing_required_parameter",
                )
            if not isinstance(inner[field], str):
                raise _invalid_type(f"{at}.{kind}.{field}", "a string", inner[field])


def _check_tool_call_order(messages: list[dict[str, Any]]) -> None:
    """Tool results answer the assistant message just before them, and all of its calls, before anything else."""
    group: list[str] = []  # the call ids of the assistant message the current run of tool messages answers
    pending: dict[str, int] = {}  # id -> index of the assistant message that made the call
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            if message["tool_call_id"] not in group:
                raise Rejected(ORPHAN_TOOL, f"messages.[{index}].role")
            pending.pop(message["tool_call_id"], None)
            continue
        _refuse_unanswered(pending)
        group = [call["id"] for call in message.get("tool_calls") or []] if message["role"] == "assistant" else []
        pending = dict.fromkeys(group, index)
    _refuse_unanswered(pending)


def _refuse_unanswered(pending: dict[str, int]) -> None:
    if pending:
        at = next(iter(pending.values()))
        raise Rejected(UNANSWERED + ", ".join(pending), f"messages.[{at}].role")


def _check_tools(body: dict[str, Any]) -> None:
    if "tools" not in body or body["tools"] is None:
        for key in ONLY_WITH_TOOLS:
            if body.get(key) is not None:
                raise Rejected(f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are specified.", key)
        return
    tools = body["tools"]
    if not isinstance(tools, list):
        raise _invalid_type("tools", "an array", tools)
    if not tools:
        raise _empty_array("tools")
    if len(tools) > MAX_TOOLS:
        raise Rejected(
            f"Invalid 'tools': array too long. Expected an array with maximum length {MAX_TOOLS}, but got an "
            f"array with length {len(tools)} instead.",
            "tools",
            "array_above_max_length",
        )
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        at = f"tools[{index}]"
        kind = _typed_item(tool, at, ())
        name = _check_function(tool[kind], kind, f"{at}.{kind}")
        if name in seen:
            raise Rejected(f"Invalid 'tools': duplicate function name '{name}'. Tool names must be unique.", "tools")
        seen.add(name)


def _no_extra_keys(item: dict[str, Any], allowed: Any, where: str) -> None:
    extra = [key for key in item if key not in allowed]
    if extra:  # the API words it as JSON Schema does, the path dotted ('messages.2')
        unexpected = ", ".join(f"'{key}'" for key in extra) + (" was" if len(extra) == 1 else " were")
        dotted = where.replace("[", ".").replace("]", "")
        raise Rejected(f"Additional properties are not allowed ({unexpected} unexpected) - '{dotted}'")


def _typed_item(item: Any, at: str, keys: tuple[str, ...]) -> str:
    """A tool or tool call: ``{"type": "function"|"custom", <type>: {...}, *keys}`` and nothing else; its type."""
    if not isinstance(item, dict):
        raise _invalid_type(at, "an object", item)
    kind = item.get("type")
    if kind not in ("function", "custom"):
        raise Rejected(
            f"Invalid value: {_repr(kind)}. Supported values are: 'function' and 'custom'.",
            f"{at}.type",
            "invalid_value",
        )
    for key in (*keys, kind):
        if key not in item:
            raise Rejected(f"Missing required parameter: '{at}.{key}'.", f"{at}.{key}", "missing_required_parameter")
    _no_extra_keys(item, (*keys, "type", kind), at)
    return kind


def _check_function(function: Any, kind: str, where: str) -> str:
    if not isinstance(function, dict):
        raise _invalid_type(where, "an object", function)
    allowed = (
        ("name", "description", "parameters", "strict") if kind == "function" else ("name", "description", "format")
    )
    _no_extra_keys(function, allowed, where)
    if "name" not in function:
        raise Rejected(f"Missing required parameter: '{where}.name'.", f"{where}.name", "missing_required_parameter")
    name = function["name"]
    if not isinstance(name, str):
        raise _invalid_type(f"{where}.name", "a string", name)
    if not name:
        raise Rejected(
            f"Invalid '{where}.name': empty string. Expected a string with minimum length 1, but got an "
            "empty string instead.",
            f"{where}.name",
            "empty_string",
        )
    if len(name) > MAX_FUNCTION_NAME:
        raise Rejected(
            f"Invalid '{where}.name': string too long. Expected a string with maximum length "
            f"{MAX_FUNCTION_NAME}, but got a string with length {len(name)} instead.",
            f"{where}.name",
            "string_above_max_length",
        )
    if not FUNCTION_NAME.match(name):
        raise Rejected(
            f"Invalid '{where}.name': string does not match pattern. Expected a string that matches the "
            f"pattern '{FUNCTION_NAME.pattern}'.",
            f"{where}.name",
            "invalid_value",
        )
    if "description" in function and not isinstance(function["description"], str):
        raise _invalid_type(f"{where}.description", "a string", function["description"])
    if "strict" in function and function["strict"] is not None and not isinstance(function["strict"], bool):
        raise _invalid_type(f"{where}.strict", "a boolean", function["strict"])
    if kind == "function" and "parameters" in function:
        parameters = function["parameters"]
        if not isinstance(parameters, dict):
            raise _invalid_type(f"{where}.parameters", "an object", parameters)
        if parameters.get("type") != "object":
            got = f'type: "{parameters["type"]}"' if "type" in parameters else "None"
            raise Rejected(
                f"Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', "
                f"got '{got}'.",
                f"{where}.parameters",
                "invalid_function_parameters",
            )
    return name


def _check_numbers(body: dict[str, Any]) -> None:
    if body.get("seed") is not None and not _is_integer(body["seed"]):
        raise _invalid_type("seed", "an integer", body["seed"])
    for key, (low, high, integer) in NUMERIC_RANGES.items():
        value = body.get(key)
        if value is None:
            continue
        if integer and not _is_integer(value):
            raise _invalid_type(key, "an integer", value)
        if not integer and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _invalid_type(key, "a number", value)
        kind = "integer" if integer else "decimal"
        if low is not None and value < low:
            raise Rejected(
                f"Invalid '{key}': {kind} below minimum value. Expected a value >= {low}, but got {value} instead.",
                key,
                f"{kind}_below_min_value",
            )
        if high is not None and value > high:
            raise Rejected(
                f"Invalid '{key}': {kind} above maximum value. Expected a value <= {high}, but got {value} instead.",
                key,
                f"{kind}_above_max_value",
            )


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _invalid_type(param: str, expected: str, value: Any) -> Rejected:
    return Rejected(
        f"Invalid type for '{param}': expected {expected}, but got {_json_type(value)} instead.", param, "invalid_type"
    )


def _empty_array(param: str) -> Rejected:
    return Rejected(
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        param,
        "empty_array",
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _repr(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)
