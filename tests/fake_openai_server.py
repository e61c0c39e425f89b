"""A scripted OpenAI-compatible server on loopback, for offline tests of the model layer.

It answers ``POST /v1/chat/completions`` from a queue of scripted replies (text or tool
calls, with usage), can fail a given number of times (``fail``) or on every request
(``fail_always``), can answer late (``delay``) to provoke client timeouts, can send the faults
real servers send (``truncated_body``: status 200 and half a JSON body; ``fail(400,
message=...)`` e.g. a context-length refusal; ``empty_choices``; ``random_tool_call_ids`` as
real servers give, different on every request), and keeps every
request body it received in ``requests`` (failed attempts included) and every status-200
body it sent in ``answered``. It is strict by default:
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

Opt-in modes make it behave like the local servers people point the harness at
(llama-cpp-python, vLLM, Ollama), each a keyword of the constructor, off by default:

- ``tools_need_tool_choice``: tools are ignored unless the request sends ``tool_choice``;
  a scripted tool call then comes back as text (the call written out as JSON), as a small
  model on llama-cpp-python's server answers;
- ``null_content_500``: an assistant message whose ``content`` is null or missing gets HTTP
  500 (the chat template cannot add None to a string), every time, without using a reply;
- ``parses_tool_arguments``: an earlier tool call whose ``arguments`` text is not JSON gets HTTP
  400 (vLLM parses every earlier call's arguments before rendering the chat template);
- ``runaway_seconds``: a request with neither ``max_tokens`` nor ``max_completion_tokens``
  generates until the context is full: the answer comes that many seconds late, is
  ``RUNAWAY_TOKENS`` tokens of text with ``finish_reason: "length"``, and uses no reply;
- ``own_token_counts``: ``usage`` is counted with the server's own tokenizer (words and
  punctuation, not o200k: ``own_tokens``) over the rendered prompt and the answer, instead of
  the scripted figures; with ``cached_tokens`` it also reports
  ``usage.prompt_tokens_details.cached_tokens``, the prompt prefix shared with the request
  before (whole blocks of ``CACHE_BLOCK`` tokens, as vLLM's prefix cache counts), and
  without it no ``prompt_tokens_details`` at all (llama-cpp-python reports none).

Use it from a test module (``tests/`` is on ``sys.path`` under pytest's default import mode)::

    from fake_openai_server import FakeOpenAIServer, fake_openai_server  # noqa: F401  (fixture)

    def test_something(fake_openai_server):
        fake_openai_server.reply_text("hello")
        model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url)

or, for every test, ``pytest_plugins = ["fake_openai_server"]`` in ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from strict_chat_request import rejection

# request body -> (assistant message, prompt_tokens, completion_tokens)
RoleHandler = Callable[[dict[str, Any]], tuple[dict[str, Any], int, int]]

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"
RUNAWAY_TOKENS = 4096  # what a runaway generation answers with: the rest of a small context window
CACHE_BLOCK = 16  # prefix-cache granularity in tokens (vLLM's default block size)
TEMPLATE_ERROR = 'can only concatenate str (not "NoneType") to str'  # a chat template adding None to a string
ARGUMENTS_ERROR = (
    "Expecting ',' delimiter: line 1 column 35 (char 34)"  # vLLM's json.loads of an earlier call's arguments
)
_OWN_TOKEN = re.compile(r"\w+|[^\w\s]")


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

    def __init__(
        self,
        model: str = "fake-model",
        *,
        random_tool_call_ids: bool = False,
        strict: bool = True,
        tools_need_tool_choice: bool = False,
        null_content_500: bool = False,
        parses_tool_arguments: bool = False,
        runaway_seconds: float | None = None,
        own_token_counts: bool = False,
        cached_tokens: bool = False,
    ):
        if cached_tokens and not own_token_counts:
            raise ValueError("cached_tokens needs own_token_counts (the cache counts the server's own tokens)")
        self.model = model
        self.strict = strict
        self.tools_need_tool_choice = tools_need_tool_choice
        self.null_content_500 = null_content_500
        self.parses_tool_arguments = parses_tool_arguments
        self.runaway_seconds = runaway_seconds
        self.own_token_counts = own_token_counts
        self.reports_shared_prefix = cached_tokens  # own counts' cached_tokens: the prefix shared with the last request
        self._previous_prompt: list[str] = []  # the last prompt's own tokens, for the prefix cache
        self.rejections: list[dict[str, Any]] = []  # the 400 errors strict mode answered, in order
        self.random_tool_call_ids = random_tool_call_ids  # ids drawn afresh at every answer, as real servers do
        self.requests: list[dict[str, Any]] = []
        self.cached_tokens = 0  # usage.prompt_tokens_details.cached_tokens of answers built from now on
        self.answered: list[dict[str, Any]] = []  # the bodies of the 200 answers sent, in order
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
        assert isinstance(host, str)  # an AF_INET server's host
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- scripting -------------------------------------------------------------------

    def reply_text(
        self,
        content: str,
        *,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        delay: float = 0.0,
        finish_reason: str = "stop",
    ) -> None:
        """Queue an assistant answer in plain text (``finish_reason="length"``: cut at the token limit)."""
        message = {"role": "assistant", "content": content}
        self._queue(
            ScriptedReply(200, self._completion(message, finish_reason, prompt_tokens, completion_tokens), delay=delay)
        )

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
            tool_calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            )
        message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        self._queue(
            ScriptedReply(200, self._completion(message, "tool_calls", prompt_tokens, completion_tokens), delay=delay)
        )

    def fail(
        self, status: int, times: int = 1, *, retry_after: float | None = None, message: str | None = None
    ) -> None:
        """Queue ``times`` error answers with this HTTP status (e.g. 429 before a success)."""
        for _ in range(times):
            self._queue(_error_reply(status, retry_after, message))

    def fail_with_body(self, status: int, body: dict[str, Any]) -> None:
        """Queue one error answer with this JSON body, as servers other than OpenAI's shape it (FastAPI's
        ``{"detail": ...}``, TGI's ``{"error": "..."}``)."""
        self._queue(ScriptedReply(status, body))

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

    def _completion(
        self, message: dict[str, Any], finish_reason: str, prompt_tokens: int, completion_tokens: int
    ) -> dict[str, Any]:
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
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
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
                error = {
                    "message": refused["message"],
                    "type": "invalid_request_error",
                    "param": refused["param"],
                    "code": refused["code"],
                }
                self.rejections.append(error)
                return ScriptedReply(400, {"error": error})
            if self._failure_on_every_request is not None:
                return self._failure_on_every_request
            if self.null_content_500 and _has_null_assistant_content(body):
                return ScriptedReply(500, _error_body(TEMPLATE_ERROR, "internal_server_error"))
            if self.parses_tool_arguments and _has_unparsable_arguments(body):
                return ScriptedReply(400, _error_body(ARGUMENTS_ERROR, "BadRequestError"))
            runaway = self.runaway_seconds is not None and not _limits_tokens(body)
            reply = self._replies.popleft() if self._replies and not runaway else None
            handler = self._role_handler
        if runaway:  # built outside the lock (_completion takes it)
            return self._runaway(body)
        if reply is None:
            if handler is None:
                return ScriptedReply(400, _error_body("fake server: no scripted reply left", "invalid_request_error"))
            try:
                message, prompt_tokens, completion_tokens = handler(body)
            except Exception as exc:  # a handler bug must show in the test, not hang the client
                return ScriptedReply(
                    400, _error_body(f"fake server: role handler failed: {exc!r}", "invalid_request_error")
                )
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            reply = ScriptedReply(200, self._completion(message, finish, prompt_tokens, completion_tokens))
        if self.random_tool_call_ids and reply.status == 200:
            reply = _with_fresh_tool_call_ids(reply)
        if self.tools_need_tool_choice and reply.status == 200 and "tool_choice" not in body:
            reply = _with_tool_calls_as_text(reply)
        if self.own_token_counts and reply.status == 200:
            reply = self._with_own_usage(reply, body)
        return reply

    def _runaway(self, body: dict[str, Any]) -> ScriptedReply:
        message = {"role": "assistant", "content": " ".join(["and"] * RUNAWAY_TOKENS)}
        reply = ScriptedReply(
            200, self._completion(message, "length", 10, RUNAWAY_TOKENS), delay=self.runaway_seconds or 0.0
        )
        return self._with_own_usage(reply, body) if self.own_token_counts else reply

    def _with_own_usage(self, reply: ScriptedReply, body: dict[str, Any]) -> ScriptedReply:
        """The reply with ``usage`` counted by this server's tokenizer (see the module docstring)."""
        prompt = prompt_tokens(body)
        with self._lock:
            shared = _common_prefix(prompt, self._previous_prompt)
            self._previous_prompt = prompt
        answer = json.loads(json.dumps(reply.body))
        completion = sum(len(own_tokens(_message_text(choice["message"]))) for choice in answer.get("choices", []))
        if answer["choices"] and answer["choices"][0].get("finish_reason") == "length":
            completion = RUNAWAY_TOKENS
        usage: dict[str, Any] = {
            "prompt_tokens": len(prompt),
            "completion_tokens": completion,
            "total_tokens": len(prompt) + completion,
        }
        if self.reports_shared_prefix:
            usage["prompt_tokens_details"] = {"cached_tokens": shared // CACHE_BLOCK * CACHE_BLOCK}
        answer["usage"] = usage
        return ScriptedReply(reply.status, answer, reply.headers, reply.delay, reply.truncate)


def own_tokens(text: str) -> list[str]:
    """The fake server's tokenizer: words and single punctuation marks (counts differ from o200k)."""
    return _OWN_TOKEN.findall(text)


def prompt_tokens(body: dict[str, Any]) -> list[str]:
    """The rendered prompt in own tokens: the tools first (templates put them in the system
    prompt), then each message between role markers, as a chat template lays them out."""
    tokens = own_tokens(json.dumps(body.get("tools") or [], sort_keys=True)) if body.get("tools") else []
    for message in body.get("messages", []):
        tokens += ["<|start|>", str(message.get("role")), *own_tokens(_message_text(message)), "<|end|>"]
    return tokens


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    calls = [
        f"{call['function']['name']} {call['function']['arguments']}"
        for call in message.get("tool_calls") or []
        if isinstance(call, dict) and isinstance(call.get("function"), dict)
    ]
    return " ".join([content if isinstance(content, str) else "", *calls])


def _common_prefix(first: list[str], second: list[str]) -> int:
    length = 0
    for a, b in zip(first, second):
        if a != b:
            break
        length += 1
    return length


def _has_null_assistant_content(body: dict[str, Any]) -> bool:
    return any(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("content") is None
        for m in body.get("messages") or []
    )


def _has_unparsable_arguments(body: dict[str, Any]) -> bool:
    for message in body.get("messages") or []:
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            try:
                json.loads(call["function"]["arguments"])
            except (TypeError, ValueError, KeyError):
                return True
    return False


def _limits_tokens(body: dict[str, Any]) -> bool:
    return body.get("max_tokens") is not None or body.get("max_completion_tokens") is not None


def _with_tool_calls_as_text(reply: ScriptedReply) -> ScriptedReply:
    """Tool calls written out as text, finish_reason stop: what a model that was not given the tools says."""
    body = json.loads(json.dumps(reply.body))
    for choice in body.get("choices", []):
        calls = choice["message"].pop("tool_calls", None) or []
        if calls:
            written = [
                f'{{"name": {json.dumps(c["function"]["name"])}, "arguments": {c["function"]["arguments"]}}}'
                for c in calls
            ]
            choice["message"]["content"] = "\n".join(filter(None, [choice["message"].get("content"), *written]))
            choice["finish_reason"] = "stop"
    return ScriptedReply(reply.status, body, reply.headers, reply.delay, reply.truncate)


def _with_fresh_tool_call_ids(reply: ScriptedReply) -> ScriptedReply:
    body = json.loads(json.dumps(reply.body))
    for choice in body.get("choices", []):
        for call in choice["message"].get("tool_calls") or []:
            call["id"] = "call_" + secrets.token_hex(12)
    return ScriptedReply(reply.status, body, reply.headers, reply.delay, reply.truncate)


FIXED_CREATED = 1_700_000_000  # a real-looking Unix time that stays the same from run to run
CONTEXT_LENGTH_MESSAGE = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "130001 tokens. Please reduce the length of the messages."
)


