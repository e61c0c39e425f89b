"""A chat model on any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, llama.cpp, Ollama, ...).

Native tool calling, streaming off. Failures follow the table every backend shares
(``erp_sim.agents.models.backend``): transient ones (429, 408, 5xx, timeouts, lost connections, a body
that is not valid JSON such as one cut short under status 200, an answer with no ``choices``) are retried,
then raise ``InfrastructureError`` (a retryable row); any other 4xx raises ``ModelRequestError`` at once,
and a 400 whose message says the prompt is too long its subclass ``ContextOverflowError``. A 500 that
comes back word for word on every attempt names ``assistant_content=empty`` when the request had an
assistant message without content: local servers answer 500 to a request their chat template cannot render.

Messages go out under the merge rule every backend applies (``erp_sim.agents.models.turns``: one system
message first, then alternating turns). Local servers differ from the API in what they accept;
``extra_params`` holds the switches (they are read here, never sent): ``assistant_content`` = ``"null"``
(the default, the API's form: an assistant message that only calls tools has no content) or ``"empty"``
(sends ``content: ""`` there, which llama-cpp-python's server and other template-based servers need;
the API accepts both); ``tool_arguments`` = ``"as_written"`` (the default: earlier calls' arguments
as the model wrote them) or ``"object"`` (an earlier call whose arguments are not a JSON object, cut
short or malformed, goes with ``"{}"``: vLLM parses them and refuses the whole request otherwise).
With ``azure`` (``erp_sim.agents.models.azure``) the same requests go to an Azure OpenAI deployment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from operator import is_not
from typing import TYPE_CHECKING, Any, Unpack

import openai

from erp_sim.agents.models.backend import (
    LOCAL_SERVER_API_KEY,
    ApiModel,
    CallFailure,
    CallOptions,
    LoopClients,
    UnusableResponse,
    http_failure,
    no_answer,
    reported,
    resolve_api_key,
    said,
)
from erp_sim.agents.models.roles import public_url
from erp_sim.agents.models.turns import chat_messages
from erp_sim.agents.types import (
    ChatResponse,
    ContextOverflowError,
    InfrastructureError,
    Message,
    ModelRequestError,
    ToolSchema,
    Usage,
)

if TYPE_CHECKING:
    from erp_sim.agents.models.azure import AzureTarget

ONLY_WITH_TOOLS = frozenset({"tool_choice", "parallel_tool_calls"})
# assistant_content switch -> the content sent for an assistant message that only calls tools
ASSISTANT_CONTENT = {"null": None, "empty": ""}
# tool_arguments switch: earlier calls' arguments as the model wrote them, or "{}" for a text that is not a JSON
# object (vLLM parses every earlier call's arguments and refuses the request when one is not JSON)
TOOL_ARGUMENTS = ("as_written", "object")

__all__ = [
    "LOCAL_SERVER_API_KEY",
    "ContextOverflowError",
    "InfrastructureError",
    "ModelRequestError",
    "OpenAIChatModel",
    "UnusableResponse",
]


class OpenAIChatModel(ApiModel):
    """``ChatModel`` over the ``openai`` package's chat-completions API.

    ``sampling_params`` (temperature, seed and ``extra_params``) are sent with every
    request and are what a cassette hashes besides the messages and tools. ``extra_params``
    go in the request body as they are (e.g. ``max_completion_tokens``, ``reasoning_effort``,
    ``tool_choice``, or a local server's own options), so no client upgrade is needed for them,
    except ``assistant_content`` (see the module docstring), which is taken out of them.
    ``sleep``/``async_sleep`` are injectable so tests do not wait out the backoff. The API key
    is read from ``api_key_env``; without one, a ``base_url`` on localhost or a private
    address (a local vLLM/Ollama) gets a placeholder key, anything else is a ValueError.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float | None = None,
        seed: int | None = None,
        extra_params: Mapping[str, Any] | None = None,
        azure: AzureTarget | None = None,
        **options: Unpack[CallOptions],
    ):
        super().__init__(model, **options)
        self.azure = azure
        # the server the client will use: OPENAI_BASE_URL is the client's own default, named here so that rows,
        # recordings and the resume check know the server (None: OpenAI's API)
        self.base_url = openai_base_url(base_url, azure)
        extra_params = dict(extra_params or {})
        switch = extra_params.pop("assistant_content", "null")
        self.assistant_content = "null" if switch is None else str(switch)  # a parsed `null` is the JSON null
        if self.assistant_content not in ASSISTANT_CONTENT:
            raise ValueError(
                f"assistant_content={self.assistant_content!r}: use null (the API's form) or empty "
                '(content "" in assistant messages that only call tools, for local servers)'
            )
        arguments = extra_params.pop("tool_arguments", "as_written")
        self.tool_arguments = "as_written" if arguments is None else str(arguments)
        if self.tool_arguments not in TOOL_ARGUMENTS:
            raise ValueError(
                f"tool_arguments={self.tool_arguments!r}: use as_written (the default) or object (an earlier "
                'call\'s arguments that are not a JSON object go as "{}", for vLLM)'
            )
        self.sampling_params: dict[str, Any] = {
            key: value
            for key, value in {"temperature": temperature, "seed": seed, **extra_params}.items()
            if value is not None
        }
        self.clients = openai_clients(api_key_env, self.base_url, self.timeout, azure)

    @property
    def api(self) -> str:
        """The API this model speaks, as its role names it: ``openai`` or ``azure``."""
        return "azure" if self.azure is not None else "openai"

    def shown_switches(self) -> str:
        return f", assistant_content={self.assistant_content!r}" if self.assistant_content != "null" else ""

    @property
    def recorded_params(self) -> dict[str, Any]:
        """What defines this model's requests, as rows and cassettes record it: the sampling params
        plus the ``assistant_content`` switch when it is on (read here, never sent as a key)."""
        switch = {"assistant_content": self.assistant_content} if self.assistant_content != "null" else {}
        if self.tool_arguments != "as_written":
            switch["tool_arguments"] = self.tool_arguments
        return {**self.sampling_params, **switch}

    @property
    def what(self) -> str:
        return described_target(self.model, self.base_url, self.azure)

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        return client.chat.completions.create(**request)

    def failure(self, error: Exception) -> CallFailure | None:
        return openai_failure(error)

    def refused_hint(self, request: dict[str, Any]) -> str:
        return _null_content_hint(request)

    def request(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        request = self._request_arguments(messages, tools)
        json.dumps([request["messages"], tools, request.get("extra_body")], allow_nan=False)
        return request

    def _request_arguments(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "stream": False,
            "messages": wire_messages(
                messages, ASSISTANT_CONTENT[self.assistant_content], object_arguments=self.tool_arguments == "object"
            ),
        }
        if tools:  # OpenAI rejects an empty tools list
            request["tools"] = tools
        # the API refuses tool_choice and parallel_tool_calls in a request without tools (a
        # summarizer's or user model's call through a model configured for the agent)
        params = without_tool_options(self.sampling_params, tools)
        if params:
            request["extra_body"] = params
        return request

    def answer(self, completion: Any) -> ChatResponse:
        if not getattr(completion, "choices", None):
            raise UnusableResponse("the server answered with no choices")
        usage = completion.usage
        return ChatResponse(
            message=assistant_message_to_dict(completion.choices[0].message),
            usage=Usage(
                input_tokens=usage.prompt_tokens if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
                cached_input_tokens=reported(
                    getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
                ),
                reasoning_tokens=reported(
                    getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
                ),
            ),
            model=said(getattr(completion, "model", None)) or "",  # provenance: only what the service said
            finish_reason=said(getattr(completion.choices[0], "finish_reason", None)),
        )


def without_tool_options(params: Mapping[str, Any], tools: list[ToolSchema] | None) -> dict[str, Any]:
    """The params of a request: ``tool_choice`` and ``parallel_tool_calls`` only with tools (the API refuses
    them in a request without, a summarizer's or user model's call through a model set up for the agent)."""
    return dict(params) if tools else {key: value for key, value in params.items() if key not in ONLY_WITH_TOOLS}


def openai_base_url(base_url: str | None, azure: AzureTarget | None) -> str | None:
    """The server the client will use, as rows name it: the Azure endpoint, ``base_url``, or the client's own
    default ``OPENAI_BASE_URL`` (None: OpenAI's API)."""
    import os

    if azure is not None:
        return azure.endpoint
    return base_url or os.environ.get("OPENAI_BASE_URL") or None


def openai_clients(api_key_env: str, base_url: str | None, timeout: float, azure: AzureTarget | None) -> LoopClients:
    """The openai package's clients (Azure's with ``azure``), their own retries off: ours are counted."""
    if azure is not None:
        return azure.clients(timeout)
    options: dict[str, Any] = {
        "api_key": resolve_api_key([api_key_env], base_url),
        "base_url": base_url,
        "timeout": timeout,
        "max_retries": 0,
    }
    return LoopClients(lambda asynchronous: (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(**options))


def described_target(model: str, base_url: str | None, azure: AzureTarget | None) -> str:
    if azure is not None:
        return f"deployment {model} at {public_url(azure.endpoint)}"
    return f"{model} at {public_url(base_url) if base_url else 'api.openai.com'}"


def _null_content_hint(request: dict[str, Any]) -> str:
    no_content = any(m.get("role") == "assistant" and m.get("content") is None for m in request["messages"])
    return (
        " (llama-cpp-python and other template-based servers answer 500 to an assistant message without "
        "content: try the model param assistant_content=empty)"
        if no_content
        else ""
    )


# A failed call: the client's errors, a body that is not JSON (JSONDecodeError is a ValueError),
# one that does not parse as a completion (AttributeError/TypeError), or no choices.
_FAILED_CALL = (openai.APIError, ValueError, AttributeError, TypeError, UnusableResponse)


def openai_failure(error: Exception) -> CallFailure | None:
    """The openai package's error as the failure table takes it (None: not a failed call). The message is
    where the server put it (``backend.error_message``); the client's own message starts "Error code: 400 - "
    and repeats the whole body, so it is only the fallback."""
    if not isinstance(error, _FAILED_CALL):
        return None
    if isinstance(error, openai.APIStatusError):
        import re

        fallback = re.sub(rf"^Error code: {error.status_code}(?: - )?", "", error.message)
        return http_failure(error, error.status_code, error.body, fallback, error.response.headers)
    return no_answer(error)


def wire_messages(
    messages: list[Message], tool_call_content: str | None = None, *, object_arguments: bool = False
) -> list[Message]:
    """The messages as the API takes them: one system message first, then alternating turns
    (``turns.chat_messages``: the merge rule every backend applies); our tool results carry the tool's
    ``name`` (for summaries, views and the scripted agent), which a tool message may not have on the wire,
    and another backend's ``provider_items`` stay behind. An assistant message that only calls tools (no
    content, or null) gets ``tool_call_content`` when it is a string (``""`` for local servers), else goes
    as it is. ``object_arguments``: a call whose arguments text is not a JSON object goes with ``"{}"`` (its
    tool result says what was wrong)."""
    return [_wire_message(message, tool_call_content, object_arguments) for message in chat_messages(messages)]


def _wire_message(message: Message, tool_call_content: str | None, object_arguments: bool) -> Message:
    role = message.get("role")
    if role == "tool":
        return {key: value for key, value in message.items() if key != "name"}
    if role != "assistant":
        return message
    if "provider_items" in message:  # reasoning another API returned: not a Chat Completions field
        message = {key: value for key, value in message.items() if key != "provider_items"}
    if tool_call_content is not None and message.get("content") is None:
        message = {**message, "content": tool_call_content}
    calls = message.get("tool_calls")
    if object_arguments and isinstance(calls, list):  # each call's arguments parsed once
        sent = [call if _object_arguments(call) else _with_empty_arguments(call) for call in calls]
        if any(map(is_not, sent, calls)):
            message = {**message, "tool_calls": sent}
    return message


def _object_arguments(call: Any) -> bool:
    """A tool call whose arguments text is a JSON object (or that is no call dict at all: left as it is)."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return True
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return False
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


def _with_empty_arguments(call: dict) -> dict:
    return {**call, "function": {**call["function"], "arguments": "{}"}}


def assistant_message_to_dict(message: Any) -> Message:
    """The assistant message as a plain OpenAI dict, without the client's None-valued fields.

    ``content`` is left out when the model only called tools, and is ``""`` when the model
    said nothing at all; tool-call ``arguments`` stay the JSON string the model wrote. Servers that
    leave out a call's ``type`` (chat completions has only functions) or send its ``arguments`` as a
    JSON value rather than its text (the client does not validate answers) have their calls kept:
    the value is written as the JSON text the API would have sent.
    """
    result: Message = {"role": "assistant"}
    if message.content is not None:
        result["content"] = message.content
    tool_calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": _arguments_text(call.function.arguments)},
        }
        for call in message.tool_calls or []
        if getattr(call, "type", None) in ("function", None)
    ]
    if tool_calls:
        result["tool_calls"] = tool_calls
    elif "content" not in result:
        result["content"] = ""
    if getattr(message, "refusal", None):
        result["refusal"] = message.refusal
    return result


def _arguments_text(arguments: Any) -> Any:
    """A call's arguments as JSON text: as sent when text (even malformed: the env says so), a JSON value
    written out, anything JSON cannot write as its str (the env refuses it as an invalid action)."""
    if arguments is None or isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)
