"""The response shapes a session can render: "default" (the verbose D365 form state) or "compact".

One spelling for the type (``Verbosity``) and the values (``VERBOSITIES``), in a module that imports
nothing of ours, so the session, the facade, the env and the MCP server all read it without a cycle.
"""

from __future__ import annotations

from typing import Literal, get_args

Verbosity = Literal["default", "compact"]
VERBOSITIES: tuple[Verbosity, ...] = get_args(Verbosity)
