"""Prompt caching: how much of each model request a provider could serve from its cache.

Providers reuse the longest prefix a request shares with an earlier one and bill it as
cached input at a fraction of the price. Full history (C2) extends the same prefix every
call; pruning and summarising rewrite it. This module measures that bound for every model
call of an episode, per role (the agent, the summarizer, the LLM user):

``cacheable_prefix_tokens`` of a request = the o200k tokens of its longest prefix identical
to some earlier request of the same role in the episode, where a request is its tool schemas
(one unit, first) and then its messages in the order sent. Tool schemas that differ from every
earlier request's make nothing cacheable. Messages are compared whole, and the first one that
differs token by token (``tokens.encode_message``: framing, role, name, content, calls), so an
instruction with a summary appended keeps the instruction's tokens. The 3 reply-priming tokens
count only when the whole request repeats an earlier one. The first request of a role has 0.

It is an upper bound in o200k units: a provider caches in blocks above a minimum length (e.g.
1024 tokens, then 128-token steps), evicts after minutes of inactivity, and counts with its
own tokenizer. The provider's own figure (``usage.prompt_tokens_details.cached_tokens``) is
kept apart as ``provider_cached_tokens`` and never mixed with ours.

Linear per call: earlier requests form a trie keyed by each message's ``message_token_key``
(equal keys exactly when equal token ids), so a request is walked message by message with one
dictionary lookup each and a message's tokens are its count (the counter has them already). At
the first message that leaves the trie, the most tokens it shares with any continuation seen
there is what counts; the continuations are tokenized then (each once per episode) and kept
sorted, so the best one is a neighbour of its sorted position (two comparisons, however many
earlier requests branched there). Where only one continuation was seen (a tool result cut in place),
no ids are made: the two texts are encoded only from the last piece boundary before the first character
they differ in to one after it (``shared_text_tokens``), and the tokens before are counted. The rest of the
request after that point is kept as one list
(a tail) on the node where it left, made nodes only if a later request walks into it: a policy
that re-renders a block near the start (a working-memory anchor) leaves the trie there at every
call, and its requests' rests are never walked again, so each costs a slice and one counting pass
over messages the counter knows by identity. Requests that start with the last request's very
objects (full history) skip them without a lookup. Once messages of a role have been compared
token by token (a pruning policy's window start, a cut tool result), new messages of that role
are tokenized when they arrive (``TokenCounter.message_ids``) and counted from those ids, so each
is tokenized once either way; other roles are only counted. The same walk sums the request's
message tokens (``message_tokens``), which the runner and ``EpisodeMeter`` take as its input
count instead of counting it again.

Roles other than the agent report their calls with ``record_call``; the runner opens an
``EpisodeMeter`` around each episode and collects them step by step. Outside an episode (an
optimizer's calls) ``record_call`` does nothing.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, insort
from contextvars import ContextVar
from itertools import accumulate
from typing import Any, AnyStr

from pydantic import BaseModel, Field

from erp_sim.agents.tokens import (
    REPLY_PRIMING_TOKENS,
    TOKEN_BYTES,
    Encoder,
    TokenCounter,
    encode_token_key,
    get_counter,
    identity_entry,
    message_token_key,
    same_prefix,
    tools_text,
)

ROLES = ("agent", "summarizer", "user")
KEYS_KEPT = 8_192  # message objects whose key a tracker keeps by identity (an episode shows a few hundred)


class _Node:
    """A point in the trie of earlier requests: the units sent so far, and what followed them."""

    __slots__ = ("children", "ended", "order", "tail")

    def __init__(self) -> None:
        self.children: dict[Any, _Node] = {}
        self.order: list[bytes] | None = None  # the children's packed ids, sorted: built when a request branches here
        self.ended = False  # an earlier request ended here (a full repeat gets the reply priming too)
        # The rest of the request that created this node after leaving the trie, not yet made nodes: most
        # such rests are never walked again (a pruned or anchored request), so they cost a list slice.
        self.tail: list[dict[str, Any]] | None = None


def _packed(ids: list[int]) -> bytes:
    return array("I", ids).tobytes()


def _shared_length(a: AnyStr, b: AnyStr) -> int:
    """Length of the common prefix of two (byte) strings (binary search over slices: C speed; each step
    compares only the part not known equal, so the slices copied add up to about the shorter length)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if long.startswith(short):
        return len(short)
    low, high = 0, len(short)  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


