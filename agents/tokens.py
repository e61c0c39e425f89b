"""Exact token counts, offline, with each message counted once.

Text is tokenized with the ``o200k_base`` encoding (the GPT-4o / GPT-5 family) from the
``bpe-openai`` package, which ships the encoding tables and gives the same token ids as
``tiktoken`` (which would download its tables at run time and fails offline). Special-token
text such as ``"<|endoftext|>"`` inside a message is counted as ordinary text, as it is when
a chat API receives it.

Message formula (the OpenAI cookbook's, extended to tool calls)::

    count_message(m) = 3                                   # <|start|>role ... <|end|> framing
                     + count_text(m["role"])
                     + count_text(text of m["content"])    # str, or the "text" of each part
                     + (1 + count_text(m["name"]))         # when a "name" is sent (not on tool results)
                     + sum over m["tool_calls"] of
                           3 + count_text(function.name) + count_text(function.arguments)
    count_messages(ms) = sum(count_message(m) for m in ms) + 3   # reply priming

Opaque ids (``tool_call_id``, the call ``id``) are not counted. The content is exact; the
framing constants are the cookbook's estimate of what the server adds, so totals can differ
from a server's reported prompt tokens by a few tokens per message.

Counting a growing transcript is incremental: each message's count is cached under its
canonical content (a bounded LRU), so re-counting a transcript costs one dictionary lookup
per message already seen and a real tokenization only for new ones.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

DEFAULT_ENCODING = "o200k_base"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING_TOKENS = 3
DEFAULT_CACHE_SIZE = 65_536  # entries (messages, and long texts)
DEFAULT_CACHE_CHARS = 32_000_000  # characters of text the cache keys may hold, about 8M tokens
TEXT_CACHE_MIN_CHARS = 256  # shorter texts tokenize faster than a cache lookup pays off


class Encoder(Protocol):
    """What the counter needs from a tokenizer; tiktoken's ``Encoding`` fits too."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...

    def count(self, text: str) -> int: ...


class BpeOpenAIEncoder:
    """An encoding from ``bpe-openai``, without its per-call size limits.

    ``Encoding.encode_ordinary`` refuses texts over 1M characters or 200k tokens; the Rust
    backend it wraps has no such limit, so long tool outputs are counted through it directly.
    """

    def __init__(self, name: str):
        import warnings

        self.name = name
        with warnings.catch_warnings():  # bpe-openai 0.1.4 loads its tables with a deprecated importlib call
            warnings.simplefilter("ignore", DeprecationWarning)
            import bpe_openai

            self._encoding = bpe_openai.get_encoding(name)
        self._backend = getattr(self._encoding, "_backend", None)

    def encode(self, text: str) -> list[int]:
        text = _valid_utf8(text)
        if self._backend is None:
            return self._encoding.encode_ordinary(text)
        return list(self._backend.encode(text))

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(list(tokens))

    def count(self, text: str) -> int:
        if not text:
            return 0
        text = _valid_utf8(text)
        if self._backend is None:
            return len(self._encoding.encode_ordinary(text))
        return self._backend.count(text)


def _valid_utf8(text: str) -> str:
    """Replace lone surrogates (invalid in UTF-8) the way bpe-openai itself does."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


ENCODINGS: dict[str, Callable[[], Encoder]] = {
    "o200k_base": lambda: BpeOpenAIEncoder("o200k_base"),
    "cl100k_base": lambda: BpeOpenAIEncoder("cl100k_base"),
}


def register_encoding(name: str, factory: Callable[[], Encoder]) -> None:
    """Make another encoding available by name (e.g. a tiktoken one where it can download)."""
    ENCODINGS[name] = factory
    get_encoder.cache_clear()
    get_counter.cache_clear()


@cache
def get_encoder(name: str = DEFAULT_ENCODING) -> Encoder:
    """The encoder registered under ``name``, built once per process."""
    try:
        factory = ENCODINGS[name]
    except KeyError:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(sorted(ENCODINGS))}") from None
    return factory()


def message_text(content: Any) -> str:
    """The text of an OpenAI message ``content``: a string, None, or a list of parts.

    Only ``text`` parts carry tokens we can count; other parts (images, audio) are skipped.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _message_key(message: dict[str, Any]) -> tuple:
    """What a message's count depends on, hashable; ids are left out on purpose."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False)
    calls = message.get("tool_calls")
    if not calls:
        return (message.get("role", ""), content, _sent_name(message))
    call_key = []
    for call in calls:
        function = call.get("function") or _NO_FUNCTION
        call_key.append((function.get("name", ""), function.get("arguments", "")))
    return (message.get("role", ""), content, _sent_name(message), tuple(call_key))


def _sent_name(message: dict[str, Any]) -> str | None:
    """A tool result's ``name`` is ours (for views and summaries) and is not sent (see
    ``openai_chat.wire_messages``), so it is not counted; other roles' names are sent."""
    return None if message.get("role") == "tool" else message.get("name")


_NO_FUNCTION: dict[str, str] = {}


class _LRU:
    """A least-recently-used cache bounded in entries and in the characters its keys hold.

    Keys hold message text (exactness needs the text itself, not a hash), so the character
    bound keeps a long-lived process from pinning every transcript it ever counted.
    Safe to share between threads: a race can only cost a recount, never a wrong count.
    """

    def __init__(self, max_entries: int, max_chars: int):
        self.max_entries, self.max_chars = max_entries, max_chars
        self._data: OrderedDict[Any, tuple[int, int]] = OrderedDict()
        self.chars = 0

    def get(self, key: Any) -> int | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        try:
            self._data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass
        return entry[0]

    def put(self, key: Any, value: int, chars: int) -> None:
        self._data[key] = (value, chars)
        self.chars += chars
        while len(self._data) > self.max_entries or self.chars > self.max_chars:
            try:
                _, (_, evicted_chars) = self._data.popitem(last=False)
            except KeyError:  # emptied by another thread
                break
            self.chars -= evicted_chars

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()
        self.chars = 0


