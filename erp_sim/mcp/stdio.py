"""stdio for untrusted clients: the line limit holds while reading, malformed messages get JSON-RPC 2.0
errors, and replies are capped.

The SDK's stdio transport reads a whole line before any check (a 200 MB line cost 1 GB), and drops
messages it cannot parse without a reply, so a client waiting on that id hangs. Here ``LimitedLines``
feeds the SDK only messages it accepts: it answers the rest itself (``erp_sim.mcp.jsonrpc``: -32700
parse error, -32600 invalid request, with the request's id when it has a usable one) and discards an over-long line
as it streams in. It waits on stdin with the event loop (not a blocked worker thread), so Ctrl-C
stops a terminal session at once. At the end of stdin (``erp-sim serve < requests.jsonl``) it holds the
SDK's read stream open until every request it passed on is answered (``AnswerNoting`` tells it which):
the SDK cancels the calls still running when that stream ends, so a piped episode lost a varying tail.
A signal (SIGINT, SIGTERM: ``signals_end_input``) ends the input the same way: the lines read whole are
answered, the calls running finish and are answered, then the session ends graded (before, a signal cancelled
the session under a running call, whose write was kept and graded while its client got no answer or a
"Connection closed" error); a second signal stops at once.
A request sent before ``initialize`` gets the SDK's bare "Invalid request parameters"; ``AnswerNoting`` words
it as what it is (the MCP lifecycle: initialize first).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, JSONRPCError, JSONRPCResponse

from erp_sim.mcp.jsonrpc import checked_message, error_reply

logger = logging.getLogger("erp_sim.mcp")

MAX_REPLY_BYTES = 2 << 20  # tools answer at most 160,000 characters; this bounds everything else
EOF_GRACE_S = 60.0  # at the end of stdin, the longest wait for the requests still running (a call takes < 1 s)
_CHUNK = 1 << 16
# what the SDK answers to a request before initialize (its lifecycle gate), and what we say instead
SDK_NOT_INITIALIZED = "Invalid request parameters"
NOT_INITIALIZED = (
    "Invalid request: the session is not initialized. Send an initialize request first (then the "
    "notifications/initialized notification), as the MCP lifecycle requires; only ping is answered before it."
)


class CappedWriter:
    """The SDK's stdout: one whole line per write, serialized, replies over ``max_bytes`` replaced by an error."""

    def __init__(self, fd: int, max_bytes: int = MAX_REPLY_BYTES):
        self.fd, self.max_bytes, self.lock = fd, max_bytes, anyio.Lock()
        self.gone = False  # the client closed its end: replies are dropped, the session ends at the end of stdin

    async def write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        if len(data) > self.max_bytes:
            data = (self._too_big(text, len(data)) + "\n").encode()
        async with self.lock:
            if self.gone:
                return
            try:
                await anyio.to_thread.run_sync(self._write_all, data)
            except (BrokenPipeError, ConnectionResetError):  # was a traceback and exit 1, the grades unwritten
                self.gone = True
                logger.info("the client closed stdout; its replies are dropped")

    async def flush(self) -> None:
        pass  # every write goes straight to the descriptor

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def _too_big(self, text: str, size: int) -> str:
        try:
            ident = json.loads(text).get("id")
        except (ValueError, AttributeError):
            ident = None
        logger.warning("a reply of %d bytes was replaced by an error (limit %d)", size, self.max_bytes)
        return error_reply(
            -32603, f"The reply has {size:,} bytes, over the limit of {self.max_bytes:,}; narrow the request.", ident
        )


