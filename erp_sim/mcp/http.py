"""The HTTP side of the MCP server: streamable HTTP at ``/mcp``, a body-size limit, the evaluator's routes.

Admin routes (registered only when an admin token is configured; they need
``Authorization: Bearer <admin token>``, never the client token, and are not MCP, so an
agent cannot reach them through its tools):

- ``GET  /admin/sessions``                  every episode: handle, SessionId, key, task, calls, state
- ``GET  /admin/sessions/{id}/grade``       a fresh grade (active) or the final one (closed);
  ``id`` is the episode's ``handle`` (drawn by the server), or the ``SessionId`` shown in every
  tool response, or the client's session key, when exactly one episode has it (409 when several do)
- ``POST /admin/sessions/{id}/close``       grade, free and close an episode now

Ending an MCP session (``DELETE /mcp`` with its ``Mcp-Session-Id``) grades and frees its episodes.
``GET /mcp`` answers 405 (no server-to-client stream), and malformed POST bodies get JSON-RPC errors
from ``erp_sim.mcp.jsonrpc`` before the SDK reads them.
"""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING

from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from erp_sim.mcp.episode_store import EpisodeStore
from erp_sim.mcp.jsonrpc import checked_message, error_reply, usable_id
from erp_sim.net import replaying

if TYPE_CHECKING:  # annotations only: the server module imports this one
    from fastmcp import FastMCP
    from fastmcp.server.http import StarletteWithLifespan


logger = logging.getLogger("erp_sim.mcp")
NEVER_S = 365 * 86400.0  # the SDK's "no idle timeout" is spelled as a very long one


class _BodyTooLarge(Exception):
    pass


def _too_large(max_bytes: int) -> Response:
    error = {"code": -32600, "message": f"Request body over the limit of {max_bytes:,} bytes; nothing was done."}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=413)


