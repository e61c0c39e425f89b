"""What every model backend shares: the failure table, the retry loop, the client settings, and the model
interface itself (``ApiModel``: ``complete``/``acomplete`` through the retry loop, the ``CallOptions``).

Each backend (``openai_chat``, ``openai_responses``, ``anthropic_messages``, and Azure's through the first
two) renders its API's request, reads its answer (``assistant_message``), turns its SDK's errors into a
``CallFailure`` and leaves the rest here, so a refusal means the same on every API. Retries are ours alone (the SDKs' own are disabled), so the number of attempts and the waits
between them are known and testable:

| what the service answered | what the call raises |
|---|---|
| 401, 403, 404 (a wrong key, model, deployment or URL) | ``InfrastructureError`` at once: the run's setup, unscored, run again on ``--resume`` |
| 400, 413 or 422 whose words say the prompt is too long | ``ContextOverflowError``: a scored ``context_overflow`` |
| any other 4xx but 408 and 429 (a refused request, ``request_too_large`` included) | ``ModelRequestError`` at once: a scored ``model_error`` |
| 408, 429, any 5xx (529 ``overloaded_error`` included), a timeout, a lost connection, a 200 that is no answer | retried with exponential backoff and no jitter (a ``Retry-After`` of seconds is waited instead); then ``InfrastructureError``, an unscored row |

A 500 that comes back word for word on every attempt is still an ``InfrastructureError`` (the row stays
retryable), but its text says it looked like the server refusing this request rather than an outage: local
servers answer 500 to a request their chat template cannot render.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar
from urllib.parse import urlsplit

from erp_sim.agents.models.roles import public_url
from erp_sim.agents.types import ContextOverflowError, InfrastructureError, ModelRequestError

if TYPE_CHECKING:
    from erp_sim.agents.types import ChatResponse, Message, ToolSchema

logger = logging.getLogger(__name__)

RETRYABLE_STATUS_CODES = frozenset({408, 429})  # plus every 5xx
# a wrong key, a key without access, a wrong model name, deployment or URL path: the run's setup
SETUP_STATUS_CODES = frozenset({401, 403, 404})
LOCAL_SERVER_API_KEY = "not-needed-for-a-local-server"
# How OpenAI, Azure, Anthropic, vLLM, llama.cpp, Ollama and TGI word a prompt longer than the context window.
CONTEXT_OVERFLOW = re.compile(
    r"context[_ ]length|context window|context size|maximum context|too many tokens|prompt is too long"
    r"|tokens \+ `?max_new_tokens`? must be",  # text-generation-inference (its 422 names them in backticks)
    re.IGNORECASE,
)
MAX_NAME_CHARS = 256  # a served model's name or a finish reason; a longer one is cut (it is stored per call)
MAX_ERROR_CHARS = 500  # of a server's error message kept in the row

T = TypeVar("T")


class UnusableResponse(Exception):
    """A 200 answer we cannot use (no choices or content, a body of another shape): retried."""


@dataclass(frozen=True)
class CallFailure:
    """One failed attempt, as the failure table needs it."""

    status: int | None  # the HTTP status; None: no answer (a lost connection, a timeout, an unusable body)
    described: str  # one line: "HTTP 400: the server's message" or "APITimeoutError: ..."
    retry_after: float | None = None  # the server's Retry-After, in seconds
    text: str = ""  # everything the error said, searched for a context-overflow wording


@dataclass
class Retries:
    """How a backend retries, and how it waits (injectable, so tests do not wait out the backoff)."""

    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    async_sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")

    @classmethod
    def of(
        cls,
        max_retries: int,
        backoff_base: float,
        backoff_max: float,
        sleep: Callable[[float], None] | None = None,
        async_sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> Retries:
        """A backend's retries, with its injected waits where given (tests pass their own)."""
        retries = cls(max_retries, backoff_base, backoff_max)
        if sleep is not None:
            retries.sleep = sleep
        if async_sleep is not None:
            retries.async_sleep = async_sleep
        return retries


def retried(
    call: Callable[[], T],
    failure_of: Callable[[Exception], CallFailure | None],
    retries: Retries,
    what: str,
    refused_hint: Callable[[], str] = lambda: "",
) -> T:
    """``call()`` until it returns or the failure table ends it. ``failure_of`` turns a backend's error into
    a ``CallFailure`` (None: not a failed call, raised as it is)."""
    failures: list[str] = []
    for attempt in range(retries.max_retries + 1):
        try:
            return call()
        except Exception as error:
            failure = failure_of(error)
            if failure is None:
                raise
            retries.sleep(delay_before_retry(failure, attempt, failures, retries, what, refused_hint, error))
    raise AssertionError("unreachable: the last attempt either returns or raises")


