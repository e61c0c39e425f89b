"""``erp-sim serve`` against a hostile client speaking raw HTTP and raw stdio: a table of attacks, each with
the answer the spec asks for; between attacks a well-behaved client advances the oracle's solution of its
task one call, and finishes it with a strict success at the end."""

from __future__ import annotations

import gzip
import json
import socket

import httpx
import pytest
from mcp_support import ADMIN, INIT, TOKEN, RawStdio, admin, http_client, http_server

from erp_sim import get_task, oracle_calls

TASK = get_task("hotel_50", "hotel-012")
ANY = object()  # the reply's id is not checked
NO_BODY = None  # nothing to parse: a 202, or a plain-text refusal from the HTTP layer


def rpc(ident, method, params=None, **extra) -> dict:
    message = {"jsonrpc": "2.0", "id": ident, "method": method, **extra}
    return message if params is None else {**message, "params": params}


def call(ident, name, arguments=None, **params) -> dict:
    return rpc(ident, "tools/call", {"name": name, **({} if arguments is None else {"arguments": arguments}), **params})


FIND = {"menuItemFilter": "expense"}
NESTED = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"form_find_menu_item","arguments":{"a":'
# (label, body: bytes or JSON, headers (None drops one), expected HTTP status, expected answer, expected id)
# answer: a JSON-RPC error code, "result", "tool_error" (a result with isError), or NO_BODY
HTTP_ATTACKS = [
    ("invalid JSON", b"{not json", {}, 400, -32700, None),
    ("truncated JSON", b'{"jsonrpc":"2.0","id":1,"method":"tools/li', {}, 400, -32700, None),
    ("empty body", b"", {}, 400, -32700, None),
    ("a batch (removed in 2025-06-18)", [rpc(5, "ping")], {}, 400, -32600, None),
    ("an empty batch", [], {}, 400, -32600, None),
    ("a JSON string", "ping", {}, 400, -32600, None),
    ("jsonrpc missing", {"id": 2, "method": "ping"}, {}, 400, -32600, 2),
    ('jsonrpc "1.0"', {"jsonrpc": "1.0", "id": 2, "method": "ping"}, {}, 400, -32600, 2),
    ("id null (was 202, no answer)", rpc(None, "ping"), {}, 400, -32600, None),
    ("id float (was 202, no answer)", rpc(1.5, "ping"), {}, 400, -32600, None),
    ("id object (was 202, no answer)", rpc({"a": 1}, "ping"), {}, 400, -32600, None),
    ("id true (was 202, no answer)", rpc(True, "ping"), {}, 400, -32600, None),
    ("id 1e400 (was 202, no answer)", b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', {}, 400, -32600, None),
    ("id 10**400", rpc(10**400, "ping"), {}, 200, "result", 10**400),
    ("id of 100,000 characters", rpc("i" * 100_000, "ping"), {}, 200, "result", "i" * 100_000),
    ("method not a string", rpc(3, 42), {}, 400, -32600, 3),
    ("params an array", rpc(3, "tools/list", [1]), {}, 400, -32600, 3),
    ("params a string", rpc(3, "tools/list", "x"), {}, 400, -32600, 3),
    ("params null", {**rpc(3, "tools/list"), "params": None}, {}, 400, -32600, 3),
    ("a response sent to the server", {"jsonrpc": "2.0", "id": 99, "result": {}}, {}, 202, NO_BODY, ANY),
    (
        "an error response sent to the server",
        {"jsonrpc": "2.0", "id": 98, "error": {"code": 1, "message": "x"}},
        {},
        202,
        NO_BODY,
        ANY,
    ),
    ("neither method nor result", {"jsonrpc": "2.0", "id": 97}, {}, 400, -32600, 97),
    ("unknown method", rpc(6, "foo/bar"), {}, 200, -32601, 6),
    # the spec's 400 for a version the server does not speak (the SDK talked of missing 2026 _meta keys)
    ("an unknown protocol version", rpc(8, "ping"), {"MCP-Protocol-Version": "1999-01-01"}, 400, -32600, 8),
    ("a huge protocol version", rpc(8, "ping"), {"MCP-Protocol-Version": "9" * 6000}, 400, -32600, 8),
    ("a notification sent with an id", rpc(4, "notifications/initialized"), {}, 200, -32601, 4),
    (
        "tools/call without a name (was -32602 without detail)",
        rpc(7, "tools/call", {"arguments": {}}),
        {},
        200,
        -32602,
        7,
    ),
    ("tools/call with a numeric name", rpc(7, "tools/call", {"name": 5}), {}, 200, -32602, 7),
    ("unknown tool", call(7, "form_launch_rocket", {}), {}, 200, "tool_error", 7),
    ("a tool name of 200,000 characters", call(7, "x" * 200_000, {}), {}, 200, "tool_error", 7),
    (
        "arguments null",
        rpc(8, "tools/call", {"name": "form_find_menu_item", "arguments": None}),
        {},
        200,
        "tool_error",
        8,
    ),
    ("arguments an array", call(8, "form_find_menu_item", [1]), {}, 200, -32602, 8),
    ("arguments a string", call(8, "form_find_menu_item", "x"), {}, 200, -32602, 8),
    # valid JSON deeper than the parser goes: its id is found by a scan (it used to be -32700, id null: a hung client)
    ("arguments nested 100,000 deep", NESTED + b"[" * 100_000 + b"]" * 100_000 + b"}}}", {}, 400, -32600, 9),
    (
        "arguments nested 1,100 deep, id last",
        NESTED.replace(b'"id":9,', b"") + b"[" * 1100 + b"]" * 1100 + b'}},"id":"last"}',
        {},
        400,
        -32600,
        "last",
    ),
    (  # the id scan is bounded to the first 4 KiB: an id after that is not looked for
        "arguments nested 3,000 deep, id last",
        NESTED.replace(b'"id":9,', b"") + b"[" * 3000 + b"]" * 3000 + b'}},"id":"last"}',
        {},
        400,
        -32600,
        None,
    ),
    (  # an unclosed string of escaped quotes: the scan took 40 s on 125 KB, blocking every client
        "a too-deep message ending in an unclosed string of escaped quotes",
        NESTED + b"[" * 3000 + b'"' + b'\\"' * 60_000,
        {},
        400,
        -32600,
        9,
    ),
    ("an argument of 5,000 digits", NESTED + b"9" * 5000 + b"}}}", {}, 400, -32600, 9),
    ("an id of 5,000 digits", b'{"jsonrpc":"2.0","id":' + b"7" * 5000 + b',"method":"ping"}', {}, 400, -32600, None),
    ("arguments nested 900 deep", NESTED + b'{"a":' * 900 + b"1" + b"}" * 900 + b"}}}", {}, 400, -32600, 9),
    ("arguments of 50 MB", call(8, "form_find_menu_item", {"menuItemFilter": "x" * (50 << 20)}), {}, 413, -32600, None),
    (
        "a lone surrogate in an argument",
        b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":'
        b'"form_find_menu_item","arguments":{"menuItemFilter":"\\ud800"}}}',
        {},
        400,
        -32600,
        10,
    ),
    ("a lone surrogate as the id", b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}', {}, 400, -32600, "\udc00"),
    (
        "an escaped NUL in an argument",
        call(12, "form_find_menu_item", {"menuItemFilter": "a\x00b"}),
        {},
        200,
        "tool_error",
        12,
    ),
    ("a raw NUL byte after the message", json.dumps(rpc(12, "ping")).encode() + b"\x00", {}, 400, -32700, None),
    ("bytes that are not UTF-8", b'{"jsonrpc":"2.0","id":14,"method":"ping","x":"\xff\xfe"}', {}, 400, -32700, None),
    ("a byte-order mark", b"\xef\xbb\xbf" + json.dumps(rpc(15, "ping")).encode(), {}, 400, -32700, None),
    ("logging/setLevel with a bad level", rpc(18, "logging/setLevel", {"level": "loud"}), {}, 200, -32602, 18),
    (
        "completion/complete (not offered)",
        rpc(
            19,
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "itemization_task"}, "argument": {"name": "x", "value": "y"}},
        ),
        {},
        200,
        -32601,
        19,
    ),
    (
        "cancel an unknown request",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 123}},
        {},
        202,
        NO_BODY,
        ANY,
    ),
    (
        "cancel with an object requestId",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"x": 1}}},
        {},
        202,
        NO_BODY,
        ANY,
    ),
    (
        "progress token an object",
        call(20, "form_find_menu_item", FIND, _meta={"progressToken": {"a": 1}}),
        {},
        200,
        -32602,
        20,
    ),
    (
        "progress token a float",
        call(20, "form_find_menu_item", FIND, _meta={"progressToken": 1.5}),
        {},
        200,
        -32602,
        20,
    ),
    (
        "a task pick of true (was task 1)",
        call(22, "form_find_menu_item", FIND, _meta={"erp-sim/task": True, "erp-sim/session": "t"}),
        {},
        200,
        "tool_error",
        22,
    ),
    ("initialize twice", rpc(1, "initialize", INIT), {}, 200, "result", 1),
    (
        "initialize without clientInfo.version",
        rpc(1, "initialize", {**INIT, "clientInfo": {"name": "x"}}),
        {"Mcp-Session-Id": None},
        200,
        -32602,
        1,
    ),
    (
        "initialize with a garbage protocolVersion",
        rpc(1, "initialize", {**INIT, "protocolVersion": "garbage"}),
        {"Mcp-Session-Id": None},
        200,
        "result",
        1,
    ),
    ("a call without a session", rpc(21, "tools/list"), {"Mcp-Session-Id": None}, 400, -32600, None),
    ("a forged Mcp-Session-Id", rpc(21, "ping"), {"Mcp-Session-Id": "deadbeef"}, 404, -32600, None),
    ("no Content-Type", rpc(1, "ping"), {"Content-Type": None}, 400, NO_BODY, ANY),
    ("Content-Type text/plain", b"[[[", {"Content-Type": "text/plain"}, 400, NO_BODY, ANY),
    ("Accept without application/json", rpc(1, "ping"), {"Accept": "text/event-stream"}, 406, -32600, None),
    (
        "a gzip body (not decoded, so no bomb)",
        gzip.compress(json.dumps(rpc(1, "ping")).encode()),
        {"Content-Encoding": "gzip"},
        400,
        -32700,
        None,
    ),
    ("Origin of another site (DNS rebinding)", rpc(1, "ping"), {"Origin": "http://evil.example"}, 403, NO_BODY, ANY),
    ("Origin null", rpc(1, "ping"), {"Origin": "null"}, 403, NO_BODY, ANY),
    ("Host of another site", rpc(1, "ping"), {"Host": "evil.example"}, 421, NO_BODY, ANY),
    ("a wrong token", rpc(1, "ping"), {"Authorization": "Bearer guess-1"}, 401, NO_BODY, ANY),
    ("the admin token on /mcp", rpc(1, "ping"), {"Authorization": f"Bearer {ADMIN}"}, 401, NO_BODY, ANY),
    ("Basic instead of Bearer", rpc(1, "ping"), {"Authorization": "Basic " + TOKEN}, 401, NO_BODY, ANY),
    ("no token, garbage body", b"[[[", {"Authorization": None}, 401, NO_BODY, ANY),
]

