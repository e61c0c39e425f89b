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
canonical content (a bounded LRU) and, for the message objects counted last, under the object
itself, so re-counting a transcript costs one dictionary lookup per message already seen and
a real tokenization only for new ones.

Beside the counts, in this package: ``prompt_cache`` (how much of each model request a provider could serve
from its cache) and ``shared_prefix`` (how many leading tokens two messages share, which it needs).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import operator
import re
import sys
import warnings
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from itertools import accumulate, compress, repeat
from typing import Any, Protocol

DEFAULT_ENCODING = "o200k_base"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING_TOKENS = 3
DEFAULT_CACHE_SIZE = 65_536  # entries (messages, and long texts)
DEFAULT_CACHE_CHARS = 32_000_000  # characters of text the cache keys may hold, about 8M tokens
IDENTITY_CACHE_SIZE = 4_096  # message objects whose count is kept by identity (an episode shows a few hundred)
TEXT_CACHE_MIN_CHARS = 256  # shorter texts tokenize faster than a cache lookup pays off
CHUNKED_MIN_LINES = 32  # a text of this many lines or more is counted by chunks of lines (``TokenCounter``)
CHUNK_LINES = 8  # lines per chunk, on average (a chunk ends before a line whose hash is 0 modulo this)
# A summary of a few dozen lines re-rendered changes in a few places, each costing its chunk's tokenizing; a long
# text costs a look-up per chunk, whose count grows as chunks shrink: a short text has shorter chunks.
SHORT_TEXT_LINES = 128
SHORT_CHUNK_LINES = 2  # lines per chunk, on average, in a text of fewer than SHORT_TEXT_LINES lines
CHUNKED_MIN_STRING_ENDS = 32  # a one-line text with this many string ends (``STRING_END``) is counted by chunks too
CHUNK_STRING_ENDS = 4  # string ends per chunk, on average (``TokenCounter._count_by_string_ends``)
STRING_END = '",'  # (two characters) where a JSON string is followed by another value: a cut may go before it
_ASCII_ALNUM = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# A line the text may be cut before: o200k's pattern then ends a piece at the "\n" before it (see
# ``TokenCounter._count_by_lines``). Python's \s holds every character the encoding's \s does (and \x1c-\x1f).
_CUT_BEFORE = re.compile(r"[^\s/]|[^\S\r\n]++[^\r]")


class Encoder(Protocol):
    """What the counter needs from a tokenizer; tiktoken's ``Encoding`` fits too."""

    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...

    def count(self, text: str) -> int: ...


class BpeOpenAIEncoder:
    """An encoding from ``bpe-openai``'s Rust backend, without its per-call size limits.

    Only the backend is loaded: ``import bpe_openai`` decodes the Python rank tables of every
    encoding it ships (o200k_base, cl100k_base, voyage3_base: about a second of CPU in every
    process), which counting and encoding never use. ``Encoding.encode_ordinary`` also refuses
    texts over 1M characters or 200k tokens; the backend has no such limit. Decoding ids outside
    the ordinary vocabulary (special tokens, unknown ids) goes to the full ``Encoding``, loaded then.
    """

    def __init__(self, name: str):
        self.name = name
        self._encoding: Any = None  # the full bpe_openai Encoding, only when needed
        bindings = _bpe_bindings()
        self._backend = bindings.tokenizer_for_encoding(name) if bindings is not None else None
        self._ordinary = ORDINARY_TOKENS.get(name, 0) if self._backend is not None else 0
        if self._backend is None:
            self._full()

    def _full(self) -> Any:
        if self._encoding is None:
            with warnings.catch_warnings():  # bpe-openai 0.1.4 loads its tables with a deprecated importlib call
                warnings.simplefilter("ignore", DeprecationWarning)
                self._encoding = bpe_openai_package().get_encoding(self.name)
        return self._encoding

    def encode(self, text: str) -> list[int]:
        text = _valid_utf8(text)
        if self._backend is None:
            return self._encoding.encode_ordinary(text)
        ids = self._backend.encode(text)
        return ids if type(ids) is list else list(ids)  # a list already: no copy

    def decode(self, tokens: list[int]) -> str:
        tokens = list(tokens)
        ordinary = self._ordinary
        # the backend does not check ids (an unknown one panics or reads garbage)
        if ordinary and self._backend is not None and all(isinstance(t, int) and 0 <= t < ordinary for t in tokens):
            try:
                return self._backend.decode(tokens)
            except ValueError:  # bytes that are not UTF-8 (a cut inside a character): replaced, as bpe_openai does
                pass
        return self._full().decode(tokens)

    def count(self, text: str) -> int:
        if not text:
            return 0
        text = _valid_utf8(text)
        if self._backend is None:
            return len(self._encoding.encode_ordinary(text))
        return self._backend.count(text)


