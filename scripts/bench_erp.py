"""Benchmark the simulator: one tool call, opening a session, the oracle solving hotel_50, and the
cost of a call against the horizon (long_horizon: 10-200 receipt charges over 1-5 lines).

    python scripts/bench_erp.py [--repeats 7] [--horizon-only]

Prints medians (this machine is shared and noisy: read medians and ratios, not single runs).
Targets (issue 2): tool call < 0.5 ms, session open < 5 ms, hotel_50 solved < 2 s.
Horizon (issue 22): per-call CPU and response size stay flat as the task grows, since grids show
one page (25 rows) whatever the receipt's length.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from erp_sim import ErpSession, load_task_set, run_oracle
from erp_sim.database import clear_templates
from erp_sim.oracle import oracle_trace
from erp_sim.workflows.itemization.task import as_task


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def horizon(repeats: int) -> None:
    """Per-call CPU time and response size of the oracle's calls, by rung (charges) and by number of lines."""
    groups: dict[tuple[int, str], dict[str, list]] = {}
    for task in map(as_task, load_task_set("long_horizon")):
        trace = oracle_trace(task)
        group = groups.setdefault(
            (task.item_count, "1 line" if not task.extra_lines else "2-5 lines"), {"cpu": [], "chars": [], "calls": []}
        )
        group["calls"].append(len(trace))
        for repeat in range(repeats):
            session = ErpSession(task)
            for name, arguments in trace:
                start = time.process_time()
                response = session.call(name, arguments)
                group["cpu"].append(time.process_time() - start)
                if repeat == 0:
                    group["chars"].append(len(response.text))
    print(
        f"\n{'long_horizon (oracle calls)':<28}{'calls/task':>11}{'CPU/call median':>17}{'p90':>9}"
        f"{'response chars median':>23}{'max':>8}"
    )
    for (charges, lines), group in sorted(groups.items()):
        cpu = sorted(group["cpu"])
        print(
            f"{f'{charges} charges, {lines}':<28}{statistics.median(group['calls']):>11.0f}{median_ms(cpu):>15.3f}ms"
            f"{cpu[int(0.9 * (len(cpu) - 1))] * 1000:>7.3f}ms{statistics.median(group['chars']):>23,.0f}{max(group['chars']):>8,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--horizon-only", action="store_true", help="only the long_horizon table")
    args = parser.parse_args()
    tasks = load_task_set("hotel_50")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    if args.horizon_only:
        return horizon(args.repeats)

    # Session open: first open of a task builds its template (cold); later opens copy it (warm).
    clear_templates()
    cold = []
    for task in tasks:
        start = time.perf_counter()
        ErpSession(task)
        cold.append(time.perf_counter() - start)
    warm = []
    for _ in range(args.repeats):
        for task in tasks:
            start = time.perf_counter()
            ErpSession(task)
            warm.append(time.perf_counter() - start)

    # One tool call at default verbosity: every call of the oracle's trajectories, replayed.
    per_call: list[float] = []
    per_tool: dict[str, list[float]] = {}
    traces = [(task, oracle_trace(task)) for task in tasks]
    for _ in range(args.repeats):
        for task, trace in traces:
            session = ErpSession(task)
            for name, arguments in trace:
                start = time.perf_counter()
                session.call(name, arguments)
                elapsed = time.perf_counter() - start
                per_call.append(elapsed)
                per_tool.setdefault(name, []).append(elapsed)

    solve = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for task in tasks:
            run_oracle(ErpSession(task))
        solve.append(time.perf_counter() - start)

    print(f"{'measure':<44}{'median':>12}{'target':>10}")
    print(f"{'tool call (all oracle calls, default)':<44}{median_ms(per_call):>10.3f}ms{'< 0.5ms':>10}")
    print(f"{'session open (warm: template cached)':<44}{median_ms(warm):>10.3f}ms{'< 5ms':>10}")
    print(f"{'session open (cold: first open of a task)':<44}{median_ms(cold):>10.3f}ms")
    print(
        f"{'oracle solves hotel_50 (' + str(sum(len(t) for _, t in traces)) + ' calls)':<44}{statistics.median(solve):>11.3f}s{'< 2s':>10}"
    )
    print("\nper tool (median ms):")
    for name, samples in sorted(per_tool.items()):
        print(f"  {name:<28}{median_ms(samples):>8.3f}  (n={len(samples)})")
    horizon(args.repeats)
    return None


if __name__ == "__main__":
    main()