# (label, method, path, token, expected status)
HTTP_ROUTES = [
    ("PUT /mcp", "PUT", "/mcp", TOKEN, 405),
    ("OPTIONS /mcp", "OPTIONS", "/mcp", TOKEN, 405),
    ("PATCH /mcp", "PATCH", "/mcp", TOKEN, 405),
    ("GET /mcp (no server stream: was an SSE stream held open)", "GET", "/mcp", TOKEN, 405),
    ("DELETE /mcp, forged session", "DELETE", "/mcp", TOKEN, 404),
    ("an unknown path", "GET", "/etc/passwd", TOKEN, 404),
    ("admin without a token", "GET", "/admin/sessions", None, 401),
    ("admin with the client token", "GET", "/admin/sessions", TOKEN, 401),
    ("admin close with the client token", "POST", "/admin/sessions/x/close", TOKEN, 401),
    ("admin with a guessed token", "GET", "/admin/sessions", "admin-token-455", 401),
]

# raw bytes on a socket; the server must answer with this status line prefix, or close without one (None)
ENVELOPE = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
    + TOKEN.encode()
    + b"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
)
PING = json.dumps(rpc(1, "ping")).encode()
SOCKET_ATTACKS = [
    (
        "Content-Length under the body",
        ENVELOPE + b"Content-Length: 20\r\nConnection: close\r\n\r\n" + PING,
        True,
        b"HTTP/1.1 400",
    ),
    ("Content-Length over the body, then EOF", ENVELOPE + b"Content-Length: 200\r\n\r\n" + PING, True, None),
    ("Content-Length negative", ENVELOPE + b"Content-Length: -1\r\n\r\n" + PING, False, b"HTTP/1.1 400"),
    (
        "Content-Length twice",
        ENVELOPE + b"Content-Length: 5\r\nContent-Length: 7\r\n\r\n" + PING,
        False,
        b"HTTP/1.1 400",
    ),
    ("a chunked body that never ends", ENVELOPE + b'Transfer-Encoding: chunked\r\n\r\n5\r\n{"jso\r\n', False, None),
    ("a header of 70 KB", ENVELOPE + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n", False, b"HTTP/1.1 400"),
    ("a garbage request line", b"GARBAGE\r\n\r\n", False, b"HTTP/1.1 400"),
    ("a TLS client hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 100, False, b"HTTP/1.1 400"),
]


class OracleClient:
    """A well-behaved SDK client solving its task one call at a time (``step``) between attacks."""

    def __init__(self, url: str):
        self.http, self.client = http_client(url, headers={"X-ERP-Task": TASK.task_id})
        self.calls, self.pending, self.session_id = oracle_calls(TASK), None, None

    async def __aenter__(self):
        await self.http.__aenter__()
        await self.client.__aenter__()
        self.pending = next(self.calls)
        return self

    async def __aexit__(self, *exc):
        await self.client.__aexit__(*exc)
        await self.http.__aexit__(*exc)

    async def step(self) -> bool:
        """One oracle call; False once the task is done."""
        if self.pending is None:
            return False
        result = await self.client.call_tool(*self.pending)
        assert not result.is_error, result.content[0].text[:400]
        self.session_id = self.session_id or json.loads(result.content[0].text)["SessionId"]
        try:
            self.pending = self.calls.send(result.content[0].text)
        except StopIteration:
            self.pending = None
        return True


def check_answer(
    label: str, status: int, body: bytes, expected_status: int, answer, ident, detailed: bool = True
) -> None:
    assert status == expected_status, (label, status, body[:300])
    if answer is NO_BODY:
        return
    reply = json.loads(body)
    assert reply["jsonrpc"] == "2.0", (label, reply)
    if ident is not ANY:
        assert reply["id"] == ident and type(reply["id"]) is type(ident), (label, str(reply["id"])[:60])
    if answer == "result":
        assert "result" in reply, (label, reply)
    elif answer == "tool_error":
        assert reply["result"]["isError"], (label, reply)
    else:
        assert reply["error"]["code"] == answer, (label, reply)
        # and says what is wrong, unlike the SDK's bare "Invalid request parameters" (empty data)
        assert not detailed or reply["error"]["message"] != "Invalid request parameters", (label, reply)


BASE = {
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def open_raw_session(raw: httpx.Client) -> dict:
    opened = raw.post("/mcp", json=rpc(1, "initialize", INIT), headers=BASE)
    headers = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": INIT["protocolVersion"]}
    initialized = raw.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**BASE, **headers}
    )
    assert initialized.status_code == 202
    return headers


def raw_socket(url: str, data: bytes, half_close: bool) -> bytes:
    """Send ``data``; what the server answers before it closes the connection (or within 15 s)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return received


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with http_server(
        tmp_path_factory.mktemp("hostile"),
        "--http-body-timeout",
        "2",
        "--http-header-timeout",
        "2",
        "--max-connections",
        "64",
    ) as url:
        yield url


async def test_http_attacks_get_spec_answers_and_a_good_client_finishes_between_them(url):
    async with OracleClient(url) as good:
        with httpx.Client(base_url=url, timeout=60) as raw:
            session = {**BASE, **open_raw_session(raw)}
            for label, body, headers, status, answer, ident in HTTP_ATTACKS:
                content = body if isinstance(body, bytes) else json.dumps(body).encode()
                merged = {**session, **headers}
                response = raw.post("/mcp", content=content, headers={k: v for k, v in merged.items() if v is not None})
                check_answer(label, response.status_code, response.content, status, answer, ident)
                assert raw.post("/mcp", json=rpc("alive", "ping"), headers=session).json()["id"] == "alive", label
                await good.step()
            for label, method, path, token, status in HTTP_ROUTES:
                headers = {"Mcp-Session-Id": "deadbeef", "Authorization": f"Bearer {token}" if token else ""}
                assert raw.request(method, path, headers=headers).status_code == status, label
                await good.step()
            for label, data, half_close, answer in SOCKET_ATTACKS:
                received = raw_socket(url, data, half_close)
                assert received.startswith(answer) if answer else not received.startswith(b"HTTP/1.1 2"), (
                    label,
                    received[:200],
                )
                await good.step()
            assert raw.delete("/mcp", headers=session).status_code == 200
            for method in ("POST", "DELETE"):  # the ended session stays ended
                reused = raw.request(method, "/mcp", json=rpc(1, "ping"), headers=session)
                assert reused.status_code == 404 and reused.json()["error"]["code"] == -32600
        while await good.step():
            pass
        grade = (await admin(url, f"/admin/sessions/{good.session_id}/grade")).json()["grade"]
    assert grade["strict_success"], grade


async def test_http_many_sessions_streams_and_aborted_bodies_leave_the_server_serving(url):
    host, port = url.removeprefix("http://").split(":")
    streams = []
    try:
        # one connection per request: over the connection cap the server closes its oldest idle connection,
        # and a pooled keep-alive connection closed just as the next POST goes out is a client-side race
        async with httpx.AsyncClient(
            base_url=url, timeout=60, headers=BASE, limits=httpx.Limits(max_keepalive_connections=0)
        ) as raw:
            for number in range(200):  # sessions opened and abandoned; 100 of them ask for a stream of their own
                session_id = (await raw.post("/mcp", json=rpc(1, "initialize", INIT))).headers["mcp-session-id"]
                if number % 2:
                    streams.append(socket.create_connection((host, int(port)), timeout=15))
                    streams[-1].sendall(
                        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                        + TOKEN.encode()
                        + b"\r\nAccept: text/event-stream\r\nMcp-Session-Id: "
                        + session_id.encode()
                        + b"\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
                    )
        for _ in range(20):  # clients that hang up mid-body
            raw_socket(url, ENVELOPE + b'Content-Length: 500\r\n\r\n{"jsonrpc"', True)
        # 100 held streams outnumbered the 64 connections and locked every new client out
        async with OracleClient(url) as good:
            while await good.step():
                pass
            grade = (await admin(url, f"/admin/sessions/{good.session_id}/grade")).json()["grade"]
    finally:
        for stream in streams:
            stream.close()
    assert grade["strict_success"], grade


# (label, raw line, expected answer, expected id); answer NO_BODY: the spec says no reply
STDIO_BEFORE_INITIALIZE = [  # the SDK gates calls before initialize with a bare -32602, left as it is
    ("ping before initialize", json.dumps(rpc(0, "ping")), "result", 0),
    ("tools/call before initialize", json.dumps(call(0, "form_find_menu_item", FIND)), -32602, 0),
]
STDIO_ATTACKS = [
    ("blank lines and whitespace", "\n \r\n\t", NO_BODY, ANY),
    ("CRLF line ending", json.dumps(rpc(3, "ping")) + "\r", "result", 3),
    ("invalid JSON", "{not json", -32700, None),
    ("truncated JSON", '{"jsonrpc":"2.0","id":1,"method":"tools/li', -32700, None),
    ("a batch", json.dumps([rpc(5, "ping")]), -32600, None),
    ("two messages on one line", json.dumps(rpc(7, "ping")) + json.dumps(rpc(8, "ping")), -32700, None),
    ("id null", json.dumps(rpc(None, "ping")), -32600, None),
    ("id NaN", '{"jsonrpc":"2.0","id":NaN,"method":"ping"}', -32600, None),
    ("id 10**400", json.dumps(rpc(10**400, "ping")), "result", 10**400),
    ("params null", json.dumps({**rpc(9, "ping"), "params": None}), -32600, 9),
    ("non-UTF-8 bytes", b'{"jsonrpc":"2.0","id":4,"method":"ping","x":"\xff"}', -32700, None),
    (
        "a byte-order mark (was -32600 about jsonrpc)",
        b"\xef\xbb\xbf" + json.dumps(rpc(15, "ping")).encode(),
        -32700,
        None,
    ),
    ("a raw NUL byte", json.dumps(rpc(6, "ping")).encode() + b"\x00", -32700, None),
    (
        "a lone surrogate in an argument",
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":'
        b'"form_find_menu_item","arguments":{"menuItemFilter":"\\ud800"}}}',
        -32600,
        5,
    ),
    (  # the sign is no digit: the positive twin is taken too
        "a negative integer of 4,300 digits",
        b'{"jsonrpc":"2.0","id":19,"method":"ping","params":{"n":-' + b"9" * 4300 + b"}}",
        "result",
        19,
    ),
    (
        "an integer of 5,000 digits (valid JSON: answered with its id, was -32700 with id null)",
        b'{"jsonrpc":"2.0","id":18,"method":"ping","params":{"n":1' + b"0" * 5000 + b"}}",
        -32600,
        18,
    ),
    ("unknown method", json.dumps(rpc(10, "x/y")), -32601, 10),
    ("tools/call without a name", json.dumps(rpc(11, "tools/call", {})), -32602, 11),
    ("arguments an array", json.dumps(call(11, "form_find_menu_item", [1])), -32602, 11),
    ("unknown tool", json.dumps(call(12, "form_launch_rocket", {})), "tool_error", 12),
    ("a response sent to the server", json.dumps({"jsonrpc": "2.0", "id": 77, "result": {}}), NO_BODY, ANY),
    (
        "cancel an unknown request",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}),
        NO_BODY,
        ANY,
    ),
    ("logging/setLevel with a bad level", json.dumps(rpc(13, "logging/setLevel", {"level": "x"})), -32602, 13),
    (
        "progress token an object",
        json.dumps(call(14, "form_find_menu_item", FIND, _meta={"progressToken": {}})),
        -32602,
        14,
    ),
    ("initialize again", json.dumps(rpc(16, "initialize", INIT)), "result", 16),
    (
        "initialize with a numeric protocolVersion",
        json.dumps(rpc(16, "initialize", {**INIT, "protocolVersion": 5})),
        -32602,
        16,
    ),
    (
        "a line of 100 MB",
        b'{"jsonrpc":"2.0","id":17,"method":"ping","params":{"x":"' + b"x" * (100 << 20) + b'"}}',
        -32600,
        None,
    ),
]


def stdio_attack(server: RawStdio, label: str, line, answer, ident, detailed: bool = True) -> None:
    server.send(line)
    if answer is not NO_BODY:
        reply, _ = server.receive()
        check_answer(
            label,
            400 if "error" in reply else 200,
            json.dumps(reply).encode(),
            400 if isinstance(answer, int) else 200,
            answer,
            ident,
            detailed,
        )


def test_stdio_attacks_get_spec_answers_and_the_episode_finishes_between_them(tmp_path):
    grades = tmp_path / "grades.jsonl"
    server = RawStdio("--task", TASK.task_id, "--grade-file", str(grades))
    calls = oracle_calls(TASK)
    pending, number = next(calls), 0
    try:
        for label, line, answer, ident in STDIO_BEFORE_INITIALIZE:
            stdio_attack(server, label, line, answer, ident, detailed=False)
        server.initialize()
        for label, line, answer, ident in STDIO_ATTACKS:
            stdio_attack(server, label, line, answer, ident)
            if pending is not None:  # one oracle call, and its reply is the next line: nothing stray came before
                number += 1
                server.send(json.dumps(call(f"oracle-{number}", *pending)))
                reply, _ = server.receive()
                assert reply["id"] == f"oracle-{number}" and not reply["result"].get("isError"), (label, reply)
                try:
                    pending = calls.send(reply["result"]["content"][0]["text"])
                except StopIteration:
                    pending = None
        while pending is not None:
            number += 1
            server.send(json.dumps(call(f"oracle-{number}", *pending)))
            reply, _ = server.receive()
            try:
                pending = calls.send(reply["result"]["content"][0]["text"])
            except StopIteration:
                pending = None
        server.proc.stdin.write(b'{"jsonrpc":"2.0","id":100,"method":"pi')  # EOF in the middle of a message
    finally:
        server.close()
    assert server.proc.returncode == 0
    final = json.loads(grades.read_text().splitlines()[-1])
    assert final["state"] == "closed" and final["grade"]["strict_success"], final
