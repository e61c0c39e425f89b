"""What a request's sender will send again unchanged: where a backend may put cache breakpoints.

Anthropic's Messages API caches a request's prefix only up to the blocks marked ``cache_control`` (at
most 4 a request), and a later request reads that cache only if it starts with the same prefix. Which
prefix of its next request it will not rewrite is the context policy's knowledge (full history:
everything sent before; last-N: the system prompt and the instruction; last-N + summary: up to the
summary between folds; ...), so a policy hands its messages on as a ``PolicyContext``: the messages,
and (computed only when a backend asks) the lengths of their prefixes it expects to send again.
The LLM user and the summarizer say the same of theirs with ``with_stable_prefixes``. A plain list
carries no claim (``stable_prefixes`` is None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from erp_sim.agents.types import Continuation, Message


class PolicyContext(Continuation):
    """Messages (a list, so every reader sees a list), with the prefixes the sender expects to send again
    unchanged: message counts, ascending, computed once and only when asked for. ``previous`` (the sender's
    last request) gives ``reused_prefixes``: what that request claimed and this one does start with, where a
    cache written for it can be read (a breakpoint there reads without writing). ``kept``: how many leading
    messages are, unchanged, those of ``previous`` (``types.Continuation``: this claim must hold)."""

    __slots__ = ("_claims", "_computed")

    def __init__(
        self,
        messages: Iterable[Message],
        claims: Callable[[], Iterable[int]],
        previous: PolicyContext | None = None,
        kept: int = 0,
    ):
        super().__init__(messages, previous, kept)  # a chain of one: the request before the last is never needed
        self._claims = claims
        self._computed: tuple[int, ...] | None = None

    @property
    def stable_prefixes(self) -> tuple[int, ...]:
        if self._computed is None:
            self._computed = tuple(sorted({p for p in self._claims() if 0 < p <= len(self)}))
        return self._computed

    @property
    def reused_prefixes(self) -> tuple[int, ...]:
        """The last request's claims (if a backend asked for them) that this request starts with."""
        previous = self.previous
        if not isinstance(previous, PolicyContext) or previous._computed is None:
            return ()
        return tuple(length for length in previous._computed if _starts_with(self, previous, length))


def _starts_with(messages: Sequence[Message], earlier: Sequence[Message], length: int) -> bool:
    if len(messages) < length:
        return False
    return all(a is b or a == b for a, b in zip(messages[:length], earlier[:length]))


def with_stable_prefixes(messages: Sequence[Message], lengths: Iterable[int]) -> PolicyContext:
    lengths = tuple(lengths)
    return PolicyContext(messages, lambda: lengths)


def stable_prefixes(messages: Sequence[Message]) -> tuple[int, ...] | None:
    """The sender's claim (None: a plain list, which claims nothing)."""
    return messages.stable_prefixes if isinstance(messages, PolicyContext) else None


def reused_prefixes(messages: Sequence[Message]) -> tuple[int, ...]:
    """The prefixes the sender's last request claimed and this one starts with (none for a plain list)."""
    return messages.reused_prefixes if isinstance(messages, PolicyContext) else ()


def within(claims: Iterable[int], context: Sequence[Message], received: Sequence[Message]) -> list[int]:
    """A stack's claims: those of ``claims`` (lengths of prefixes of ``context``, which a policy built from
    ``received``) whose every message taken from ``received`` lies in the part of it the layer above
    vouched for. The runner's transcript grows by appending: all of it is vouched for."""
    outer = stable_prefixes(received)
    if outer is None:
        return list(claims)
    vouched = {id(message) for message in received[: max(outer, default=0)]}
    taken = {id(message) for message in received}
    kept: list[int] = []
    checked, all_vouched = 0, True
    for length in sorted(claims):
        for message in context[checked:length]:
            if id(message) in taken and id(message) not in vouched:
                all_vouched = False
                break
        checked = length
        if not all_vouched:
            break
        kept.append(length)
    return kept
