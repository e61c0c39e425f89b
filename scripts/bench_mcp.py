"""Benchmark the MCP server: tools/call round trips (stdio, HTTP) next to the in-process call,
throughput with concurrent HTTP sessions, and memory per idle session.

    .venv/bin/python scripts/bench_mcp.py [--calls 300] [--sessions 32] [--idle-sessions 100] [--json out.json]

Every timed call is the same read-only tool (``form_select_grid_row`` on the expense report
list, an ~8 kB default-verbosity form state), so transport overhead is what differs.
Targets (issue 4): stdio < 3 ms median, HTTP < 10 ms median, no errors with 32 sessions,
< 10 MB per idle session; issue 21: stdio under 3 ms or within 1.2x of a bare fastmcp server (one
tool returning the same ~8 kB text, fastmcp's stock stdio transport), measured in the same run. Clients run in this process, so on a small machine they compete
with the server for CPU: the figures are upper bounds of the server's cost.
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
import tracemalloc
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from erp_sim import get_task
from erp_sim.erp_session import ErpSession
from erp_sim.mcp.episode_store import EpisodeStore

ROOT = Path(__file__).resolve().parent.parent
SERVE = [sys.executable, "-m", "erp_sim.mcp.server"]
TOKEN = "bench-token"
STDIO_ROUNDS = 5
OPEN = ("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"})
CALL = ("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": "1"})


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def in_process(calls: int) -> dict:
    session = ErpSession(get_task("hotel_50", 0))
    session.call(*OPEN)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        session.call(*CALL)
        times.append(time.perf_counter() - start)
    return {"median_ms": ms(statistics.median(times)), "p95_ms": ms(statistics.quantiles(times, n=20)[-1])}


async def timed_calls(client: Client, calls: int, server_pid: int | None = None) -> dict:
    """Median round trip of ``CALL``; with ``server_pid``, also the server's CPU time per call (robust to a busy machine)."""
    await client.call_tool(*OPEN)
    times, errors = [], 0
    cpu_before = cpu_seconds(server_pid) if server_pid else 0.0
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool(*CALL)
        times.append(time.perf_counter() - start)
        errors += result.is_error
    report = {
        "median_ms": ms(statistics.median(times)),
        "p95_ms": ms(statistics.quantiles(times, n=20)[-1]),
        "errors": errors,
    }
    if server_pid:
        report["server_cpu_ms_per_call"] = ms((cpu_seconds(server_pid) - cpu_before) / calls)
    return report


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_child_pid() -> int | None:
    """The stdio server this process spawned (Linux /proc), for its CPU time."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = stat.read_text().rsplit(")", 1)[1].split()[1]
            if parent == str(os.getpid()) and b"erp_sim.mcp.server" in (stat.parent / "cmdline").read_bytes():
                return int(stat.parent.name)
        except (OSError, IndexError):
            continue
    return None


async def over_stdio(calls: int, mode: str, command: list[str] = SERVE) -> dict:
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=ROOT)
    async with Client(params, mode=mode) as client:
        return await timed_calls(client, calls, server_child_pid())


# The framework's own cost, for comparison: a bare fastmcp server over its stock stdio transport whose one
# tool has CALL's name and arguments and returns the same ~8 kB form state as a constant (no ERP behind it);
# scripts/bench_mcp_http.py serves the same tools over HTTP.
BARE_FASTMCP_TOOLS = """
import sys
from fastmcp import FastMCP
# erp_sim.mcp.server is in the argv so server_child_pid finds this process
response = open(sys.argv[1], encoding="utf-8").read()
server = FastMCP("bare-echo")

# output_schema=None: the text only, as ours sends it (a str return is otherwise sent twice, as content and
# as structuredContent {"result": ...}: 17 kB instead of 8.6 kB)
@server.tool(name="form_select_grid_row", output_schema=None)
def select(gridName: str, rowNumber: str) -> str:
    return response

@server.tool(name="form_open_menu_item", output_schema=None)
def open_menu_item(name: str, type: str = "Display") -> str:
    return response
"""
BARE_FASTMCP = BARE_FASTMCP_TOOLS + 'server.run(transport="stdio", show_banner=False, log_level="WARNING")\n'


def bare_fastmcp_command() -> list[str]:
    """The bare server, answering with the ERP's own response to ``CALL`` (so both send the same bytes)."""
    session = ErpSession(get_task("hotel_50", 0))
    session.call(*OPEN)
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-mcp-response-{os.getpid()}.json"
    path.write_text(session.call(*CALL).text, encoding="utf-8")
    return [sys.executable, "-c", BARE_FASTMCP, str(path), "erp_sim.mcp.server"]


def http_client(url: str, mode: str = "legacy", key: str | None = None):
    headers = {"Authorization": f"Bearer {TOKEN}"} | ({"X-ERP-Session": key} if key else {})
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


async def over_http(url: str, calls: int, mode: str, pid: int) -> dict:
    http, client = http_client(url, mode, key=f"bench-{mode}")
    async with http, client:
        return await timed_calls(client, calls, pid)