class TokenCounter:
    """Counts text and chat messages with one encoding; caches counts (bounded LRU)."""

    def __init__(
        self,
        encoding: str = DEFAULT_ENCODING,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cache_chars: int = DEFAULT_CACHE_CHARS,
    ):
        self.encoding = encoding
        self.encoder = get_encoder(encoding)
        self._cache = _LRU(cache_size, cache_chars)
        self._text_cache = _LRU(cache_size, cache_chars)
        self.hits = 0
        self.misses = 0

    def count_text(self, text: str | None) -> int:
        """Tokens of ``text``; long texts are cached too, since policies re-measure tool outputs."""
        if not text:
            return 0
        if len(text) < TEXT_CACHE_MIN_CHARS:
            return self.encoder.count(text)
        cached = self._text_cache.get(text)
        if cached is None:
            cached = self.encoder.count(text)
            self._text_cache.put(text, cached, len(text))
        return cached

    def count_message(self, message: dict[str, Any]) -> int:
        key = _message_key(message)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        count = self._count_uncached(message)
        chars = len(key[1] or "") + sum(len(name) + len(arguments) for name, arguments in (key[3] if len(key) > 3 else ()))
        self._cache.put(key, count, chars)
        return count

    def count_messages(self, messages: list[dict[str, Any]]) -> int:
        return sum(map(self.count_message, messages)) + REPLY_PRIMING_TOKENS

    def count_tools(self, tools: list[dict[str, Any]] | None) -> int:
        """Tokens of tool schemas as canonical JSON: an estimate, servers render them their own way."""
        return self.count_text(tools_text(tools))

    def _count_uncached(self, message: dict[str, Any]) -> int:
        count = TOKENS_PER_MESSAGE + self.count_text(message.get("role", ""))
        count += self.count_text(message_text(message.get("content")))
        name = _sent_name(message)
        if name:
            count += TOKENS_PER_NAME + self.count_text(name)
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            count += TOKENS_PER_TOOL_CALL + self.count_text(function.get("name", ""))
            count += self.count_text(function.get("arguments", ""))
        return count

    def cache_clear(self) -> None:
        self._cache.clear()
        self._text_cache.clear()
        self.hits = self.misses = 0


class RunningCount:
    """``count_messages`` for a transcript that grows by appending: only new messages are looked up.

    Remembers the last list it counted (the message objects and their content objects);
    when the next list starts with the same ones, only the tail is counted. Anything else
    (a shorter list, a replaced message or content) is counted from scratch.
    """

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter or get_counter()
        self._seen: list[tuple[dict[str, Any], Any]] = []
        self._total = 0

    def __call__(self, messages: list[dict[str, Any]]) -> int:
        seen = self._seen
        if len(messages) < len(seen) or not all(
            m is old and m.get("content") is content for (old, content), m in zip(seen, messages)
        ):
            seen.clear()
            self._total = 0
        count = self.counter.count_message
        for message in messages[len(seen) :]:
            self._total += count(message)
            seen.append((message, message.get("content")))
        return self._total + REPLY_PRIMING_TOKENS


@cache
def get_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """The shared counter of an encoding, so every policy and metric shares one cache."""
    return TokenCounter(encoding)


def count_text(text: str | None, encoding: str = DEFAULT_ENCODING) -> int:
    return get_counter(encoding).count_text(text)


def count_message(message: dict[str, Any], encoding: str = DEFAULT_ENCODING) -> int:
    return get_counter(encoding).count_message(message)


def count_messages(messages: list[dict[str, Any]], encoding: str = DEFAULT_ENCODING) -> int:
    return get_counter(encoding).count_messages(messages)


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    return get_encoder(encoding).encode(text)


def decode(tokens: list[int], encoding: str = DEFAULT_ENCODING) -> str:
    return get_encoder(encoding).decode(tokens)


# Framing stand-ins in ``encode_message``: ids above any vocabulary, so they never equal a text token.
MESSAGE_START, MESSAGE_SEPARATOR, MESSAGE_END, NAME_MARK, CALL_START, CALL_ARGUMENTS, CALL_END = range(1 << 24, (1 << 24) + 7)


def encode_message(message: dict[str, Any], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """A message as token ids in the order a server renders it, ``count_message(message)`` of them.

    Text is the encoding's ids; the framing the formula above counts (3 per message, 1 per
    name, 3 per tool call) is stand-in ids, so two messages share a token prefix exactly as far
    as their rendered role, name, content and calls agree (``erp_sim.agents.prompt_cache``).
    """
    encoder = get_encoder(encoding)
    ids = [MESSAGE_START, *encoder.encode(message.get("role", ""))]
    name = _sent_name(message)
    if name:
        ids += [NAME_MARK, *encoder.encode(name)]
    ids.append(MESSAGE_SEPARATOR)
    ids += encoder.encode(message_text(message.get("content")))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        ids += [CALL_START, *encoder.encode(function.get("name", "")), CALL_ARGUMENTS,
                *encoder.encode(function.get("arguments", "")), CALL_END]
    ids.append(MESSAGE_END)
    return ids


def message_cache_key(message: dict[str, Any]) -> tuple:
    """What a message's tokens depend on (ids left out), hashable: ``count_message``'s cache key."""
    return _message_key(message)


def tools_text(tools: list[dict[str, Any]] | None) -> str:
    """Tool schemas as ``count_tools`` counts them: canonical JSON ("" for none)."""
    return json.dumps(tools, sort_keys=True, separators=(",", ":")) if tools else ""
