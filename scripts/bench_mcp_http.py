"""Benchmark: our MCP server over streamable HTTP against a bare fastmcp server on the same transport (issue 40.4).

    .venv/bin/python scripts/bench_mcp_http.py [--calls 200] [--sessions 1,64] [--rounds 5] > figures.json

Both servers run as subprocesses under uvicorn on loopback, with the same fastmcp settings: stateful
sessions (the 2025-11-25 handshake, ``Mcp-Session-Id``), plain JSON responses (``json_response=True``),
no auth. Ours is ``erp-sim serve --http`` as shipped (its middleware, guards, episode store, the ERP).
The bare one is ``FastMCP("bare-echo")`` with stock ``http_app()`` and two tools:
- ``form_select_grid_row``: CALL's name and arguments, answering the ERP's own response to CALL as a
  constant (about 8 kB, ~2,000 tokens: the size of a typical ERP response), so both send the same bytes;
- ``echo``: returns its short argument (what the framework costs with a small payload).
Each of ``--sessions`` concurrent sessions opens, calls ``form_open_menu_item`` once (untimed), then makes
``--calls`` timed calls back to back (at least 2,000 in all, for /proc's 10 ms CPU clock). The bare tools
declare no output schema, so that they send the text once, as ours does (fastmcp's default for a ``str``
return adds it again as structuredContent: 17 kB instead of 8.6 kB). Printed per server and session count: p50 / p95 latency per call,
calls/s and the server process's CPU time per call (/proc, user + system: robust to a busy machine); then
ours / bare (same-size echo) and ours / bare (small echo). The client is a thin JSON-RPC client over
httpx2 in this process (not the MCP SDK's), so that little of the machine goes to the client side.
Servers and rounds are interleaved so that load on the machine hits both alike (who goes first turns each
round); per server the median round (by CPU per call) is printed, and each ratio is the median over rounds of
the ratio within the round, with its lowest and highest round (``_range``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
from bench_mcp import BARE_FASTMCP_TOOLS, CALL, OPEN, cpu_seconds

from erp_sim import get_task
from erp_sim.erp_session import ErpSession

ROOT = Path(__file__).resolve().parent.parent
ECHO = ("echo", {"text": "ping"})
PROTOCOL = "2025-11-25"
MIN_CALLS = 2000
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

# bench_mcp's bare server (the response file is argv[1]) with a small echo tool, served over HTTP (port: argv[2])
BARE_SERVER = (
    BARE_FASTMCP_TOOLS
    + """
import uvicorn

@server.tool(name="echo", output_schema=None)
def echo(text: str) -> str:
    return text

app = server.http_app(path="/mcp", json_response=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False, loop="asyncio")
"""
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(command: list[str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        if proc.poll() is not None:
            raise RuntimeError(f"{command[:3]} exited {proc.returncode} before serving")
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{command[:3]} did not start")


class Session:
    """One MCP session over plain JSON-RPC POSTs (the handshake, then tools/call)."""

    def __init__(self, http: httpx2.AsyncClient, url: str):
        self.http, self.url, self.headers, self.next_id = http, url, dict(HEADERS), 0

    async def post(self, method: str, params: dict[str, Any], notify: bool = False) -> dict[str, Any] | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        reply = await self.http.post(self.url, content=json.dumps(message), headers=self.headers)
        reply.raise_for_status()
        if notify:
            return None
        return reply.json()

    async def open(self) -> None:
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        reply = await self.http.post(
            self.url,
            content=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}),
            headers=self.headers,
        )
        reply.raise_for_status()
        self.headers |= {"Mcp-Session-Id": reply.headers["mcp-session-id"], "Mcp-Protocol-Version": PROTOCOL}
        await self.post("notifications/initialized", {}, notify=True)

    async def call(self, name: str, arguments: dict[str, Any]) -> bool:
        """One tools/call; True when it answered without an error."""
        reply = await self.post("tools/call", {"name": name, "arguments": arguments})
        return reply is not None and "result" in reply and not reply["result"].get("isError")

    async def close(self) -> None:
        await self.http.delete(self.url, headers=self.headers)


async def load(url: str, pid: int, sessions: int, calls: int, tool: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """``sessions`` concurrent sessions, each ``calls`` timed calls of ``tool``: latency and server CPU per call."""
    limits = httpx2.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        opened = [Session(http, url) for _ in range(sessions)]
        calls = max(calls, MIN_CALLS // sessions)  # enough calls for /proc's CPU clock (10 ms ticks)
        for session in opened:
            await session.open()
            assert await session.call(*OPEN)
        times: list[float] = []
        errors = 0

        async def drive(session: Session) -> None:
            nonlocal errors
            for _ in range(calls):
                started = time.perf_counter()
                ok = await session.call(*tool)
                times.append(time.perf_counter() - started)
                errors += not ok

        cpu_before, wall_before = cpu_seconds(pid), time.perf_counter()
        await asyncio.gather(*(drive(s) for s in opened))
        wall, cpu = time.perf_counter() - wall_before, cpu_seconds(pid) - cpu_before
        for session in opened:
            await session.close()
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
        "calls_per_s": round(len(times) / wall, 1),
        "server_cpu_ms_per_call": round(cpu / len(times) * 1000, 3),
        "errors": errors,
    }


def erp_response_file() -> Path:
    """The ERP's response to CALL, which the bare server returns (the same bytes as ours)."""
    session = ErpSession(get_task("hotel_50", 0))
    session.call(*OPEN)
    path = Path(tempfile.gettempdir()) / f"bench-mcp-http-{os.getpid()}.json"
    path.write_text(session.call(*CALL).text, encoding="utf-8")
    return path


