"""The shapes every part of the harness agrees on.

Messages are plain OpenAI chat-completions dicts (``{"role": "system"|"user"|"assistant"|"tool",
...}``), so a transcript can be sent to any OpenAI-compatible server, exported for
fine-tuning, and read by a person without translation. Assistant tool calls use the
OpenAI shape ``{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}``
and tool results are ``{"role": "tool", "tool_call_id", "name", "content"}``: the ``name`` is
ours (summaries and views show it), and ``OpenAIChatModel`` leaves it out on the wire, where
the API allows a tool message only ``tool_call_id`` and ``content``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, SkipValidation

Message = dict[str, Any]
ToolSchema = dict[str, Any]  # OpenAI function-tool schema: {"type": "function", "function": {...}}


# -- what did not change since a sender's last list: receivers that keep work per message (the scripted agent's
# reading, the recorder, the prompt-cache figure) skip it without comparing, so a call costs what is new
class SealedMessage(dict):
    """A message of the runner's transcript: a dict that refuses to change (a policy or agent that wants another
    message copies it, ``dict(message)``, and changes the copy), so that what was read of it holds."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise TypeError(
            "a message of the runner's transcript is not changed in place: copy it (dict(message)) and change the copy"
        )

    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = clear = setdefault = _refuse

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:  # a copy (pickled, deep) is a plain dict to change
        return (dict, (dict(self),))


def _sealed(message: Message) -> Message:
    return message if type(message) is SealedMessage else SealedMessage(message)


class Transcript(list):
    """The runner's transcript: it only grows (``append``, ``extend``) and no message in it is changed once
    appended (each is kept as a ``SealedMessage``), so whoever got it before finds the messages it had then
    unchanged (``unchanged_prefix``). The operations that would break that are refused."""

    __slots__ = ()

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(map(_sealed, messages))

    def append(self, message: Message) -> None:
        super().append(_sealed(message))

    def extend(self, messages: Iterable[Message]) -> None:
        super().extend(map(_sealed, messages))

    def __iadd__(self, messages: Iterable[Message]) -> Transcript:  # type: ignore[override,misc]
        self.extend(messages)
        return self

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("a Transcript only grows by append or extend: no message in it is replaced or removed")

    __setitem__ = __delitem__ = __imul__ = insert = pop = remove = clear = sort = reverse = _refuse


class Continuation(list):
    """Messages whose sender vouches that the first ``kept`` are the very objects ``previous`` (the list it sent
    before) held at the same positions, none changed since it was sent (a policy's context). Only the last list
    is held: ``previous`` forgets its own."""

    __slots__ = ("kept", "previous")

    def __init__(self, messages: Iterable[Message], previous: Continuation | None = None, kept: int = 0):
        super().__init__(messages)
        self.previous = previous
        self.kept = min(kept, len(self), len(previous)) if previous is not None else 0
        if previous is not None:
            previous.previous = None


def unchanged_prefix(messages: Sequence[Message], last: Sequence[Message] | None, last_length: int) -> int:
    """How many leading messages of ``messages`` its sender vouches are, unchanged, those a receiver got in ``last``
    (``last_length`` long then): all of them for a ``Transcript`` that is ``last`` (it only grew), ``kept`` for a
    ``Continuation`` sent right after ``last``, else 0 (any other list vouches for nothing: the receiver compares)."""
    if last is None:
        return 0
    if isinstance(messages, Transcript) and messages is last:
        return min(last_length, len(messages))
    if isinstance(messages, Continuation) and messages.previous is last:
        return min(messages.kept, last_length)
    return 0


class InfrastructureError(RuntimeError):
    """The model service failed (rate limit, 5xx, timeout) after bounded retries.

    Not the agent's fault: evaluation records such episodes apart and retries them on resume.
    """


class ModelRequestError(RuntimeError):
    """The model service refused the request (a 4xx other than 408/429): not retried.

    A bad key, an unknown model, a content filter: retrying the same request cannot help, and it
    is not an outage. The runner ends the episode there with a recorded, scored outcome.
    """

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class ContextOverflowError(ModelRequestError):
    """The request would not fit the model's context window (our ``--context-window`` check, or
    the server's 400 saying so). The episode ends there, scored as a ``context_overflow`` failure.

    ``tokens``: the refused request's size (o200k, messages + tool schemas), where it was counted."""

    def __init__(self, message: str, status_code: int | None = None, *, tokens: int | None = None):
        super().__init__(message, status_code)
        self.tokens = tokens


def refuse_over_window(tokens: int, window: int | None, request: str, after: str = "") -> None:
    """The one ``--context-window`` check: ``ContextOverflowError`` when a request of ``tokens`` (counted as
    ``TokenCounter.count_request`` counts it) exceeds ``window``. ``ModelAgent`` checks before it sends; the
    runner checks what every agent was shown (a scripted agent sends nothing), with the same count."""
    if window is not None and tokens > window:
        raise ContextOverflowError(
            f"{request} {tokens:,} tokens, over the context window of {window:,}{after}", tokens=tokens
        )


