"""Checks of ``ExpenseItemizationEnv``'s keyword arguments that need more than a membership test: each
fails at ``gym.make`` with a ValueError naming the value, and takes numpy's scalars as Python's."""

from __future__ import annotations

import operator

import numpy as np


def user_turn_limit(value: object) -> int:
    """``max_user_turns``: a whole number of at least 1 (not True, 2.5 or "3")."""
    try:
        turns = operator.index(value)  # type: ignore[arg-type]  # anything else raises TypeError
    except TypeError:
        turns = 0
    if isinstance(value, bool) or turns < 1:
        raise ValueError(f"max_user_turns must be a whole number of at least 1, got {value!r}")
    return turns


def receipt_flag(value: object) -> bool:
    """``receipt_in_instruction``: True or False ("no" would be truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"receipt_in_instruction must be True or False, got {value!r}")
    return bool(value)
