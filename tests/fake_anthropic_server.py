"""A strict fake of Anthropic's Messages API on loopback, for offline tests of the ``anthropic:`` backend.

``POST /v1/messages`` with the headers the SDK sends (the key as ``x-api-key`` or, from SDK 2.x, a bearer
``Authorization``; ``anthropic-version``). A body the real
API refuses (``strict_messages_request``: unknown fields, a missing ``max_tokens``, a ``tool_result`` without
its ``tool_use``, more than 4 breakpoints, turns that do not alternate ...) gets the API's 400
``invalid_request_error`` without using up a scripted answer, and is kept in ``rejections``. Answers are
shaped like the API's (``msg_`` ids, ``content`` blocks, ``stop_reason``, ``usage``), with deterministic
ids, and their usage follows Anthropic's caching rules (``prompt_cache_rules.AnthropicCache``: breakpoints,
the minimum cacheable length of the model the request names, the 20-block lookback; o200k counts): a
request's ``input_tokens`` are what is neither read from nor written to the cache.

Scripting (as ``fake_openai_server``): ``reply_text``, ``reply_tool_use``, ``fail(status, error_type=...)``
(e.g. 529 ``overloaded_error``, 413 ``request_too_large``, a 400 "prompt is too long"), ``fail_always``,
``truncated_body``, and ``answer_with(handler)`` for what the queue does not script (the handler gets the
request as a Chat Completions body). ``clock`` is the time the cache's 5-minute entries age by (a
test moves it).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_api_server import JsonApiServer, Reply, RoleHandler, Scripted, ServedFake, chat_tools
from prompt_cache_rules import AnthropicCache
from strict_messages_request import rejection

from erp_sim.agents.tokens import get_counter

MESSAGES_PATH = "/v1/messages"
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


class FakeAnthropicServer(ServedFake):
    """A threaded fake Messages API server; a context manager. ``base_url`` is what the SDK takes."""

    def __init__(self, model: str = "claude-sonnet-4-5", *, strict: bool = True):
        self.model = model
        self.strict = strict
        self.cache = AnthropicCache()
        self.clock = 0.0
        self._server = JsonApiServer(self._answer, "fake-anthropic-server")

    @property
    def base_url(self) -> str:
        return self._server.root

    # --- scripting -------------------------------------------------------------------------------
    def reply_text(self, text: str, *, stop_reason: str = "end_turn", delay: float = 0.0) -> None:
        finish = {value: key for key, value in STOP_REASONS.items()}.get(stop_reason, stop_reason)
        self._server.queue.append(Scripted({"role": "assistant", "content": text}, finish, delay=delay))

    def reply_tool_use(self, calls: list[tuple[str, dict[str, Any]]], *, text: str = "") -> None:
        self.queue_tool_calls("toolu_", calls, text)

    def fail(
        self,
        status: int,
        times: int = 1,
        *,
        error_type: str | None = None,
        message: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        for _ in range(times):
            self._server.queue.append(Scripted(reply=_error(status, error_type, message, retry_after)))

    def fail_always(self, status: int = 529, *, error_type: str | None = None, message: str | None = None) -> None:
        self._server.failure_on_every_request = _error(status, error_type, message, None)

    def stop_failing(self) -> None:
        self._server.failure_on_every_request = None

    def truncated_body(self, text: str = "cut short") -> None:
        self._server.queue.append(Scripted({"role": "assistant", "content": text}, truncate=True))

    def answer_with(self, handler: RoleHandler | None) -> None:
        self._server.role_handler = handler

    # --- serving ---------------------------------------------------------------------------------
    def _answer(self, path: str, query: dict[str, list[str]], headers: dict[str, str], body: Any) -> Reply:
        server = self._server
        if path != MESSAGES_PATH:
            return _error(404, "not_found_error", f"fake server: no route {path}", None)
        with server.lock:
            server.requests.append(body)
        if not headers.get("x-api-key") and not headers.get("authorization", "").startswith("Bearer "):
            return _error(401, "authentication_error", "x-api-key header is required", None)
        if not headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version: header is required", None)
        refused = rejection(body) if self.strict else None
        if refused is not None:
            with server.lock:
                server.rejections.append({"type": "invalid_request_error", "message": refused})
            return _error(400, "invalid_request_error", refused, None)
        if server.failure_on_every_request is not None:
            return server.failure_on_every_request
        scripted = server.take()
        if scripted is None:
            handler = server.role_handler
            if handler is None:
                return _error(400, "invalid_request_error", "fake server: no scripted reply left", None)
            try:
                message, _, _ = handler(chat_body(body))
            except Exception as exc:  # a handler bug must show in the test, not hang the client
                return _error(400, "invalid_request_error", f"fake server: role handler failed: {exc!r}", None)
            scripted = Scripted(message)
        if scripted.reply is not None:
            return scripted.reply
        assert scripted.message is not None
        return Reply(200, self._message(body, scripted), delay=scripted.delay, truncate=scripted.truncate)

    def _message(self, body: dict[str, Any], scripted: Scripted) -> dict[str, Any]:
        message = scripted.message or {}
        blocks: list[dict[str, Any]] = []
        if message.get("content"):
            blocks.append({"type": "text", "text": message["content"], "citations": None})
        for call in message.get("tool_calls") or ():
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "input": json.loads(call["function"]["arguments"] or "{}"),
                    "caller": {"type": "direct"},
                }
            )
        finish = scripted.finish or ("tool_calls" if message.get("tool_calls") else "stop")
        with self._server.lock:
            usage = self.cache.usage(body, self.clock)
        output = sum(get_counter().count_text(json.dumps(block, sort_keys=True)) for block in blocks)
        return {
            "id": f"msg_fake{self._server.next_number():06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.model),
            "content": blocks,
            "stop_reason": STOP_REASONS.get(finish, finish),
            "stop_sequence": None,
            "usage": {
                **usage,
                "output_tokens": output,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"],
                    "ephemeral_1h_input_tokens": 0,
                },
                "server_tool_use": None,
                "service_tier": "standard",
            },
        }


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages API request as a Chat Completions body (for the role handlers)."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        text = system if isinstance(system, str) else "".join(block.get("text", "") for block in system)
        messages.append({"role": "system", "content": text})
    for message in body.get("messages") or ():
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message["role"] == "assistant":
            texts = [b["text"] for b in blocks if b.get("type") == "text"]
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                content = block.get("content") or ""
                text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
                messages.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
            elif block.get("type") == "text":
                messages.append({"role": "user", "content": block["text"]})
    return {"model": body.get("model"), "messages": messages, "tools": chat_tools(body.get("tools"))}


def _error(status: int, error_type: str | None, message: str | None, retry_after: float | None) -> Reply:
    kind = error_type or {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    text = message or {"overloaded_error": "Overloaded", "request_too_large": "Request exceeds the maximum size"}.get(
        kind, f"fake server: scripted HTTP {status}"
    )
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return Reply(status, {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_fake"}, headers)


@pytest.fixture
def fake_anthropic_server():
    with FakeAnthropicServer() as server:
        yield server
