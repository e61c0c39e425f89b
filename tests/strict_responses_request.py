"""What OpenAI's Responses API refuses, as the fake Responses server checks it.

``rejection(body, issued)`` returns None for a request the API would accept, else ``(status, message,
param, code)`` of its error. The keys are the ``openai`` package's ``ResponseCreateParams`` and its input
item params; the wording copies the API's (``Unknown parameter``, the pairing of ``function_call`` and
``function_call_output`` items by ``call_id``, reasoning items without their encrypted content under
``store: false``, a reasoning item without the item that follows it, a function call without the
reasoning item it came with). ``issued`` is what the server answered before: the encrypted contents it
gave, and which reasoning item each function call and message came with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from strict_request_support import Rejected, check_keys, refusal

REQUEST_KEYS = frozenset(
    {
        "access_programs",
        "background",
        "background_options",
        "context_management",
        "conversation",
        "image",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "model",
        "moderation",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    }
)
ITEM_KEYS = {
    "message": frozenset({"type", "role", "content", "phase", "id", "status"}),
    "function_call": frozenset({"type", "call_id", "name", "arguments", "id", "status", "caller", "namespace"}),
    "function_call_output": frozenset({"type", "call_id", "output", "id", "status"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
}
REQUIRED_ITEM_KEYS = {
    "function_call": ("call_id", "name", "arguments"),
    "function_call_output": ("call_id", "output"),
    "reasoning": ("id", "summary"),
}
TOOL_KEYS = frozenset({"type", "name", "description", "parameters", "strict", "allowed_callers", "defer_loading"})
INCLUDABLE = frozenset(
    {
        "reasoning.encrypted_content",
        "message.output_text.logprobs",
        "file_search_call.results",
        "web_search_call.action.sources",
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "message.input_image.image_url",
    }
)
REASONING_MODEL = re.compile(r"^(?:o\d|gpt-5)", re.IGNORECASE)
MIN_OUTPUT_TOKENS = 16


@dataclass
class Issued:
    """What the server answered earlier: encrypted reasoning it gave, and the reasoning each item came with."""

    encrypted: dict[str, str] = field(default_factory=dict)  # reasoning item id -> its encrypted content
    reasoning_of: dict[str, str] = field(default_factory=dict)  # function call or message item id -> reasoning id


def rejection(body: Any, issued: Issued | None = None) -> tuple[int, str, str | None, str | None] | None:
    refused = refusal(_check, body, issued or Issued())
    return None if refused is None else (refused.status, refused.message, refused.param, refused.code)


def _check(body: Any, issued: Issued) -> None:
    check_keys(
        body,
        REQUEST_KEYS,
        "We could not parse the JSON body of your request.",
        lambda key: Rejected(f"Unknown parameter: '{key}'.", key, "unknown_parameter"),
    )
    if "model" not in body:
        raise Rejected("Missing required parameter: 'model'.", "model", "missing_required_parameter")
    model = str(body["model"])
    if body.get("temperature") is not None and REASONING_MODEL.match(model):
        raise Rejected(
            "Unsupported parameter: 'temperature' is not supported with this model.",
            "temperature",
            "unsupported_parameter",
        )
    limit = body.get("max_output_tokens")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < MIN_OUTPUT_TOKENS):
        raise Rejected(
            f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= {MIN_OUTPUT_TOKENS}, "
            f"but got {limit} instead.",
            "max_output_tokens",
            "integer_below_min_value",
        )
    for value in body.get("include") or ():
        if value not in INCLUDABLE:
            raise Rejected(f"Invalid value: '{value}'.", "include", "invalid_value")
    _tools(body.get("tools"))
    items = body.get("input")
    if items is None:
        raise Rejected("Missing required parameter: 'input'.", "input", "missing_required_parameter")
    if isinstance(items, list):
        _items(items, body.get("store", True) is False, issued)


def _tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Rejected("Invalid type for 'tools': expected an array.", "tools", "invalid_type")
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            continue  # built-in tools are another schema
        for key in tool:
            if key not in TOOL_KEYS:
                raise Rejected(f"Unknown parameter: '{where}.{key}'.", f"{where}.{key}", "unknown_parameter")
        if not tool.get("name"):
            raise Rejected(
                f"Missing required parameter: '{where}.name'.", f"{where}.name", "missing_required_parameter"
            )


def _items(items: list[Any], stateless: bool, issued: Issued) -> None:
    calls: set[str] = set()
    answered: set[str] = set()
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise Rejected(f"Invalid type for '{where}': expected an object.", where, "invalid_type")
        kind = item.get("type", "message")
        if kind not in ITEM_KEYS:
            raise Rejected(f"Invalid value: '{kind}'.", f"{where}.type", "invalid_value")
        for key in item:
            if key not in ITEM_KEYS[kind]:
                raise Rejected(f"Unknown parameter: '{where}.{key}'.", f"{where}.{key}", "unknown_parameter")
        for key in REQUIRED_ITEM_KEYS.get(kind, ("role", "content")):
            if key not in item:
                raise Rejected(
                    f"Missing required parameter: '{where}.{key}'.", f"{where}.{key}", "missing_required_parameter"
                )
        if kind == "message":
            _message(item, where)
        elif kind == "function_call":
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            if item["call_id"] not in calls:
                raise Rejected(f"No tool call found for function call output with call_id {item['call_id']}.", "input")
            answered.add(item["call_id"])
        else:
            _reasoning(items, index, stateless, issued)
        paired = issued.reasoning_of.get(str(item.get("id")))
        if (
            kind != "reasoning"
            and paired is not None
            and not any(
                i.get("type") == "reasoning" and i.get("id") == paired for i in items[:index] if isinstance(i, dict)
            )
        ):
            raise Rejected(
                f"Item '{item['id']}' of type '{kind}' was provided without its required 'reasoning' item: '{paired}'.",
                "input",
            )
    for call in calls - answered:
        raise Rejected(f"No tool output found for function call {call}.", "input")


def _message(item: dict[str, Any], where: str) -> None:
    role = item["role"]
    if role not in ("user", "assistant", "system", "developer"):
        raise Rejected(f"Invalid value: '{role}'.", f"{where}.role", "invalid_value")
    if item.get("type") == "message" and "id" in item and "status" not in item:
        raise Rejected(
            f"Missing required parameter: '{where}.status'.", f"{where}.status", "missing_required_parameter"
        )
    content = item["content"]
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Rejected(f"Invalid type for '{where}.content': expected one of a string or array.", f"{where}.content")
    allowed = ("output_text", "refusal") if role == "assistant" else ("input_text", "input_image", "input_file")
    for position, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in allowed:
            kind = part.get("type") if isinstance(part, dict) else None
            raise Rejected(
                f"Invalid value: '{kind}'. Supported values are: " + " and ".join(f"'{a}'" for a in allowed) + ".",
                f"{where}.content[{position}].type",
                "invalid_value",
            )


def _reasoning(items: list[Any], index: int, stateless: bool, issued: Issued) -> None:
    item = items[index]
    encrypted = item.get("encrypted_content")
    if encrypted is None and stateless:
        raise Rejected(
            f"Item with id '{item['id']}' not found. Items are not persisted when `store` is set to false. "
            "Try again with `store` set to true, or remove this item from your input.",
            "input",
            status=404,
        )
    if encrypted is not None and issued.encrypted.get(item["id"]) != encrypted:
        raise Rejected(f"The encrypted content for item {item['id']} could not be verified.", "input")
    following = items[index + 1] if index + 1 < len(items) else None
    if not isinstance(following, dict) or issued.reasoning_of.get(str(following.get("id"))) != item["id"]:
        raise Rejected(
            f"Item '{item['id']}' of type 'reasoning' was provided without its required following item.", "input"
        )
