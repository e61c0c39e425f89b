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
there is what counts, found without encoding any message whole (``shared_tokens``): the
continuations' texts are kept sorted per role and name, so those sharing the most characters with
the new message are its sorted neighbours; texts are encoded only from the last piece boundary
before the first character they differ in to one after it (``shared_text_tokens``), and the
tokens before are counted (``TokenCounter.count_text_before``: of a text counted before, only the
shorter side; of a new one, both sides, whose sum is its count, so the message is tokenized once;
a long prefix where requests keep parting is kept by the tracker). A continuation sharing fewer
characters shares at most the new text's tokens that end within them, so the walk outward from
the neighbours stops at the first that cannot beat the best: one or two encoded windows per call,
however many earlier requests branched there (a pruning policy's window start, an anchor's
counter). The rest of the request after that point is kept as one list (a tail) on the node where
it left, made nodes only if a later request walks into it: a policy that re-renders a block near
the start (a working-memory anchor) leaves the trie there at every call, and its requests' rests
are never walked again, so each costs a slice, and its token sums are taken from the last
request's where it holds the same objects (the rest is mostly those, shifted by what the policy
inserted or dropped): only what follows them is counted. Requests that start with the last
request's very objects (full history) skip them without a lookup. Every message is counted once
(the counter keeps it), never tokenized to ids. The same walk sums the request's message tokens
(``message_tokens``), which the runner and ``EpisodeMeter`` take as its input count instead of
counting it again; the tool schemas' unit (its text, tokenized once per counter) gives them the
schemas' count (``tools_tokens``).

