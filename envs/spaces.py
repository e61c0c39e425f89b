"""A text space for free-form strings (JSON actions, ERP responses, user replies).

``gymnasium.spaces.Text`` only contains strings made of its charset. Our observations echo
whatever the agent typed (error messages quote bad values, a user may quote the agent), so no
finite charset bounds them. ``AnyText`` contains every string within the length bounds and
samples from a printable charset.

``AsyncVectorEnv(shared_memory=True)`` (its default) would encode observations as charset
indices and, for ``Text``, read the buffer once: every later observation comes back stale.
``AnyText`` refuses shared memory, so that mistake fails loudly at construction; use
``shared_memory=False`` (``erp_sim.envs.make_vec`` does).
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium.error import CustomSpaceError
from gymnasium.spaces import Text
from gymnasium.vector.utils import create_shared_memory

from erp_sim.json_values import MAX_ARGUMENT_CHARS

MAX_ACTION_CHARS = MAX_ARGUMENT_CHARS  # an action is at most as long as the session takes argument text
MAX_OBSERVATION_CHARS = 400_000  # responses are capped at 160,000; error responses add the form state

PRINTABLE = string.printable  # what ``sample`` draws from (ASCII letters, digits, punctuation, whitespace)


class AnyText(Text):
    """Any ``str`` of ``min_length`` to ``max_length`` characters; ``sample`` draws from ``charset``."""

    def __init__(self, max_length: int, *, min_length: int = 0, charset: str = PRINTABLE, seed=None):
        super().__init__(max_length, min_length=min_length, charset=charset, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


@create_shared_memory.register(AnyText)
def _refuse_shared_memory(space: AnyText, n: int = 1, ctx: Any = None):
    raise CustomSpaceError(
        "AnyText observations cannot go through shared memory: create the AsyncVectorEnv with "
        "shared_memory=False (erp_sim.envs.make_vec does)."
    )