# Ordinary (non-special) token ids of each encoding are 0 .. N-1 (the line count of its rank table).
ORDINARY_TOKENS = {"o200k_base": 199_998, "cl100k_base": 100_256}


def bpe_openai_package() -> Any:
    """``bpe_openai`` itself (its ``__init__`` builds the encodings' tables), imported on first use: counts go
    through its bindings alone (``_bpe_bindings``), and an eval worker's start-up loads neither
    (tests/test_startup.py)."""
    import bpe_openai

    return bpe_openai


@cache
def _bpe_bindings() -> Any:
    """``bpe_openai._bindings`` (the Rust backend), loaded without running ``bpe_openai/__init__``;
    None where the package is laid out otherwise (the full package is used then)."""
    if "bpe_openai._bindings" in sys.modules:
        return sys.modules["bpe_openai._bindings"]
    spec = importlib.util.find_spec("bpe_openai")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = f"{folder}/_bindings{suffix}"
            try:
                loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", path)
                module_spec = importlib.util.spec_from_loader("bpe_openai._bindings", loader)
                if module_spec is None:
                    continue
                module = importlib.util.module_from_spec(module_spec)
                loader.exec_module(module)
            except (ImportError, OSError):
                continue
            return module
    return None


def _valid_utf8(text: str) -> str:
    """Replace lone surrogates (invalid in UTF-8) the way bpe-openai itself does."""
    if text.isascii():  # a flag of the str object: no copy to check it
        return text
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
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
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
        replaced = self._data.get(key)  # a key put again (two threads counting one text) holds its characters once
        self._data[key] = (value, chars)
        self.chars += chars - (replaced[1] if replaced is not None else 0)
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


