"""A scripted OpenAI-compatible server on loopback, for offline tests of the model layer.

It answers ``POST /v1/chat/completions`` from a queue of scripted replies (text or tool
calls, with usage), can fail a given number of times (``fail``) or on every request
(``fail_always``), can answer late (``delay``) to provoke client timeouts, can send the faults
real servers send (``truncated_body``: status 200 and half a JSON body; ``fail(400,
message=...)`` e.g. a context-length refusal; ``empty_choices``; ``random_tool_call_ids`` as
real servers give, different on every request), and keeps every
request body it received in ``requests`` (failed attempts included). It is strict by default:
a body the real Chat Completions API would refuse (unknown keys, a message key its role does
not allow, a tool result that answers no call, an unanswered call, bad tool schemas, numbers
out of range: ``strict_chat_request``) gets the API's HTTP 400 error, without using up a
scripted reply, and is kept in ``rejections`` too; ``strict=False`` is for the few tests that
send odd bodies on purpose. Answers are shaped like the API's (``chatcmpl-`` ids,
``system_fingerprint``, ``refusal``/``annotations`` on the message, token details in
``usage``), with deterministic ids. When the queue is
empty it answers 400 "no scripted reply left", which the client does not retry, so a
test that scripted too few replies fails at once with a clear message, unless a role
handler is set (``answer_with``): then an empty queue is answered by the handler, which
computes the reply from the request (``fake_acon_roles`` plays ACON's agent, compressor
and optimizer that way).

Use it from a test module (``tests/`` is on ``sys.path`` under pytest's default import mode)::

    from fake_openai_server import FakeOpenAIServer, fake_openai_server  # noqa: F401  (fixture)

    def test_something(fake_openai_server):
        fake_openai_server.reply_text("hello")
        model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url)

or, for every test, ``pytest_plugins = ["fake_openai_server"]`` in ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from strict_chat_request import rejection

# request body -> (assistant message, prompt_tokens, completion_tokens)
RoleHandler = Callable[[dict[str, Any]], tuple[dict[str, Any], int, int]]

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"


@dataclass
class ScriptedReply:
    """One HTTP answer: a status, a JSON body, extra headers, and how long to wait first."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False  # send only the first half of the JSON body (Content-Length matches)


