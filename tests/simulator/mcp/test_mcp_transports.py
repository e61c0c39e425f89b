"""The MCP server as a separate process: the official ``mcp`` SDK client over stdio and streamable
HTTP, raw malformed traffic, auth, the admin routes, 16 concurrent sessions, the MCP Inspector CLI."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import subprocess
import sys
import threading

import httpx
import pytest
from agents_sdk_checks import solve as solve_with
from mcp import Client, StdioServerParameters
from mcp.types import TextResourceContents
from mcp_support import (
    ADMIN,
    ROOT,
    SERVE,
    TOKEN,
    admin,
    free_port,
    http_client,
    http_server,
    start_server,
    wait_for_port,
)

from erp_sim import TOOLS, get_task
from erp_sim.mcp.server import main

INSPECTOR = "@modelcontextprotocol/inspector@0.15"


async def solve(client: Client, task) -> int:
    """Drive the oracle through an ``mcp`` SDK client; returns the number of calls."""
    return await solve_with(client.call_tool, task)


async def task_id_of(client: Client) -> str:
    contents = (await client.read_resource("erp-sim://task")).contents[0]
    assert isinstance(contents, TextResourceContents), contents
    return json.loads(contents.text)["task_id"]


@pytest.fixture(scope="module")
def http_url(tmp_path_factory):
    with http_server(tmp_path_factory.mktemp("http")) as url:
        yield url


# --- stdio ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_sdk_client_lists_tools_and_completes_a_task(mode, tmp_path):
    grades = tmp_path / "grades.jsonl"
    params = StdioServerParameters(
        command=sys.executable, args=SERVE[1:] + ["--task", "hotel-009", "--grade-file", str(grades)], cwd=ROOT
    )
    async with Client(params, mode=mode) as client:
        assert [t.name for t in (await client.list_tools()).tools] == list(TOOLS)
        assert await task_id_of(client) == "hotel-009"
        await solve(client, get_task("hotel_50", "hotel-009"))

    def last_grade() -> dict | None:
        lines = grades.read_text().splitlines() if grades.exists() else []
        return json.loads(lines[-1]) if lines else None

    for _ in range(100):  # the server writes its final grade on its way out
        if (last_grade() or {}).get("state") == "closed":
            break
        await asyncio.sleep(0.05)
    session = last_grade()
    assert session["grade"]["success"] and session["grade"]["strict_success"] and session["state"] == "closed"


def test_stdio_survives_malformed_json_rpc():
    proc = subprocess.Popen(
        SERVE, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    for message in [
        "this is not json",
        "[1, 2",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 42}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "no/such/method"}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
    ]:
        proc.stdin.write(message + "\n")
        proc.stdin.flush()
    answers = {}
    try:
        while not {2, 3, 4, 5} <= answers.keys():  # replies may come in any order (opening an episode takes longest)
            message = json.loads(lines.get(timeout=20))
            answers[message.get("id")] = message
    finally:
        proc.stdin.close()
        proc.wait(10)
    assert answers[2]["result"]["isError"] and "error" in answers[3] and "error" in answers[4]
    assert len(answers[5]["result"]["tools"]) == len(TOOLS)


def test_stdio_piped_requests_are_all_answered_before_it_exits(tmp_path):
    """``erp-sim serve < requests.jsonl``: stdin ends while calls still run; each is answered and counted (the
    SDK cancelled the running ones at the end of its read stream: a varying tail got errors or no reply)."""
    grades = tmp_path / "grades.jsonl"
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}
    opening = {"name": "form_open_menu_item", "arguments": {"name": "TrvExpenses", "type": "Display"}}
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": opening} for n in range(1, 21)),
        {"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": opening},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 21}},  # maybe never answered
    ]
    piped = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run(
        [*SERVE, "--task", "hotel-007", "--grade-file", str(grades)],
        cwd=ROOT,
        input=piped,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert done.returncode == 0 and all("result" in replies.get(n, {}) for n in range(21)), done.stdout[-2000:]
    assert json.loads(grades.read_text().splitlines()[-1])["calls"] in (20, 21)

    # a client that goes away with its requests in flight (both pipes closed): no traceback, grades written
    grades.unlink()
    gone = subprocess.Popen(
        [*SERVE, "--task", "hotel-007", "--grade-file", str(grades)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    gone.stdin.write(piped.encode())
    gone.stdin.flush()
    gone.stdout.close()
    gone.stdin.close()
    assert gone.wait(120) == 0 and b"Traceback" not in gone.stderr.read()
    assert json.loads(grades.read_text().splitlines()[-1])["calls"] in (20, 21)


@pytest.mark.extras  # a download from the npm registry
@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")
def test_mcp_inspector_cli_lists_the_tools():
    command = ["npx", "-y", INSPECTOR, "--cli", *SERVE, "--method", "tools/list"]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"{INSPECTOR} did not install or start within 300 s (no npm registry or cache?)")
    if done.returncode != 0 and any(
        s in done.stderr for s in ("npm ERR", "npm error", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT")
    ):
        pytest.skip(f"{INSPECTOR} is unavailable: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)["tools"]] == list(TOOLS)


# --- streamable HTTP -----------------------------------------------------------------------------
def test_http_rejects_missing_and_wrong_tokens(http_url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {ADMIN}"}):
        assert httpx.post(f"{http_url}/mcp", json=body, headers=headers).status_code == 401
    for token in (None, "wrong", TOKEN):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        assert httpx.get(f"{http_url}/admin/sessions", headers=headers).status_code == 401


async def test_http_sdk_client_completes_a_task_and_the_admin_grades_it(http_url):
    http, client = http_client(http_url)
    async with http, client:
        assert len((await client.list_tools()).tools) == len(TOOLS)
        task = get_task("hotel_50", await task_id_of(client))
        calls = await solve(client, task)
        first = await client.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
    session_id = json.loads(first.content[0].text)["SessionId"]
    grade = (await admin(http_url, f"/admin/sessions/{session_id}/grade")).json()
    assert grade["task_id"] == task.task_id and grade["calls"] == calls + 1
    assert grade["grade"]["success"] and grade["grade"]["strict_success"] and not grade["grade"]["collateral"]
    listed = (await admin(http_url, "/admin/sessions")).json()["sessions"]
    assert session_id in [s["session_id"] for s in listed]
    assert (await admin(http_url, "/admin/sessions/nope/grade")).status_code == 404


async def test_http_stateless_clients_name_their_session(http_url):
    http, client = http_client(http_url, mode="auto", headers={"X-ERP-Session": "modern-1", "X-ERP-Task": "hotel-010"})
    async with http, client:
        assert client.session.protocol_version == "2026-07-28"
        await solve(client, get_task("hotel_50", "hotel-010"))
    http, anonymous = http_client(http_url, mode="auto")
    async with http, anonymous:
        refused = await anonymous.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
    assert refused.is_error and "X-ERP-Session" in refused.content[0].text
    listed = (await admin(http_url, "/admin/sessions")).json()["sessions"]
    handle = next(s["handle"] for s in listed if s["key"].endswith(":modern-1"))
    closed = await admin(http_url, f"/admin/sessions/{handle}/close", "POST")
    assert closed.json()["grade"]["success"] and closed.json()["state"] == "closed"
    assert (await admin(http_url, f"/admin/sessions/{handle}/grade")).json()["state"] == "closed"


async def test_http_a_session_key_that_idled_out_stays_ended_in_a_new_mcp_session(tmp_path):
    """The idle timeout ends the episode and the SDK's MCP session alike; a client that comes back with its key
    in a new MCP session (what the spec's 404 asks of it) is told its episode ended, by key and timeout, instead
    of silently getting a fresh episode; another key opens one."""
    from mcp.shared.exceptions import MCPError

    find = ("form_find_menu_item", {"menuItemFilter": "expense"})
    with http_server(tmp_path, "--idle-timeout", "1") as base:
        http, client = http_client(base, headers={"X-ERP-Session": "run-1"})
        async with http, client:
            first = await client.call_tool(*find)
            session_id = json.loads(first.content[0].text)["SessionId"]
            await asyncio.sleep(2)
            with pytest.raises(MCPError, match="Session not found"):
                await client.call_tool(*find)
        told = []
        for _ in range(2):
            http, again = http_client(base, headers={"X-ERP-Session": "run-1"})
            async with http, again:
                told.append(await again.call_tool(*find))
        http, other = http_client(base, headers={"X-ERP-Session": "run-2"})
        async with http, other:
            fresh = await other.call_tool(*find)
        listed = (await admin(base, "/admin/sessions")).json()["sessions"]
    text = told[0].content[0].text
    assert all(result.is_error and result.content[0].text == text for result in told)
    assert f"episode {session_id} has ended" in text and "'run-1'" in text and "idle for longer than 1 s" in text
    assert not fresh.is_error and json.loads(fresh.content[0].text)["SessionId"] != session_id
    assert [s["client_key"] for s in listed] == ["run-1", "run-2"] and listed[0]["state"] == "closed"


async def test_http_fastmcp_client_picks_its_task_with_headers(http_url):
    from fastmcp import Client as FastMCPClient
    from fastmcp.client.transports import StreamableHttpTransport

    headers = {"X-ERP-Session": "fastmcp-1", "X-ERP-Task": "hotel-020"}
    async with FastMCPClient(StreamableHttpTransport(f"{http_url}/mcp", headers=headers, auth=TOKEN)) as client:
        brief = json.loads((await client.read_resource("erp-sim://task"))[0].text)
        first = await client.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
    assert brief["task_id"] == "hotel-020" and json.loads(first.content[0].text)["SessionId"] == brief["session_id"]


async def test_http_survives_malformed_and_oversized_requests(http_url):
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    async with httpx.AsyncClient(base_url=http_url, headers=headers, timeout=10) as raw:
        assert (await raw.post("/mcp", content=b"{not json")).status_code == 400
        assert (await raw.post("/mcp", content=b"[1, 2, 3]")).status_code >= 400
        assert (await raw.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).status_code >= 400
        oversized = await raw.post("/mcp", content=b"{" + b" " * (2 << 20) + b"}")
        assert oversized.status_code == 413 and oversized.json()["error"]["code"] == -32600
    http, client = http_client(http_url)
    async with http, client:
        unknown = await client.call_tool("form_launch_rocket", {})
        huge = await client.call_tool("form_find_menu_item", {"menuItemFilter": "x" * 600_000})
        fine = await client.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
    assert unknown.is_error and huge.is_error and not fine.is_error


async def test_http_16_concurrent_sessions_each_complete_their_own_task(http_url):
    async def one_agent() -> tuple[str, str]:
        http, client = http_client(http_url)
        async with http, client:
            task_id = await task_id_of(client)
            await solve(client, get_task("hotel_50", task_id))
            response = await client.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
            return task_id, json.loads(response.content[0].text)["SessionId"]

    results = await asyncio.gather(*(one_agent() for _ in range(16)))
    assert len({task_id for task_id, _ in results}) == 16  # sessions cycle through the set
    for task_id, session_id in results:
        grade = (await admin(http_url, f"/admin/sessions/{session_id}/grade")).json()
        assert grade["task_id"] == task_id and grade["grade"]["strict_success"] and not grade["grade"]["collateral"]


def test_binding_beyond_loopback_needs_a_flag_and_warns(tmp_path, capsys):
    assert main(["--http", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    port, log = free_port(), tmp_path / "remote.log"
    proc = start_server(["--http", "--host", "0.0.0.0", "--port", str(port), "--allow-remote"], log)
    try:
        wait_for_port(proc, port, log)
    finally:
        proc.terminate()
        proc.wait(10)
    assert "WARNING" in log.read_text() and "reachable from other machines" in log.read_text()


def test_the_mcp_server_leaves_openenv_to_the_erp_sim_command(capsys):
    # erp_sim imports nothing from envs: `erp-sim serve --openenv` is dispatched by the command (agents/cli.py);
    # the MCP server's own entry point keeps the flag in its help and points there
    assert main(["--openenv"]) == 2
    assert capsys.readouterr().err.strip() == (
        "erp-sim serve: --openenv is served by the erp-sim command (erp-sim serve --openenv)"
    )
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--openenv" in capsys.readouterr().out


def test_bad_options_exit_cleanly(capsys):
    assert main(["--task", "hotel-999"]) == 2
    assert main(["--auth-token", "same", "--admin-token", "same"]) == 2
    assert main(["--faults", "rate=0.1,kinds=Meteor"]) == 2
    err = capsys.readouterr().err
    assert "hotel-999" in err and "differ" in err and "Meteor" in err and "Traceback" not in err


def test_auth_token_can_come_from_the_environment(tmp_path):
    port, log = free_port(), tmp_path / "env.log"
    env = {**os.environ, "ERP_SIM_AUTH_TOKEN": "from-env"}
    proc = subprocess.Popen(
        SERVE + ["--http", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w")
    )
    try:
        wait_for_port(proc, port, log)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx.post(f"http://127.0.0.1:{port}/mcp", json=body).status_code == 401
        ok = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers={"Authorization": "Bearer from-env"})
        assert ok.status_code != 401
    finally:
        proc.terminate()
        proc.wait(10)