class LimitedLines:
    """stdin as an async iterator of the lines the SDK accepts; ``max_bytes`` holds while reading."""

    def __init__(self, fd: int, writer: CappedWriter, max_bytes: int):
        self.fd, self.writer, self.max_bytes = fd, writer, max_bytes
        self.pending, self.skipping, self.polls = bytearray(), False, True
        self.unanswered: Counter[str] = Counter()  # ids (as text) of the requests passed on and not yet answered
        self.initializing = False  # an initialize request (or the initialized notification) was passed on
        self._all_answered: anyio.Event | None = None
        self.stopping = False  # a signal ended the input (``stop``)
        self._reading: anyio.CancelScope | None = None

    def stop(self) -> None:
        """Read no more: the lines read whole are passed on and answered, as at the end of stdin."""
        self.stopping = True
        if self._reading is not None:
            self._reading.cancel()

    def __aiter__(self) -> LimitedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._line()
            if line is None:
                await self._wait_for_answers()
                raise StopAsyncIteration
            if not line.strip():
                continue
            problem, message = checked_message(line)
            if problem is None:
                self._note(message)
                return line.decode("utf-8", "replace")
            await self.writer.write(error_reply(*problem) + "\n")

    def _note(self, message: Any) -> None:
        """Count a request passed on; a client's cancellation stands for its answer (the SDK sends none)."""
        if "method" not in message:
            return
        if message["method"] in ("initialize", "notifications/initialized"):
            self.initializing = True
        if "id" in message:
            self.unanswered[str(message["id"])] += 1
        elif message["method"] == "notifications/cancelled" and isinstance(message.get("params"), dict):
            self.answered(message["params"].get("requestId"))

    def answered(self, ident: Any) -> None:
        key = str(ident)
        if self.unanswered[key] > 1:
            self.unanswered[key] -= 1
        else:
            self.unanswered.pop(key, None)
        if not self.unanswered and self._all_answered is not None:
            self._all_answered.set()

    async def _wait_for_answers(self) -> None:
        if self.unanswered:
            self._all_answered = anyio.Event()
            with anyio.move_on_after(EOF_GRACE_S):
                await self._all_answered.wait()
            if self.unanswered:
                logger.warning("stdin ended; %d request(s) still running were cancelled", self.unanswered.total())

    async def _line(self) -> bytes | None:
        scanned = 0
        while True:
            end = self.pending.find(b"\n", scanned)
            if end >= 0:
                line = bytes(self.pending[:end])
                del self.pending[: end + 1]
                if not self.skipping and end <= self.max_bytes:
                    return line
                self.skipping = False  # over the limit: dropped as it streamed in, or read whole with its newline
                await self._refuse_long_line()
                scanned = 0
                continue
            if len(self.pending) > self.max_bytes:  # drop it now: never hold more than the limit
                self.skipping = True
                self.pending.clear()
            scanned = len(self.pending)
            chunk = b"" if self.stopping else await self._read()
            if not chunk and self.stopping:  # a signal: a line not read whole is dropped
                self.pending.clear()
                return None
            if not chunk:
                if self.skipping:
                    self.skipping = False
                    await self._refuse_long_line()
                line, self.pending = bytes(self.pending), bytearray()
                return line or None
            self.pending += chunk

    async def _refuse_long_line(self) -> None:
        await self.writer.write(
            error_reply(
                -32600, f"Invalid Request: the message is over the limit of {self.max_bytes:,} bytes and was discarded."
            )
            + "\n"
        )

    async def _read(self) -> bytes:
        """The next chunk of stdin; empty at its end, or when ``stop`` cancels the wait."""
        with anyio.CancelScope() as self._reading:
            if self.polls:
                try:
                    await anyio.wait_readable(self.fd)  # pipes and terminals: cancellable at once
                    return os.read(self.fd, _CHUNK)
                except (OSError, ValueError, NotImplementedError):
                    self.polls = False  # a regular file (epoll refuses it): read it on a thread
            return await anyio.to_thread.run_sync(os.read, self.fd, _CHUNK)
        return b""


@contextmanager
def signals_end_input(lines: LimitedLines, session: anyio.CancelScope) -> Iterator[None]:
    """While the stdio session runs: the first SIGINT or SIGTERM ends its input (``lines.stop``), a second one
    cancels the session. Only the main thread can take signals; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.getsignal(number) for number in signals}

    def on_signal() -> None:
        if lines.stopping:
            session.cancel()
        else:
            logger.info("signal: reading no more requests; answering the ones running, then ending the session")
            lines.stop()

    for number in signals:
        loop.add_signal_handler(number, on_signal)
    try:
        yield
    finally:
        for number, handler in previous.items():
            loop.remove_signal_handler(number)
            signal.signal(number, handler)


class AnswerNoting:
    """The SDK's write stream, telling ``lines`` of each answer (a response or an error to a request) it sends."""

    def __init__(self, stream: Any, lines: LimitedLines):
        self.stream, self.lines = stream, lines

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCError) and not self.lines.initializing:
            error = message.error
            if (error.code, error.message, error.data) == (INVALID_PARAMS, SDK_NOT_INITIALIZED, ""):
                item = SessionMessage(
                    message.model_copy(update={"error": error.model_copy(update={"message": NOT_INITIALIZED})}),
                    item.metadata,
                )
        try:
            await self.stream.send(item)
        finally:  # sent, or never to be (stdout gone): either way nothing is left to wait for
            if isinstance(message, (JSONRPCResponse, JSONRPCError)):
                self.lines.answered(message.id)

    async def __aenter__(self) -> AnswerNoting:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self.stream.__aexit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