class FakeOpenAIServer:
    """A threaded ``http.server`` on 127.0.0.1 and a free port; a context manager."""

    def __init__(self, model: str = "fake-model", *, random_tool_call_ids: bool = False, strict: bool = True):
        self.model = model
        self.strict = strict
        self.rejections: list[dict[str, Any]] = []  # the 400 errors strict mode answered, in order
        self.random_tool_call_ids = random_tool_call_ids  # ids drawn afresh at every answer, as real servers do
        self.requests: list[dict[str, Any]] = []
        self.cached_tokens = 0  # usage.prompt_tokens_details.cached_tokens of answers built from now on
        self._replies: deque[ScriptedReply] = deque()
        self._failure_on_every_request: ScriptedReply | None = None
        self._role_handler: RoleHandler | None = None
        self._lock = threading.Lock()
        self._completion_count = 0
        self._tool_call_count = 0
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai-server", daemon=True
        )  # a short poll so that stop() returns at once

    @property
    def base_url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- scripting -------------------------------------------------------------------

    def reply_text(self, content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, delay: float = 0.0) -> None:
        """Queue an assistant answer in plain text."""
        message = {"role": "assistant", "content": content}
        self._queue(ScriptedReply(200, self._completion(message, "stop", prompt_tokens, completion_tokens), delay=delay))

    def reply_tool_calls(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        *,
        content: str | None = None,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        delay: float = 0.0,
    ) -> None:
        """Queue an assistant answer that calls tools: ``[(name, arguments), ...]``, ids ``call_1``, ``call_2``..."""
        tool_calls = []
        for name, arguments in calls:
            with self._lock:
                self._tool_call_count += 1
                call_id = f"call_{self._tool_call_count}"
            tool_calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}})
        message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        self._queue(ScriptedReply(200, self._completion(message, "tool_calls", prompt_tokens, completion_tokens), delay=delay))

    def fail(self, status: int, times: int = 1, *, retry_after: float | None = None, message: str | None = None) -> None:
        """Queue ``times`` error answers with this HTTP status (e.g. 429 before a success)."""
        for _ in range(times):
            self._queue(_error_reply(status, retry_after, message))

    def fail_always(self, status: int = 500, *, message: str | None = None) -> None:
        """Answer every request from now on with this error, whatever is queued."""
        self._failure_on_every_request = _error_reply(status, None, message)

    def stop_failing(self) -> None:
        self._failure_on_every_request = None

    def truncated_body(self, times: int = 1) -> None:
        """Queue ``times`` answers with status 200 whose JSON body is cut in half."""
        for _ in range(times):
            message = {"role": "assistant", "content": "this answer is cut short"}
            self._queue(ScriptedReply(200, self._completion(message, "stop", 10, 5), truncate=True))

    def empty_choices(self, times: int = 1) -> None:
        """Queue ``times`` answers with status 200 and an empty ``choices`` list."""
        for _ in range(times):
            body = self._completion({"role": "assistant", "content": ""}, "stop", 10, 0)
            self._queue(ScriptedReply(200, body | {"choices": []}))

    def answer_with(self, handler: RoleHandler | None) -> None:
        """Answer requests the queue has no reply for with ``handler(request body)``."""
        self._role_handler = handler

    def _queue(self, reply: ScriptedReply) -> None:
        with self._lock:
            self._replies.append(reply)

    def _completion(self, message: dict[str, Any], finish_reason: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        with self._lock:
            self._completion_count += 1
            number = self._completion_count
        message = {"role": "assistant", "content": None, "refusal": None, "annotations": []} | message
        return {
            "id": f"chatcmpl-fake{number:06d}",
            "object": "chat.completion",
            "created": FIXED_CREATED,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
            },
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }

    # --- serving ---------------------------------------------------------------------

    def _answer(self, path: str, body: dict[str, Any]) -> ScriptedReply:
        if path != CHAT_COMPLETIONS_PATH:
            return ScriptedReply(404, _error_body(f"fake server: no route {path}", "not_found"))
        refused = rejection(body) if self.strict else None
        with self._lock:
            self.requests.append(body)
            if refused is not None:  # refused before any scripted reply is used, as the API checks first
                error = {"message": refused["message"], "type": "invalid_request_error",
                         "param": refused["param"], "code": refused["code"]}
                self.rejections.append(error)
                return ScriptedReply(400, {"error": error})
            if self._failure_on_every_request is not None:
                return self._failure_on_every_request
            reply = self._replies.popleft() if self._replies else None
            handler = self._role_handler
        if reply is None:
            if handler is None:
                return ScriptedReply(400, _error_body("fake server: no scripted reply left", "invalid_request_error"))
            try:
                message, prompt_tokens, completion_tokens = handler(body)
            except Exception as exc:  # a handler bug must show in the test, not hang the client
                return ScriptedReply(400, _error_body(f"fake server: role handler failed: {exc!r}", "invalid_request_error"))
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            reply = ScriptedReply(200, self._completion(message, finish, prompt_tokens, completion_tokens))
        if self.random_tool_call_ids and reply.status == 200:
            reply = _with_fresh_tool_call_ids(reply)
        return reply


def _with_fresh_tool_call_ids(reply: ScriptedReply) -> ScriptedReply:
    body = json.loads(json.dumps(reply.body))
    for choice in body.get("choices", []):
        for call in choice["message"].get("tool_calls") or []:
            call["id"] = "call_" + secrets.token_hex(12)
    return ScriptedReply(reply.status, body, reply.headers, reply.delay, reply.truncate)


FIXED_CREATED = 1_700_000_000  # a real-looking Unix time that stays the same from run to run
CONTEXT_LENGTH_MESSAGE = ("This model's maximum context length is 128000 tokens. However, your messages resulted in "
                          "130001 tokens. Please reduce the length of the messages.")


def _error_reply(status: int, retry_after: float | None, message: str | None = None) -> ScriptedReply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    kind = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return ScriptedReply(status, _error_body(message or f"fake server: scripted HTTP {status}", kind), headers)


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class ChatCompletionsHandler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = None  # strict mode refuses it as the API does; a lenient server sees no body
            body = body if body is not None or server.strict else {}
            reply = server._answer(self.path, body)
            time.sleep(reply.delay)
            payload = json.dumps(reply.body).encode()
            if reply.truncate:
                payload = payload[: len(payload) // 2]
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return ChatCompletionsHandler


@pytest.fixture
def fake_openai_server():
    """A started ``FakeOpenAIServer``, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server