def _error_reply(status: int, retry_after: float | None, message: str | None = None) -> ScriptedReply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    kind = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return ScriptedReply(status, _error_body(message or f"fake server: scripted HTTP {status}", kind), headers)


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def send_json(handler: BaseHTTPRequestHandler, reply: Any) -> None:
    """Send ``reply`` (status, JSON body, headers; after its delay, cut in half if ``truncate``)."""
    time.sleep(reply.delay)
    payload = json.dumps(reply.body).encode()
    if reply.truncate:
        payload = payload[: len(payload) // 2]
    try:
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up waiting (a timeout test): nothing to answer


def read_json_body(handler: BaseHTTPRequestHandler) -> Any:
    """A POST's body as JSON (an empty one as {}; None: not JSON)."""
    length = int(handler.headers.get("Content-Length", 0))
    try:
        return json.loads(handler.rfile.read(length) or b"{}")
    except ValueError:
        return None


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class ChatCompletionsHandler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = read_json_body(self)  # None: not JSON, which strict mode refuses as the API does
            body = body if body is not None or server.strict else {}  # a lenient server sees no body
            reply = server._answer(self.path, body)
            if reply.status == 200:
                with server._lock:
                    server.answered.append(reply.body)
            send_json(self, reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return ChatCompletionsHandler


@pytest.fixture
def fake_openai_server():
    """A started ``FakeOpenAIServer``, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server