def unset(value: object) -> bool:
    """``exclude_if`` of an optional field stored only when set (files written before it stay byte-identical)."""
    return value is None


def sum_reported(values: list[int | None]) -> int | None:
    """A provider figure summed over calls: None when no call reported it (not the same as 0)."""
    reported = [value for value in values if value is not None]
    return sum(reported) if reported else None


class Usage(BaseModel):
    """Tokens of one model call, as counted by the serving side (or by our tokenizer offline)."""

    input_tokens: int = Field(0, ge=0, description="Prompt tokens of the call.")
    output_tokens: int = Field(0, ge=0, description="Completion tokens of the call.")
    cached_input_tokens: int | None = Field(
        None,
        ge=0,
        description="Prompt tokens the service says it served from its cache (Chat Completions' "
        "prompt_tokens_details.cached_tokens, Responses' input_tokens_details.cached_tokens, the Messages "
        "API's cache_read_input_tokens); None: not reported.",
    )
    cache_write_input_tokens: int | None = Field(
        None,
        ge=0,
        exclude_if=unset,
        description="Prompt tokens the service says it wrote to its cache, billed at the cache-write price "
        "(the Messages API's cache_creation_input_tokens); None: not reported (OpenAI caches without a charge).",
    )
    reasoning_tokens: int | None = Field(
        None,
        ge=0,
        exclude_if=unset,
        description="Output tokens the service says went to hidden reasoning (output_tokens_details."
        "reasoning_tokens), part of output_tokens; None: not reported.",
    )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=sum_reported([self.cached_input_tokens, other.cached_input_tokens]),
            cache_write_input_tokens=sum_reported([self.cache_write_input_tokens, other.cache_write_input_tokens]),
            reasoning_tokens=sum_reported([self.reasoning_tokens, other.reasoning_tokens]),
        )


class ChatResponse(BaseModel):
    """One model answer: an assistant message (text and/or tool calls) plus its usage."""

    message: Message = Field(description="OpenAI assistant message: role, content, optional tool_calls.")
    usage: Usage = Field(default_factory=Usage)
    model: str = Field("", description="The model that answered, as the service named it ('': not named).")
    finish_reason: str | None = Field(
        None,
        description="Why the model stopped, as the service said (stop, length: cut at its token limit, "
        "tool_calls, content_filter); None: not reported.",
    )


@runtime_checkable
class ChatModel(Protocol):
    """Messages and tools in, one assistant message out. Sync and async."""

    def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse: ...

    async def acomplete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse: ...


class AgentStep(BaseModel):
    """What an agent did at one step, and what it cost."""

    message: Message = Field(description="The assistant message it produced (text and/or tool calls).")
    # not validated, so not copied: the recorder and the token counter find each shown message by
    # identity, which a validated copy of every message at every step would defeat (quadratic work)
    shown: SkipValidation[list[Message]] = Field(
        default_factory=list, description="The messages the model was shown, after every context policy."
    )
    usage: Usage = Field(default_factory=Usage, description="Tokens of the agent's own model call.")
    summarizer_usage: Usage = Field(
        default_factory=Usage, description="Tokens spent by summarizers inside context policies this step."
    )
    summarizer_calls: int = Field(0, ge=0, description="Summarizer calls made this step.")
    finish_reason: str | None = Field(
        None, description="Why the agent's model stopped, as the service said ('length': cut at its token limit)."
    )
    served_model: str | None = Field(
        None, description="The model the service says answered (None: not said, or no model, as offline)."
    )


@runtime_checkable
class Agent(Protocol):
    """Decides the next assistant message from a transcript.

    The runner keeps the full transcript and passes it whole each step; context policies
    wrap an agent (like Gymnasium wrappers wrap envs) and pass a transformed transcript on.
    """

    def reset(self) -> None: ...

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep: ...


@runtime_checkable
class HarnessTools(Protocol):
    """Tools a layer of an agent's policy stack offers and the harness answers itself, never the ERP (ga_memory's
    memory tools). A layer offers them as its ``harness_tools``; the runner adds their schemas to the model's tool
    list and sends their calls here, so it needs to know no tool of its own."""

    @property
    def schemas(self) -> list[ToolSchema]: ...

    def handles(self, name: str) -> bool: ...

    def call(self, name: str, arguments: str | dict) -> str:
        """The tool result's text; bad input comes back as an ``Error: ...`` text that changes nothing."""
        ...


def harness_tools(agent: object) -> HarnessTools | None:
    """The harness tools of the first layer of ``agent``'s policy stack (outermost first) that offers them, or None."""
    while agent is not None:
        tools = getattr(agent, "harness_tools", None)
        if isinstance(tools, HarnessTools):
            return tools
        agent = getattr(agent, "agent", None)
    return None
