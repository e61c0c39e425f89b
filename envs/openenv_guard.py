"""The OpenEnv server's guard: what openenv-core 0.3's app leaves open to untrusted clients, closed in one ASGI
layer in front of it (``erp_sim.envs.openenv.build_app`` puts it there).

- Message sizes. A WebSocket message over ``max_message_bytes`` is refused by uvicorn from its frame header
  (``ws_max_size``, also after decompression), before its payload is read: the connection closes with 1009
  and the limit in the reason. An HTTP body over it gets 413 from its Content-Length, or as soon as the bytes
  streamed in pass it; the rest is never read. The default sits above the env's action limit (200,000
  characters of JSON), so every action the env would judge reaches it.
- Idle sessions. A WebSocket session that sends nothing for ``idle_timeout_s`` is closed (1001, the reason
  names the timeout) and its slot freed; a step being worked on is not idleness.
- Connection churn. New WebSocket connections are accepted at up to ``connect_rate`` a second beyond a burst
  of ``max_sessions`` (a token bucket); one over it waits for its turn before its handshake is answered, holding
  a slot meanwhile. A client that reconnects in a loop (a refused 15 MiB frame ends its connection) cost the
  server a handshake, a header read and a close each time, about 0.4 ms: 2,000 a second took three quarters of
  a core and tripled a well-behaved session's p95 (``scripts/bench_openenv_load.py``, ``big_frames``). While a
  session is open, HTTP requests but ``/health`` are admitted at ``HTTP_RATE`` a second the same way, before
  any of the body is read: a refused 300 MB upload (413 once 256 KiB came in) cost about 1.4 ms of the server
  and more of the machine's loopback copying, so 100 a second still doubled a session's p95.
- A session's share. A session's messages are read at up to ``read_rate`` bytes a second beyond a burst of
  four messages at the size limit; past that, its next message waits. A tool call is a few hundred bytes (a
  thousand a second fit); a session sending frames at the limit back to back (each an invalid action, each
  parsed twice: here and by openenv-core) took three quarters of a core and doubled the others' p95.
- Capacity. Over ``max_sessions``, a connection gets OpenEnv's ``CAPACITY_REACHED`` error frame and then a
  1013 close whose reason says ``CAPACITY_REACHED`` too, whichever the client reads first.
- Odd JSON. An HTTP body with NaN, Infinity or a number beyond a float's range (``1e400``) gets a 422 that
  says so (FastAPI's 422 echoed the value, which JSON cannot encode: a 500). A WebSocket text frame that is
  JSON but not an object, holds an integer of more than 4,300 digits or nests too deeply, or a binary frame,
  gets OpenEnv's ``INVALID_JSON`` error frame, and the session goes on (each ended the session before).
- Quiet logs. A client that leaves, even mid-step, is an INFO line: what the app still sends it is dropped
  (each such client logged an 85-line traceback at ERROR).
- HTTP floods. openenv-core's HTTP routes but ``/health`` build a fresh environment per request (a ``/reset``
  costs about 2.5 ms): while a WebSocket session is open they take turns, each followed by a pause of nine
  times its duration, so a flood of them gets at most a tenth of the server's time; ``/health`` always
  answers at once.
- openenv-core's ``/mcp`` routes (POST and WebSocket) opened sessions of an environment that has no MCP
  tools, each taking a slot for good without auth: here they answer 404.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import Any

from openenv.core.env_server.types import WSErrorCode, WSErrorResponse
from starlette.responses import JSONResponse

from erp_sim.net import replaying

logger = logging.getLogger("erp_sim.openenv")

# Above the action limit (200,000 characters of JSON) with room for the frame's envelope and a client's
# spacing; a tool call is a few hundred bytes, and this bounds what one message costs the server.
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024
# A rollout's turn waits for the model: ten minutes covers a long generation on a busy inference server.
DEFAULT_IDLE_TIMEOUT_S = 600.0
# New connections a second beyond a burst of --max-sessions: a trainer opening all its rollouts at once gets
# the burst, one reconnecting per episode a few a second; churning faster than this waits (0: no limit).
DEFAULT_CONNECT_RATE = 100.0
# Bytes a second a session's messages are read at beyond a burst of four at the size limit (0: no limit).
DEFAULT_READ_RATE = 1 << 20
IDLE_CLOSE, CAPACITY_CLOSE = 1001, 1013  # going away; try again later
# openenv-core builds a fresh environment for every HTTP request but /health (its stateless routes): while a
# WebSocket session is open, those take turns, and after each the next waits 9x as long as it took, so however
# long one takes, they have at most a tenth of the server's time, and the sessions, the training path, the rest
# (HTTP_RATE below bounds how many come in at all: a /reset costs about 2.5 ms, so ten a second take a fortieth)
HTTP_SHARE = 0.1
# HTTP requests a second (beyond a burst as many) while a WebSocket session is open: the stateless routes are
# for trying the env out, not for training; a /reset holds the interpreter about 2.5 ms and a body refused for
# its size costs the machine more, so at 10 a second they overlap under a twentieth of a session's steps (the
# share its p95 reads); at 20 a second a /reset flood still moved that p95 x1.4-2.6
HTTP_RATE = 10.0


class OpenEnvGuard:
    """The ASGI app in front of openenv-core's: see the module's docstring for what it guards."""

    def __init__(
        self,
        app: Any,
        *,
        max_sessions: int,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
        connect_rate: float = DEFAULT_CONNECT_RATE,
        read_rate: float = DEFAULT_READ_RATE,
    ):
        self.app, self.max_sessions, self.max_message_bytes = app, max_sessions, max_message_bytes
        self.idle_timeout_s = idle_timeout_s or None  # 0: never
        self.sessions = 0  # open /ws connections, and those waiting for their turn; never fewer than openenv-core's
        self.read_rate = read_rate
        # a bucket each, so a flood of HTTP requests does not hold up the WebSocket sessions' connections
        self._admission = _TokenBucket(connect_rate, burst=max_sessions) if connect_rate else None
        self._http_admission = _TokenBucket(HTTP_RATE, burst=HTTP_RATE)
        self._http_turn = asyncio.Lock()

    def __getattr__(self, name: str) -> Any:  # the FastAPI app's attributes (routes, state) for callers
        return getattr(self.app, name)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("path", "").rstrip("/") == "/mcp":
            return await _no_mcp(scope, receive, send)
        if scope["type"] == "http":
            return await self._http(scope, receive, send)
        if scope["type"] == "websocket":
            return await self._websocket(scope, receive, send)
        return await self.app(scope, receive, send)  # lifespan

    async def _http(self, scope: dict, receive: Any, send: Any) -> None:
        """The body read here, up to the limit (then 413), checked for numbers JSON lacks, and replayed to the app."""
        health = scope.get("path", "").rstrip("/") == "/health"
        if self.sessions and not health:  # its turn before anything is read
            await self._http_admission.take()
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_message_bytes):
            return await _too_large(scope, receive, send, self.max_message_bytes)
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_message_bytes:
                return await _too_large(scope, receive, send, self.max_message_bytes)
            more = message.get("more_body", False)
        problem = _number_problem(bytes(body)) if body else None
        if problem is not None:
            return await _json_reply(scope, receive, send, 422, f"{problem}; nothing was done.")
        replay = replaying(bytes(body), receive)
        if health or not self.sessions:  # nobody to yield to
            return await self.app(scope, replay, send)
        async with self._http_turn:  # one at a time, then a pause: at most HTTP_SHARE of the server's time
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                return await self.app(scope, replay, send)
            finally:
                await asyncio.sleep((loop.time() - started) * (1 / HTTP_SHARE - 1))

    async def _websocket(self, scope: dict, receive: Any, send: Any) -> None:
        host, port = scope.get("client") or ("?", "?")
        client = f"{host}:{port}"
        if self.sessions >= self.max_sessions:
            return await self._refuse_at_capacity(receive, send, client)
        self.sessions += 1
        read_budget = _TokenBucket(self.read_rate, burst=4 * self.max_message_bytes) if self.read_rate else None
        socket = _Socket(receive, send, self.idle_timeout_s, client, read_budget)
        try:
            if self._admission is not None:
                await self._admission.take()
            if await socket.open():  # the app (and its session) only once a first frame came
                await self.app(scope, socket.receive, socket.send)
        except Exception as exc:
            if not socket.closed:
                raise
            logger.info("%s: the app stopped after the connection ended (%s)", client, type(exc).__name__)
        finally:
            self.sessions -= 1

    async def _refuse_at_capacity(self, receive: Any, send: Any, client: str) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        used = f"all {self.max_sessions} sessions are in use (--max-sessions)"
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": _error_frame(f"Server at capacity: {used}", "CAPACITY_REACHED")})
        await send({"type": "websocket.close", "code": CAPACITY_CLOSE, "reason": f"CAPACITY_REACHED: {used}; retry"})
        logger.info("%s: refused, %s", client, used)


class _TokenBucket:
    """``rate`` a second beyond a burst of ``burst`` (connections, or bytes): ``take`` returns at once while the
    tokens last, else after the wait its share needs (waits queue in order of arrival: each books its tokens)."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst, self.tokens, self.stamp = rate, burst, float(burst), -math.inf

    async def take(self, amount: float = 1.0) -> None:
        now = asyncio.get_running_loop().time()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate) - amount
        self.stamp = now
        if self.tokens < 0:
            await asyncio.sleep(-self.tokens / self.rate)