async def aretried(
    call: Callable[[], Awaitable[T]],
    failure_of: Callable[[Exception], CallFailure | None],
    retries: Retries,
    what: str,
    refused_hint: Callable[[], str] = lambda: "",
) -> T:
    """``retried`` for an async call."""
    failures: list[str] = []
    for attempt in range(retries.max_retries + 1):
        try:
            return await call()
        except Exception as error:
            failure = failure_of(error)
            if failure is None:
                raise
            await retries.async_sleep(
                delay_before_retry(failure, attempt, failures, retries, what, refused_hint, error)
            )
    raise AssertionError("unreachable: the last attempt either returns or raises")


def delay_before_retry(
    failure: CallFailure,
    attempt: int,
    failures: list[str],
    retries: Retries,
    what: str,
    refused_hint: Callable[[], str],
    error: Exception,
) -> float:
    """Seconds to wait before the next attempt; raises when the failure is final (the module's table).

    ``failures`` collects this call's failures so far (described), to tell a server that refuses the request
    with a 5xx (the same answer every time) from an outage."""
    status, described = failure.status, failure.described
    failures.append(described)
    if status in SETUP_STATUS_CODES:  # unscored and run again on --resume, once the setup is fixed
        raise InfrastructureError(
            f"{what}: {described} (check the API key, the model name and the base URL)"
        ) from error
    if status is not None and status not in RETRYABLE_STATUS_CODES and status < 500:
        text = f"{what}: request refused: {described}"
        if status in (400, 413, 422) and CONTEXT_OVERFLOW.search(f"{failure.text} {described}"):  # TGI: 422
            raise ContextOverflowError(text, status) from error
        raise ModelRequestError(text, status) from error
    # what is left is transient: connection errors, 408/429/5xx, and unusable 200 answers
    attempts = attempt + 1
    if attempts > retries.max_retries:
        raise InfrastructureError(gave_up(what, status, failures, refused_hint)) from error
    delay = failure.retry_after
    if delay is None:
        delay = retries.backoff_base * 2**attempt
    delay = min(delay, retries.backoff_max)
    logger.warning("%s: attempt %d failed (%s); retrying in %.1f s", what, attempts, described, delay)
    return delay


def gave_up(what: str, status: int | None, failures: list[str], refused_hint: Callable[[], str]) -> str:
    """Why the call failed for good. The same 500 on every attempt is said first (a report shows the start
    of the text): a server refusing this request, not an outage."""
    # 502/503/504/529 are a gateway or an overloaded service answering the same words each time: an outage
    if status != 500 or len(failures) < 2 or len(set(failures)) > 1:
        return f"{what}: gave up after {len(failures)} attempts; last error: {failures[-1]}"
    return (
        f"{what}: gave up after {len(failures)} attempts, the same answer every time, so a refused request "
        f"rather than an outage: {failures[-1]}{refused_hint()}"
    )


def tool_call(call_id: Any, name: Any, arguments: str) -> dict[str, Any]:
    """An answer's tool call in the harness's (OpenAI's) form."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant_message(
    texts: list[str], calls: list[dict[str, Any]], api: str, items: list[dict[str, Any]] | None, refusal: str = ""
) -> Message:
    """An answer as the harness's assistant message: its text, and only where the answer has them its tool
    calls, a refusal, and the API's own items to send back with the step (``provider_items``)."""
    message: Message = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    if refusal:
        message["refusal"] = refusal
    if items:
        message["provider_items"] = {"api": api, "items": items}
    return message


