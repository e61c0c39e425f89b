"""A strict fake of OpenAI's Responses API on loopback, for offline tests of the ``openai-responses:`` backend.

``POST /v1/responses``. A body the real API refuses (``strict_responses_request``: unknown keys and item
keys, a ``function_call_output`` without its ``function_call``, a call left without output, reasoning
without its encrypted content under ``store: false`` or without the item it came with, a call without
its reasoning, ``temperature`` on a reasoning model) gets the API's error without using up a scripted
answer, and is kept in ``rejections``. Answers are shaped like the API's (``resp_``/``msg_``/``fc_``/``rs_``
ids, deterministic): with ``reasoning=True`` each answer starts with a reasoning item carrying encrypted
content (``REASONING_TOKENS`` reasoning tokens). Usage: o200k counts of the input items, and cached tokens
by OpenAI's automatic prefix caching (``prompt_cache_rules.AutomaticPrefixCache``).

Scripting as ``fake_anthropic_server``: ``reply_text``, ``reply_tool_calls``, ``fail``, ``fail_always``,
``truncated_body``, ``answer_with(handler)`` (the handler gets the request as a Chat Completions body).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_api_server import JsonApiServer, Reply, RoleHandler, Scripted, ServedFake, chat_tools
from prompt_cache_rules import AutomaticPrefixCache, block_tokens
from strict_responses_request import Issued, rejection

from erp_sim.agents.tokens import get_counter

RESPONSES_PATH = "/v1/responses"
REASONING_TOKENS = 64
FIXED_CREATED = 1_700_000_000


class FakeResponsesServer(ServedFake):
    """A threaded fake Responses API server; a context manager. ``base_url`` is what the openai client takes."""

    def __init__(self, model: str = "gpt-5", *, strict: bool = True, reasoning: bool = True):
        self.model = model
        self.strict = strict
        self.reasoning = reasoning
        self.cache = AutomaticPrefixCache()
        self.issued = Issued()
        self._server = JsonApiServer(lambda path, query, headers, body: self.answer(path, body), "fake-responses")

    @property
    def base_url(self) -> str:
        return self._server.root + "/v1"

    # --- scripting -------------------------------------------------------------------------------
    def reply_text(self, text: str, *, finish: str | None = None) -> None:
        self._server.queue.append(Scripted({"role": "assistant", "content": text}, finish))

    def reply_tool_calls(self, calls: list[tuple[str, dict[str, Any]]], *, text: str = "") -> None:
        self.queue_tool_calls("call_", calls, text)

    def fail(self, status: int, times: int = 1, *, message: str | None = None, code: str | None = None) -> None:
        for _ in range(times):
            self._server.queue.append(Scripted(reply=error_reply(status, message, code)))

    def fail_always(self, status: int = 500, *, message: str | None = None) -> None:
        self._server.failure_on_every_request = error_reply(status, message, None)

    def stop_failing(self) -> None:
        self._server.failure_on_every_request = None

    def truncated_body(self) -> None:
        self._server.queue.append(Scripted({"role": "assistant", "content": "cut short"}, truncate=True))

    def answer_with(self, handler: RoleHandler | None) -> None:
        self._server.role_handler = handler

    # --- serving ---------------------------------------------------------------------------------
    def answer(self, path: str, body: Any) -> Reply:
        """The answer to one request (``fake_azure_server`` serves it under Azure's paths)."""
        server = self._server
        if path != RESPONSES_PATH:
            return error_reply(404, f"fake server: no route {path}", None)
        with server.lock:
            server.requests.append(body)
            refused = rejection(body, self.issued) if self.strict else None
        if refused is not None:
            status, message, param, code = refused
            error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
            with server.lock:
                server.rejections.append(error)
            return Reply(status, {"error": error})
        if server.failure_on_every_request is not None:
            return server.failure_on_every_request
        scripted = server.take()
        if scripted is None:
            if server.role_handler is None:
                return error_reply(400, "fake server: no scripted reply left", None)
            try:
                answer, _, _ = server.role_handler(chat_body(body))
            except Exception as exc:
                return error_reply(400, f"fake server: role handler failed: {exc!r}", None)
            scripted = Scripted(answer)
        if scripted.reply is not None:
            return scripted.reply
        return Reply(200, self._response(body, scripted), delay=scripted.delay, truncate=scripted.truncate)

    def _response(self, body: dict[str, Any], scripted: Scripted) -> dict[str, Any]:
        number = self._server.next_number()
        message = scripted.message or {}
        output: list[dict[str, Any]] = []
        reasoning_id = None
        if self.reasoning:
            reasoning_id = f"rs_fake{number:06d}"
            encrypted = f"gAAAA-fake-reasoning-{number:06d}"
            output.append({"type": "reasoning", "id": reasoning_id, "summary": [], "encrypted_content": encrypted})
        if message.get("content"):
            output.append(
                {
                    "type": "message",
                    "id": f"msg_fake{number:06d}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": message["content"], "annotations": [], "logprobs": []}],
                }
            )
        for index, call in enumerate(message.get("tool_calls") or ()):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_fake{number:06d}_{index}",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                    "status": "completed",
                }
            )
        items = request_items(body)
        with self._server.lock:
            if reasoning_id is not None:
                self.issued.encrypted[reasoning_id] = output[0]["encrypted_content"]
                for item in output[1:]:
                    self.issued.reasoning_of[item["id"]] = reasoning_id
            cached = self.cache.cached_tokens(items)
        input_tokens = sum(block_tokens(item) for item in items)
        reasoning = REASONING_TOKENS if self.reasoning else 0
        output_tokens = reasoning + sum(
            get_counter().count_text(json.dumps(i, sort_keys=True)) for i in output[1 if reasoning_id else 0 :]
        )
        incomplete = scripted.finish == "length"
        return {
            "id": f"resp_fake{number:06d}",
            "object": "response",
            "created_at": FIXED_CREATED,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "error": None,
            "model": body.get("model", self.model),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "store": body.get("store", True),
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": input_tokens + output_tokens,
            },
        }


def request_items(body: dict[str, Any]) -> list[Any]:
    """A request as the items its cached prefix is made of: the tools, the instructions, each input item."""
    items: list[Any] = [{"tools": body["tools"]}] if body.get("tools") else []
    if body.get("instructions"):
        items.append({"instructions": body["instructions"]})
    content = body.get("input")
    items += [{"role": "user", "content": content}] if isinstance(content, str) else list(content or ())
    return items


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as a Chat Completions body (for the role handlers)."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or ():
        kind = item.get("type", "message")
        if kind == "message":
            content = item["content"]
            text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
            messages.append({"role": item["role"], "content": text})
        elif kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if messages and messages[-1]["role"] == "assistant" and not any(m["role"] == "tool" for m in messages[-1:]):
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
    return {"model": body.get("model"), "messages": messages, "tools": chat_tools(body.get("tools"))}


def error_reply(status: int, message: str | None, code: str | None) -> Reply:
    kind = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    text = message or f"fake server: scripted HTTP {status}"
    return Reply(status, {"error": {"message": text, "type": kind, "param": None, "code": code}})


@pytest.fixture
def fake_responses_server():
    with FakeResponsesServer() as server:
        yield server
