"""Soak the HTTP MCP server: well-behaved agents next to abusive clients, on loopback, for a bounded time (issue 11).

    .venv/bin/python scripts/soak_mcp.py [--seconds 60] [--sessions 32] [--json out.json]

Starts ``erp-sim serve --http`` on a free loopback port, then runs, for ``--seconds``:
- ``--sessions`` well-behaved agents (the ``mcp`` SDK client, one MCP session each): each solves its
  task with the oracle's calls, then keeps making read-only calls until the time is up;
- SQL bombs: two sessions sending, one after another, a CPU-bound join, a sorter bomb and a printf bomb;
- an episode flood: sessions opening new session keys as fast as the server answers (refused past the caps);
- stalled sockets: 200 connections that send half a request, reopened as the server closes them;
- oversized requests: 8 MiB bodies, and requests with 64 MiB of headers.
Prints, for the well-behaved sessions: calls, errors (should be 0), p50/p95/max latency; the
abusers' counts; and the server process's peak RSS (VmHWM). Clients and server share this machine,
so latencies are upper bounds (and on a loaded machine, loose ones).
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
import time
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from erp_sim import get_task, oracle_calls

ROOT = Path(__file__).resolve().parent.parent
TOKEN, ADMIN = "soak-client-token", "soak-admin-token"
BOMBS = [
    "SELECT count(*) FROM expense_line a, expense_line b, expense_line c WHERE printf('%d', a.id + b.id + c.id) = 'x'",
    "SELECT count(*) FROM (SELECT printf('%.*c', 19000, 'x') || a.id || b.id AS big "
    "FROM expense_line a, expense_line b ORDER BY big)",
    "SELECT printf('%.*c', 2147483647, 'x')",
]
READS = [
    ("form_find_menu_item", {"menuItemFilter": "expense"}),
    ("data_find_entities_sql", {"sqlQuery": "SELECT report_number, status FROM expense_report LIMIT 5"}),
    ("data_find_entities", {"odataPath": "ExpenseLines", "odataQueryOptions": "$top=3"}),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024


def client_for(url: str, headers: dict | None = None):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}", **(headers or {})}, timeout=60)
    return http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy")


async def well_behaved(url: str, until: float, latencies: list[float], errors: list[str]) -> None:
    async def timed(client: Client, name: str, arguments: dict):
        started = time.perf_counter()
        result = await client.call_tool(name, arguments)
        latencies.append(time.perf_counter() - started)
        if result.is_error:
            block = result.content[0]
            errors.append(f"{name}: {block.text[:200] if isinstance(block, TextContent) else block!r}")
        return result

    try:
        http, client = client_for(url)
        async with http, client:
            brief = json.loads((await client.read_resource("erp-sim://task")).contents[0].text)
            calls = oracle_calls(get_task("hotel_50", brief["task_id"]))
            name, arguments = next(calls)
            try:
                while True:
                    result = await timed(client, name, arguments)
                    name, arguments = calls.send(result.content[0].text)
            except StopIteration:
                pass
            turn = 0
            while time.monotonic() < until:
                await timed(client, *READS[turn % len(READS)])
                turn += 1
                await asyncio.sleep(0.05)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}"[:200])


async def sql_bomber(url: str, until: float, counts: dict) -> None:
    http, client = client_for(url)
    async with http, client:
        while time.monotonic() < until:
            result = await client.call_tool(
                "data_find_entities_sql", {"sqlQuery": BOMBS[counts["sql_bombs"] % len(BOMBS)]}
            )
            counts["sql_bombs"] += 1
            counts["sql_bombs_refused"] += result.is_error


async def episode_flood(url: str, until: float, counts: dict) -> None:
    while time.monotonic() < until:
        http, client = client_for(url)
        async with http, client:
            for key in range(12):  # past the per-session cap
                result = await client.call_tool(
                    "form_find_menu_item", {"menuItemFilter": "x"}, meta={"erp-sim/session": f"flood-{key}"}
                )
                counts["flood_calls"] += 1
                counts["flood_refused"] += result.is_error


async def stalled_sockets(url: str, until: float, counts: dict, width: int = 200) -> None:
    host, port = url.removeprefix("http://").split(":")
    loop = asyncio.get_running_loop()
    open_sockets: list[socket.socket] = []
    try:
        while time.monotonic() < until:
            for sock in list(open_sockets):  # reopen the ones the server closed
                try:
                    if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        open_sockets.remove(sock)
                        sock.close()
                        counts["stalled_closed_by_server"] += 1
                except BlockingIOError:
                    pass
                except OSError:
                    open_sockets.remove(sock)
                    sock.close()
                    counts["stalled_closed_by_server"] += 1
            while len(open_sockets) < width:
                sock = socket.socket()
                sock.setblocking(False)
                try:
                    await loop.sock_connect(sock, (host, int(port)))
                    await loop.sock_sendall(sock, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                except OSError:
                    sock.close()
                    break
                open_sockets.append(sock)
                counts["stalled_opened"] += 1
            await asyncio.sleep(0.5)
    finally:
        for sock in open_sockets:
            sock.close()


async def oversized(url: str, until: float, counts: dict) -> None:
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "' + b"x" * (8 << 20) + b'"}}'
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        while time.monotonic() < until:
            try:
                response = await http.post("/mcp", content=body)
                counts["oversized_refused"] += response.status_code == 413
            except httpx.HTTPError:
                counts["oversized_refused"] += 1  # the server closed the connection on it
            try:
                response = await http.post("/mcp", content=b"{}", headers={"X-Big": "y" * (64 << 10)})
                counts["oversized_headers_refused"] += response.status_code >= 400
            except httpx.HTTPError:
                counts["oversized_headers_refused"] += 1
            await asyncio.sleep(0.2)


def latency_figures(latencies: list[float], errors: list[str], sessions: int) -> dict:
    ordered = sorted(latencies)
    return {
        "sessions": sessions,
        "calls": len(latencies),
        "errors": len(errors),
        "first_errors": errors[:5],
        "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1) if ordered else None,
        "max_ms": round(ordered[-1] * 1000, 1) if ordered else None,
    }


async def baseline(url: str, seconds: float, sessions: int) -> dict:
    """The same well-behaved sessions with no abuser, measured first in the same process."""
    until = time.monotonic() + seconds
    latencies: list[float] = []
    errors: list[str] = []
    await asyncio.gather(*(well_behaved(url, until, latencies, errors) for _ in range(sessions)))
    return latency_figures(latencies, errors, sessions)


async def soak(url: str, seconds: float, sessions: int) -> dict:
    until = time.monotonic() + seconds
    latencies: list[float] = []
    errors: list[str] = []
    counts = dict.fromkeys(
        (
            "sql_bombs",
            "sql_bombs_refused",
            "flood_calls",
            "flood_refused",
            "stalled_opened",
            "stalled_closed_by_server",
            "oversized_refused",
            "oversized_headers_refused",
        ),
        0,
    )
    abusers = [
        sql_bomber(url, until, counts),
        sql_bomber(url, until, counts),
        episode_flood(url, until, counts),
        stalled_sockets(url, until, counts),
        oversized(url, until, counts),
    ]
    agents = [well_behaved(url, until, latencies, errors) for _ in range(sessions)]
    outcomes = await asyncio.gather(*abusers, *agents, return_exceptions=True)
    abuser_failures = [repr(o)[:200] for o in outcomes[: len(abusers)] if isinstance(o, BaseException)]
    return {
        "well_behaved": latency_figures(latencies, errors, sessions),
        "abusers": counts,
        "abuser_failures": abuser_failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="How long the soak runs (default 60).")
    parser.add_argument("--sessions", type=int, default=32, help="Well-behaved sessions (default 32).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    args = parser.parse_args()
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"erp-sim-soak-{port}.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            *"-m erp_sim.mcp.server --http --port".split(),
            str(port),
            "--auth-token",
            TOKEN,
            "--admin-token",
            ADMIN,
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start; see {log}")
            time.sleep(0.1)
        started = time.monotonic()
        alone = asyncio.run(baseline(url, args.seconds / 3, args.sessions))
        report = asyncio.run(soak(url, args.seconds, args.sessions))
        report["well_behaved_alone"] = alone
        if alone["p50_ms"] and report["well_behaved"]["p50_ms"]:
            report["p50_ratio_vs_alone"] = round(report["well_behaved"]["p50_ms"] / alone["p50_ms"], 2)
            report["p95_ratio_vs_alone"] = round(report["well_behaved"]["p95_ms"] / alone["p95_ms"], 2)
        report["wall_s"] = round(time.monotonic() - started, 1)
        report["server"] = {
            "peak_rss_mb": round(peak_rss_mb(proc.pid), 1),
            "alive": proc.poll() is None,
            "admin_sessions_listed": len(
                httpx.get(f"{url}/admin/sessions", timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}).json()[
                    "sessions"
                ]
            ),
        }
    finally:
        proc.terminate()
        proc.wait(20)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