def _line_chunks(lines: list[str]) -> list[str]:
    """The chunks ``TokenCounter._count_by_lines`` counts ``"\n".join(lines)`` by (each but the last ends with its
    line break): they end before a line a cut may go before (``_CUT_BEFORE``) whose hash is 0 modulo
    ``CHUNK_LINES``, or ``SHORT_CHUNK_LINES`` in a text of fewer than ``SHORT_TEXT_LINES`` lines."""
    every = CHUNK_LINES if len(lines) >= SHORT_TEXT_LINES else SHORT_CHUNK_LINES
    starts = compress(range(1, len(lines)), map(operator.not_, map(operator.mod, map(hash, lines[1:]), repeat(every))))
    cuts = [i for i in starts if _CUT_BEFORE.match(lines[i])]
    ends = [*cuts, len(lines)]
    return ["\n".join(lines[start:end]) + ("\n" if end < len(lines) else "") for start, end in zip([0, *cuts], ends)]


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
        # id(message) -> (message, its content, its tool_calls, count); holding the message keeps its id unique
        self._by_identity: OrderedDict[int, tuple[dict[str, Any], Any, Any, int]] = OrderedDict()
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
            cached = self._count_long(text)
            self._text_cache.put(text, cached, len(text))
        return cached

    def _count_long(self, text: str) -> int:
        """Tokens of a long text: of one with many lines, by chunks of lines (``_count_by_lines``); of one line
        with many string ends (a JSON response), by chunks cut at those (``_count_by_string_ends``)."""
        if text.count("\n") >= CHUNKED_MIN_LINES:
            return self._count_by_lines(text.split("\n"))
        if text.count(STRING_END) >= CHUNKED_MIN_STRING_ENDS:
            return self._count_by_string_ends(text)
        return self.encoder.count(text)

    def _count_by_lines(self, lines: list[str]) -> int:
        """Tokens of ``"\n".join(lines)``, summed over chunks of lines, each counted once per cache.

        A summary or a memory block is re-rendered with a few lines changed, and tokenizing it whole at every
        change cost the text's length each time. o200k's pattern ends the piece holding a "\n" right after it
        when the next line starts with a character that is neither whitespace nor "/" (only the punctuation
        piece's ``[\\r\\n/]*`` runs on over a "/"), or with spaces or tabs followed by something other than a
        line break (``\\s*[\\r\\n]+`` runs on to the last line break of a run of whitespace): there the
        text's tokens are those of the text before and those after. Chunks end at such a line whose hash is 0
        modulo ``CHUNK_LINES`` (fewer in a short text: ``_line_chunks``), a choice made by the content alone, so an
        inserted line changes the chunk holding it and the others are found in the cache (Hypothesis checks the
        sums against whole counts)."""
        return self._count_chunks(_line_chunks(lines))

    def _count_by_string_ends(self, text: str) -> int:
        """Tokens of ``text``, summed over chunks cut before some of its string ends, each counted once per cache.

        A tool's JSON response is one line, and the next response differs from it in a few values (a grid row,
        a total, the result's sentence). A chunk ends before a ``",`` that follows an ASCII letter or digit:
        o200k's pattern ends a letter piece or a number piece at a character that is neither a letter, a mark,
        a number nor the apostrophe of a contraction, and the text before the cut does not end in whitespace
        (where ``\\s+(?!\\S)`` looks ahead), so the text's tokens are those before and those after. Chunks end
        before the pieces (the text between two string ends) whose hash is 0 modulo ``CHUNK_STRING_ENDS``, a
        choice made by the content alone, so a changed value changes the chunk holding it and the others are
        found in the cache."""
        pieces = text.split(STRING_END)
        starts = compress(
            range(1, len(pieces)),
            map(operator.not_, map(operator.mod, map(hash, pieces[1:]), repeat(CHUNK_STRING_ENDS))),
        )
        ends = list(accumulate(map(len, pieces)))  # piece i ends at ends[i] + 2 * i in the text
        cuts = [ends[i - 1] + 2 * (i - 1) for i in starts if pieces[i - 1][-1:] in _ASCII_ALNUM]
        return self._count_chunks(map(text.__getitem__, map(slice, [0, *cuts], [*cuts, len(text)])))

    def _count_chunks(self, chunks: Iterable[str]) -> int:
        """The sum of the chunks' tokens (``_chunk_tokens``)."""
        return sum(self._chunk_tokens(chunks))

    def _chunk_tokens(self, chunks: Iterable[str]) -> list[int]:
        """Each chunk's tokens, looked up in the text cache and tokenized only when not found."""
        counts: list[int] = []
        cache, count = self._text_cache, self.encoder.count
        for chunk in chunks:
            tokens = cache.get(chunk)
            if tokens is None:
                tokens = count(chunk)
                cache.put(chunk, tokens, len(chunk))
            counts.append(tokens)
        return counts

    def count_text_before(self, text: str, cut: int) -> int:
        """Tokens of ``text[:cut]`` where the encoding's pattern has a piece boundary at ``cut`` (the text's tokens
        are then those of ``text[:cut]`` and those of ``text[cut:]``), tokenizing as little as it can: of a long
        text counted before, only the shorter side; of another long text, both sides, their sum then kept as its
        count (the prompt cache counts the message next); of a short one, the prefix; of one counted by chunks of
        lines, from its chunks (``_count_lines_before``)."""
        if len(text) < TEXT_CACHE_MIN_CHARS:
            return self.encoder.count(text[:cut])
        if text.count("\n") >= CHUNKED_MIN_LINES:
            return self._count_lines_before(text, cut)
        whole = self._text_cache.get(text)
        if whole is not None:
            return whole - self._count_long(text[cut:]) if 2 * cut > len(text) else self._count_long(text[:cut])
        before = self._count_long(text[:cut])
        self._text_cache.put(text, before + self._count_long(text[cut:]), len(text))
        return before

    def _count_lines_before(self, text: str, cut: int) -> int:
        """``count_text_before`` of a text counted by chunks of lines: the chunks that end by ``cut`` (found in the
        cache when the text or one much like it was counted), plus the part of the next one before ``cut``, the
        whole text's count kept on the way (the prompt cache counts the message next). ``text[:cut]`` is then
        counted by chunks at the same cuts, each a cut of it too while the line after it keeps, up to ``cut``, what
        ``_CUT_BEFORE`` matches (else that line goes with the chunk before): no need of a boundary at ``cut``."""
        chunks = _line_chunks(text.split("\n"))
        counts = self._chunk_tokens(chunks)
        if self._text_cache.get(text) is None:
            self._text_cache.put(text, sum(counts), len(text))
        ends = list(accumulate(map(len, chunks)))
        whole = bisect_right(ends, cut)  # chunks[:whole] end by cut
        if whole and cut > ends[whole - 1] and not _CUT_BEFORE.match(text, ends[whole - 1], cut):
            whole -= 1
        start = ends[whole - 1] if whole else 0
        return sum(counts[:whole]) + (self.encoder.count(text[start:cut]) if cut > start else 0)

    def count_message(self, message: dict[str, Any]) -> int:
        known = self._known(message)
        if known is not None:
            self.hits += 1
            return known[3]
        key = _message_key(message)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
        else:
            self.misses += 1
            cached = self._count_uncached(message)
            self._cache_count(key, cached)
        self._remember(message, cached)
        return cached

    def _cache_count(self, key: tuple, count: int) -> None:
        chars = len(key[1] or "") + sum(
            len(name) + len(arguments) for name, arguments in (key[3] if len(key) > 3 else ())
        )
        self._cache.put(key, count, chars)

    def _known(self, message: dict[str, Any]) -> tuple | None:
        return identity_entry(self._by_identity, message)

    def _remember(self, message: dict[str, Any], count: int) -> None:
        """Keep the count under the message object itself: a transcript shows the same objects at
        every step, and building their keys again made each step cost the whole history. A message
        whose content or tool_calls is replaced is counted again (edit messages by replacing those,
        as every policy here does, not by editing a tool call in place)."""
        memo = self._by_identity
        memo[id(message)] = (message, message.get("content"), message.get("tool_calls"), count)
        while len(memo) > IDENTITY_CACHE_SIZE:
            try:
                memo.popitem(last=False)  # the oldest (OrderedDict: O(1), unlike a plain dict's first key)
            except KeyError:  # emptied by another thread meanwhile
                break

    def count_messages(self, messages: list[dict[str, Any]]) -> int:
        return sum(map(self.count_message, messages)) + REPLY_PRIMING_TOKENS

    def counts(self, messages: list[dict[str, Any]], count: Callable[[dict[str, Any]], int] | None = None) -> list[int]:
        """``count_message`` of each message, those known by identity looked up in C (a long list that is
        mostly shown before costs a few passes, not a Python call each); ``count`` counts the others."""
        entries = list(map(self._by_identity.get, map(id, messages), repeat(_UNKNOWN)))
        known = unchanged_objects(messages, map(_FIRST, entries), map(_SECOND, entries), map(_THIRD, entries))
        counted = list(map(_FOURTH, entries))
        position = next_false(known, 0)
        while position is not None:
            counted[position] = (count or self.count_message)(messages[position])
            position = next_false(known, position + 1)
        return counted

    def count_tools(self, tools: list[dict[str, Any]] | None) -> int:
        """Tokens of tool schemas as canonical JSON: an estimate, servers render them their own way."""
        return self.count_text(tools_text(tools))

    def count_request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
        """A request's size, the figure the context window is checked against: its messages (reply priming
        included) and its tool schemas. The runner's ``PrefixTracker`` gives the same sum as it goes."""
        return self.count_messages(messages) + self.count_tools(tools)

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
        self._by_identity.clear()
        self.hits = self.misses = 0


