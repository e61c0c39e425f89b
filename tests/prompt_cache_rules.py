"""Two providers' prompt-cache rules, as the fake servers apply them to the requests they receive.

Token counts are o200k (the project's tokenizer), standing in for each provider's own; a request is a
sequence of blocks (a tool, the system prompt, each content block of each message, in the order the API
reads them) and each block's count is that of its canonical JSON text.

- ``AnthropicCache``, the Messages API's rules: a prefix is cached only where a block carries
  ``cache_control`` (a breakpoint) and only if it is at least the model's minimum cacheable length
  (1,024 tokens for Sonnet 4.5, 4,096 for Haiku 4.5 and Opus 4.5, 2,048 for the Haiku 3 models); a
  request reads the longest cached prefix that ends at one of its breakpoints or at most 20 blocks
  before one; what lies between that and its last cacheable breakpoint is written
  (``cache_creation_input_tokens``), the rest is plain input. An entry lives 5 minutes from its last
  use (``ttl_seconds``, on the clock the caller passes).
- ``AutomaticPrefixCache``, OpenAI's automatic prefix caching: any request of at least 1,024 tokens is
  cached; a later request reads the longest prefix it shares with an earlier one (whole items here), in
  steps of 128 tokens from 1,024 on (``cached_tokens``); nothing is written at a charge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from erp_sim.agents.tokens import get_counter

LOOKBACK_BLOCKS = 20
TTL_SECONDS = 300.0
MINIMUM = (("haiku-4-5", 4096), ("opus-4-5", 4096), ("3-5-haiku", 2048), ("3-haiku", 2048), ("", 1024))
OPENAI_MINIMUM, OPENAI_STEP = 1024, 128


def canonical(block: Any) -> str:
    return json.dumps(block, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def block_tokens(block: Any) -> int:
    return get_counter().count_text(canonical(block))


def minimum_cacheable(model: str) -> int:
    return next(tokens for part, tokens in MINIMUM if part in model)


def messages_blocks(body: dict[str, Any]) -> tuple[list[Any], list[bool]]:
    """A Messages API body's blocks in the API's cache order (tools, system, messages), without their
    ``cache_control``, and which of them carried one."""
    blocks, marked = [], []

    def add(block: Any) -> None:
        if isinstance(block, dict):
            marked.append("cache_control" in block)
            block = {key: value for key, value in block.items() if key != "cache_control"}
        else:
            marked.append(False)
        blocks.append(block)

    for tool in body.get("tools") or ():
        add(tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or ():
        add(block)
    for message in body.get("messages") or ():
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or ():
            add({"role": message.get("role"), **block} if isinstance(block, dict) else block)
    return blocks, marked


def prefix_keys(blocks: Sequence[Any]) -> list[str]:
    """A key per prefix: equal keys, equal prefixes."""
    keys, digest = [], hashlib.sha256()
    for block in blocks:
        digest.update(canonical(block).encode())
        digest.update(b"\x00")
        keys.append(digest.copy().hexdigest())
    return keys


class AnthropicCache:
    """The cache of one organisation's requests to one model family (module docstring)."""

    def __init__(self, ttl_seconds: float = TTL_SECONDS):
        self.ttl_seconds = ttl_seconds
        self._entries: dict[str, float] = {}  # prefix key -> when it was last used

    def usage(self, body: dict[str, Any], now: float = 0.0) -> dict[str, int]:
        """``input_tokens``, ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` of a request."""
        blocks, marked = messages_blocks(body)
        tokens = [block_tokens(block) for block in blocks]
        total = [0]
        for count in tokens:
            total.append(total[-1] + count)  # total[i]: tokens of the first i blocks
        keys = prefix_keys(blocks)
        self._entries = {key: used for key, used in self._entries.items() if now - used <= self.ttl_seconds}
        breakpoints = [i for i, mark in enumerate(marked) if mark]
        read = 0  # blocks read from the cache
        for point in breakpoints:
            for position in range(point, max(point - LOOKBACK_BLOCKS, 0) - 1, -1):
                if keys[position] in self._entries:
                    read = max(read, position + 1)
                    break
        minimum = minimum_cacheable(str(body.get("model", "")))
        written = 0
        for point in breakpoints:
            if total[point + 1] >= minimum:
                self._entries[keys[point]] = now
                written = max(written, point + 1)
        if read:
            self._entries[keys[read - 1]] = now
        cached, created = total[read], max(total[written] - total[read], 0)
        return {
            "input_tokens": total[-1] - cached - created,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": cached,
        }


class AutomaticPrefixCache:
    """OpenAI's automatic prefix caching over one organisation's requests (module docstring). A request is
    its items in order (the tools, the instructions, each input item or message); two requests share a
    prefix as far as their leading items are the same."""

    def __init__(self) -> None:
        self._prefixes: set[str] = set()  # keys of the leading items of every cached request

    def cached_tokens(self, items: Sequence[Any]) -> int:
        """The cached part of a request, in tokens; then the request is cached (if it is long enough)."""
        keys = prefix_keys(items)
        shared = total = 0
        sharing = True
        for key, item in zip(keys, items):
            total += block_tokens(item)
            if sharing and key in self._prefixes:
                shared = total
            else:
                sharing = False
        if total >= OPENAI_MINIMUM:
            self._prefixes.update(keys)
        if shared < OPENAI_MINIMUM:
            return 0
        return OPENAI_MINIMUM + (shared - OPENAI_MINIMUM) // OPENAI_STEP * OPENAI_STEP