# A piece boundary of o200k's pretokenizer that two characters decide: an ASCII letter, then an ASCII
# character that is no letter and no apostrophe. Only the letter pieces take letters, and none of them goes on
# past such a character (a contraction needs the apostrophe), so every piece before the boundary is decided by
# the text up to that character, the text cut there encodes to those pieces, and the pattern has no lookbehind:
# the text from the boundary encodes to the pieces that follow. Encoding is the pieces' tokens in order.
_CUT = re.compile(r"[A-Za-z][\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f]")  # the boundary lies between the two
_CUT_REVERSED = re.compile(r"[\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f][A-Za-z]")  # the same, read backwards
CUT_WINDOW = 256  # characters searched back for a boundary before the whole common prefix is


def _last_cut(text: str, end: int) -> int:
    """The last boundary p with both its characters before ``end`` (0: the start, always one)."""
    for start in (max(0, end - CUT_WINDOW), 0):
        found = _CUT_REVERSED.search(text[start:end][::-1])
        if found is not None:
            return end - 1 - found.start()
        if start == 0:
            break
    return 0


def _next_cut(text: str, after: int) -> int:
    """The first boundary past position ``after`` (its letter at ``after`` or later), or the end."""
    found = _CUT.search(text, after)
    return len(text) if found is None else found.start() + 1


def _shared_ids(a: list[int], b: list[int]) -> int:
    """How many leading ids two id lists share."""
    return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def shared_text_tokens(a: str, b: str, encoder: Encoder) -> int:
    """How many leading tokens ``encoder.encode(a)`` and ``encoder.encode(b)`` share, encoding only around
    where the texts part: the tokens before the last boundary both share are the same in both (counted), and
    the pieces from there to a boundary past the first differing character hold the first differing token."""
    if a == b:
        return encoder.count(a)
    part = _shared_length(a, b)
    cut = _last_cut(a, part)
    ids_a = encoder.encode(a[cut : _next_cut(a, part)])
    ids_b = encoder.encode(b[cut : _next_cut(b, part)])
    shared = _shared_ids(ids_a, ids_b)
    return (encoder.count(a[:cut]) if cut else 0) + shared


def shared_message_tokens(a: tuple, b: tuple, encoder: Encoder) -> int:
    """How many leading ids the ``encode_token_key`` of two message keys share, without encoding their texts
    whole. Framing ids never equal a text token, so the ids part inside the first part of the key that differs
    (role and name, text, calls); only a text may be long, and it is compared by ``shared_text_tokens``."""
    same_header = a[:2] == b[:2]
    if same_header and a[2] != b[2]:
        header = len(encode_token_key((*a[:2], "", ()), encoder)) - 1  # without MESSAGE_END
        return header + shared_text_tokens(a[2], b[2], encoder)
    same_text = same_header and a[2] == b[2]  # then the calls differ: compared with the text left out, then added
    ids_a = encode_token_key((*a[:2], "", a[3] if same_text else ()), encoder)
    ids_b = encode_token_key((*b[:2], "", b[3] if same_text else ()), encoder)
    shared = _shared_ids(ids_a, ids_b)
    return shared + (encoder.count(a[2]) if same_text and a[2] else 0)


