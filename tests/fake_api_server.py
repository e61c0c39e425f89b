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
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from fake_openai_server import RoleHandler, ScriptedReply, read_json_body, send_json

Reply = ScriptedReply  # one HTTP answer: a status, a JSON body, extra headers, a wait, whether to cut it


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


class ServedFake:
    """A fake served by its ``JsonApiServer`` (``_server``): what it received (refused ones too), refused and
    answered, and ``with fake:`` to serve it while the block runs."""

    _server: JsonApiServer

    requests = property(lambda self: self._server.requests)
    rejections = property(lambda self: self._server.rejections)
    answered = property(lambda self: self._server.answered)

    def __enter__(self) -> Self:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    def queue_tool_calls(self, id_prefix: str, calls: list[tuple[str, dict[str, Any]]], text: str) -> None:
        """Queue an answer calling ``calls`` ((name, arguments) each), with ids the API's way (``toolu_``...)."""
        tool_calls = [
            {
                "id": f"{id_prefix}{self._server.next_number():06d}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments in calls
        ]
        self._server.queue.append(Scripted({"role": "assistant", "content": text, "tool_calls": tool_calls}))


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
            body = read_json_body(self)
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
