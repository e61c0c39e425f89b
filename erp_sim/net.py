"""What the two servers (``erp-sim serve`` and ``erp-sim serve --openenv``) share about the network: a port argument
and the loopback test that keeps a server off the LAN unless ``--allow-remote`` says otherwise; uvicorn's h11
protocol with read deadlines and a connection cap (``guarded_h11``); and ``replaying``, the ``receive`` of an app
whose request body a guard in front of it read first."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:  # annotations only: uvicorn loads when a server starts, starlette with its app
    from starlette.types import Message, Receive
    from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

logger = logging.getLogger("erp_sim.net")


def port_number(text: str) -> int:
    """argparse type of a TCP port: 0-65535 (a larger number was bound modulo 65536, on another port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only: ``localhost`` or a loopback address (IPv6 in brackets or not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def replaying(body: bytes, receive: Receive) -> Receive:
    """The ``receive`` of an app whose request body was read before it: that body, then the client's own
    messages (an app listens for the client hanging up)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


# --- slow and stalled clients -------------------------------------------------------------------------
DEFAULT_HEADER_TIMEOUT_S, DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS = 10.0, 30.0, 512


def guarded_h11(
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> type[H11Protocol]:
    """uvicorn's h11 protocol with what uvicorn lacks: header and body read deadlines, and a connection cap
    that sheds stalled connections first.

    uvicorn only times out idle keep-alive connections, and its ``limit_concurrency`` counts half-sent
    requests too (so stalled sockets would turn real clients away with 503). Here a connection must
    finish its request headers within ``header_timeout_s`` of its first byte (or of opening) and its
    body within ``body_timeout_s`` of the headers; over ``max_connections``, the oldest connection with
    no request in progress is closed to make room, and only if there is none is the new one refused.
    """

    class GuardedH11Protocol(H11Protocol):
        _opened: float  # loop time the connection opened
        _guard: asyncio.TimerHandle | None  # the running read deadline
        _seen_cycle: RequestResponseCycle | None  # the request whose headers armed the body deadline
        _upgraded: bool  # handed to a WebSocket protocol: these deadlines were for its HTTP request only

        # uvicorn narrows asyncio's BaseTransport to Transport here, and ignores the same error itself
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._opened, self._guard, self._seen_cycle, self._upgraded = self.loop.time(), None, None, False
            self._arm(header_timeout_s, "request headers")
            if len(self.connections) > max_connections:
                # (only this server's HTTP connections are shed: uvicorn's set also types WebSocket ones)
                idle = sorted(
                    (
                        c
                        for c in self.connections
                        if isinstance(c, GuardedH11Protocol) and c is not self and not c._busy()
                    ),
                    key=lambda c: c._opened,
                )
                (idle[0] if idle else self)._drop("over the connection limit")

        def data_received(self, data: bytes) -> None:
            between_requests = not self._busy()
            super().data_received(data)
            if self._upgraded:
                return
            if self.cycle is not None and self.cycle is not self._seen_cycle:  # headers complete: now the body
                self._seen_cycle = self.cycle
                self._arm(body_timeout_s, "request body")
            elif between_requests and self._guard is None:  # the next request's first bytes
                self._arm(header_timeout_s, "request headers")

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, event: Any) -> None:
            # the transport is the WebSocket's from now on: a deadline left armed here closed it 10 s later
            self._upgraded = True
            self._disarm()
            super().handle_websocket_upgrade(event)

        def _busy(self) -> bool:
            """A request is in progress: headers in, and its body still arriving or its response not sent."""
            return self.cycle is not None and not self.cycle.response_complete

        def _arm(self, seconds: float, waiting_for: str) -> None:
            self._disarm()
            self._guard = self.loop.call_later(seconds, self._late, waiting_for)

        def _disarm(self) -> None:
            if self._guard is not None:
                self._guard.cancel()
                self._guard = None

        def _late(self, waiting_for: str) -> None:
            self._guard = None
            if waiting_for == "request body" and not (self.cycle is not None and self.cycle.more_body):
                return  # the body arrived; the response may take as long as the call does
            if waiting_for == "request headers" and self._busy():
                return
            self._drop(f"{waiting_for} too slow")

        def _drop(self, reason: str) -> None:
            logger.info("closing HTTP connection from %s: %s", self.client, reason)
            self._disarm()
            self.transport.close()

    return GuardedH11Protocol
