"""Business actions behind ``api_find_actions`` / ``api_invoke_action``: a workflow's actions, run here.

An action is a name, a description, typed parameters and one function over the workflow's rule module
that returns a result sentence and a payload (a workflow's ``Workflow.actions``). Parameters are checked
before anything runs (missing, unknown, wrong type: a ValidationError naming the parameter); names of
actions and parameters match case-insensitively. Writes run in one ``erp_sim.database.transaction``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from erp_sim.errors import NotFoundError, ValidationError
from erp_sim.json_values import JsonObject, whole_number

MAX_PARAMETER_CHARS = 100


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str  # Edm.Int64 or Edm.String
    description: str
    required: bool = True


@dataclass(frozen=True)
class Action:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    run: Callable[[sqlite3.Connection, dict[str, Any]], tuple[str, JsonObject]]


# --- parameter checks ------------------------------------------------------------------------------
def actions_by_name(*actions: Action) -> dict[str, Action]:
    """A workflow's actions as ``Workflow.actions`` holds them: by name, in the order given."""
    return {action.name: action for action in actions}


def _convert(param: Parameter, value: object) -> object:
    if param.type == "Edm.Int64":
        number = whole_number(value)
        if number is None:
            raise ValidationError(f"Parameter {param.name}: expected a whole number, got {value!r}.")
        return number
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"Parameter {param.name}: expected non-empty text, got {value!r}.")
    if len(value) > MAX_PARAMETER_CHARS:
        raise ValidationError(
            f"Parameter {param.name}: text is {len(value)} characters; at most {MAX_PARAMETER_CHARS}."
        )
    return value.strip()


def _arguments(action: Action, parameters: object) -> dict[str, Any]:
    if not isinstance(parameters, dict):
        raise ValidationError(
            f"parameters: expected an object of parameter name -> value, got {type(parameters).__name__}."
        )
    by_name = {p.name.lower(): p for p in action.parameters}
    names = ", ".join(p.name for p in action.parameters)
    unknown = [str(n) for n in parameters if str(n).lower() not in by_name]
    if unknown:
        raise ValidationError(f"Action {action.name} has no parameter {', '.join(unknown)}. Parameters: {names}.")
    args: dict[str, Any] = {}
    for raw_name, value in parameters.items():
        param = by_name[str(raw_name).lower()]
        if param.name in args:
            raise ValidationError(f"Parameter {param.name} is given twice.")
        if value is not None:
            args[param.name] = _convert(param, value)
    missing = [p.name for p in action.parameters if p.required and p.name not in args]
    if missing:
        raise ValidationError(
            f"Action {action.name}: parameter(s) {', '.join(missing)} must be given. Parameters: {names}."
        )
    return args


def _describe(action: Action) -> JsonObject:
    return {
        "Name": action.name,
        "Description": action.description,
        "Parameters": [
            {"Name": p.name, "Type": p.type, "Required": p.required, "Description": p.description}
            for p in action.parameters
        ],
    }


def find_actions(actions: Mapping[str, Action], search: str) -> list[JsonObject]:
    """Actions whose name or description contain every word of ``search`` (empty: all)."""
    words = search.lower().split()
    return [_describe(a) for a in actions.values() if all(w in f"{a.name} {a.description}".lower() for w in words)]


def invoke_action(
    actions: Mapping[str, Action], db: sqlite3.Connection, name: str, parameters: Mapping[str, object]
) -> tuple[str, JsonObject]:
    """Run one of ``actions``; returns (result sentence, payload)."""
    action = next((a for a in actions.values() if a.name.lower() == str(name).strip().lower()), None)
    if action is None:
        raise NotFoundError(
            f"Action {name!r} does not exist. Actions: {', '.join(actions)}. Use api_find_actions to search."
        )
    return action.run(db, _arguments(action, parameters))
