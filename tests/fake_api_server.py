"""What the strict fake Messages and Responses servers share: a threaded JSON server on loopback, a queue of
scripted answers and faults, a role handler for what the queue does not script, and what was received.

A fake sets ``answer(path, query, headers, body) -> Reply`` and builds its API's success bodies; this
module serves them, keeps every request body in ``requests`` (refused ones too), every refusal in
``rejections`` and every status-200 body in ``answered``, and sends the faults real servers send
(``fail``: an error status with the API's error body, ``delay``, ``truncated``: half a body under status
200). ``answer_with(handler)`` answers from the request (``handler(chat_body) -> (assistant message,
prompt tokens, completion tokens)``, the same handlers ``fake_openai_server`` takes: the fake hands them
the request as a Chat Completions body).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fake_openai_server import send_json

RoleHandler = Callable[[dict[str, Any]], tuple[dict[str, Any], int, int]]


@dataclass
class Reply:
    """One HTTP answer: a status, a JSON body, extra headers, how long to wait, and whether to cut it."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False


@dataclass
class Scripted:
    """A queued answer: an assistant message in Chat Completions form (built into the API's body when it is
    served, against the request), or a ready error ``Reply``."""

    message: dict[str, Any] | None = None
    finish: str | None = None
    reply: Reply | None = None
    delay: float = 0.0
    truncate: bool = False


class JsonApiServer:
    """The HTTP side of a fake: ``answer`` is the fake's own."""

    def __init__(self, answer: Callable[[str, dict[str, list[str]], dict[str, str], Any], Reply], name: str):
        self._answer = answer
        self.requests: list[Any] = []
        self.rejections: list[dict[str, Any]] = []
        self.answered: list[dict[str, Any]] = []
        self.queue: deque[Scripted] = deque()
        self.failure_on_every_request: Reply | None = None
        self.role_handler: RoleHandler | None = None
        self.lock = threading.Lock()
        self.count = 0  # answers built, for deterministic ids
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True
        )

    @property
    def root(self) -> str:
        host, port = self._http.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def next_number(self) -> int:
        with self.lock:
            self.count += 1
            return self.count

    def take(self) -> Scripted | None:
        """The next scripted answer (None: the queue is empty)."""
        with self.lock:
            return self.queue.popleft() if self.queue else None


def chat_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Tools in Chat Completions form, from either API's form (for the role handlers)."""
    if not tools:
        return None
    converted = []
    for tool in tools:
        function: dict[str, Any] = tool["function"] if isinstance(tool.get("function"), dict) else tool
        converted.append(
            {
                "type": "function",
                "function": {
                    "name": function.get("name"),
                    "description": function.get("description", ""),
                    "parameters": function.get("parameters") or function.get("input_schema") or {},
                },
            }
        )
    return converted


def _handler(server: JsonApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = None
            parts = urlsplit(self.path)
            headers = {key.lower(): value for key, value in self.headers.items()}
            reply = server._answer(parts.path, parse_qs(parts.query), headers, body)
            if reply.status == 200:
                with server.lock:
                    server.answered.append(reply.body)
            send_json(self, reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
