"""The HTTP server against hostile clients: episode caps, keys bound to their creator, admin handles,
ended sessions graded, stalled sockets, unknown tools."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from mcp_support import TOKEN, admin, free_port, http_client, http_server, start_server, wait_for_port

from erp_sim import get_task

OPEN = ("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"})


@pytest.fixture(scope="module")
def capped_url(tmp_path_factory):
    with http_server(
        tmp_path_factory.mktemp("capped"), "--max-episodes", "6", "--max-episodes-per-session", "2"
    ) as url:
        yield url


async def listed(url: str) -> list[dict]:
    return (await admin(url, "/admin/sessions")).json()["sessions"]


async def test_episode_keys_are_bound_to_the_session_that_opened_them(capped_url):
    http_a, a = http_client(capped_url, headers={"X-ERP-Session": "run-1"})
    http_b, b = http_client(capped_url, headers={"X-ERP-Session": "run-1"})  # docs/mcp.md's example key
    async with http_a, a, http_b, b:
        opened = json.loads((await a.call_tool(*OPEN)).content[0].text)
        seen_by_b = json.loads(
            (await b.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})).content[0].text
        )
        closed_by_b = await b.call_tool("form_close_form", {})
        still_open = await a.call_tool("form_close_form", {})
    assert seen_by_b["SessionId"] != opened["SessionId"]  # b got its own episode, not a's
    assert closed_by_b.is_error and not still_open.is_error  # b could not touch a's form


async def test_per_session_and_total_episode_caps(capped_url):
    http, client = http_client(capped_url)
    async with http, client:
        answers = [
            await client.call_tool(
                "form_find_menu_item", {"menuItemFilter": "x"}, meta={"erp-sim/session": f"flood-{i}"}
            )
            for i in range(4)
        ]
    assert [r.is_error for r in answers] == [False, False, True, True]
    assert "limit per session" in answers[2].content[0].text
    clients, refused = [], None
    try:
        for _ in range(8):  # one episode each, until the server's total cap
            http, client = http_client(capped_url)
            await http.__aenter__()
            await client.__aenter__()
            clients.append((http, client))
            result = await client.call_tool("form_find_menu_item", {"menuItemFilter": "x"})
            if result.is_error:
                refused = result.content[0].text
                break
    finally:
        for http, client in reversed(clients):
            await client.__aexit__(None, None, None)
            await http.__aexit__(None, None, None)
    assert refused is not None and "its limit" in refused
    assert len([s for s in await listed(capped_url) if s["state"] == "active"]) <= 6


async def test_ending_an_mcp_session_grades_and_frees_its_episodes(capped_url):
    http, client = http_client(capped_url)
    async with http, client:
        first = json.loads((await client.call_tool(*OPEN)).content[0].text)
    # the SDK client sends DELETE /mcp on exit
    mine = [s for s in await listed(capped_url) if s["session_id"] == first["SessionId"]]
    assert len(mine) == 1 and mine[0]["state"] == "closed" and mine[0]["grade"] is not None
    handle = mine[0]["handle"]
    assert (await admin(capped_url, f"/admin/sessions/{handle}/grade")).json()["state"] == "closed"


async def test_admin_routes_never_answer_with_an_ambiguous_episode(capped_url):
    task = get_task("hotel_50", 30)
    http, client = http_client(capped_url, headers={"X-ERP-Session": "victim", "X-ERP-Task": task.task_id})
    async with http, client:
        session_id = json.loads((await client.call_tool(*OPEN)).content[0].text)["SessionId"]
        episodes = [s for s in await listed(capped_url) if s["session_id"] == session_id]
        assert len(episodes) == 1 and episodes[0]["handle"].startswith("ep-") and len(episodes[0]["handle"]) == 19
        by_key = await admin(capped_url, "/admin/sessions/victim/grade")  # one episode has the key: it
        http_2, attacker = http_client(capped_url, headers={"X-ERP-Session": "victim", "X-ERP-Task": task.task_id})
        async with http_2, attacker:  # an attacker opens an episode under the same key and task
            await attacker.call_tool(*OPEN)
            ambiguous = await admin(capped_url, "/admin/sessions/victim/grade")
            close_ambiguous = await admin(capped_url, "/admin/sessions/victim/close", "POST")
            by_handle = await admin(capped_url, f"/admin/sessions/{episodes[0]['handle']}/grade")
            by_session_id = await admin(capped_url, f"/admin/sessions/{session_id}/grade")
    assert by_key.json()["handle"] == episodes[0]["handle"]
    assert ambiguous.status_code == close_ambiguous.status_code == 409 and "handle" in ambiguous.json()["error"]
    assert by_handle.json()["handle"] == by_session_id.json()["handle"] == episodes[0]["handle"]
    handles = [s["handle"] for s in await listed(capped_url)]
    assert len(handles) == len(set(handles))


async def test_unknown_tools_answer_the_erp_error_json_over_http(capped_url):
    http, client = http_client(capped_url)
    async with http, client:
        unknown = await client.call_tool("form_launch_rocket", {})
    envelope = json.loads(unknown.content[0].text)
    assert unknown.is_error and envelope["Error"]["Code"] == "NotFound" and "form_launch_rocket" in envelope["Result"]


def stalled_sockets(url: str, count: int, *, with_headers: bool) -> list[socket.socket]:
    """Connections that send half a request (half the headers, or the headers and half the body) and stall."""
    host, port = url.removeprefix("http://").split(":")
    partial = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
        b"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n{"
        if with_headers
        else b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    )
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(partial)
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    """The server closed the connection (after its answer, if any: e.g. 401 for a request without a token)."""
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


async def test_stalled_sockets_are_timed_out_and_never_lock_out_a_real_client(tmp_path):
    with http_server(
        tmp_path, "--max-connections", "20", "--http-header-timeout", "2", "--http-body-timeout", "3"
    ) as url:
        stalled = stalled_sockets(url, 40, with_headers=False) + stalled_sockets(url, 40, with_headers=True)
        try:
            http, client = http_client(url)
            async with http, client:  # initializes although 80 stalled sockets outnumber the 20 connections
                result = await client.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
            assert not result.is_error
            await asyncio.sleep(4)  # past both deadlines
            for sock in stalled:
                sock.settimeout(10)
            assert all(closed_by_server(sock) for sock in stalled)
        finally:
            for sock in stalled:
                sock.close()


def test_serve_http_on_a_busy_port_says_no_url(tmp_path):
    """It printed "serves MCP at ..." before the bind failed."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port, log = taken.getsockname()[1], tmp_path / "busy.log"
        proc = start_server(["--http", "--port", str(port)], log)
        assert proc.wait(60) != 0
    printed = log.read_text()
    assert "serves MCP" not in printed and "address already in use" in printed.lower(), printed


def test_serve_http_prints_its_url_and_auth_state(tmp_path):
    for args, auth in [([], "auth: OFF"), (["--auth-token", "t0ken"], "auth: bearer token required")]:
        port, log = free_port(), tmp_path / f"serve{len(args)}.log"
        proc = start_server(["--http", "--port", str(port), *args], log)  # default log level: warning
        try:
            wait_for_port(proc, port, log)
            time.sleep(0.2)
            printed = log.read_text()
        finally:
            proc.terminate()
            proc.wait(10)
        assert f"http://127.0.0.1:{port}/mcp" in printed and auth in printed
