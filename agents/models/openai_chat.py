"""A chat model on any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama, ...).

Native tool calling, streaming off. Retries are ours alone (the openai client's own are
disabled) so that the number of attempts and the waits between them are known and
testable: transient failures (429, 408, 5xx, timeouts, lost connections, a body that is not
valid JSON such as one cut short under status 200, an answer with no ``choices``) are
retried with exponential backoff and no jitter; when retries run out the call raises
``InfrastructureError``, which evaluation keeps apart from agent failures (a retryable row).
Any other 4xx raises ``ModelRequestError`` at once, since the same request would fail the
same way; a 400 whose message says the prompt is too long raises its subclass
``ContextOverflowError``. The runner turns both into a scored end of the episode. A 500
that comes back word for word on every attempt is still an ``InfrastructureError`` (the row
stays retryable), but its text says it looked like the server refusing this request rather
than an outage: local servers answer 500 to a request their chat template cannot render.

Local servers differ from the API in what they accept; ``extra_params`` holds the switches
(they are read here, never sent): ``assistant_content`` = ``"null"`` (the default, the API's
form: an assistant message that only calls tools has no content) or ``"empty"`` (sends
``content: ""`` there, which llama-cpp-python's server and other template-based servers need;
the API accepts both); ``tool_arguments`` = ``"as_written"`` (the default: earlier calls' arguments
as the model wrote them) or ``"object"`` (an earlier call whose arguments are not a JSON object, cut
short or malformed, goes with ``"{}"``: vLLM parses them and refuses the whole request otherwise).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from operator import is_not
from typing import Any
from urllib.parse import urlsplit

import openai

from erp_sim.agents.models.roles import public_url
from erp_sim.agents.types import (
    ChatResponse,
    ContextOverflowError,
    InfrastructureError,
    Message,
    ModelRequestError,
    ToolSchema,
    Usage,
)

logger = logging.getLogger(__name__)

RETRYABLE_STATUS_CODES = frozenset({408, 429})  # plus every 5xx
# a wrong key, a key without access, a wrong model name or URL path: the run's setup, not the model's answer
SETUP_STATUS_CODES = frozenset({401, 403, 404})
ONLY_WITH_TOOLS = frozenset({"tool_choice", "parallel_tool_calls"})
LOCAL_SERVER_API_KEY = "not-needed-for-a-local-server"
# assistant_content switch -> the content sent for an assistant message that only calls tools
ASSISTANT_CONTENT = {"null": None, "empty": ""}
# tool_arguments switch: earlier calls' arguments as the model wrote them, or "{}" for a text that is not a JSON
# object (vLLM parses every earlier call's arguments and refuses the request when one is not JSON)
TOOL_ARGUMENTS = ("as_written", "object")
# How OpenAI, vLLM, llama.cpp, Ollama and TGI word a prompt longer than the context window.
_CONTEXT_OVERFLOW = re.compile(
    r"context[_ ]length|context window|context size|maximum context|too many tokens|prompt is too long"
    r"|tokens \+ `?max_new_tokens`? must be",  # text-generation-inference (its 422 names them in backticks)
    re.IGNORECASE,
)

# How servers word a model name they do not serve under a status other than 404: transformers serve's 400 "Server is
# pinned to X", and the 400s of proxies and other servers that name the model as unknown or not found.
_WRONG_MODEL = re.compile(
    r"pinned to|unknown model|no such model|model_not_found|model\b[^.]{0,200}?\b(?:not found|does not exist|not served)",
    re.IGNORECASE,
)

__all__ = ["ContextOverflowError", "InfrastructureError", "ModelRequestError", "OpenAIChatModel"]


PROBE_TIMEOUT_S = 30.0  # a server that takes longer to answer one token is down, or the URL is not its API's
PROBE_TOKENS = 16  # reasoning models spend some before any answer; 16 is still cheap
MAX_NAME_CHARS = 256  # a served model's name or a finish reason; a longer one is cut (it is stored per call)
MAX_ERROR_CHARS = 500  # of a server's error message kept in the row


class UnusableResponse(Exception):
    """A 200 answer we cannot use (no choices, a body that is not a chat completion): retried."""


class OpenAIChatModel:
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
        max_retries: int = 5,
        timeout: float = 300.0,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        extra_params: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        # the server the client will use: OPENAI_BASE_URL is the client's own default, named here so that rows,
        # recordings and the resume check know the server (None: OpenAI's API)
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
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
        self._api_key = _resolve_api_key(api_key_env, self.base_url)
        self._sleep = sleep
        self._async_sleep = async_sleep
        self._client = openai.OpenAI(**self._client_options())
        self._async_client: openai.AsyncOpenAI | None = None
        self._async_client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        where = f", base_url={public_url(self.base_url)!r}" if self.base_url else ""
        compat = f", assistant_content={self.assistant_content!r}" if self.assistant_content != "null" else ""
        return f"OpenAIChatModel({self.model!r}{where}, {self.sampling_params}{compat})"

    @property
    def recorded_params(self) -> dict[str, Any]:
        """What defines this model's requests, as rows and cassettes record it: the sampling params
        plus the ``assistant_content`` switch when it is on (read here, never sent as a key)."""
        switch = {"assistant_content": self.assistant_content} if self.assistant_content != "null" else {}
        if self.tool_arguments != "as_written":
            switch["tool_arguments"] = self.tool_arguments
        return {**self.sampling_params, **switch}

    def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        request = self._request(messages, tools)
        failures: list[str] = []
        for attempt in range(self.max_retries + 1):
            try:
                return self._to_chat_response(self._client.chat.completions.create(**request))
            except _FAILED_CALL as error:
                self._sleep(self._delay_before_retry(error, attempt, failures, request))
        raise AssertionError("unreachable: the last attempt either returns or raises")

    async def acomplete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        request = self._request(messages, tools)
        client = self._async_client_for_running_loop()
        failures: list[str] = []
        for attempt in range(self.max_retries + 1):
            try:
                return self._to_chat_response(await client.chat.completions.create(**request))
            except _FAILED_CALL as error:
                await self._async_sleep(self._delay_before_retry(error, attempt, failures, request))
        raise AssertionError("unreachable: the last attempt either returns or raises")

    def probe(self) -> str | None:
        """One cheap request before a long run (``erp-sim eval`` sends it per role unless ``--no-probe``): a lookup
        of the model (``GET /models/NAME``), else, where the server has no such route or does not know the name,
        a one-token completion. None when the server answers for the model; else why not, in one line, so that a
        wrong URL, key or model name costs seconds instead of every episode's retries. Never retried."""
        client = self._client.with_options(max_retries=0, timeout=min(self.timeout, PROBE_TIMEOUT_S))
        what = f"{self.model} at {public_url(self.base_url) if self.base_url else 'api.openai.com'}"
        try:
            client.models.retrieve(self.model)
            return None
        except openai.APIStatusError as error:
            if error.status_code in (401, 403):
                return f"{what}: {_describe(error)} (check the API key)"
        except openai.APIConnectionError as error:  # timeouts too
            return f"{what}: no answer ({_describe(error)}; is the server up, and is the URL its API's?)"
        except (ValueError, AttributeError, TypeError):  # an answer that is not a model object: ask for a token
            pass
        request = self._request_arguments([{"role": "user", "content": "Say OK."}], None)
        limit = "max_completion_tokens" if "max_completion_tokens" in self.sampling_params else "max_tokens"
        request["extra_body"] = {**request.get("extra_body", {}), limit: PROBE_TOKENS}
        try:
            client.chat.completions.create(**request)
        except openai.APIStatusError as error:
            return f"{what}: a {PROBE_TOKENS}-token request was refused: {_describe(error)}{_setup_hint(error)}"
        except openai.APIConnectionError as error:
            return f"{what}: no answer ({_describe(error)}; is the server up, and is the URL its API's?)"
        except (ValueError, AttributeError, TypeError) as error:  # it answered, with something unusable
            return f"{what}: the answer is not a chat completion ({type(error).__name__}: {error})"[:MAX_ERROR_CHARS]
        return None

    def _client_options(self) -> dict[str, Any]:
        return {"api_key": self._api_key, "base_url": self.base_url, "timeout": self.timeout, "max_retries": 0}

    def _async_client_for_running_loop(self) -> openai.AsyncOpenAI:
        """One async client per event loop: pooled connections cannot outlive their loop."""
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._async_client_loop is not loop:
            self._async_client = openai.AsyncOpenAI(**self._client_options())
            self._async_client_loop = loop
        return self._async_client

    def _request(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        """The request's arguments; a TypeError or ValueError when its body cannot be JSON (a harness bug, raised
        here: inside the retry loop the client's own serialising would pass for an unusable answer)."""
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
        params = (
            self.sampling_params
            if tools
            else {key: value for key, value in self.sampling_params.items() if key not in ONLY_WITH_TOOLS}
        )
        if params:
            request["extra_body"] = params
        return request

    def _delay_before_retry(
        self, error: Exception, attempt: int, failures: list[str], request: dict[str, Any]
    ) -> float:
        """Seconds to wait before the next attempt; raises when the error is final.

        ``failures`` collects this call's errors so far (described), to tell a server that
        refuses the request with a 5xx (the same answer every time) from an outage."""
        status = error.status_code if isinstance(error, openai.APIStatusError) else None
        what = f"{self.model} at {public_url(self.base_url) if self.base_url else 'api.openai.com'}"  # no password
        described = _describe(error)
        failures.append(described)
        if _is_setup_error(error):  # unscored and run again on --resume, once the setup is fixed
            raise InfrastructureError(f"{what}: {described}{_setup_hint(error)}") from error
        if status is not None and status not in RETRYABLE_STATUS_CODES and status < 500:
            text = f"{what}: request refused: {described}"
            if status in (400, 413, 422) and _CONTEXT_OVERFLOW.search(f"{error} {described}"):  # TGI: 422
                raise ContextOverflowError(text, status) from error
            raise ModelRequestError(text, status) from error
        # what is left is transient: connection errors, 408/429/5xx, and unusable 200 answers
        # (a truncated or invalid body, no choices), which a second attempt usually fixes
        attempts = attempt + 1
        if attempts > self.max_retries:
            raise InfrastructureError(_gave_up(what, status, failures, request)) from error
        delay = _retry_after_seconds(error)
        if delay is None:
            delay = self.backoff_base * 2**attempt
        delay = min(delay, self.backoff_max)
        logger.warning("%s: attempt %d failed (%s); retrying in %.1f s", what, attempts, described, delay)
        return delay

    def _to_chat_response(self, completion: Any) -> ChatResponse:
        if not getattr(completion, "choices", None):
            raise UnusableResponse("the server answered with no choices")
        usage = completion.usage
        return ChatResponse(
            message=assistant_message_to_dict(completion.choices[0].message),
            usage=Usage(
                input_tokens=usage.prompt_tokens if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
                cached_input_tokens=_cached_tokens(usage),
            ),
            model=_said(getattr(completion, "model", None)) or "",  # provenance: only what the service said
            finish_reason=_said(getattr(completion.choices[0], "finish_reason", None)),
        )


def _is_setup_error(error: Exception) -> bool:
    """A failure of the run's setup, not of the model's answer: a key, a URL path, or a model name the server does
    not serve, whatever status it says it with (transformers serve answers a wrong name with a 400)."""
    if not isinstance(error, openai.APIStatusError):
        return False
    if error.status_code in SETUP_STATUS_CODES:
        return True
    return error.status_code in (400, 422) and bool(_WRONG_MODEL.search(_describe(error)))


def _setup_hint(error: Exception) -> str:
    return " (check the API key, the model name and the base URL)" if _is_setup_error(error) else ""


def _said(value: Any) -> str | None:
    """A name the service gave (served model, finish reason), kept only as the short one-line text it should
    be: a server that sends another type there still answered, so the answer is not lost for it."""
    if not isinstance(value, str):
        return None
    return _one_line(value, MAX_NAME_CHARS) or None


def _one_line(text: str, limit: int) -> str:
    """``text`` as one line of at most ``limit`` characters: whitespace runs (line breaks, controls) as one space."""
    return " ".join(text[: 4 * limit].split())[:limit]


def _cached_tokens(usage: Any) -> int | None:
    """The service's ``usage.prompt_tokens_details.cached_tokens``, if it reported one."""
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
    return cached if isinstance(cached, int) and cached >= 0 else None


def _gave_up(what: str, status: int | None, failures: list[str], request: dict[str, Any]) -> str:
    """Why the call failed for good. The same 500 on every attempt is said first (a report shows
    the start of the text): a server refusing this request, not an outage."""
    # 502/503/504 are a gateway or an overloaded service answering the same words each time: an outage
    if status != 500 or len(failures) < 2 or len(set(failures)) > 1:
        return f"{what}: gave up after {len(failures)} attempts; last error: {failures[-1]}"
    messages = request["messages"]
    if any(
        not _object_arguments(call)
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
    ):
        hint = (
            " (the request holds an earlier tool call whose arguments are not a JSON object, which the model wrote "
            "malformed or was cut short by max_tokens; servers that parse them, such as transformers serve, answer "
            "500: try the model param tool_arguments=object, which sends such a call's arguments as {})"
        )
    elif any(m.get("role") == "assistant" and m.get("content") is None for m in messages):
        hint = (
            " (llama-cpp-python and other template-based servers answer 500 to an assistant message without "
            "content: try the model param assistant_content=empty)"
        )
    else:
        hint = ""
    return (
        f"{what}: gave up after {len(failures)} attempts, the same answer every time, so a refused request "
        f"rather than an outage: {failures[-1]}{hint}"
    )


def wire_messages(
    messages: list[Message], tool_call_content: str | None = None, *, object_arguments: bool = False
) -> list[Message]:
    """The messages as the API takes them: our tool results carry the tool's ``name`` (for
    summaries, views and the scripted agent), which a tool message may not have on the wire.
    An assistant message that only calls tools (no content, or null) gets ``tool_call_content``
    when it is a string (``""`` for local servers), else goes as it is. ``object_arguments``: a call
    whose arguments text is not a JSON object goes with ``"{}"`` (its tool result says what was wrong)."""
    return [_wire_message(message, tool_call_content, object_arguments) for message in messages]


def _wire_message(message: Message, tool_call_content: str | None, object_arguments: bool) -> Message:
    role = message.get("role")
    if role == "tool":
        return {key: value for key, value in message.items() if key != "name"}
    if role != "assistant":
        return message
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


def _resolve_api_key(api_key_env: str, base_url: str | None) -> str:
    api_key = os.environ.get(api_key_env)
    if api_key:
        return api_key
    if base_url and _is_local(base_url):
        return LOCAL_SERVER_API_KEY
    raise ValueError(
        f"no API key: set the environment variable {api_key_env}, "
        "or point base_url at a local server (which needs none)"
    )


def _is_local(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def _retry_after_seconds(error: Exception) -> float | None:
    """The server's Retry-After header in seconds, if it sent a number."""
    if not isinstance(error, openai.APIStatusError):
        return None
    try:
        return max(0.0, float(error.response.headers.get("retry-after", "")))
    except ValueError:
        return None


# A failed call: the client's errors, a body that is not JSON (JSONDecodeError is a ValueError),
# one that does not parse as a completion (AttributeError/TypeError), or no choices.
_FAILED_CALL = (openai.APIError, ValueError, AttributeError, TypeError, UnusableResponse)


def _describe(error: Exception) -> str:
    """One line naming the failure, the HTTP status once (the client's own message starts
    "Error code: 400 - " and repeats the whole body; the server's error message is enough). The message is
    where the server put it: OpenAI's and vLLM's ``error.message``, FastAPI's ``detail`` (transformers serve),
    TGI's ``error`` string, or a plain-text body."""
    if isinstance(error, openai.APIStatusError):
        body = error.body
        message: Any = body
        if isinstance(body, dict):
            message = next((body[key] for key in ("message", "detail", "error") if body.get(key)), None)
        if message is not None and not isinstance(message, str):  # FastAPI's 422: a list of field errors
            message = json.dumps(message, ensure_ascii=False, default=str)
        message = _one_line(message or "", MAX_ERROR_CHARS)  # a server's HTML page too
        if not message:
            message = re.sub(rf"^Error code: {error.status_code}(?: - )?", "", error.message) or "(no message)"
        return f"HTTP {error.status_code}: {message}"
    return f"{type(error).__name__}: {error}"
