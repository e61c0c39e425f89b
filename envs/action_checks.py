"""How the env reads an action: ``parse_action`` tells a tool call, a message to the user and an invalid action
apart, never raising; before reading, it honours an adapter's own refusal (``InvalidAction``) and a size bound that
needs no JSON written (``json_text_over``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from erp_sim.envs.spaces import MAX_ACTION_CHARS
from erp_sim.json_values import json_value_problem


@dataclass(frozen=True)
class InvalidAction:
    """An action an adapter refused before the env read it (OpenEnv's wrongly typed fields, say): the env counts it
    as an invalid action with this reason, as it counts the ones it refuses itself."""

    reason: str


def json_text_over(value: Any, limit: int) -> bool:
    """Whether ``json.dumps(value)`` would be longer than ``limit``, told without writing it: a lower bound of its
    length (a string's characters and quotes, a container's brackets and separators, a character for anything
    else), summed until it passes ``limit``. Costs a few microseconds for an ordinary action; a cycle passes too."""
    total, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, Mapping):  # braces, and ": " per entry; counted before the entries are queued
            total += 2 + 2 * len(item)
            if total > limit:
                return True
            pending.extend(item.keys())
            pending.extend(item.values())
            continue
        elif isinstance(item, (list, tuple)):  # brackets and ", " between items
            total += max(2, 2 * len(item))
            if total > limit:
                return True
            pending.extend(item)
            continue
        else:
            total += 1
        if total > limit:
            return True
    return False


_ACTION_SHAPES = (
    'Send {"name": "<tool>", "arguments": {...}} to call a tool, or {"message": "<text>"} to write to the user.'
)


def parse_action(action: Any) -> tuple[str, Any]:
    """Classify an action: ("tool", (name, arguments dict)), ("message", text) or ("invalid", reason). Never raises.

    A dict action goes through its JSON text, so dicts and strings behave the same (and values
    JSON cannot carry are invalid actions, not errors deep in the simulator; too long, refused unwritten).
    """
    problem: str | None
    if isinstance(action, InvalidAction):
        return "invalid", action.reason
    if isinstance(action, Mapping):
        if json_text_over(action, MAX_ACTION_CHARS):
            return "invalid", f"The action is over {MAX_ACTION_CHARS:,} characters long as JSON, the limit."
        try:
            action = json.dumps(action)
        except (TypeError, ValueError, RecursionError):
            problem = json_value_problem(dict(action), "action") or "it holds a value JSON cannot carry."
            return "invalid", f"The action cannot be written as JSON: {problem} {_ACTION_SHAPES}"
    if not isinstance(action, str):
        return "invalid", f"The action must be a JSON string or a dict, got {type(action).__name__}. {_ACTION_SHAPES}"
    action, problem = _loads(action, "The action")
    if problem:
        return "invalid", f"{problem} {_ACTION_SHAPES}"
    if not isinstance(action, dict):
        return "invalid", f"The action must be a JSON object, got {type(action).__name__}. {_ACTION_SHAPES}"
    keys = set(action)
    if keys == {"message"} and isinstance(action["message"], str):
        problem = json_value_problem(action["message"], "message")
        return ("invalid", problem) if problem else ("message", action["message"])
    if "name" in keys and keys <= {"name", "arguments"} and isinstance(action["name"], str):
        arguments = action.get("arguments")
        if isinstance(arguments, str) and not arguments.strip():  # some servers send "" for a call without any
            arguments = None
        elif isinstance(arguments, str):  # OpenAI tool calls carry arguments as JSON text
            arguments, problem = _loads(arguments, "The arguments")
            if problem:
                return "invalid", problem
        if arguments is None or isinstance(arguments, dict):
            return "tool", (action["name"], arguments or {})
        return "invalid", f"The arguments must be a JSON object, got {type(arguments).__name__}."
    shown = ", ".join(sorted(repr(k)[:40] for k in keys)[:10]) or "none"
    return "invalid", f"The action has the wrong shape (keys: {shown}). {_ACTION_SHAPES}"


def _loads(text: str, what: str) -> tuple[Any, str | None]:
    if len(text) > MAX_ACTION_CHARS:
        return None, f"{what} is {len(text):,} characters long; the limit is {MAX_ACTION_CHARS:,}."
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{what} is not valid JSON ({exc.msg} at position {exc.pos})."
    except (ValueError, RecursionError) as exc:  # Python refuses integers over 4,300 digits, and deep nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "a number has too many digits"
        return None, f"{what} cannot be read ({reason})."
