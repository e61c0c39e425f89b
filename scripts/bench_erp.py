"""Benchmark the simulator: one tool call, opening a session and the oracle solving a task set, for one or more
task sets in the same run (ratios against the first), and the cost of a call against the horizon.

    python scripts/bench_erp.py [--repeats 7] [--task-sets hotel_50,bank_recon_50] [--horizon long_horizon]
    python scripts/bench_erp.py --horizon-only [--horizon bank_recon_long] [--verbosity compact]

Prints medians (this machine is shared and noisy: read medians and ratios, not single runs).
Targets (issue 2): tool call < 0.5 ms, session open < 5 ms, hotel_50 solved < 2 s.
Horizon (issue 22): per-call CPU and response size stay flat as the task grows, since grids show
one page (25 rows) whatever the receipt's (or the statement's) length. The horizon sets are long_horizon
(10-200 receipt charges over 1-5 lines) and bank_recon_long (20-400 statement lines). It also prints the
CPU of each clicked button by size, and the first and last 20% of an episode's calls; issue 40's targets: at
the largest size (``--sizes`` picks them) a button and a call cost at most 1.5x what they cost at the smallest,
and an episode's last 20% of calls at most 1.2x its first 20%:

    python scripts/bench_erp.py --horizon-only --horizon bank_recon_long --sizes 20 400
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bpe_openai import get_encoding

from erp_sim import ErpSession, load_task_set, run_oracle
from erp_sim.database import clear_templates
from erp_sim.oracle import oracle_trace
from erp_sim.task_sets import task_rows
from erp_sim.verbosity import VERBOSITIES, Verbosity

WINDOW = 128_000  # the context window of the overflow point, o200k tokens
SHARE = 0.2  # the first and last fifth of an episode's calls
TARGET_TAIL, TARGET_LENGTH = 1.2, 1.5  # issue 40: last / first 20% of an episode; largest / smallest size


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def horizon(task_set: str, repeats: int, verbosity: Verbosity = "default", only: list[int] | None = None) -> None:
    """Per-call CPU time and response size of the oracle's calls, by the task's size (receipt charges or
    statement lines) and, for itemization, by its number of lines; and the o200k tokens of a whole episode's
    responses, the least a full-history transcript holds, with the size at which it passes a 128k window.
    Then each clicked button's CPU by size and the episodes' last / first 20% of calls (``horizon_ratios``).
    ``only``: the sizes to run (default every size of the set)."""
    encoding = get_encoding("o200k_base")
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    sizes = {row.task_id: row.size for row in task_rows(task_set)}
    for task in load_task_set(task_set):
        if only and sizes[task.task_id] not in only:
            continue
        trace = oracle_trace(task)
        lines = getattr(task, "extra_lines", None)
        kind = ("2-5 lines" if lines else "1 line") if lines is not None else "statement lines"
        group = groups.setdefault(
            (sizes[task.task_id], kind), {"cpu": [], "chars": [], "calls": [], "tokens": [], "tails": [], "clicks": {}}
        )
        group["calls"].append(len(trace))
        for repeat in range(repeats):
            session, tokens, episode = ErpSession(task, verbosity=verbosity), 0, []
            for name, arguments in trace:
                start = time.process_time()
                response = session.call(name, arguments)
                episode.append(time.process_time() - start)
                if name == "form_click_control" and "actionId" not in arguments:  # a button, not a grid's paging
                    group["clicks"].setdefault(arguments["controlName"], []).append(episode[-1])
                if repeat == 0:
                    group["chars"].append(len(response.text))
                    tokens += len(encoding.encode(response.text))
            group["cpu"].extend(episode)
            share = max(1, round(len(episode) * SHARE))
            group["tails"].append(statistics.fmean(episode[-share:]) / statistics.fmean(episode[:share]))
            if repeat == 0:
                group["tokens"].append(tokens)
    print(
        f"\n{task_set + ', ' + verbosity + ' (oracle calls)':<36}{'calls/task':>11}{'CPU/call median':>17}{'p90':>9}"
        f"{'response chars median':>23}{'max':>8}{'episode tokens':>16}"
    )
    for (size, kind), group in sorted(groups.items()):
        cpu = sorted(group["cpu"])
        label = f"{size} charges, {kind}" if kind != "statement lines" else f"{size} {kind}"
        print(
            f"{label:<36}{statistics.median(group['calls']):>11.0f}{median_ms(cpu):>15.3f}ms"
            f"{cpu[int(0.9 * (len(cpu) - 1))] * 1000:>7.3f}ms{statistics.median(group['chars']):>23,.0f}{max(group['chars']):>8,}"
            f"{statistics.median(group['tokens']):>16,.0f}"
        )
    print(f"full history passes {WINDOW:,} tokens of responses alone: {overflow_point(groups)}")
    horizon_ratios(groups)


def horizon_ratios(groups: dict[tuple[int, str], dict[str, Any]]) -> None:
    """Each clicked button's median CPU by size, the episodes' last / first 20% of calls (median over tasks and
    repeats), and the largest size against the smallest, beside issue 40's targets."""
    cells = sorted(groups)
    buttons = sorted({button for group in groups.values() for button in group["clicks"]})
    labels = [f"{size} {kind}" if kind != "statement lines" else f"{size} lines" for size, kind in cells]
    print("\nmedian CPU by size, ms (buttons: form_click_control of that control)")
    print(f"{'':<24}" + "".join(f"{label:>22}" for label in labels))
    rows = {"every call": [median_ms(groups[cell]["cpu"]) for cell in cells]}
    for button in buttons:
        rows[button] = [median_ms(groups[cell]["clicks"].get(button, [float("nan")])) for cell in cells]
    for label, values in rows.items():
        print(f"{label:<24}" + "".join(f"{value:>20.3f}ms" for value in values))
    tails = [statistics.median(groups[cell]["tails"]) for cell in cells]
    print(f"{'last / first 20% calls':<24}" + "".join(f"{tail:>21.2f}x" for tail in tails))
    first, last = cells[0], cells[-1]
    print(f"\nworst last / first 20% of an episode's calls: {max(tails):.2f}x (target <= {TARGET_TAIL})")
    if first[0] != last[0]:
        for label, values in rows.items():
            print(
                f"{label} at {labels[-1]} / at {labels[0]}: {values[-1] / values[0]:.2f}x (target <= {TARGET_LENGTH})"
            )


