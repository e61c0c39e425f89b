"""Running summaries that are recomputed only where their input changed.

A policy calls its summarizer on batches of evicted messages; each batch is summarized with
the previous batch's summary as context. ``SummaryFold`` remembers the batches it already
summarized (holding the message objects themselves, so a later transcript is compared by
identity, falling back to equality) and calls the summarizer only for batches after the
first one that differs. A summarizer that raises leaves nothing cached for that batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from erp_sim.agents.policies.units import Split, Unit, flatten
from erp_sim.agents.types import Message

SummarizeBatch = Callable[[list[Message], str | None], str]


def same_messages(cached: Sequence[Message], current: Sequence[Message]) -> bool:
    """Equal message sequences; tuple comparison tries identity first, at C speed."""
    return len(cached) == len(current) and tuple(cached) == tuple(current)


def starts_with(messages: Sequence[Message], prefix: Sequence[Message]) -> bool:
    return len(messages) >= len(prefix) and tuple(messages[: len(prefix)]) == tuple(prefix)


class SummaryFold:
    """A chain of (batch, summary after that batch) reused across steps of one episode."""

    def __init__(self) -> None:
        self.batches: list[tuple[tuple[Message, ...], str]] = []
        self._units: list[Unit] = []  # the units behind the batches, for ``fold_units``
        self._step = -1  # the ``Split.step`` of the units ``fold_units`` last compared with (-1: none)

    def clear(self) -> None:
        self.batches.clear()
        self._units.clear()

    def summary(self, batches: list[list[Message]], summarize: SummarizeBatch, *, chained: bool = True) -> str | None:
        """The summary after folding ``batches`` in order (None when there are none).

        ``chained``: pass each batch the previous summary; otherwise summarize each batch
        alone (the summary returned is then the last batch's).
        """
        keep = 0
        for (cached, _), batch in zip(self.batches, batches):
            if not same_messages(cached, batch):
                break
            keep += 1
        del self.batches[keep:]
        self._units.clear()  # batches of messages: ``fold_units`` compares its units afresh
        for batch in batches[keep:]:
            previous = self.batches[-1][1] if (self.batches and chained) else None
            self.batches.append((tuple(batch), summarize(batch, previous)))
        return self.batches[-1][1] if self.batches else None

    def fold_units(
        self, units: list[Unit], count: int, size: int, summarize: SummarizeBatch, *, split: Split | None = None
    ) -> str | None:
        """``summary`` of ``units[:count]`` in batches of ``size`` units (the messages of each, chained), at a
        cost proportional to the batches that are new. ``count`` is a multiple of ``size``. The units folded
        before are compared with ``units`` in one list comparison in C (the very Unit objects
        ``IncrementalSplit`` hands out again compare at pointer speed, others by their messages, identity
        first), not batch by batch; given ``split``, the ``Split`` that ``units`` come from, only those past
        what it reused from the split this fold last saw (the one before it) are compared."""
        known = self._units
        trusted = split.reused if split is not None and split.step == self._step + 1 else 0
        self._step = split.step if split is not None else -1
        if len(known) != len(self.batches) * size:
            del self.batches[:], known[:]
        elif len(known) > trusted and (len(known) > count or known[trusted:] != units[trusted : len(known)]):
            same = next(
                (i for i in range(trusted, min(len(known), count)) if known[i] != units[i]), min(len(known), count)
            )
            keep = same // size
            del self.batches[keep:], known[keep * size :]
        for start in range(len(known), count - size + 1, size):
            batch = units[start : start + size]
            messages = flatten(batch)
            previous = self.batches[-1][1] if self.batches else None
            self.batches.append((tuple(messages), summarize(messages, previous)))
            known += batch
        return self.batches[-1][1] if self.batches else None
