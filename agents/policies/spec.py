"""The spec-string grammar: how a policy stack is written in CLIs and result files.

Grammar (whitespace around separators is ignored)::

    stack   := layer ("+" layer)*               e.g. head_tail:chars=800+last_n:n=5
    layer   := name [":" param ("," param)*]    e.g. last_n_summary:n=5,w=3
    param   := key "=" value
    value   := bare | quoted
    bare    := characters other than + , = " and spaces at the ends
    quoted  := a JSON string literal, for text with separators: placeholder="[cleared, re-run]"

Typed values: ints and floats as usual; booleans ``true``/``false``; lists
``a;b;c`` (an empty value is an empty list); mappings ``key:value;key:value``.

Layers read left to right in the order they transform the transcript: the leftmost policy
sees the full transcript first and is the outermost wrapper. ``+`` (not ``|``) joins layers
so a spec needs no quoting in a shell.

A layer's canonical form lists every parameter in declaration order (defaults included),
so a spec in a result file still means the same run after a default changes. Optional
parameters that are unset (None, e.g. ``acon_history``'s ``guideline``) are left out, so
adding one does not rename the specs of existing runs.
"""

from __future__ import annotations

import json
import re
import typing
from typing import Any

from pydantic import BaseModel

LAYER_SEPARATOR = "+"
_BARE_VALUE = re.compile(r"[A-Za-z0-9_.\-]+")


class PolicySpecError(ValueError):
    """A spec string that does not name known policies with valid parameters."""


def split_outside_quotes(text: str, separator: str) -> list[str]:
    """Split ``text`` at ``separator`` except inside double-quoted JSON strings."""
    parts, current, quoted, escaped = [], [], False, False
    for char in text:
        if quoted:
            current.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            current.append(char)
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if quoted:
        raise PolicySpecError(f"unterminated quoted value in {text!r}")
    parts.append("".join(current))
    return parts


def parse_layers(spec: str) -> list[tuple[str, dict[str, str]]]:
    """``"a:x=1+b"`` -> ``[("a", {"x": "1"}), ("b", {})]`` with raw string values."""
    if not spec or not spec.strip():
        raise PolicySpecError("empty policy spec; use 'full' for the full history")
    layers = []
    for raw in split_outside_quotes(spec, LAYER_SEPARATOR):
        raw = raw.strip()
        if not raw:
            raise PolicySpecError(f"empty layer in {spec!r} (two '+' in a row, or one at an end)")
        name, _, rest = raw.partition(":")
        name = name.strip()
        params: dict[str, str] = {}
        if rest.strip():
            for item in split_outside_quotes(rest, ","):
                key, eq, value = item.partition("=")
                key = key.strip()
                if not eq or not key:
                    raise PolicySpecError(f"{name}: expected key=value, got {item.strip()!r}")
                if key in params:
                    raise PolicySpecError(f"{name}: parameter {key!r} given twice")
                params[key] = value.strip()
        layers.append((name, params))
    return layers


def _unquote(value: str) -> str:
    if value.startswith('"'):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            raise PolicySpecError(f"bad quoted value {value!r}: {exc.msg}") from None
        if not isinstance(decoded, str):
            raise PolicySpecError(f"bad quoted value {value!r}")
        return decoded
    return value


def _origin(annotation: Any) -> Any:
    """The container type of a field annotation, looking through ``X | None``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _origin(args[0]) if len(args) == 1 else None
    return origin or annotation


def coerce_raw(model: type[BaseModel], key: str, raw: str) -> Any:
    """Turn a raw spec value into what pydantic validates for field ``key`` of ``model``."""
    origin = _origin(model.model_fields[key].annotation)
    if origin in (list, tuple):
        return [_unquote(v.strip()) for v in split_outside_quotes(raw, ";") if v.strip()]
    if origin is dict:
        mapping = {}
        for item in split_outside_quotes(raw, ";"):
            if not item.strip():
                continue
            k, sep, v = item.rpartition(":")
            if not sep:
                raise PolicySpecError(f"{key}: expected name:value pairs separated by ';', got {item!r}")
            mapping[_unquote(k.strip())] = _unquote(v.strip())
        return mapping
    return _unquote(raw)


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ";".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return ";".join(f"{format_value(k)}:{format_value(v)}" for k, v in sorted(value.items()))
    text = str(value)
    return text if _BARE_VALUE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def format_layer(name: str, params: BaseModel) -> str:
    """Canonical ``name:k=v,...`` for one layer, every parameter in declaration order."""
    items = [
        f"{key}={format_value(getattr(params, key))}"
        for key in type(params).model_fields
        if getattr(params, key) is not None
    ]
    return f"{name}:{','.join(items)}" if items else name
