"""Claude through Anthropic's Messages API (the ``anthropic`` SDK: ``pip install 'erp-sim[anthropic]'``).

Requests as the API takes them: the system prompt at the top level, tools as ``name``/``description``/
``input_schema``, one user turn and one assistant turn after the other (the merge rule of ``turns``: tool
results are ``tool_result`` blocks at the start of the user's turn, a tool call is a ``tool_use`` block
with its arguments as an object), and ``max_tokens`` always (the role's default unless ``--model-param``
sets it). The answer comes back as the harness's assistant message: text, ``tool_calls`` from the
``tool_use`` blocks, and any ``thinking`` blocks under ``provider_items`` (sent back with the step they
belong to, as the API requires while thinking is on; ``reasoning_items=drop`` leaves them out).

Prompt caching: the API caches a request only up to its ``cache_control`` breakpoints (at most 4). With
``cache_breakpoints="auto"`` (the default) they go where the sender said its next request will start the
same (``stable_prefix``: the context policy's claim, or the LLM user's, all of its conversation; a request
without one, a summarizer's or an optimizer's: its system prompt): the longest claimed prefix first (what the next request reads), then the longest prefix the last
request claimed that this one starts with (where this request reads what that one wrote, at no write), the
shortest claimed (the most durable), then the other claims, longest first. ``"none"`` sends no breakpoint. The usage's ``cache_read_input_tokens`` is the call's cached input
and ``cache_creation_input_tokens`` its cache write; the input the row counts is all three parts.

Failures follow the shared table (``backend``): ``overloaded_error`` (529) is an outage, retried; 413
``request_too_large`` a refused request; "prompt is too long" a scored ``context_overflow``; an answer cut
by ``max_tokens`` has the finish reason ``length``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Unpack

from erp_sim.agents.models.backend import (
    ApiModel,
    CallFailure,
    CallOptions,
    LoopClients,
    UnusableResponse,
    assistant_message,
    http_failure,
    no_answer,
    reported,
    resolve_api_key,
    said,
    switch_value,
    tool_call,
)
from erp_sim.agents.models.roles import public_url
from erp_sim.agents.models.stable_prefix import reused_prefixes, stable_prefixes
from erp_sim.agents.models.turns import Turn, joined_content, turns
from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import ChatResponse, Message, ToolSchema, Usage

API = "anthropic"
MAX_BREAKPOINTS = 4
CACHE_CONTROL = {"type": "ephemeral"}
CACHE_BREAKPOINTS = ("auto", "none")
REASONING_ITEMS = ("keep", "drop")
ONLY_WITH_TOOLS = frozenset({"tool_choice"})
# what the API's stop reasons mean in the harness's (OpenAI's) words; an unknown one is kept as it is
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
THINKING_BLOCKS = ("thinking", "redacted_thinking")


def _sdk():
    """The anthropic SDK, imported on first use: the anthropic extra, which a replay does not need."""
    try:
        import anthropic
    except ImportError:
        raise ValueError(
            "anthropic: models need the anthropic SDK: pip install 'erp-sim[anthropic]' (a replay does not)"
        ) from None
    return anthropic


class AnthropicMessagesModel(ApiModel):
    """``ChatModel`` over the Messages API. ``extra_params`` go in every request body (``max_tokens``,
    ``temperature``, ``top_p``, ``stop_sequences``, ``tool_choice``, ``thinking`` ...), and
    ``cache_breakpoints`` and ``reasoning_items`` are switches of ours (module docstring), never sent."""

    api = API

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        max_tokens: int = 4096,
        temperature: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
        cache_breakpoints: str = "auto",
        reasoning_items: str = "keep",
        **options: Unpack[CallOptions],
    ):
        anthropic = _sdk()
        super().__init__(model, **options)
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None  # the SDK's own default
        params = dict(extra_params or {})
        self.cache_breakpoints = switch_value(
            "cache_breakpoints", params.pop("cache_breakpoints", cache_breakpoints), CACHE_BREAKPOINTS
        )
        self.reasoning_items = switch_value(
            "reasoning_items", params.pop("reasoning_items", reasoning_items), REASONING_ITEMS
        )
        for refused, instead in (("max_completion_tokens", "max_tokens"), ("seed", None)):
            if params.get(refused) is not None:
                raise ValueError(
                    f"anthropic:{model}: the Messages API takes no {refused}"
                    + (f"; use {instead}" if instead else " (leave it out)")
                )
        self.sampling_params: dict[str, Any] = {
            key: value
            for key, value in {"max_tokens": max_tokens, "temperature": temperature, **params}.items()
            if value is not None
        }
        if "max_tokens" not in self.sampling_params:  # a `null` from --model-param cannot remove it
            raise ValueError(f"anthropic:{model}: the Messages API needs max_tokens in every request")
        client_options = {
            "api_key": resolve_api_key(["ANTHROPIC_API_KEY"], self.base_url),
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": 0,
        }
        self.clients = LoopClients(
            lambda asynchronous: (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(**client_options)
        )
        self._errors = (anthropic.APIError, json.JSONDecodeError, UnusableResponse)

    @property
    def recorded_params(self) -> dict[str, Any]:
        """The request params, and the switches where they are not the default (never sent as keys)."""
        switches = {
            name: value
            for name, value, default in (
                ("cache_breakpoints", self.cache_breakpoints, "auto"),
                ("reasoning_items", self.reasoning_items, "keep"),
            )
            if value != default
        }
        return {**self.sampling_params, **switches}

    @property
    def what(self) -> str:
        return f"{self.model} at {public_url(self.base_url) if self.base_url else 'api.anthropic.com'}"

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        return client.messages.create(**request)

    def answer(self, raw: Any) -> ChatResponse:
        return to_chat_response(raw)

    def request(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        """The SDK call's arguments: the Messages API body (``extra_body`` holds the keys the SDK does not
        name, sent as they are). A TypeError or ValueError when the body cannot be JSON (a harness bug)."""
        body = render_request(
            messages, tools, breakpoints=self.cache_breakpoints == "auto", thinking=self.reasoning_items == "keep"
        )
        params = (
            dict(self.sampling_params)
            if tools
            else {key: value for key, value in self.sampling_params.items() if key not in ONLY_WITH_TOOLS}
        )
        request = {"model": self.model, "max_tokens": params.pop("max_tokens"), **body}
        if params:
            request["extra_body"] = params
        json.dumps(request, allow_nan=False)
        return request

    def look_up(self, client: Any) -> bool:
        client.models.retrieve(self.model)  # GET /v1/models/NAME
        return True

    def with_output_limit(self, request: dict[str, Any], tokens: int) -> dict[str, Any]:
        return {**request, "max_tokens": tokens}

    def failure(self, error: Exception) -> CallFailure | None:
        if not isinstance(error, self._errors):
            return None
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            headers = getattr(getattr(error, "response", None), "headers", None)
            message = str(getattr(error, "message", error))
            return http_failure(error, status, getattr(error, "body", None), message, headers)
        return no_answer(error)


# --- the request ---------------------------------------------------------------------------------
def render_request(
    messages: list[Message], tools: list[ToolSchema] | None, *, breakpoints: bool = True, thinking: bool = True
) -> dict[str, Any]:
    """``system``, ``messages`` and ``tools`` of a Messages API body for the harness's messages, with
    ``cache_control`` on the blocks where the sender's claimed prefixes end (``breakpoints``)."""
    body: dict[str, Any] = {}
    ends: dict[int, dict[str, Any]] = {}  # message index -> the last block it became
    wire: list[dict[str, Any]] = []
    for turn in turns(messages, tool_results="user"):
        if turn.role == "system":
            text = message_text(joined_content([m.get("content") for m in turn.messages]))
            block = {"type": "text", "text": text}
            body["system"] = [block]
            ends[turn.last_index] = block  # a breakpoint inside the system prompt ends after all of it
            continue
        blocks = _blocks(turn, ends, thinking)
        if blocks:
            wire.append({"role": "assistant" if turn.role == "assistant" else "user", "content": blocks})
    body["messages"] = wire
    if tools:
        body["tools"] = [_tool(schema) for schema in tools]
    if breakpoints:
        claim = stable_prefixes(messages)
        if claim is None:  # no claim (a summarizer's, an optimizer's one-off request): its system prompt
            claim = (sum(m.get("role") in ("system", "developer") for m in messages),)
        for marked in chosen_breakpoints(claim, reused_prefixes(messages), ends):
            marked["cache_control"] = dict(CACHE_CONTROL)
    return body


