"""What the strict request checkers share (``strict_chat_request``, ``strict_messages_request``,
``strict_responses_request``): the refusal they raise, running a check, and a body's first checks."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any


class Rejected(Exception):
    """The API's refusal of a request: its message and, where its error body says them, param, code and status."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.message, self.param, self.code, self.status = message, param, code, status


def refusal(check: Callable[..., None], *args: Any) -> Rejected | None:
    """What ``check(*args)`` refuses, or None when it passes."""
    try:
        check(*args)
    except Rejected as refused:
        return refused
    return None


def check_keys(body: Any, keys: Collection[str], unparsable: str, unknown: Callable[[str], Rejected]) -> None:
    """Refuse a body that is no JSON object (``unparsable``) or has a key the API does not know (``unknown(key)``)."""
    if not isinstance(body, dict):
        raise Rejected(unparsable)
    for key in body:
        if key not in keys:
            raise unknown(key)