def switch_value(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """A switch of ours from the params or a flag: one of ``allowed`` (None: the first, the default)."""
    text = allowed[0] if value is None else str(value)
    if text not in allowed:
        raise ValueError(f"{name}={text!r}: use {' or '.join(allowed)}")
    return text


def http_failure(error: Exception, status: int, body: Any, fallback: str, headers: Any) -> CallFailure:
    """A call answered with an error status: the server's own message (``error_message``; ``fallback`` where
    the body has none) and its Retry-After."""
    return CallFailure(status, error_message(body, status, fallback), retry_after_seconds(headers), str(error))


def no_answer(error: Exception) -> CallFailure:
    """A call without a usable answer: a lost connection, a timeout, a body of another shape."""
    return CallFailure(None, f"{type(error).__name__}: {error}", None, str(error))


def retry_after_seconds(headers: Any) -> float | None:
    """A Retry-After header in seconds, if the server sent a number."""
    try:
        return max(0.0, float((headers or {}).get("retry-after", "")))
    except (TypeError, ValueError):
        return None


def error_message(body: Any, status: int, fallback: str) -> str:
    """``HTTP <status>: <message>``, the message wherever the server put it: OpenAI's, vLLM's and Anthropic's
    ``error.message`` (or ``message``), FastAPI's ``detail`` (transformers serve), TGI's ``error`` string, a
    plain-text body; ``fallback`` (the client's own words) when it said nothing."""
    import json

    message: Any = body
    if isinstance(body, dict):
        nested = body.get("error")
        if isinstance(nested, dict) and nested.get("message"):  # Anthropic: {"type": "error", "error": {...}}
            body = nested
        message = next((body[key] for key in ("message", "detail", "error") if body.get(key)), None)
    if message is not None and not isinstance(message, str):  # FastAPI's 422: a list of field errors
        message = json.dumps(message, ensure_ascii=False, default=str)
    message = one_line(message or "", MAX_ERROR_CHARS)  # a server's HTML page too
    return f"HTTP {status}: {message or fallback or '(no message)'}"


def resolve_api_key(names: Iterable[str], base_url: str | None) -> str:
    """The key from the first of ``names`` set in the environment; a placeholder for a server on localhost or
    a private address (a local vLLM or Ollama needs none); else a ValueError naming the variables."""
    names = tuple(names)
    for name in names:
        key = os.environ.get(name)
        if key:
            return key
    if base_url and is_local(base_url):
        return LOCAL_SERVER_API_KEY
    raise ValueError(
        f"no API key: set the environment variable {' or '.join(names)}, "
        "or point base_url at a local server (which needs none)"
    )


def is_local(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def said(value: Any) -> str | None:
    """A name the service gave (served model, finish reason), kept only as the short one-line text it should
    be: a server that sends another type there still answered, so the answer is not lost for it."""
    if not isinstance(value, str):
        return None
    return one_line(value, MAX_NAME_CHARS) or None


def one_line(text: str, limit: int) -> str:
    """``text`` as one line of at most ``limit`` characters: whitespace runs (line breaks, controls) as one space."""
    return " ".join(text[: 4 * limit].split())[:limit]


def reported(value: Any) -> int | None:
    """A token count as the service reported it: a non-negative integer, else None (not reported)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class LoopClients:
    """An SDK's sync client, and one async client per event loop (pooled connections cannot outlive their
    loop); ``make(asynchronous)`` builds either."""

    def __init__(self, make: Callable[[bool], Any]):
        self._make = make
        self.sync = make(False)
        self._async: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def for_running_loop(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._async is None or self._loop is not loop:
            self._async = self._make(True)
            self._loop = loop
        return self._async


class CallOptions(TypedDict, total=False):
    """How every backend calls its API, beside the model, the server and the params (``ApiModel``'s
    defaults); ``sleep``/``async_sleep`` are injectable so tests do not wait out the backoff."""

    max_retries: int
    timeout: float
    backoff_base: float
    backoff_max: float
    sleep: Callable[[float], None] | None
    async_sleep: Callable[[float], Awaitable[None]] | None


class ApiModel:
    """What every backend's ``ChatModel`` shares, so each API differs only where the API does: ``complete``
    and ``acomplete`` build the body (``request``), send it on the sync client or the running loop's async one
    (``send``: the SDK's create call, which the async client makes awaitable), read the answer (``answer``)
    and leave every failure to the table (``failure``, through ``retried``). A backend sets ``base_url``,
    ``sampling_params`` and ``clients``; the ``CallOptions`` are taken here."""

    base_url: str | None
    sampling_params: dict[str, Any]
    clients: LoopClients

    def __init__(
        self,
        model: str,
        *,
        max_retries: int = 5,
        timeout: float = 300.0,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        sleep: Callable[[float], None] | None = None,
        async_sleep: Callable[[float], Awaitable[None]] | None = None,
    ):
        self.model = model
        self.timeout = timeout
        self.retries = Retries.of(max_retries, backoff_base, backoff_max, sleep, async_sleep)

    @property
    def max_retries(self) -> int:
        return self.retries.max_retries

    def __repr__(self) -> str:
        where = f", base_url={public_url(self.base_url)!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where}, {self.sampling_params}{self.shown_switches()})"

    def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        request = self.request(messages, tools)
        client = self.clients.sync
        return retried(
            lambda: self.answer(self.send(client, request)),
            self.failure,
            self.retries,
            self.what,
            lambda: self.refused_hint(request),
        )

    async def acomplete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        request = self.request(messages, tools)
        client = self.clients.for_running_loop()

        async def attempt() -> ChatResponse:
            return self.answer(await self.send(client, request))

        return await aretried(attempt, self.failure, self.retries, self.what, lambda: self.refused_hint(request))

    # --- each backend's own -----------------------------------------------------------------------------
    @property
    def what(self) -> str:
        """The model and server, as failures name them (never the URL's password)."""
        raise NotImplementedError

    def request(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        """The SDK call's arguments; a TypeError or ValueError when the body cannot be JSON (a harness bug,
        raised here: inside the retry loop the client's own serialising would pass for an unusable answer)."""
        raise NotImplementedError

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        raise NotImplementedError

    def answer(self, raw: Any) -> ChatResponse:
        """The SDK's answer as the harness's (``UnusableResponse`` when it is none)."""
        raise NotImplementedError

    def failure(self, error: Exception) -> CallFailure | None:
        """The SDK's error as the failure table takes it (None: not a failed call, raised as it is)."""
        raise NotImplementedError

    def refused_hint(self, request: dict[str, Any]) -> str:
        """Words added to a 500 that comes back on every attempt, where this request may be why."""
        return ""

    def shown_switches(self) -> str:
        """The switches of ours that ``repr`` shows after the params (none unless a backend says)."""
        return ""
