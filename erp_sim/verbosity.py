"""The response shapes a session can render: "default" (the verbose D365 form state) or "compact".

One spelling for the type (``Verbosity``), the values (``VERBOSITIES``, every command line's choices) and
the check (``checked_verbosity``, for the session, the MCP episode store and the env), in a module that
imports nothing of ours, so the session, the facade, the env and the MCP server all read it without a cycle.
"""

from __future__ import annotations

from typing import Literal, get_args

Verbosity = Literal["default", "compact"]
VERBOSITIES: tuple[Verbosity, ...] = get_args(Verbosity)


def checked_verbosity(value: object) -> Verbosity:
    """``value`` if it is a verbosity, else the one ValueError every entry point raises."""
    for verbosity in VERBOSITIES:
        if value == verbosity and isinstance(value, str):
            return verbosity
    raise ValueError(f"verbosity must be one of {VERBOSITIES}, got {value!r}")