class RunningCount:
    """``count_messages`` for a context that changes little from call to call: the messages the counter
    knows by identity (the same object with the same content and tool_calls objects) are looked up in C
    (``TokenCounter.counts``), so only messages not seen before are counted, wherever a policy inserts or
    drops messages, and a message whose content is replaced in place is counted again."""

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter or get_counter()

    def __call__(self, messages: list[dict[str, Any]]) -> int:
        return sum(self.counter.counts(messages)) + REPLY_PRIMING_TOKENS


def identity_entry(table: Mapping[int, tuple], message: dict[str, Any]) -> tuple | None:
    """``table[id(message)]`` if it was kept for this very object with its current content and tool_calls
    (entries start ``(message, content, tool_calls, ...)``); None for an id reused or a message edited in place.
    ``unchanged_objects`` applies the same rule to a whole list at once."""
    known = table.get(id(message))
    if (
        known is not None
        and known[0] is message
        and known[1] is message.get("content")
        and known[2] is message.get("tool_calls")
    ):
        return known
    return None


def unchanged_objects(
    messages: list[dict[str, Any]], objects: Iterable[Any], contents: Iterable[Any], tool_calls: Iterable[Any]
) -> list[bool]:
    """Per position (as far as the shorter goes): the message is that object, with those very content and
    tool_calls objects; ``identity_entry``'s rule for a whole list, checked in C."""
    same = list(map(operator.is_, messages, objects))
    same = list(map(operator.and_, same, map(operator.is_, message_entries(messages, "content"), contents)))
    return list(map(operator.and_, same, map(operator.is_, message_entries(messages, "tool_calls"), tool_calls)))