async def http_throughput(url: str, sessions: int, calls: int, pid: int) -> dict:
    async def one(i: int) -> tuple[float, int]:
        http, client = http_client(url)
        async with http, client:
            result = await timed_calls(client, calls)
            return result["median_ms"], result["errors"]

    start, cpu_before = time.perf_counter(), cpu_seconds(pid)
    outcomes = await asyncio.gather(*(one(i) for i in range(sessions)), return_exceptions=True)
    wall, server_cpu = time.perf_counter() - start, cpu_seconds(pid) - cpu_before
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    done = [o for o in outcomes if not isinstance(o, BaseException)]
    return {
        "sessions": sessions,
        "calls": sessions * calls,
        "wall_s": round(wall, 2),
        "calls_per_s": round(len(done) * calls / wall, 1),
        "errors": sum(e for _, e in done) + len(failed),
        "median_of_session_medians_ms": statistics.median(m for m, _ in done) if done else None,
        "server_cpu_ms_per_call": ms(server_cpu / (sessions * (calls + 1))),
    }


def rss_bytes(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def memory_in_process(count: int) -> dict:
    """Episodes opened through the server's store, one call each (a form open), then idle: Python heap
    (tracemalloc) plus each in-memory SQLite database's pages (SQLite allocates outside tracemalloc)."""
    store = EpisodeStore("hotel_50", idle_timeout_s=None)
    for i in range(len(store.tasks)):  # task templates and caches out of the measurement
        store.episode(f"warm-{i}").session.call(*OPEN)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    episodes = [store.episode(f"idle-{i}") for i in range(count)]
    for episode in episodes:
        episode.session.call(*OPEN)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    python_heap = sum(s.size_diff for s in after.compare_to(before, "filename"))
    pages = sum(
        e.session.db.execute("PRAGMA page_count").fetchone()[0] * e.session.db.execute("PRAGMA page_size").fetchone()[0]
        for e in episodes
    )
    store.close_all()
    return {
        "sessions": count,
        "python_heap_kb_per_session": round(python_heap / count / 1024, 1),
        "sqlite_kb_per_session": round(pages / count / 1024, 1),
    }


async def memory_of_server(url: str, pid: int, count: int) -> dict:
    """RSS growth of the HTTP server process over ``count`` open, idle MCP sessions (ERP + transport)."""
    before = rss_bytes(pid)
    opened = []
    try:
        for _ in range(count):
            http, client = http_client(url)
            await http.__aenter__()
            await client.__aenter__()
            opened.append((http, client))
            await client.call_tool(*OPEN)
        await asyncio.sleep(0.5)
        grown = rss_bytes(pid) - before
    finally:
        for http, client in reversed(opened):
            await client.__aexit__(None, None, None)
            await http.__aexit__(None, None, None)
    return {"sessions": count, "rss_kb_per_session": round(grown / count / 1024, 1)}


def start_http_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        SERVE + ["--http", "--port", str(port), "--auth-token", TOKEN],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the HTTP server did not start")


async def run(args) -> dict:
    bare = bare_fastmcp_command()
    report: dict[str, Any] = {"tool": CALL[0], "in_process": in_process(args.calls * 5)}
    rounds: dict[str, list[dict]] = {}
    for _ in range(STDIO_ROUNDS):  # ours and bare fastmcp interleaved, so load on the machine hits both alike
        for name, mode, command in (
            ("stdio_legacy", "legacy", SERVE),
            ("stdio_bare_fastmcp_legacy", "legacy", bare),
            ("stdio_2026", "auto", SERVE),
            ("stdio_bare_fastmcp_2026", "auto", bare),
        ):
            rounds.setdefault(name, []).append(await over_stdio(args.calls, mode, command))
    for name, results in rounds.items():  # the median round of each (by median latency)
        report[name] = sorted(results, key=lambda r: r["median_ms"])[len(results) // 2] | {"rounds": len(results)}
    Path(bare[3]).unlink(missing_ok=True)
    report["stdio_vs_bare_fastmcp"] = {  # medians over rounds of the ratio within each round (seconds apart)
        mode: {
            figure: round(
                statistics.median(
                    o[key] / b[key] for o, b in zip(rounds[f"stdio_{mode}"], rounds[f"stdio_bare_fastmcp_{mode}"])
                ),
                2,
            )
            for figure, key in (("median_x", "median_ms"), ("server_cpu_x", "server_cpu_ms_per_call"))
        }
        for mode in ("legacy", "2026")
    }
    proc, url = start_http_server()
    try:
        report["http_legacy"] = await over_http(url, args.calls, "legacy", proc.pid)
        report["http_2026"] = await over_http(url, args.calls, "auto", proc.pid)
        report["http_concurrent"] = await http_throughput(url, args.sessions, args.calls // 3, proc.pid)
        report["memory_server_process"] = await memory_of_server(url, proc.pid, args.idle_sessions)
    finally:
        proc.terminate()
        proc.wait(10)
    report["memory_in_process"] = memory_in_process(args.idle_sessions * 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="Timed calls per latency measurement.")
    parser.add_argument("--sessions", type=int, default=32, help="Concurrent HTTP sessions for throughput.")
    parser.add_argument("--idle-sessions", type=int, default=100, help="Sessions opened for the memory figure.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