def ratios(ours: list[dict[str, Any]], bare: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over rounds of ours / bare within each round (the two ran seconds apart, under the same load), and
    each ratio's lowest and highest round (``_range``): how far one round is from telling."""
    report: dict[str, Any] = {}
    for key in ("p50_ms", "p95_ms", "server_cpu_ms_per_call"):
        within = [o[key] / b[key] for o, b in zip(ours, bare)]
        report[key] = round(statistics.median(within), 2)
        report[f"{key}_range"] = [round(min(within), 2), round(max(within), 2)]
    return report


async def run(args: argparse.Namespace) -> dict[str, Any]:
    response = erp_response_file()
    response_bytes = response.stat().st_size
    ours_port, bare_port = free_port(), free_port()
    ours = start(
        [sys.executable, "-m", "erp_sim.mcp.server", "--http", "--port", str(ours_port), "--max-episodes", "1000"],
        ours_port,
    )
    try:
        bare = start([sys.executable, "-c", BARE_SERVER, str(response), str(bare_port)], bare_port)
        try:
            servers = {
                "ours": (f"http://127.0.0.1:{ours_port}/mcp", ours.pid, CALL),
                "bare_same_size": (f"http://127.0.0.1:{bare_port}/mcp", bare.pid, CALL),
                "bare_small": (f"http://127.0.0.1:{bare_port}/mcp", bare.pid, ECHO),
            }
            for url, pid, tool in servers.values():  # warm: imports, caches, the task templates
                await load(url, pid, 2, 20, tool)
            rounds: dict[tuple[int, str], list[dict[str, Any]]] = {}
            order = list(servers.items())
            for number in range(args.rounds):
                for sessions in args.sessions:
                    # who goes first turns each round, so a machine getting busier or quieter favours no one
                    for name, (url, pid, tool) in order[number % len(order) :] + order[: number % len(order)]:
                        figures = await load(url, pid, sessions, args.calls, tool)
                        rounds.setdefault((sessions, name), []).append(figures)
        finally:
            bare.terminate()
            bare.wait(10)
    finally:
        ours.terminate()
        ours.wait(10)
        response.unlink(missing_ok=True)
    report: dict[str, Any] = {"tool": CALL[0], "response_bytes": response_bytes, "calls": args.calls, "sessions": {}}
    for sessions in args.sessions:
        by_server = {
            name: sorted(rounds[sessions, name], key=lambda r: r["server_cpu_ms_per_call"])[args.rounds // 2]
            for name in servers
        }
        for baseline in ("bare_same_size", "bare_small"):
            by_server[f"ours_vs_{baseline}"] = ratios(rounds[sessions, "ours"], rounds[sessions, baseline])
        report["sessions"][str(sessions)] = by_server
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="Timed calls per session and measurement.")
    parser.add_argument("--sessions", default="1,64", help="Comma-separated numbers of concurrent sessions.")
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved rounds; the median round is kept.")
    args = parser.parse_args()
    args.sessions = [int(n) for n in args.sessions.split(",") if n.strip()]
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