def same_prefix(items: list[Any], reference: list[Any]) -> int:
    """How many leading items are those of ``reference``: the very objects, or equal ones (``==``).

    A request that repeats the last one's messages (full history resends them all) is one list comparison in
    C at pointer speed; one that parts from it is walked by identity up to the first difference (a request
    that parts early, pruned or with an insert near its start, costs little). Equal copies count as the same
    only when every item of the shorter list is; two messages equal under ``==`` have the same text, tokens
    and JSON, but where a value is a number or a bool (1 == 1.0 == True)."""
    shorter = min(len(items), len(reference))
    head = items if len(items) == shorter else items[:shorter]
    if head == (reference if len(reference) == shorter else reference[:shorter]):
        return shorter
    return next(compress(range(shorter), map(operator.is_not, items, reference)), shorter)


def next_false(flags: list[bool], start: int) -> int | None:
    """The next position at or after ``start`` holding False, searched in C."""
    try:
        return flags.index(False, start)
    except ValueError:
        return None


def message_entries(messages: list[dict[str, Any]], name: str) -> Iterator[Any]:
    """Each message's ``name`` entry (None when absent), looked up in C."""
    return map(dict.get, messages, repeat(name))


_UNKNOWN = (None, None, None, 0)  # an identity entry no message matches
_FIRST, _SECOND, _THIRD, _FOURTH = map(operator.itemgetter, range(4))


def next_none(found: list[Any], start: int) -> int | None:
    """The next position at or after ``start`` holding None (nothing known there), searched in C."""
    try:
        return found.index(None, start)
    except ValueError:
        return None


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
MESSAGE_START, MESSAGE_SEPARATOR, MESSAGE_END, NAME_MARK, CALL_START, CALL_ARGUMENTS, CALL_END = range(
    1 << 24, (1 << 24) + 7
)


def encode_message(message: dict[str, Any], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """A message as token ids in the order a server renders it, ``count_message(message)`` of them.

    Text is the encoding's ids; the framing the formula above counts (3 per message, 1 per
    name, 3 per tool call) is stand-in ids, so two messages share a token prefix exactly as far
    as their rendered role, name, content and calls agree (``erp_sim.agents.tokens.prompt_cache``).
    """
    return encode_token_key(message_token_key(message), get_encoder(encoding))


def message_token_key(message: dict[str, Any]) -> tuple:
    """What ``encode_message``'s ids are made of, hashable: two messages have equal keys exactly
    when they have equal ids (encoding is lossless on valid text; lone surrogates are replaced
    first, as encoding does), so messages can be compared without tokenizing them."""
    name = _sent_name(message)
    calls = tuple(
        (_valid_utf8(function.get("name") or ""), _valid_utf8(function.get("arguments") or ""))
        for function in (call.get("function") or _NO_FUNCTION for call in message.get("tool_calls") or ())
    )
    return (
        _valid_utf8(message.get("role") or ""),
        _valid_utf8(name) if name else None,
        _valid_utf8(message_text(message.get("content"))),
        calls,
    )


def encode_token_key(key: tuple, encoder: Encoder) -> list[int]:
    """The ids of a ``message_token_key``: role, name, content and calls with their framing."""
    role, name, text, calls = key
    ids = [MESSAGE_START, *_name_ids(role, encoder)]
    if name is not None:
        ids += [NAME_MARK, *_name_ids(name, encoder)]
    ids.append(MESSAGE_SEPARATOR)
    if text:  # an assistant's calls come with "" (each encode is a call into the backend)
        ids += encoder.encode(text)
    for function_name, arguments in calls:
        ids += [CALL_START, *_name_ids(function_name, encoder), CALL_ARGUMENTS]
        if arguments:
            ids += encoder.encode(arguments)
        ids.append(CALL_END)
    ids.append(MESSAGE_END)
    return ids


NAMES_KEPT = 1_024  # roles, names and tool names whose ids are kept (a run uses a few dozen)
_names: dict[tuple[Encoder, str], list[int]] = {}


def _name_ids(text: str, encoder: Encoder) -> list[int]:
    """The ids of a role, name or tool name, encoded once: every message repeats a few of them."""
    ids = _names.get((encoder, text))
    if ids is None:
        if len(_names) >= NAMES_KEPT:  # names sent by an outsider: stay bounded
            _names.clear()
        ids = _names[encoder, text] = encoder.encode(text)
    return ids


def tools_text(tools: list[dict[str, Any]] | None) -> str:
    """Tool schemas as ``count_tools`` counts them: canonical JSON ("" for none)."""
    return json.dumps(tools, sort_keys=True, separators=(",", ":")) if tools else ""