def chosen_breakpoints(
    claim: tuple[int, ...] | list[int], reused: tuple[int, ...] | list[int], ends: dict[int, dict[str, Any]]
) -> list[dict[str, Any]]:
    """At most 4 blocks, each where a prefix ends (its last message's last block, or the closest block before):
    the longest claimed prefix (written for the next request), the longest prefix the last request claimed and
    this one starts with (read, and written by none), the shortest claimed (the most durable), then the other
    claims from the longest down."""

    def block(length: int) -> dict[str, Any] | None:
        return next((ends[i] for i in range(length - 1, -1, -1) if i in ends), None)

    claimed = sorted(set(claim))
    order = [max(claimed, default=0), max(reused, default=0), min(claimed, default=0), *reversed(claimed[1:-1])]
    chosen: dict[int, dict[str, Any]] = {}
    for length in order:
        found = block(length) if length else None
        if found is not None and id(found) not in chosen:
            chosen[id(found)] = found
    return list(chosen.values())[:MAX_BREAKPOINTS]


def _blocks(turn: Turn, ends: dict[int, dict[str, Any]], thinking: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for index, message in turn.members:
        role = message.get("role")
        if role == "tool":
            blocks.append(
                {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": _text(message)}
            )
        elif role == "assistant":
            if thinking:
                blocks += _thinking_blocks(message)
            if message_text(message.get("content")).strip():
                blocks.append({"type": "text", "text": message_text(message.get("content"))})
            blocks += [_tool_use(call) for call in message.get("tool_calls") or ()]
        elif message_text(message.get("content")).strip():
            blocks.append({"type": "text", "text": message_text(message.get("content"))})
        if blocks:
            ends[index] = blocks[-1]
    return blocks


def _text(message: Message) -> str:
    return message_text(message.get("content"))


def _thinking_blocks(message: Message) -> list[dict[str, Any]]:
    items = message.get("provider_items")
    if not isinstance(items, dict) or items.get("api") != API:
        return []
    return [
        dict(item)
        for item in items.get("items") or ()
        if isinstance(item, dict) and item.get("type") in THINKING_BLOCKS
    ]


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    """A call as a ``tool_use`` block: its arguments an object (text that is not one goes as ``{}``: the
    API takes only objects, and the tool result already says what was wrong)."""
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError, RecursionError):
        arguments = {}
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": arguments if isinstance(arguments, dict) else {},
    }