def overflow_point(groups: dict[tuple[int, str], dict[str, Any]]) -> str:
    """The task size at which the oracle's episode tokens (median by size) pass the window, interpolated
    linearly between the two sizes either side of it."""
    by_size: dict[int, list[int]] = {}
    for (size, _), group in groups.items():
        by_size.setdefault(size, []).extend(group["tokens"])
    rungs = sorted((size, statistics.median(tokens)) for size, tokens in by_size.items())
    previous = None
    for size, tokens in rungs:
        if tokens > WINDOW:
            if previous is None:
                return f"already at the smallest size, {size} ({tokens:,.0f} tokens)"
            (low, low_tokens), slope = previous, (tokens - previous[1]) / (size - previous[0])
            return f"at about {low + (WINDOW - low_tokens) / slope:.0f} (between sizes {low} and {size})"
        previous = (size, tokens)
    return f"never, up to size {rungs[-1][0]} ({rungs[-1][1]:,.0f} tokens)"


@dataclass
class Figures:
    call: float  # ms, median over every oracle call
    warm: float  # ms
    cold: float  # ms
    solve: float  # s, the whole set
    calls: int
    per_tool: dict[str, list[float]]


def measure(task_set: str, repeats: int) -> Figures:
    """Session opens (cold: the first of a task builds its template; warm: later ones copy it), every oracle call
    replayed at default verbosity, and the oracle solving the whole set."""
    tasks = load_task_set(task_set)
    clear_templates()
    cold = []
    for task in tasks:
        start = time.perf_counter()
        ErpSession(task)
        cold.append(time.perf_counter() - start)
    warm = []
    for _ in range(repeats):
        for task in tasks:
            start = time.perf_counter()
            ErpSession(task)
            warm.append(time.perf_counter() - start)
    per_call: list[float] = []
    per_tool: dict[str, list[float]] = {}
    traces = [(task, oracle_trace(task)) for task in tasks]
    for _ in range(repeats):
        for task, trace in traces:
            session = ErpSession(task)
            for name, arguments in trace:
                start = time.perf_counter()
                session.call(name, arguments)
                elapsed = time.perf_counter() - start
                per_call.append(elapsed)
                per_tool.setdefault(name, []).append(elapsed)
    solve = []
    for _ in range(repeats):
        start = time.perf_counter()
        for task in tasks:
            run_oracle(ErpSession(task))
        solve.append(time.perf_counter() - start)
    return Figures(
        median_ms(per_call),
        median_ms(warm),
        median_ms(cold),
        statistics.median(solve),
        sum(len(t) for _, t in traces),
        per_tool,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--task-sets", default="hotel_50", help="comma-separated; ratios are against the first")
    parser.add_argument("--horizon", default="long_horizon", help="the horizon table's task set")
    parser.add_argument("--horizon-only", action="store_true", help="only the horizon table")
    parser.add_argument("--verbosity", choices=VERBOSITIES, default="default", help="the horizon table's verbosity")
    parser.add_argument("--sizes", nargs="*", type=int, help="the horizon's task sizes to run (default: all)")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    if args.horizon_only:
        return horizon(args.horizon, args.repeats, args.verbosity, args.sizes)
    names = [name.strip() for name in args.task_sets.split(",") if name.strip()]
    results = {name: measure(name, args.repeats) for name in names}
    base = results[names[0]]
    print(f"\n{'measure':<44}" + "".join(f"{name:>16}" for name in names) + f"{'target':>10}")
    rows = [
        ("tool call (all oracle calls, default)", "call", "ms", "< 0.5ms"),
        ("session open (warm: template cached)", "warm", "ms", "< 5ms"),
        ("session open (cold: first open of a task)", "cold", "ms", ""),
        ("oracle solves the set", "solve", "s", "< 2s"),
    ]
    for label, key, unit, target in rows:
        cells = "".join(f"{getattr(results[name], key):>14.3f}{unit:<2}" for name in names)
        print(f"{label:<44}{cells}{target:>10}")
    print(f"{'oracle calls in the set':<44}" + "".join(f"{results[name].calls:>16,}" for name in names))
    for name in names[1:]:
        ratios = ", ".join(f"{key} {getattr(results[name], key) / getattr(base, key):.2f}x" for _, key, _, _ in rows)
        print(f"{name} against {names[0]}: {ratios}")
    for name in names:
        print(f"\n{name}, per tool (median ms):")
        for tool, samples in sorted(results[name].per_tool.items()):
            print(f"  {tool:<36}{median_ms(samples):>8.3f}  (n={len(samples)})")
    horizon(args.horizon, args.repeats, args.verbosity, args.sizes)
    return None


if __name__ == "__main__":
    main()
