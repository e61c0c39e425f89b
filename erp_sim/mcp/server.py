"""``erp-sim serve``: the simulator as an MCP server that any MCP client can drive.

    erp-sim serve                                     # stdio (one client, one episode)
    erp-sim serve --http --port 8000                  # streamable HTTP at http://127.0.0.1:8000/mcp
    erp-sim serve --http --host 0.0.0.0 --allow-remote --auth-token "$T" --admin-token "$A"

The 22 tools come from ``erp_sim.TOOLS`` (see ``erp_sim.mcp.routing``); each client session
gets its own ``ErpSession`` (``erp_sim.mcp.episode_store``); evaluators read grades through the
admin HTTP routes or ``--grade-file`` (``erp_sim.mcp.http``), which the agent cannot reach.
In process: ``build_server(...)`` and fastmcp's ``Client(server)``; ``server.episodes`` holds
the grades.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.context import Context, reset_transport, set_transport
from fastmcp.server.http import StarletteWithLifespan
from fastmcp.server.lifespan import lifespan
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.logging import temporary_log_level
from fastmcp.utilities.versions import VersionSpec
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp_types import CallToolRequestParams, CallToolResult, TextContent

from erp_sim import workflows
from erp_sim.database.sql_sandbox import LIMITS as SQL_LIMITS
from erp_sim.database.sql_sandbox import set_limits as set_sql_limits
from erp_sim.faults import FaultProfile
from erp_sim.mcp.episode_store import DEFAULT_MAX_EPISODES, DEFAULT_MAX_PER_OWNER, EpisodeStore
from erp_sim.mcp.http import add_admin_routes, create_http_app
from erp_sim.mcp.routing import answer, answer_text, register
from erp_sim.mcp.stdio import AnswerNoting, CappedWriter, LimitedLines, signals_end_input
from erp_sim.net import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    guarded_h11,
    is_loopback,
    port_number,
)
from erp_sim.task_sets import workflow_of
from erp_sim.tool_registry import TOOLS
from erp_sim.verbosity import VERBOSITIES, Verbosity

DEFAULT_IDLE_TIMEOUT_S = 1800.0
DEFAULT_MAX_REQUEST_BYTES = 1 << 20
AUTH_TOKEN_ENV, ADMIN_TOKEN_ENV = "ERP_SIM_AUTH_TOKEN", "ERP_SIM_ADMIN_TOKEN"
# The server's instructions, with how the task set's workflow names its tasks and its prompt (TaskPrompt).
INSTRUCTIONS = (
    "Dynamics 365 Finance & Operations ERP tools (forms, OData-style data, business actions), "
    "simulated by erp-sim. Each session is one episode of one {kind} task: read the "
    "'{prompt}' prompt or the 'erp-sim://task' resource for the user's request."
)

logger = logging.getLogger("erp_sim.mcp")
MIN_REQUEST_BYTES = 1024  # an initialize request and a small tool call fit


class ErpMcpServer(FastMCP):
    """A FastMCP server whose ``episodes`` hold every client session's ERP state and grade."""

    def __init__(self, episodes: EpisodeStore, *, max_request_bytes: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.episodes = episodes
        self.max_request_bytes = max_request_bytes
        self._mcp_server.add_request_handler("tools/call", CallToolRequestParams, self._answer_tool_call)

    async def _answer_tool_call(self, ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        """``tools/call`` on every transport: the caller's episode answers, without fastmcp's per-call dispatch
        (a Context entered, its middleware chain, where this server's one middleware acts on listings only, a
        provider lookup of the tool, a span, the result's conversion), which cost about 0.4 ms of CPU a call
        (py-spy, 64 HTTP sessions). The SDK validated ``params`` and bound the request for fastmcp (its seam
        middleware), so ``Context`` reads the session and headers as in a tool. Errors are fastmcp's shapes: a
        ``ToolError`` is an ``isError`` result with its text, anything else is logged and masked."""
        name = params.name
        try:
            text = await answer_text(
                self.episodes, name, params.arguments or {}, self.max_request_bytes, Context(fastmcp=self)
            )
        except ToolError as exc:
            logger.log(exc.log_level, "Error calling tool %r", name)
            return _error_result(str(exc))
        except Exception:
            logger.exception("Error calling tool %r", name)
            return _error_result(f"Error calling tool {name!r}")
        return CallToolResult(content=[TextContent(type="text", text=text)])

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        version: VersionSpec | None = None,
        run_middleware: bool = True,
    ) -> ToolResult:
        """fastmcp's (for in-process callers of ``server.call_tool``; clients' calls are answered by
        ``_answer_tool_call``), except that a tool the registry lacks gets the ERP's own error JSON (``NotFound``),
        as over MCP, instead of fastmcp's plain ``Unknown tool`` text."""
        if not run_middleware and name not in TOOLS:
            return await answer(self.episodes, name, arguments or {}, self.max_request_bytes)
        return await super().call_tool(name, arguments, version=version, run_middleware=run_middleware)

    async def run_stdio_async(
        self, show_banner: bool = False, log_level: str | None = None, stateless: bool = False
    ) -> None:
        """fastmcp's stdio runner, with our stdin/stdout (``erp_sim.mcp.stdio``) handed to the SDK transport."""
        token = set_transport("stdio")
        try:
            with temporary_log_level(log_level):
                async with self._lifespan_manager():
                    writer = CappedWriter(sys.stdout.fileno())
                    lines = LimitedLines(sys.stdin.fileno(), writer, self.max_request_bytes)
                    try:
                        # the SDK annotates both as anyio.AsyncFile, yet only iterates one and awaits the other's write/flush
                        streams = stdio_server(
                            stdin=lines,  # type: ignore[arg-type]  # an async iterator of lines, as the SDK uses it
                            stdout=writer,  # type: ignore[arg-type]  # async write and flush, as the SDK uses it
                        )
                        async with streams as (read_stream, write_stream):
                            with anyio.CancelScope() as session, signals_end_input(lines, session):
                                await self._mcp_server.run(
                                    read_stream,
                                    AnswerNoting(write_stream, lines),
                                    self._mcp_server.create_initialization_options(),
                                )
                    except* anyio.BrokenResourceError:
                        # the SDK's stdin reader, handing a line to a session that a shutdown (Ctrl-C, SIGTERM)
                        # just closed, raises this uncaught: exit 1 with a traceback, and no final grades
                        logger.debug("stdin closed mid-message at shutdown")
        finally:
            reset_transport(token)

    def streamable_http_app(self, *, json_response: bool = True) -> StarletteWithLifespan:
        """The Starlette app for ``--http``: MCP at ``/mcp``, request bodies bounded, idle sessions reaped.

        Plain JSON responses by default: tools never stream, and skipping SSE halves the server's
        cost per call (about 2.3 ms instead of 4-5 ms of CPU, measured with scripts/bench_mcp.py).
        """
        return create_http_app(
            self,
            self.episodes,
            max_request_bytes=self.max_request_bytes,
            idle_timeout_s=self.episodes.idle_timeout_s,
            json_response=json_response,
        )


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def build_server(
    task_set: str = workflows.DEFAULT_TASK_SET,
    task_id: str | int | None = None,
    verbosity: Verbosity = "default",
    seed: int | None = None,
    faults: FaultProfile | str | float | None = None,
    auth_token: str | None = None,
    admin_token: str | None = None,
    idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
    grade_file: str | Path | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    max_episodes: int = DEFAULT_MAX_EPISODES,
    max_episodes_per_session: int = DEFAULT_MAX_PER_OWNER,
    shared_session_keys: bool = False,
    sql_cpu_seconds: float | None = None,
    sql_memory_bytes: int | None = None,
) -> ErpMcpServer:
    """An MCP server over ``task_set``.

    ``task_id`` (id or index) pins every session to one task; otherwise each session may pick
    one (``X-ERP-Task``) or gets the next task of the set, in order, or shuffled by ``seed``.
    ``auth_token`` guards ``/mcp`` over HTTP; ``admin_token`` enables the admin routes;
    ``idle_timeout_s`` (None or 0: never) expires idle sessions; ``grade_file`` gets one JSON line
    per grade (appended, flushed); ``max_request_bytes`` bounds HTTP bodies and tool arguments;
    ``max_episodes`` / ``max_episodes_per_session`` cap open episodes; ``shared_session_keys`` lets
    any client reach an episode by its key; ``sql_cpu_seconds`` / ``sql_memory_bytes`` bound each
    SQL statement (process-wide).
    """
    if admin_token and admin_token == auth_token:
        raise ValueError("The admin token must differ from the client token.")
    if max_request_bytes < MIN_REQUEST_BYTES:  # smaller refuses every request: a server that serves nothing
        raise ValueError(f"--max-request-bytes must be at least {MIN_REQUEST_BYTES:,}, got {max_request_bytes:,}")
    set_sql_limits(sql_cpu_seconds, sql_memory_bytes)
    episodes = EpisodeStore(
        task_set,
        task_id,
        verbosity=verbosity,
        faults=faults,
        seed=seed,
        idle_timeout_s=idle_timeout_s,
        grade_file=grade_file,
        max_episodes=max_episodes,
        max_per_owner=max_episodes_per_session,
        shared_keys=shared_session_keys,
    )

    @lifespan
    async def expire_idle_episodes(server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        reaper = asyncio.create_task(episodes.reap_forever())
        try:
            yield {}
        finally:
            reaper.cancel()
            episodes.close_all()

    auth = StaticTokenVerifier({auth_token: {"client_id": "erp-sim-client", "scopes": []}}) if auth_token else None
    task_prompt = workflows.load(workflow_of(task_set)).task_prompt  # the set is known: the store loaded it
    server = ErpMcpServer(
        episodes,
        max_request_bytes=max_request_bytes,
        name="erp-sim",
        version=_package_version(),
        instructions=INSTRUCTIONS.format(kind=task_prompt.kind, prompt=task_prompt.name),
        auth=auth,
        lifespan=expire_idle_episodes,
        mask_error_details=True,
    )
    register(server, episodes, max_request_bytes, task_prompt)
    if admin_token:
        add_admin_routes(server, episodes, admin_token)
    return server


def _package_version() -> str:
    try:
        return version("erp-sim")
    except PackageNotFoundError:
        return "0+unknown"


# The serving limits: (option, type, default, help; argparse fills in %(default)).
_LIMITS: tuple[tuple[str, type, float, str], ...] = (
    ("--max-episodes", int, DEFAULT_MAX_EPISODES, "Open episodes in all; more are refused (default %(default)s)."),
    (
        "--max-episodes-per-session",
        int,
        DEFAULT_MAX_PER_OWNER,
        "Open episodes per MCP session (distinct session keys; default %(default)s).",
    ),
    (
        "--sql-cpu-seconds",
        float,
        SQL_LIMITS.cpu_seconds,
        "CPU time per SQL statement of data_find_entities_sql (default %(default)g).",
    ),
    (
        "--sql-memory-mb",
        int,
        SQL_LIMITS.memory_bytes >> 20,
        "Memory (MiB) one SQL statement may grow SQLite's heap by (default %(default)s).",
    ),
    (
        "--http-header-timeout",
        float,
        DEFAULT_HEADER_TIMEOUT_S,
        "Seconds a client has to send its request headers (default %(default)g).",
    ),
    (
        "--http-body-timeout",
        float,
        DEFAULT_BODY_TIMEOUT_S,
        "Seconds a client has to send its request body (default %(default)g).",
    ),
    (
        "--max-connections",
        int,
        DEFAULT_MAX_CONNECTIONS,
        "Open HTTP connections; over it, stalled ones are closed first (default %(default)s).",
    ),
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="erp-sim serve", description="Serve the ERP simulator over MCP (stdio by default)."
    )
    p.add_argument("--http", action="store_true", help="Serve streamable HTTP at /mcp instead of stdio.")
    p.add_argument(
        "--openenv",
        action="store_true",
        help="Serve an OpenEnv environment instead (reset/step/state; needs the openenv extra); "
        "its options: erp-sim serve --openenv --help.",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1; others need --allow-remote)."
    )
    p.add_argument("--port", type=port_number, default=8000, help="HTTP port (default 8000; 0: any free port).")
    p.add_argument("--allow-remote", action="store_true", help="Allow binding a non-loopback address.")
    p.add_argument(
        "--task-set",
        default=workflows.DEFAULT_TASK_SET,
        help=f"{', '.join(workflows.fixture_set_names())}, or a workflow's view of one such as an expense type"
        f" (default {workflows.DEFAULT_TASK_SET}).",
    )
    p.add_argument("--task", default=None, help="Pin every session to this task (id or 0-based index).")
    p.add_argument("--seed", type=int, default=None, help="Shuffle the order in which new sessions get tasks.")
    p.add_argument("--verbosity", choices=VERBOSITIES, default="default", help="Response verbosity.")
    p.add_argument("--faults", default=None, help='Fault injection, e.g. 0.1 or "rate=0.1,seed=3" (default off).')
    p.add_argument("--auth-token", default=None, help=f"Bearer token HTTP clients must send (or ${AUTH_TOKEN_ENV}).")
    p.add_argument("--admin-token", default=None, help=f"Bearer token for /admin routes (or ${ADMIN_TOKEN_ENV}).")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S,
        help="Seconds before an idle session is graded and freed (0: never; default 1800).",
    )
    p.add_argument(
        "--grade-file",
        type=Path,
        default=None,
        help="Append every grade here as one JSON line (flushed; never truncated; last line per handle wins).",
    )
    p.add_argument(
        "--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES, help="Largest HTTP body / tool arguments."
    )
    for flag, kind, default, text in _LIMITS[:2]:
        p.add_argument(flag, type=kind, default=default, help=text)
    p.add_argument(
        "--shared-session-keys",
        action="store_true",
        help="Let any client reach an episode by its X-ERP-Session key (default: only the client that opened it).",
    )
    for flag, kind, default, text in _LIMITS[2:]:
        p.add_argument(flag, type=kind, default=default, help=text)
    p.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"], help="Log level (stderr)."
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """``erp-sim serve [options]``; returns the exit code. Logs go to stderr (stdout is the stdio protocol)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    if args.openenv:  # the env's server lives above the simulator: the erp-sim command starts it
        print("erp-sim serve: --openenv is served by the erp-sim command (erp-sim serve --openenv)", file=sys.stderr)
        return 2
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    auth_token = args.auth_token or os.environ.get(AUTH_TOKEN_ENV) or None
    admin_token = args.admin_token or os.environ.get(ADMIN_TOKEN_ENV) or None
    if args.http and not is_loopback(args.host):
        if not args.allow_remote:
            print(
                f"erp-sim serve: {args.host} is not a loopback address; pass --allow-remote to serve other machines.",
                file=sys.stderr,
            )
            return 2
        print(
            f"WARNING: erp-sim serves {args.host}:{args.port}, reachable from other machines (plain HTTP: put TLS in "
            f"front). " + ("" if auth_token else "No --auth-token: anyone who can connect can use it."),
            file=sys.stderr,
        )
    try:
        server = build_server(
            args.task_set,
            args.task,
            verbosity=args.verbosity,
            seed=args.seed,
            faults=args.faults,
            auth_token=auth_token,
            admin_token=admin_token,
            idle_timeout_s=args.idle_timeout,
            grade_file=args.grade_file,
            max_request_bytes=args.max_request_bytes,
            max_episodes=args.max_episodes,
            max_episodes_per_session=args.max_episodes_per_session,
            shared_session_keys=args.shared_session_keys,
            sql_cpu_seconds=args.sql_cpu_seconds,
            sql_memory_bytes=args.sql_memory_mb << 20,
        )
    except (KeyError, ValueError) as exc:  # bad task, task set, fault profile or tokens
        print(f"erp-sim serve: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return 2
    try:
        if args.http:
            _serve_http(server, args, admin=bool(admin_token))
        elif sys.stdin is None or sys.stdout is None:  # started with fd 0 or 1 closed
            print(
                "erp-sim serve: stdio needs an open stdin and stdout (an MCP client's pipes), or use --http",
                file=sys.stderr,
            )
            return 2
        else:
            with _sigterm_as_ctrl_c():
                server.run(transport="stdio", show_banner=False, log_level=args.log_level.upper())
    except KeyboardInterrupt:
        pass
    finally:
        server.episodes.close_all()
    return 0


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """A supervisor's (or an MCP client's) SIGTERM ends a stdio session like Ctrl-C: graded, then gone
    (it used to kill the process before the final grade was written)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve_http(server: ErpMcpServer, args: argparse.Namespace, *, admin: bool) -> None:
    protocol = guarded_h11(args.http_header_timeout, args.http_body_timeout, args.max_connections)
    config = uvicorn.Config(
        server.streamable_http_app(),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=args.log_level == "debug",
        timeout_graceful_shutdown=2,
        lifespan="on",
        http=protocol,
        timeout_keep_alive=5,
        # asyncio's loop, whatever is installed: uvicorn takes uvloop when present (the training
        # extras bring it), and under uvloop stalled sockets were not shed (the guards' test failed)
        loop="asyncio",
    )
    auth = "bearer token required" if server.auth is not None else "OFF, any local process can use it"
    details = f"(auth: {auth}; admin routes: {'on' if admin else 'off, no --admin-token'})"

    class AnnouncingServer(uvicorn.Server):
        """Says where it serves once bound (not before a bind that fails on a busy port), with the port it got
        (``--port 0`` picks a free one)."""

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                address = self.servers[0].sockets[0].getsockname()
                host = f"[{address[0]}]" if ":" in address[0] else address[0]
                # printed, not logged: the operator needs the URL and the auth state at every log level
                print(f"erp-sim serves MCP at http://{host}:{address[1]}/mcp {details}", file=sys.stderr, flush=True)

    AnnouncingServer(config).run()


if __name__ == "__main__":
    sys.exit(main())