def _tool(schema: ToolSchema) -> dict[str, Any]:
    function = schema.get("function") or {}
    tool = {"name": function.get("name"), "input_schema": function.get("parameters") or {"type": "object"}}
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


# --- the answer ----------------------------------------------------------------------------------
def to_chat_response(answer: Any) -> ChatResponse:
    """A Messages API answer as the harness's response: an OpenAI-shaped assistant message, the usage
    (input = uncached + cache write + cache read, as the row counts a call's input), the stop reason in
    OpenAI's words. An answer of another shape raises ``UnusableResponse`` (retried)."""
    try:
        blocks = list(answer.content or [])
        usage = answer.usage
        texts, calls, thinking = [], [], []
        for block in blocks:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                calls.append(tool_call(block.id, block.name, json.dumps(block.input, ensure_ascii=False)))
            elif kind in THINKING_BLOCKS:
                thinking.append(block.model_dump(mode="json", exclude_none=True))
        uncached = reported(getattr(usage, "input_tokens", None)) or 0
        written = reported(getattr(usage, "cache_creation_input_tokens", None))
        read = reported(getattr(usage, "cache_read_input_tokens", None))
        stop = said(getattr(answer, "stop_reason", None))
    except (AttributeError, TypeError) as error:
        raise UnusableResponse(f"not a Messages API answer: {error}") from error
    return ChatResponse(
        message=assistant_message(texts, calls, API, thinking),
        usage=Usage(
            input_tokens=uncached + (written or 0) + (read or 0),
            output_tokens=reported(getattr(usage, "output_tokens", None)) or 0,
            cached_input_tokens=read,
            cache_write_input_tokens=written,
        ),
        model=said(getattr(answer, "model", None)) or "",
        finish_reason=FINISH_REASONS.get(stop or "", stop),
    )