Roles other than the agent report their calls with ``record_call``; the runner opens an
``EpisodeMeter`` around each episode and collects them step by step. Outside an episode (an
optimizer's calls) ``record_call`` does nothing.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable
from contextvars import ContextVar
from itertools import accumulate, compress, count, islice, repeat
from operator import add, is_
from typing import Any

from pydantic import BaseModel, Field

from erp_sim.agents.tokens import (
    REPLY_PRIMING_TOKENS,
    TokenCounter,
    get_counter,
    identity_entry,
    message_token_key,
    same_prefix,
    tools_text,
)
from erp_sim.agents.tokens.shared_prefix import best_shared_message_tokens, message_fields
from erp_sim.agents.types import sum_reported, unchanged_prefix, unset

ROLES = ("agent", "summarizer", "user")
SHORT_REST = 16  # a rest this short is counted whole: finding its runs in the last request costs more
NEARBY = 4  # positions of the last request searched either side of a message's own before indexing it by id
KEYS_KEPT = 8_192  # message objects whose key a tracker keeps by identity (an episode shows a few hundred)


class _Node:
    """A point in the trie of earlier requests: the units sent so far, and what followed them."""

    __slots__ = ("children", "ended", "order", "tail")

    def __init__(self) -> None:
        self.children: dict[Any, _Node] = {}
        # The children's ``message_fields`` per header (role, name), sorted: built when a request leaves the trie here
        # with two or more children, then kept up to date.
        self.order: dict[tuple, list[tuple[str, ...]]] | None = None
        self.ended = False  # an earlier request ended here (a full repeat gets the reply priming too)
        # The rest of the request that created this node after leaving the trie, not yet made nodes: most
        # such rests are never walked again (a pruned or anchored request), so they cost a list slice.
        self.tail: list[dict[str, Any]] | None = None


class PrefixTracker:
    """The requests of one role in one episode; ``observe`` gives each new one its cacheable prefix."""

    def __init__(self, counter: TokenCounter | None = None):
        self.counter = counter or get_counter()
        self._root = _Node()
        self._keys: dict[int, tuple] = {}  # id(message) -> (message, content, tool_calls, key); holds the objects
        self._tools: tuple[Any, str, int] | None = None  # the tools object asked about last, its text, its tokens
        self._prefixes: dict[str, int] = {}  # long prefixes' tokens where requests branched (``_TextProbe``)
        # The last request, to skip its leading messages when the next one starts with the same objects
        # (full history resends them all): its tools' text, its messages, the trie node after each of
        # its first messages (the rest lie in ``_holder``'s tail), and the tokens up to each message.
        # The three lists are changed in place where the next request differs (a full history's costs what it adds).
        self._last_tools: str | None = None
        self._last_messages: list[dict[str, Any]] = []
        self._last_nodes: list[_Node] = []
        self._last_tokens: list[int] = []
        self._holder: _Node | None = None
        self._last_source: list[dict[str, Any]] | None = None  # the last request's list itself (what it vouches for)
        self.message_tokens = 0  # the last request's messages as ``count_messages`` counts them (priming included)

    def observe(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """Tokens of this request's longest prefix identical to an earlier request's; then remember it."""
        tools_key, tools_tokens, same_tools = self._tools_unit(tools)
        try:
            return self._observe(messages, tools_key, tools_tokens, same_tools)
        except BaseException:  # the last request's lists may be cut: the next one walks from the root
            self._last_messages, self._last_nodes, self._last_tokens, self._last_source = [], [], [], None
            raise

    def _observe(self, messages: list[dict[str, Any]], tools_key: str, tools_tokens: int, same_tools: bool) -> int:
        last = self._last_messages
        vouched = known = 0  # what the sender vouches is unchanged is not compared (types.unchanged_prefix)
        if same_tools:
            vouched = unchanged_prefix(messages, self._last_source, len(last))
            known = vouched if vouched == min(len(messages), len(last)) else same_prefix(messages, last)
        nodes = self._last_path(known)
        tokens_at: list[int] = []  # the tokens up to each message from `known` on
        if known:  # the last request's first `known` messages: in the trie, their tokens summed already
            node, tokens = nodes[-1], self._last_tokens[known - 1]
            walking, cacheable, at = True, tools_tokens + tokens, node
        else:  # from the tools unit: walking on only if an earlier request had the same tools
            walking, tokens = tools_key in self._root.children, 0
            node = at = self._child(self._root, tools_key)
            cacheable = tools_tokens if walking else 0
        position = known
        while walking and position < len(messages):  # on an earlier request's path: compare, then add
            message = messages[position]
            key = self._key(message)
            if node.tail is not None:
                self._expand(node)
            following = node.children.get(key)
            if following is None:  # compared before it is counted: a new text is counted in the comparison
                cacheable += self._best_partial(node, key)
                walking = False
            count = self.count(message)
            if following is not None:
                cacheable += count
                node = following
            at = self._child(at, key)
            tokens += count
            nodes.append(at)
            tokens_at.append(tokens)
            position += 1
        rest = messages[position:]
        if rest:  # off the trie: the rest becomes the tail of the last node
            at.tail = rest
            tokens_at += self._rest_tokens(messages, position, tokens)
            tokens = tokens_at[-1]
        elif walking and at.ended:  # the whole request repeats an earlier one
            cacheable += REPLY_PRIMING_TOKENS
        if not rest:
            at.ended = True
        del self._last_tokens[known:]
        self._last_tokens += tokens_at
        del last[vouched:]  # the very objects up to there; equal copies are replaced
        last += messages[vouched:]
        self._holder, self._last_source = at, messages
        self.message_tokens = tokens + REPLY_PRIMING_TOKENS
        return cacheable

    def _last_path(self, known: int) -> list[_Node]:
        """The trie nodes after each of the last request's first ``known`` messages (its tail made nodes first, if
        ``known`` reaches into it): the last request's list, cut there."""
        nodes = self._last_nodes
        del nodes[known:]
        if len(nodes) < known:
            node = self._holder
            assert node is not None
            if node.tail is not None:
                self._expand(node)
            for message in self._last_messages[len(nodes) : known]:
                node = node.children[self._key(message)]
                nodes.append(node)
        return nodes

    def _rest_tokens(self, messages: list[dict[str, Any]], position: int, tokens: int) -> list[int]:
        """The tokens up to each message from ``messages[position]`` on (``tokens`` before it). Runs of the last
        request's very objects (an anchored request's history, shifted by what the policy inserted or dropped)
        take their sums from the last request's, found where their first message sat there (at the same offset
        as the run before or a few positions off, else by id if the rest is long); from the first message not
        found on, the messages are counted in one pass. Identity is trusted as for the leading messages."""
        if len(messages) - position <= SHORT_REST:  # a pruned window's rest: counted at once
            return self._counted_sums(messages, position, tokens)
        last, last_tokens, sums = self._last_messages, self._last_tokens, list[int]()
        ids: list[int] | None = None  # the last request's ids, listed only when needed
        offset = 0  # where the last request held the run before, from its position in this one
        while position < len(messages):
            message, guess, left = messages[position], position + offset, len(messages) - position
            start: int | None = guess
            if guess >= len(last) or last[guess] is not message:  # searched where it pays: for a long rest
                start = None
                if left > 2 * NEARBY:  # a few positions off (inserted or dropped)?
                    low = max(0, guess - NEARBY)
                    start = next(compress(count(low), map(is_, last[low : guess + NEARBY + 1], repeat(message))), None)
            if start is None and 4 * left > len(last):  # by id: a pass that pays for a long
                ids = ids if ids is not None else list(map(id, last))  # rest (the last request holds its objects:
                try:  # an id found there is this message)
                    start = ids.index(id(message))
                except ValueError:
                    start = None
            if start is None:  # not found: counted
                sums += self._counted_sums(messages, position, tokens)
                break
            run = same_prefix(messages[position:], last[start:])  # one at least
            shift = tokens - (last_tokens[start - 1] if start else 0)
            run_sums = last_tokens[start : start + run]
            sums += map(add, run_sums, repeat(shift)) if shift else run_sums  # as many tokens before: the same sums
            tokens, offset, position = sums[-1], start - position, position + run
        return sums

    def _counted_sums(self, messages: list[dict[str, Any]], position: int, tokens: int) -> list[int]:
        """The tokens up to each message from ``messages[position]`` on (``tokens`` before it), each message
        counted (those the counter knows by identity looked up in C)."""
        counted = self.counter.counts(messages[position:], self.count)
        return list(islice(accumulate(counted, initial=tokens), 1, None))  # the initial value is the one before

    def _expand(self, node: _Node) -> None:
        """Make nodes of ``node``'s tail (a request ended at its end)."""
        tail, node.tail = node.tail or [], None
        for message in tail:
            node = self._child(node, self._key(message))
        node.ended = True

    def count(self, message: dict[str, Any]) -> int:
        """``count_message``: a message is counted once (the counter keeps it), never tokenized to ids."""
        return self.counter.count_message(message)

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
            if node.order is not None:  # requests left the trie here before: keep the new branch in order too
                insort(node.order.setdefault(key[:2], []), message_fields(key))
        return child

    def _best_partial(self, node: _Node, key: tuple) -> int:
        """Most tokens the message ``key`` shares with any continuation seen at ``node``, its children's fields
        sorted per header (``best_shared_message_tokens``: no text encoded whole, no ids kept)."""
        if not node.children:
            return 0
        if node.order is None and len(node.children) == 1:  # one continuation (a result cut in place)
            (only,) = node.children
            siblings = {only[:2]: [message_fields(only)]}
        else:
            if node.order is None:
                node.order = {}
                for child in node.children:
                    node.order.setdefault(child[:2], []).append(message_fields(child))
                for group in node.order.values():
                    group.sort()
            siblings = node.order
        return best_shared_message_tokens(siblings, key, self.counter, self._prefixes)

    def tools_tokens(self, tools: list[dict[str, Any]] | None) -> int:
        """Tokens of the tool schemas (``count_tools``'s figure) from the unit requests are keyed by, so the
        runner does not build and count their text again."""
        return self._tools_of(tools)[2]

    def _tools_of(self, tools: list[dict[str, Any]] | None) -> tuple[Any, str, int]:
        """The tools object, its text and tokens: the text is built once per tools object (an episode sends the
        same one every call) and tokenized once per counter (its text cache keeps long texts). The text is the
        trie's key: encoding is lossless, so equal texts are exactly equal ids."""
        known = self._tools
        if known is None or known[0] is not tools:
            text = tools_text(tools)
            known = self._tools = (tools, text, self.counter.count_text(text))
        return known

    def _tools_unit(self, tools: list[dict[str, Any]] | None) -> tuple[str, int, bool]:
        """The tools' text and tokens, and whether the last request had the same."""
        _, key, tokens = self._tools_of(tools)
        same, self._last_tools = key == self._last_tools, key
        return key, tokens, same


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
    provider_cache_write_tokens: int | None = Field(
        None, exclude_if=unset, description="Prompt tokens the service wrote to its cache (absent: not reported)."
    )
    finish_reason: str | None = Field(
        None,
        description="Why the model stopped, as the service said; 'length': the answer was cut at its token "
        "limit (a summary used cut short). None: not reported.",
    )
    served_model: str | None = Field(
        None, exclude_if=unset, description="The model the service says answered (absent: not said)."
    )
    request: int | None = Field(
        None,
        exclude_if=unset,
        description="Where the trajectory keeps what this call was sent: its index in "
        "``Trajectory.role_contexts[role].steps`` (absent: a role whose requests are not kept, the LLM user's).",
    )
    answer: int | None = Field(
        None, exclude_if=unset, description="Its answer's index in ``role_contexts[role].messages`` (absent: not kept)."
    )


SUMMED_CALL_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cacheable_prefix_tokens",
    "reported_input_tokens",
    "reported_output_tokens",
)


def call_sums(calls: list[ModelCall]) -> dict[str, int | None]:
    """Calls' counts summed, both units apart; ``provider_cached_tokens`` is None when no call reported it, and
    ``provider_cache_write_tokens`` is there only when one did."""
    sums: dict[str, int | None] = {name: sum(getattr(call, name) for call in calls) for name in SUMMED_CALL_FIELDS}
    sums["provider_cached_tokens"] = sum_reported([call.provider_cached_tokens for call in calls])
    written = sum_reported([call.provider_cache_write_tokens for call in calls])
    if written is not None:  # stored only where a service reported it
        sums["provider_cache_write_tokens"] = written
    return sums


#: Called with each reported call, its request and its answer, to keep them (``trajectory.RoleRequests.keep``).
KeepCall = Callable[[ModelCall, list[dict[str, Any]], dict[str, Any]], None]


class EpisodeMeter:
    """Per-role prefix trackers for one episode, and the calls reported since the last ``drain``; ``keep``,
    if given, gets every reported call with what it sent and answered."""

    def __init__(self, counter: TokenCounter | None = None, keep: KeepCall | None = None):
        self.counter = counter or get_counter()
        self.trackers: dict[str, PrefixTracker] = {}
        self._pending: list[ModelCall] = []
        self._keep = keep

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
        call = ModelCall(
            role=role,
            input_tokens=tracker.message_tokens + tracker.tools_tokens(tools),
            output_tokens=self.counter.count_message(response.message),
            cacheable_prefix_tokens=cacheable,
            reported_input_tokens=getattr(usage, "input_tokens", 0),
            reported_output_tokens=getattr(usage, "output_tokens", 0),
            provider_cached_tokens=getattr(usage, "cached_input_tokens", None),
            provider_cache_write_tokens=getattr(usage, "cache_write_input_tokens", None),
            finish_reason=getattr(response, "finish_reason", None),
            served_model=getattr(response, "model", None) or None,
        )
        if self._keep is not None:
            self._keep(call, messages, response.message)
        self._pending.append(call)

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