class PrefixTracker:
    """The requests of one role in one episode; ``observe`` gives each new one its cacheable prefix."""

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter or get_counter()
        self._root = _Node()
        self._ids: dict[tuple, bytes] = {}  # message key -> packed token ids, for the messages compared by tokens
        self._keys: dict[int, tuple] = {}  # id(message) -> (message, content, tool_calls, key); holds the objects
        self._tools: dict[str, tuple[bytes, int]] = {}
        # The last request, to skip its leading messages when the next one starts with the same objects
        # (full history resends them all): its tools object and unit, its messages, the trie node after
        # each of its first messages (the rest lie in ``_holder``'s tail), and the tokens up to each message.
        self._last_tools: tuple[Any, bytes, int] | None = None
        self._last_messages: list[dict[str, Any]] = []
        self._last_nodes: list[_Node] = []
        self._last_tokens: list[int] = []
        self._holder: _Node | None = None
        # Roles of the messages compared token by token so far (where requests branched): new messages of
        # these roles are tokenized when they arrive, and their count comes from those ids (one tokenization).
        self._compared_roles: set[str] = set()
        self.message_tokens = 0  # the last request's messages as ``count_messages`` counts them (priming included)

    def observe(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """Tokens of this request's longest prefix identical to an earlier request's; then remember it."""
        tools_key, tools_tokens, same_tools = self._tools_unit(tools)
        known = same_prefix(messages, self._last_messages) if same_tools else 0
        nodes, tokens_at = self._last_path(known)
        if known:  # the last request's first `known` messages: in the trie, their tokens summed already
            node, tokens = nodes[-1], tokens_at[-1]
            walking, cacheable, at = True, tools_tokens + tokens, node
        else:  # from the tools unit: walking on only if an earlier request had the same tools
            walking, tokens = tools_key in self._root.children, 0
            node = at = self._child(self._root, tools_key)
            cacheable = tools_tokens if walking else 0
        position = known
        while walking and position < len(messages):  # on an earlier request's path: compare, then add
            message = messages[position]
            key, count = self._key(message), self.count(message)
            if node.tail is not None:
                self._expand(node)
            following = node.children.get(key)
            if following is None:
                cacheable += self._best_partial(node, key)
                walking = False
            else:
                cacheable += count
                node = following
            at = self._child(at, key)
            tokens += count
            nodes.append(at)
            tokens_at.append(tokens)
            position += 1
        rest = messages[position:]
        if rest:  # off the trie: the rest becomes the tail of the last node, counted in one pass
            at.tail = rest
            tokens_at += accumulate(self.counter.counts(rest, self.count), initial=tokens)
            del tokens_at[position]  # accumulate's initial value is the entry before the rest
            tokens = tokens_at[-1]
        elif walking and at.ended:  # the whole request repeats an earlier one
            cacheable += REPLY_PRIMING_TOKENS
        if not rest:
            at.ended = True
        self._last_messages, self._last_nodes, self._last_tokens, self._holder = list(messages), nodes, tokens_at, at
        self.message_tokens = tokens + REPLY_PRIMING_TOKENS
        return cacheable

    def _last_path(self, known: int) -> tuple[list[_Node], list[int]]:
        """The trie nodes and token sums after each of the last request's first ``known`` messages
        (its tail made nodes first, if ``known`` reaches into it)."""
        nodes = self._last_nodes[:known]
        if len(nodes) < known:
            node = self._holder
            assert node is not None
            if node.tail is not None:
                self._expand(node)
            for message in self._last_messages[len(nodes) : known]:
                node = node.children[self._key(message)]
                nodes.append(node)
        return nodes, self._last_tokens[:known]

    def _expand(self, node: _Node) -> None:
        """Make nodes of ``node``'s tail (a request ended at its end)."""
        tail, node.tail = node.tail or [], None
        for message in tail:
            node = self._child(node, self._key(message))
        node.ended = True

    def count(self, message: dict[str, Any]) -> int:
        """``count_message``; for a role compared by tokens before, from its ids (made now and kept, so a
        message the next request shows, such as the agent's answer, is tokenized once)."""
        if message.get("role") not in self._compared_roles:
            return self.counter.count_message(message)
        key = self._key(message)
        ids = self._ids.get(key)
        if ids is None:
            ids = self._ids[key] = self.counter.message_ids(message)
        return len(ids) // TOKEN_BYTES

    def _key(self, message: dict[str, Any]) -> tuple:
        """The message's ``message_token_key``, kept by identity: a pruned request shows the same
        objects again at other positions, and building a key reads (and checks) all its text."""
        known = identity_entry(self._keys, message)
        if known is not None:
            return known[3]
        key = message_token_key(message)
        if len(self._keys) >= KEYS_KEPT:  # a policy that copies every message every call: stay bounded
            self._keys.clear()
        self._keys[id(message)] = (message, message.get("content"), message.get("tool_calls"), key)
        return key

    def _child(self, node: _Node, key: Any) -> _Node:
        child = node.children.get(key)
        if child is None:
            child = node.children[key] = _Node()
            if node.order is not None:  # requests branched here before: keep the new branch's ids in order too
                insort(node.order, self._message_ids(key))
        return child

    def _best_partial(self, node: _Node, key: tuple) -> int:
        """Most tokens the message ``key`` shares with any continuation seen at ``node``: its sorted neighbours'."""
        if not node.children:
            return 0
        if node.order is None and len(node.children) == 1:  # one continuation (a result cut in place): no ids
            (only,) = node.children
            return shared_message_tokens(only, key, self.counter.encoder)
        if node.order is None:
            self._compared_roles.update(child[0] for child in node.children)
            node.order = sorted(map(self._message_ids, node.children))
        self._compared_roles.add(key[0])
        ids = self._message_ids(key)
        at = bisect_left(node.order, ids)
        shared = 0
        for neighbour in node.order[max(0, at - 1) : at + 1]:
            shared = max(shared, _shared_length(neighbour, ids))
        return shared // TOKEN_BYTES

    def _message_ids(self, key: tuple) -> bytes:
        ids = self._ids.get(key)
        if ids is None:
            ids = self._ids[key] = _packed(encode_token_key(key, self.counter.encoder))
        return ids

    def _tools_unit(self, tools: list[dict[str, Any]] | None) -> tuple[bytes, int, bool]:
        """The tools' packed ids and tokens, and whether they are the last request's very object."""
        last = self._last_tools
        if last is not None and last[0] is tools:
            return last[1], last[2], True
        text = tools_text(tools)
        unit = self._tools.get(text)
        if unit is None:
            ids = self.counter.encoder.encode(text) if text else []
            unit = self._tools[text] = (_packed(ids), len(ids))
        same = last is not None and last[1] == unit[0]
        self._last_tools = (tools, *unit)
        return unit[0], unit[1], same


class ModelCall(BaseModel):
    """One model call of a role other than the agent (the agent's are ``StepRecord`` fields).

    Two units, named apart: o200k counts of ours (``input_tokens``, ``output_tokens``,
    ``cacheable_prefix_tokens``) and what the model service reported (``reported_*``,
    ``provider_cached_tokens``; 0 / None when it reported nothing).
    """

    role: str = Field(description="summarizer or user.")
    input_tokens: int = Field(0, description="o200k tokens of the request (messages + tool schemas).")
    output_tokens: int = Field(0, description="o200k tokens of the answer.")
    cacheable_prefix_tokens: int = Field(
        0,
        description="o200k tokens of the request's longest prefix identical to "
        "an earlier request of the same role in the episode.",
    )
    reported_input_tokens: int = Field(0, description="Prompt tokens as the service reported them (0: none).")
    reported_output_tokens: int = Field(0, description="Completion tokens as the service reported them (0: none).")
    provider_cached_tokens: int | None = Field(
        None, description="Cached prompt tokens as the service reported them (None: not reported)."
    )


class EpisodeMeter:
    """Per-role prefix trackers for one episode, and the calls reported since the last ``drain``."""

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter or get_counter()
        self.trackers: dict[str, PrefixTracker] = {}
        self._pending: list[ModelCall] = []

    def tracker(self, role: str) -> PrefixTracker:
        if role not in self.trackers:
            self.trackers[role] = PrefixTracker(self.counter)
        return self.trackers[role]

    def record(
        self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, response: Any
    ) -> None:
        usage = getattr(response, "usage", None)
        tracker = self.tracker(role)
        cacheable = tracker.observe(messages, tools)  # it counts the messages on the way
        self._pending.append(
            ModelCall(
                role=role,
                input_tokens=tracker.message_tokens + self.counter.count_tools(tools),
                output_tokens=self.counter.count_message(response.message),
                cacheable_prefix_tokens=cacheable,
                reported_input_tokens=getattr(usage, "input_tokens", 0),
                reported_output_tokens=getattr(usage, "output_tokens", 0),
                provider_cached_tokens=getattr(usage, "cached_input_tokens", None),
            )
        )

    def drain(self) -> list[ModelCall]:
        calls, self._pending = self._pending, []
        return calls

    def start(self) -> EpisodeMeter:
        """Make this the meter ``record_call`` reports to (until ``stop``, or another episode's ``start``)."""
        _ACTIVE.set(self)
        return self

    def stop(self) -> None:
        """No meter after the episode (not the one before it: a meter left by an interrupted episode is dropped)."""
        if _ACTIVE.get() is self:
            _ACTIVE.set(None)


_ACTIVE: ContextVar[EpisodeMeter | None] = ContextVar("erp_sim_episode_meter", default=None)


def record_call(role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, response: Any) -> None:
    """Report one model call of ``role`` (summarizer, user) to the running episode's meter, if any."""
    meter = _ACTIVE.get()
    if meter is not None:
        meter.record(role, messages, tools, response)
