"""What Anthropic's Messages API refuses, as the fake Messages server checks it.

``rejection(body, model)`` returns ``None`` for a request the API would accept, else the ``message`` of its
HTTP 400 ``invalid_request_error``. The fields are the API's as the ``anthropic`` SDK 2.x types them
(``MessageCreateParams``, the block params), plus ``temperature``, ``top_p`` and ``top_k``, which the API
still takes on models with sampling options and the 1.x SDKs send in ``extra_body``. The wording copies
the API's errors (``Field required``, ``Extra inputs are not permitted``, the ``tool_use``/``tool_result``
pairing, the breakpoint count), so a test can match what a real run would log.

One rule is stricter than today's API, on purpose: user and assistant turns must alternate. The API
refused consecutive turns of one role until 2024 (the wording below is its); it now combines them, but
the harness promises alternation on every backend (``erp_sim.agents.models.turns``), for the chat
templates that still refuse them, and this fake holds it to that promise.
"""

from __future__ import annotations

import re
from typing import Any

from strict_request_support import Rejected, check_keys, refusal

REQUEST_KEYS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "cache_control",
        "container",
        "diagnostics",
        "inference_geo",
        "metadata",
        "output_config",
        "service_tier",
        "speed",
        "stop_sequences",
        "stream",
        "system",
        "thinking",
        "tool_choice",
        "tools",
        "user_profile_id",
        "workspace_id",
        "temperature",
        "top_p",
        "top_k",
    }
)
BLOCK_KEYS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control", "caller", "toolset_name"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
REQUIRED_BLOCK_KEYS = {
    "text": ("text",),
    "tool_use": ("id", "name", "input"),
    "tool_result": ("tool_use_id",),
    "thinking": ("thinking", "signature"),
    "redacted_thinking": ("data",),
}
TOOL_KEYS = frozenset(
    {
        "name",
        "description",
        "input_schema",
        "cache_control",
        "type",
        "strict",
        "allowed_callers",
        "defer_loading",
        "eager_input_streaming",
        "input_examples",
    }
)
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_BREAKPOINTS = 4
# models that refuse temperature and top_p together (every Claude 4.5 and later, as the API words it)
NO_TEMPERATURE_WITH_TOP_P = re.compile(r"claude-(?:sonnet|opus|haiku)-4-[5-9]|claude-(?:sonnet|opus|haiku)-[5-9]")


def rejection(body: Any) -> str | None:
    """The API's 400 message for ``body``, or None when it would accept it."""
    refused = refusal(_check, body)
    return None if refused is None else refused.message