class BodySizeLimit:
    """Answer 413 to request bodies over ``max_bytes`` (declared or streamed) instead of buffering them."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            return await _too_large(self.max_bytes)(scope, receive, send)
        if declared is not None:  # within the limit, and the HTTP parser delivers no more than declared
            return await self.app(scope, receive, send)
        received, started = 0, False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await _too_large(self.max_bytes)(scope, receive, send)


def _is_request(scope: Scope, method: str, path: str) -> bool:
    return bool(scope["type"] == "http" and scope["method"] == method and scope["path"].rstrip("/") == path)


class MalformedMessagesAnswered:
    """Check every JSON body POSTed to the MCP path (``erp_sim.mcp.jsonrpc``) before the SDK reads it.

    The SDK answers 202 and drops a message whose ``id`` is null, a float or an object (the client
    waits forever), answers batches and wrong shapes with a -32602 pydantic dump, and logs a traceback
    at ERROR for every client that hangs up mid-body. Here those get a one-sentence 400 JSON-RPC
    error, and a client that hangs up gets nothing. Unauthenticated requests and other content types
    pass untouched, so the 401 and the SDK's own Content-Type check come first.
    """

    def __init__(self, app: ASGIApp, path: str, auth_required: bool):
        self.app, self.path, self.auth_required = app, path, auth_required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            not _is_request(scope, "POST", self.path)
            or (self.auth_required and not getattr(scope.get("user"), "is_authenticated", False))
            or not Headers(scope=scope).get("content-type", "").lower().startswith("application/json")
        ):
            return await self.app(scope, receive, send)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        problem, data = checked_message(bytes(body))
        problem = problem or _version_problem(scope, data)
        if problem is not None:  # bad params answer 200, as the SDK's own -32602 do
            status = 200 if problem[0] == -32602 else 400
            answer = Response(error_reply(*problem), status_code=status, media_type="application/json")
            return await answer(scope, receive, send)
        await self.app(scope, replaying(bytes(body), receive), send)
        return None


def _version_problem(scope: Scope, data: object) -> tuple[int, str, object] | None:
    """An ``Mcp-Protocol-Version`` header naming no version the SDK speaks: the spec's 400, said as such (the SDK
    takes any unknown version for the 2026 envelope and answers about missing ``_meta`` keys)."""
    version = Headers(scope=scope).get("mcp-protocol-version")
    if version is None or version in SUPPORTED_PROTOCOL_VERSIONS:
        return None
    ident = data.get("id") if isinstance(data, dict) else None
    shown = version if len(version) <= 40 else version[:40] + "..."
    return (
        -32600,
        f"Invalid Request: the Mcp-Protocol-Version header {shown!r} is not a version this server speaks "
        f"({', '.join(SUPPORTED_PROTOCOL_VERSIONS)}); send the version initialize agreed on, or no header "
        "before initialize.",
        ident if usable_id(ident) else None,
    )


class NoServerStream:
    """``GET /mcp`` answers 405, which the spec allows for a server that offers no stream of its own.

    This server never sends a request or notification of its own, so the SDK's standalone SSE stream
    would carry nothing, yet each held a connection open for good: one client opening a session and a
    GET per connection slot (``--max-connections``) locked every other client out.
    """

    def __init__(self, app: ASGIApp, path: str):
        self.app, self.path = app, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_request(scope, "GET", self.path):
            return await self.app(scope, receive, send)
        error = {"code": -32600, "message": "This server offers no server-to-client stream; POST requests to it."}
        refusal = JSONResponse(
            {"jsonrpc": "2.0", "id": None, "error": error}, status_code=405, headers={"Allow": "POST, DELETE"}
        )
        await refusal(scope, receive, send)
        return None


class EndedSessionsAreGraded:
    """After a successful ``DELETE`` of an MCP session, grade and free the episodes it opened."""

    def __init__(self, app: ASGIApp, episodes: EpisodeStore, path: str):
        self.app, self.episodes, self.path = app, episodes, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_request(scope, "DELETE", self.path):
            return await self.app(scope, receive, send)
        session_id, status = Headers(scope=scope).get("mcp-session-id"), [0]

        async def watching_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        await self.app(scope, receive, watching_send)
        if session_id and 200 <= status[0] < 300:
            closed = await self.episodes.close_owned_by(f"session:{session_id}")
            logger.info("MCP session ended: %d episode(s) graded and freed", len(closed))
        return None


def add_admin_routes(server: FastMCP, episodes: EpisodeStore, admin_token: str) -> None:
    """Register the evaluator's routes on ``server`` (served by its HTTP app only)."""
    expected = admin_token.encode()

    def refused(request: Request) -> Response | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected):
            return None
        return JSONResponse(
            {"error": "admin token required"},
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="erp-sim-admin"'},
        )

    @server.custom_route("/admin/sessions", methods=["GET"], include_in_schema=False)
    async def list_sessions(request: Request) -> Response:
        return refused(request) or JSONResponse({"sessions": episodes.summaries()})

    @server.custom_route("/admin/sessions/{ident}/grade", methods=["GET"], include_in_schema=False)
    async def grade_session(request: Request) -> Response:
        if (refusal := refused(request)) is not None:
            return refusal
        try:
            return JSONResponse(await episodes.grade_when_free(request.path_params["ident"]))
        except KeyError:
            return JSONResponse({"error": "no such session"}, status_code=404)
        except LookupError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)

    @server.custom_route("/admin/sessions/{ident}/close", methods=["POST"], include_in_schema=False)
    async def close_session(request: Request) -> Response:
        if (refusal := refused(request)) is not None:
            return refusal
        try:
            key = episodes.key_of(request.path_params["ident"])
        except KeyError:
            key = None
        except LookupError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        summary = await episodes.close_when_free(key) if key is not None else None
        if summary is None:
            return JSONResponse({"error": "no such active session"}, status_code=404)
        return JSONResponse(summary)


def create_http_app(
    server: FastMCP,
    episodes: EpisodeStore,
    *,
    path: str = "/mcp",
    max_request_bytes: int,
    idle_timeout_s: float | None,
    json_response: bool = True,
) -> StarletteWithLifespan:
    """The Starlette app: MCP at ``path`` (behind the token verifier, if any), DNS-rebinding guard on loopback."""
    middleware = [
        Middleware(BodySizeLimit, max_bytes=max_request_bytes),
        Middleware(MalformedMessagesAnswered, path=path, auth_required=server.auth is not None),
        Middleware(NoServerStream, path=path),
        Middleware(EndedSessionsAreGraded, episodes=episodes, path=path),
    ]
    return server.http_app(
        path=path,
        middleware=middleware,
        json_response=json_response,
        host_origin_protection="auto",
        session_idle_timeout=idle_timeout_s or NEVER_S,
    )
