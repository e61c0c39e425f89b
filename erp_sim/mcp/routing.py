"""The registry's tools, a task prompt and a task resource, served from the caller's ERP episode.

Which episode a request belongs to:
1. a key the client chose: the ``X-ERP-Session`` HTTP header or ``_meta["erp-sim/session"]``
   (lets stateless 2026-07-28 clients keep an episode); a key belongs to whoever opened it: the
   MCP session, or for stateless HTTP requests the token's principal, so another client sending
   the same key gets its own episode (unless the operator shares keys: ``--shared-session-keys``);
2. otherwise the MCP session: ``Mcp-Session-Id`` over streamable HTTP, the connection on stdio
   or in memory (handshake-era protocol, 2025-11-25 and older);
3. otherwise, for stateless 2026-07-28 requests, the process on stdio and in memory (one client);
   over HTTP nothing ties two such requests together, so the call is refused with instructions.
A client may pick its task with ``X-ERP-Task`` / ``_meta["erp-sim/task"]`` (id or index) when
its episode opens, unless the server pins one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import PromptError, ResourceError, ToolError
from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_access_token, get_context
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from mcp_types import ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import PrivateAttr

from erp_sim import tool_registry as registry
from erp_sim.mcp.episode_store import Episode, EpisodeError, EpisodeStore
from erp_sim.task_sets import is_task_reference
from erp_sim.workflows import TaskPrompt

SESSION_HEADER, SESSION_META = "x-erp-session", "erp-sim/session"
TASK_HEADER, TASK_META = "x-erp-task", "erp-sim/task"
MAX_KEY_CHARS = 128

NO_SESSION = (
    "This server runs one ERP episode per client session, and this stateless (MCP 2026-07-28) HTTP request "
    "carries nothing that identifies one. Send the same 'X-ERP-Session: <id of your choice>' header (or "
    "'_meta': {'erp-sim/session': '<id>'}) with every request, or connect with the 2025-11-25 handshake."
)


class RegistryTool(Tool):
    """One ``erp_sim.TOOLS`` entry over MCP: its schema, description and read-only flag, answered by ``ErpSession.call``.

    Arguments are passed through unvalidated so the episode reports bad input exactly as the
    Gymnasium env does; an error response becomes an MCP tool error (``isError``) carrying
    the same JSON text.
    """

    _episodes: EpisodeStore = PrivateAttr()
    _max_argument_bytes: int = PrivateAttr()

    @classmethod
    def bind(cls, tool: registry.Tool, episodes: EpisodeStore, max_argument_bytes: int) -> RegistryTool:
        bound = cls(
            name=tool.name,
            description=tool.description,
            parameters=tool.input_schema,
            annotations=ToolAnnotations(read_only_hint=tool.read_only, open_world_hint=False),
        )
        bound._episodes, bound._max_argument_bytes = episodes, max_argument_bytes
        return bound

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return await answer(self._episodes, self.name, arguments, self._max_argument_bytes)


async def answer(episodes: EpisodeStore, name: str, arguments: Any, max_argument_bytes: int) -> ToolResult:
    """The caller's episode answers ``name`` (any name: unknown tools get the ERP's own error JSON)."""
    return ToolResult(content=await answer_text(episodes, name, arguments, max_argument_bytes))


async def answer_text(
    episodes: EpisodeStore, name: str, arguments: Any, max_argument_bytes: int, ctx: Context | None = None
) -> str:
    """``answer``'s text: the ERP's response JSON; ``ToolError`` (the ERP's error JSON, or why no episode took the
    call) when the call failed. ``ctx``: the request's fastmcp context, when no Context was entered for it."""
    try:  # lone surrogates and integers too long to print are the session's to refuse, in its usual shape
        size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        size = 0
    if size > max_argument_bytes:
        raise ToolError(f"The arguments are {size:,} bytes; the limit is {max_argument_bytes:,}. Nothing was done.")
    try:
        response = await episodes.call(current_episode(episodes, ctx), name, arguments)
    except EpisodeError as exc:
        raise ToolError(str(exc)) from None
    if response.is_error:
        raise ToolError(response.text, log_level=logging.DEBUG)
    return response.text


def current_episode(episodes: EpisodeStore, ctx: Context | None = None) -> Episode:
    """The episode of the request being served (opened on first use)."""
    ctx = ctx or get_context()
    request = ctx.request_context
    meta = (request.meta or {}) if request is not None else {}
    headers = request.request.headers if request is not None and request.request is not None else {}
    key = meta.get(SESSION_META) or headers.get(SESSION_HEADER)
    task = meta.get(TASK_META) or headers.get(TASK_HEADER)
    if request is not None and request.request is not None:  # over HTTP: the token's client, across MCP sessions
        token = get_access_token()
        principal = f"principal:{token.client_id if token else 'anonymous'}"
    else:
        principal = "process"
    if request is not None and request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        owner = f"session:{ctx.session_id}"
    else:
        owner = principal
    client_key = key
    if key is not None:
        if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_CHARS:
            raise EpisodeError(f"The session key must be a string of 1 to {MAX_KEY_CHARS} characters.")
        key = f"client:{key}" if episodes.shared_keys else f"client:{owner}:{key}"
    elif owner.startswith("session:"):
        key = f"mcp:{ctx.session_id}"
    elif owner.startswith("principal:"):
        raise EpisodeError(NO_SESSION)
    else:
        key = "process"
    if task is not None and not is_task_reference(task):
        raise EpisodeError("The task must be a task id (e.g. hotel-007) or a 0-based index.")
    return episodes.episode(key, task, owner, client_key, principal)


def task_brief(episodes: EpisodeStore) -> dict[str, str]:
    """What the agent is asked to do: the user's first message and the domain rules it may rely on (for itemization,
    the subcategory rules)."""
    episode = current_episode(episodes)
    task = episode.session.task
    return {
        "session_id": episode.id,
        "task_set": task.task_set,
        "task_id": task.task_id,
        "instruction": task.instruction(),
        "mapping_rules": task.mapping_rules(),
    }


def register(server: FastMCP, episodes: EpisodeStore, max_argument_bytes: int, task_prompt: TaskPrompt) -> None:
    """Add the 22 registry tools, the workflow's task prompt (``itemization_task`` for itemization) and the
    ``erp-sim://task`` resource."""
    for tool in registry.TOOLS.values():
        server.add_tool(RegistryTool.bind(tool, episodes, max_argument_bytes))

    async def task_prompt_text() -> str:
        try:
            brief = task_brief(episodes)
        except EpisodeError as exc:
            raise PromptError(str(exc)) from None
        return task_prompt.text(brief)

    server.prompt(name=task_prompt.name, description=task_prompt.description)(task_prompt_text)

    @server.resource(
        "erp-sim://task", name="task", mime_type="application/json", description=task_prompt.resource_description
    )
    async def task_resource() -> str:
        try:
            return json.dumps(task_brief(episodes), ensure_ascii=False)
        except EpisodeError as exc:
            raise ResourceError(str(exc)) from None