def _check(body: Any) -> None:
    check_keys(
        body,
        REQUEST_KEYS,
        "There was an error parsing the body of your request.",
        lambda key: Rejected(f"{key}: Extra inputs are not permitted"),
    )
    for key in ("model", "messages", "max_tokens"):
        if key not in body:
            raise Rejected(f"{key}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise Rejected("model: Input should be a valid string")
    _integer("max_tokens", body["max_tokens"], 1)
    _sampling(body)
    breakpoints = 0
    if "system" in body:
        breakpoints += _system(body["system"])
    if "tools" in body:
        breakpoints += _tools(body["tools"])
    elif body.get("tool_choice") is not None:
        raise Rejected("tool_choice: tool_choice may only be specified while providing tools")
    breakpoints += _messages(body["messages"])
    if breakpoints > MAX_BREAKPOINTS:
        raise Rejected(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )


def _integer(where: str, value: Any, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Rejected(f"{where}: Input should be a valid integer")
    if value < low:
        raise Rejected(f"{where}: Input should be greater than or equal to {low}")


def _sampling(body: dict[str, Any]) -> None:
    for key, high in (("temperature", 1), ("top_p", 1)):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Rejected(f"{key}: Input should be a valid number")
        if not 0 <= value <= high:
            raise Rejected(
                f"{key}: Input should be {'less' if value > high else 'greater'} than or equal to {high if value > high else 0}"
            )
    if body.get("top_k") is not None:
        _integer("top_k", body["top_k"], 0)
    if (
        body.get("temperature") is not None
        and body.get("top_p") is not None
        and NO_TEMPERATURE_WITH_TOP_P.search(body["model"])
    ):
        raise Rejected("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")


def _system(system: Any) -> int:
    if isinstance(system, str):
        return 0
    if not isinstance(system, list):
        raise Rejected("system: Input should be a valid list")
    breakpoints = 0
    for index, block in enumerate(system):
        where = f"system.{index}"
        if not isinstance(block, dict) or block.get("type") != "text":
            raise Rejected(f"{where}: Input should be a valid dictionary or object to extract fields from")
        breakpoints += _block(block, where)
    return breakpoints


def _tools(tools: Any) -> int:
    if not isinstance(tools, list):
        raise Rejected("tools: Input should be a valid list")
    breakpoints, names = 0, set()
    for index, tool in enumerate(tools):
        where = f"tools.{index}"
        if not isinstance(tool, dict):
            raise Rejected(f"{where}: Input should be a valid dictionary or object to extract fields from")
        for key in tool:
            if key not in TOOL_KEYS:
                raise Rejected(f"{where}.custom.{key}: Extra inputs are not permitted")
        for key in ("name", "input_schema"):
            if key not in tool:
                raise Rejected(f"{where}.custom.{key}: Field required")
        if not isinstance(tool["name"], str) or not TOOL_NAME.match(tool["name"]):
            raise Rejected(f"{where}.custom.name: String should match pattern '{TOOL_NAME.pattern}'")
        if tool["name"] in names:
            raise Rejected("tools: Tool names must be unique.")
        names.add(tool["name"])
        schema = tool["input_schema"]
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise Rejected(f"{where}.custom.input_schema.type: Input should be 'object'")
        breakpoints += _cache_control(tool, f"{where}.custom")
    return breakpoints


def _messages(messages: Any) -> int:
    if not isinstance(messages, list):
        raise Rejected("messages: Input should be a valid list")
    if not messages:
        raise Rejected("messages: at least one message is required")
    breakpoints = 0
    previous_role = None
    pending: list[str] = []  # tool_use ids of the assistant message just before
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict):
            raise Rejected(f"{where}: Input should be a valid dictionary or object to extract fields from")
        for key in message:
            if key not in ("role", "content"):
                raise Rejected(f"{where}.{key}: Extra inputs are not permitted")
        for key in ("role", "content"):
            if key not in message:
                raise Rejected(f"{where}.{key}: Field required")
        role = message["role"]
        if role not in ("user", "assistant"):
            raise Rejected(f"{where}.role: Input should be 'user' or 'assistant'")
        if index == 0 and role != "user":
            raise Rejected('messages: first message must use the "user" role')
        if role == previous_role:
            raise Rejected(
                f'messages: roles must alternate between "user" and "assistant", but found multiple "{role}" roles in a row'
            )
        blocks = _content(message["content"], where, role)
        breakpoints += sum(_block(block, f"{where}.content.{i}") for i, block in enumerate(blocks))
        if pending:
            _answers(pending, blocks, index - 1, where)
        elif role == "user":
            for position, block in enumerate(blocks):
                if block.get("type") == "tool_result":
                    raise _unexpected_result(f"{where}.content.{position}", block.get("tool_use_id"))
        pending = [block["id"] for block in blocks if block.get("type") == "tool_use"] if role == "assistant" else []
        previous_role = role
    if pending:
        raise _unanswered(len(messages) - 1, pending)
    return breakpoints


EMPTY_MESSAGE = "messages: all messages must have non-empty content except for the optional final assistant message"
ROLE_BLOCKS = {"user": ("text", "tool_result"), "assistant": ("text", "tool_use", "thinking", "redacted_thinking")}


def _content(content: Any, where: str, role: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        if not content:
            raise Rejected(EMPTY_MESSAGE)
        if not content.strip():
            raise Rejected("messages: text content blocks must contain non-whitespace text")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise Rejected(f"{where}.content: Input should be a valid list")
    if not content:
        raise Rejected(EMPTY_MESSAGE)
    for position, block in enumerate(content):
        at = f"{where}.content.{position}"
        if not isinstance(block, dict):
            raise Rejected(f"{at}: Input should be a valid dictionary or object to extract fields from")
        if block.get("type") not in ROLE_BLOCKS[role]:
            raise Rejected(
                f"{at}: Input tag '{block.get('type')}' found using 'type' does not match any of the expected "
                "tags: " + ", ".join(f"'{tag}'" for tag in ROLE_BLOCKS[role])
            )
    return content


def _block(block: dict[str, Any], where: str) -> int:
    kind = block.get("type")
    allowed = BLOCK_KEYS.get(kind or "", frozenset())
    for key in block:
        if key not in allowed:
            raise Rejected(f"{where}.{kind}.{key}: Extra inputs are not permitted")
    for key in REQUIRED_BLOCK_KEYS.get(kind or "", ()):
        if key not in block:
            raise Rejected(f"{where}.{kind}.{key}: Field required")
    if kind == "text":
        if not isinstance(block["text"], str):
            raise Rejected(f"{where}.text.text: Input should be a valid string")
        if not block["text"]:
            raise Rejected("messages: text content blocks must be non-empty")
        if not block["text"].strip():
            raise Rejected("messages: text content blocks must contain non-whitespace text")
    if kind == "tool_use":
        if not isinstance(block["id"], str) or not TOOL_USE_ID.match(block["id"]):
            raise Rejected(f"{where}.tool_use.id: String should match pattern '{TOOL_USE_ID.pattern}'")
        if not isinstance(block["input"], dict):
            raise Rejected(f"{where}.tool_use.input: Input should be a valid dictionary")
    if kind == "tool_result":
        content = block.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise Rejected(f"{where}.tool_result.content: Input should be a valid string")
    return _cache_control(block, f"{where}.{kind}")


def _cache_control(item: dict[str, Any], where: str) -> int:
    control = item.get("cache_control")
    if control is None:
        return 0
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        raise Rejected(f"{where}.cache_control.type: Input should be 'ephemeral'")
    for key in control:
        if key not in ("type", "ttl"):
            raise Rejected(f"{where}.cache_control.ephemeral.{key}: Extra inputs are not permitted")
    if control.get("ttl", "5m") not in ("5m", "1h"):
        raise Rejected(f"{where}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'")
    return 1


def _answers(pending: list[str], blocks: list[dict[str, Any]], asked_at: int, where: str) -> None:
    """The message after an assistant's tool_use blocks starts with a tool_result for each of them."""
    answered = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break  # tool results come first: anything after the first other block is too late
        answered.append(block.get("tool_use_id"))
    missing = [call for call in pending if call not in answered]
    if missing:
        raise _unanswered(asked_at, missing)
    for position, block in enumerate(blocks):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in pending:
            raise _unexpected_result(f"{where}.content.{position}", block.get("tool_use_id"))


def _unanswered(index: int, ids: list[str]) -> Rejected:
    return Rejected(
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def _unexpected_result(where: str, tool_use_id: Any) -> Rejected:
    return Rejected(
        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_use_id}. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    )