class _Socket:
    """One /ws connection as the app sees it: accepted here, handed to the app with its first frame (so a
    connection that sends nothing usable never costs openenv-core a session), frames checked, idleness timed,
    sends to a closed socket dropped."""

    def __init__(
        self, receive: Any, send: Any, idle_timeout_s: float | None, client: str, read_budget: _TokenBucket | None
    ):
        self._receive, self._send, self.idle_timeout_s, self.client = receive, send, idle_timeout_s, client
        self.read_budget = read_budget
        self.pending: list[dict] = []  # what the app reads first: the handshake, then the first frame
        self.closed = False  # the client left, or a close was sent: whatever the app sends now is dropped

    async def open(self) -> bool:
        """Accept the connection and wait for its first frame (False: none came, the connection is over)."""
        if (await self._receive())["type"] != "websocket.connect":
            return False
        await self._send({"type": "websocket.accept"})
        first = await self.receive()
        if first["type"] == "websocket.disconnect":
            return False
        self.pending = [{"type": "websocket.connect"}, first]
        return True

    async def receive(self) -> dict:
        if self.pending:
            return self.pending.pop(0)
        while True:
            try:
                async with asyncio.timeout(self.idle_timeout_s):
                    message = await self._receive()
            except TimeoutError:
                reason = f"IDLE_TIMEOUT: no message for {self.idle_timeout_s:g} s (--idle-timeout); session closed"
                await self.send({"type": "websocket.close", "code": IDLE_CLOSE, "reason": reason})
                logger.info("%s: closed, idle for %g s", self.client, self.idle_timeout_s)
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE, "reason": reason}
            if message["type"] == "websocket.disconnect":
                if not self.closed:
                    reason = " ".join(str(part) for part in (message.get("code"), message.get("reason")) if part)
                    logger.info("%s: connection closed (%s)", self.client, reason)
                self.closed = True
                return message
            if self.read_budget is not None:  # this session's share: its next message waits if it sent too much
                await self.read_budget.take(len(message.get("text") or message.get("bytes") or b""))
            problem = _frame_problem(message)
            if problem is None:
                return message
            await self.send({"type": "websocket.send", "text": problem})

    async def send(self, message: dict) -> None:
        if self.closed or message["type"] == "websocket.accept":  # (accepted in open)
            return
        try:
            await self._send(message)
        except OSError:  # uvicorn's ClientDisconnected: the client left while its step ran
            self.closed = True
            logger.info("%s: the client left before its answer was sent", self.client)
            return
        if message["type"] == "websocket.close":
            self.closed = True


