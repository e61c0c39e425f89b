"""Benchmark: does a slow SQL call in one MCP session stall another? (issue 11)

    .venv/bin/python scripts/bench_mcp_fairness.py [--calls 200]

In one process (fastmcp's in-memory client, so transport cost is out of the figures), a victim
session makes ``--calls`` simple calls (``form_find_menu_item``) alone, then again while an
abuser session runs one kind of SQL bomb after another (a 1 s CPU-bound join, a sorter bomb
cut at its memory cap, a printf bomb). Prints p50/p95/max of the victim's latency in each
phase, the ratio against the baseline measured in the same process, and how many bombs ran.
Before the fix tool calls ran on the event loop, so one printf bomb stalled every session 17-23 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from fastmcp import Client

from erp_sim.mcp.server import build_server

SQL = "data_find_entities_sql"
BOMBS = {
    "cpu_join": "SELECT count(*) FROM expense_line a, expense_line b, expense_line c "
    "WHERE printf('%d', a.id + b.id + c.id) = 'x'",
    "sorter": "SELECT count(*) FROM (SELECT printf('%.*c', 19000, 'x') || a.id || b.id AS big "
    "FROM expense_line a, expense_line b ORDER BY big)",
    "printf": "SELECT printf('%.*c', 2147483647, 'x')",
}
SIMPLE = ("form_find_menu_item", {"menuItemFilter": "expense"})


def figures(times: list[float]) -> dict:
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


async def victim_calls(victim: Client, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await victim.call_tool_mcp(*SIMPLE, meta={"erp-sim/session": "victim"})
        times.append(time.perf_counter() - started)
        assert not result.is_error
        await asyncio.sleep(0.01)
    return times


async def main(calls: int) -> dict:
    server = build_server()
    out = {}
    async with Client(server) as abuser, Client(server) as victim:
        await victim_calls(victim, 5)  # warm: episode, task template, caches
        base = figures(await victim_calls(victim, calls))
        out["alone"] = base
        for name, sql in BOMBS.items():
            stop, ran = asyncio.Event(), [0, 0.0]

            async def bomb_forever(stop=stop, sql=sql, ran=ran):  # this bomb's own, bound now
                while not stop.is_set():
                    started = time.perf_counter()
                    result = await abuser.call_tool_mcp(SQL, {"sqlQuery": sql}, meta={"erp-sim/session": "abuser"})
                    assert result.is_error
                    ran[0] += 1
                    ran[1] = max(ran[1], time.perf_counter() - started)

            task = asyncio.create_task(bomb_forever())
            await asyncio.sleep(0.1)
            phase = figures(await victim_calls(victim, calls))
            stop.set()
            await task
            phase.update(
                bombs=ran[0], slowest_bomb_s=round(ran[1], 2), p95_ratio=round(phase["p95_ms"] / base["p95_ms"], 2)
            )
            out[f"next_to_{name}"] = phase
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    print(json.dumps(asyncio.run(main(parser.parse_args().calls)), indent=1))
