"""A model through OpenAI's Responses API (``openai-responses:MODEL``; on Azure, ``azure-responses:DEPLOYMENT``).

Stateless: every request has ``store: false`` and the whole visible context as ``input`` (the merge rule of
``turns``: one system message first, then alternating turns), so the context policies keep control of what
the model sees. Tool calls go out as ``function_call`` items and their results as ``function_call_output``
items, tools as flat ``function`` tools (``strict: false``: the ERP's schemas are not strict-mode schemas).

Reasoning models return reasoning items. With ``reasoning_items="keep"`` (the default) the request asks for
them with ``include: ["reasoning.encrypted_content"]``, the answer keeps them on its assistant message
(``provider_items``), and a later request sends a kept step's reasoning back before its output items, with
the items' ids that pair them; a step a policy dropped takes its reasoning with it. ``"drop"`` sends no
reasoning and no item ids. The answer's usage counts reasoning tokens apart
(``output_tokens_details.reasoning_tokens``) and cached input (``input_tokens_details.cached_tokens``).

The token limit is ``max_output_tokens`` (``max_tokens`` and ``max_completion_tokens`` from ``--model-param``
are renamed to it); the API takes no ``seed``. Failures follow the shared table (``backend``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from erp_sim.agents.models.backend import (
    ApiModel,
    CallFailure,
    CallOptions,
    UnusableResponse,
    assistant_message,
    reported,
    said,
    switch_value,
    tool_call,
)
from erp_sim.agents.models.openai_chat import (
    described_target,
    openai_base_url,
    openai_clients,
    openai_failure,
    without_tool_options,
)
from erp_sim.agents.models.turns import joined_content, turns
from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import ChatResponse, Message, ToolSchema, Usage

if TYPE_CHECKING:
    from erp_sim.agents.models.azure import AzureTarget

API = "openai-responses"
REASONING_ITEMS = ("keep", "drop")
TOKEN_LIMITS = ("max_tokens", "max_completion_tokens")
INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


class OpenAIResponsesModel(ApiModel):
    """``ChatModel`` over the Responses API. ``extra_params`` go in every request body (``max_output_tokens``,
    ``reasoning``, ``temperature``, ``tool_choice`` ...); ``reasoning_items`` is a switch of ours, never sent."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
        reasoning_items: str = "keep",
        azure: AzureTarget | None = None,
        **options: Unpack[CallOptions],
    ):
        super().__init__(model, **options)
        self.azure = azure
        self.base_url = openai_base_url(base_url, azure)
        params = dict(extra_params or {})
        self.reasoning_items = switch_value(
            "reasoning_items", params.pop("reasoning_items", reasoning_items), REASONING_ITEMS
        )
        if params.get("seed") is not None:
            raise ValueError(f"{API}:{model}: the Responses API takes no seed (leave it out)")
        limits = [key for key in TOKEN_LIMITS if params.get(key) is not None]
        for key in TOKEN_LIMITS:
            value = params.pop(key, None)
            if value is not None:
                params.setdefault("max_output_tokens", value)
        if len(limits) > 1:
            raise ValueError(f"{API}:{model}: give one token limit (max_output_tokens), not {' and '.join(limits)}")
        self.sampling_params: dict[str, Any] = {
            key: value for key, value in {"temperature": temperature, **params}.items() if value is not None
        }
        self.clients = openai_clients(api_key_env, self.base_url, self.timeout, azure)

    @property
    def api(self) -> str:
        return "azure-responses" if self.azure is not None else API

    @property
    def recorded_params(self) -> dict[str, Any]:
        switch = {"reasoning_items": self.reasoning_items} if self.reasoning_items != "keep" else {}
        return {**self.sampling_params, **switch}

    @property
    def what(self) -> str:
        return described_target(self.model, self.base_url, self.azure)

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        return client.responses.create(**request)

    def answer(self, raw: Any) -> ChatResponse:
        return to_chat_response(raw)

    def failure(self, error: Exception) -> CallFailure | None:
        return openai_failure(error)

    def request(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        """The SDK call's arguments (``extra_body``: the params, sent as they are). A TypeError or ValueError
        when the body cannot be JSON (a harness bug)."""
        keep = self.reasoning_items == "keep"
        request: dict[str, Any] = {
            "model": self.model,
            "store": False,
            "input": render_input(messages, keep_reasoning=keep),
        }
        if keep:
            request["include"] = ["reasoning.encrypted_content"]
        if tools:
            request["tools"] = [_tool(schema) for schema in tools]
        params = without_tool_options(self.sampling_params, tools)
        if params:
            request["extra_body"] = params
        json.dumps(request, allow_nan=False)
        return request


def render_input(messages: list[Message], *, keep_reasoning: bool = True) -> list[dict[str, Any]]:
    """The harness's messages as Responses input items (module docstring)."""
    items: list[dict[str, Any]] = []
    for turn in turns(messages):
        if turn.role == "tool":
            for message in turn.messages:
                items.append(
                    {"type": "function_call_output", "call_id": message.get("tool_call_id"), "output": _text(message)}
                )
        elif turn.role == "assistant":
            for message in turn.messages:
                items += _assistant_items(message, keep_reasoning)
        else:
            role = "system" if turn.role == "system" else "user"
            text = message_text(joined_content([m.get("content") for m in turn.messages]))
            items.append({"role": role, "content": text})
    return items


def _text(message: Message) -> str:
    return message_text(message.get("content"))


def _assistant_items(message: Message, keep_reasoning: bool) -> list[dict[str, Any]]:
    """An assistant message as output items: with kept reasoning, the recorded items in their order (reasoning
    as returned; the message and the calls as the policy shows them now, with their ids)."""
    text = _text(message)
    calls = {call.get("id"): call for call in message.get("tool_calls") or ()}
    recorded = message.get("provider_items")
    items: list[dict[str, Any]] = []
    if keep_reasoning and isinstance(recorded, dict) and recorded.get("api") in (API, "azure-responses"):
        for item in recorded.get("items") or ():
            kind = item.get("type")
            if kind == "reasoning":
                items.append(dict(item))
            elif kind == "message" and text:
                items.append(_output_message(text, item.get("id")))
                text = ""
            elif kind == "function_call" and item.get("call_id") in calls:
                items.append({**_function_call(calls.pop(item["call_id"])), "id": item.get("id")})
    if text:
        items.append({"role": "assistant", "content": text})
    items += [_function_call(call) for call in calls.values()]
    return items


def _output_message(text: str, item_id: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _function_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    return {
        "type": "function_call",
        "call_id": call.get("id"),
        "name": function.get("name"),
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
    }


def _tool(schema: ToolSchema) -> dict[str, Any]:
    function = schema.get("function") or {}
    tool = {
        "type": "function",
        "name": function.get("name"),
        "parameters": function.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def to_chat_response(response: Any) -> ChatResponse:
    """A Responses answer as the harness's response; one of another shape raises ``UnusableResponse``."""
    try:
        status = getattr(response, "status", None)
        if status == "failed":
            raise UnusableResponse(f"the response failed: {getattr(response, 'error', None)}")
        texts, refusals, calls, recorded = [], [], [], []
        reasoning = False
        for item in response.output or ():
            kind = getattr(item, "type", None)
            if kind == "reasoning":
                reasoning = True
                recorded.append(item.model_dump(mode="json", exclude_none=True, exclude={"status"}))
            elif kind == "message":
                recorded.append({"type": "message", "id": item.id})
                for part in item.content or ():
                    if getattr(part, "type", None) == "output_text":
                        texts.append(part.text)
                    elif getattr(part, "type", None) == "refusal":
                        refusals.append(part.refusal)
            elif kind == "function_call":
                recorded.append({"type": "function_call", "id": getattr(item, "id", None), "call_id": item.call_id})
                calls.append(tool_call(item.call_id, item.name, item.arguments))
        usage = response.usage
        details = getattr(usage, "input_tokens_details", None)
        output_details = getattr(usage, "output_tokens_details", None)
        incomplete = getattr(getattr(response, "incomplete_details", None), "reason", None)
    except (AttributeError, TypeError) as error:
        raise UnusableResponse(f"not a Responses API answer: {error}") from error
    message = assistant_message(texts, calls, API, recorded if reasoning else None, " ".join(refusals))
    finish = INCOMPLETE.get(incomplete or "", incomplete) if status == "incomplete" else None
    return ChatResponse(
        message=message,
        usage=Usage(
            input_tokens=reported(getattr(usage, "input_tokens", None)) or 0,
            output_tokens=reported(getattr(usage, "output_tokens", None)) or 0,
            cached_input_tokens=reported(getattr(details, "cached_tokens", None)),
            reasoning_tokens=reported(getattr(output_details, "reasoning_tokens", None)),
        ),
        model=said(getattr(response, "model", None)) or "",
        finish_reason=said(finish or ("tool_calls" if calls else "stop")),
    )