def _frame_problem(message: dict) -> str | None:
    """OpenEnv's error frame for a frame it would end the session on (None: pass the frame on)."""
    if message.get("type") != "websocket.receive":
        return None
    text = message.get("text")
    if text is None:  # a binary frame: OpenEnv reads text only, and its KeyError ended the session
        return _error_frame("Invalid message: send JSON text frames, not binary ones", "INVALID_JSON")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None  # OpenEnv answers that itself
    except (ValueError, RecursionError) as exc:  # which it does not catch: an integer of 5,000 digits, deep nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        return _error_frame(f"Invalid JSON: {reason}", "INVALID_JSON")
    if not isinstance(value, dict):
        return _error_frame(
            f"Invalid message: a JSON object with a 'type' is expected, got a JSON {type(value).__name__}",
            "INVALID_JSON",
        )
    return None


def _error_frame(message: str, code: str) -> str:
    return WSErrorResponse(data={"message": message, "code": WSErrorCode(code)}).model_dump_json()


class _NotJsonNumber(Exception):
    """NaN, Infinity or a number beyond a float's range: Python reads them, JSON has none of them."""


def _refuse_constant(name: str) -> Any:
    raise _NotJsonNumber(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotJsonNumber(f"the number {text[:40]} is beyond a float's range")
    return value


def _number_problem(body: bytes) -> str | None:
    """Why the body is JSON only to Python (None: it is JSON, or not JSON at all, which FastAPI answers itself
    with a 422 or 400)."""
    try:
        json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotJsonNumber as exc:
        return f"The request body holds what JSON has no numbers for: {exc}"
    except (ValueError, RecursionError):
        return None
    return None


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _json_reply(
    scope: dict, receive: Any, send: Any, status: int, detail: str, headers: dict | None = None
) -> None:
    await JSONResponse({"detail": detail}, status_code=status, headers=headers)(scope, receive, send)


async def _too_large(scope: dict, receive: Any, send: Any, limit: int) -> None:
    """413, and the connection closed after it: kept open, uvicorn would read the rest of the body to reuse it."""
    detail = f"The request body is over the limit of {limit:,} bytes (--max-message-bytes); nothing was done."
    await _json_reply(scope, receive, send, 413, detail, {"connection": "close"})


async def _no_mcp(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": "no MCP here"})
        return
    error = {"code": -32601, "message": "This OpenEnv server offers no MCP: play episodes over /ws."}
    await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=404)(scope, receive, send)
