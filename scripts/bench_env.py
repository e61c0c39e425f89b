"""Benchmark: the env's step overhead over calling the same tools on an ErpSession directly.

Replays the oracle's call sequence for a few tasks three ways: ``ErpSession.call`` (direct),
``env.step`` on the unwrapped env, and ``env.step`` through ``gym.make``'s wrapper stack (what
users get). The three run in lockstep, each step on every path in rotating order, so drift and
cache effects hit all equally. Actions are the JSON strings an agent would send, so parsing
them is part of the env's cost. The last step of an
episode also puts the full grade (with erp_sim's collateral diff) in ``info``; it is reported
apart too. The headline is per episode: each episode's env time over its direct time (the same
steps, timed in lockstep), as the mean and the median over all episodes (target < +15% each).

    .venv/bin/python scripts/bench_env.py [--env erp_sim/ExpenseItemization-v0] [--tasks 10] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from typing import Any

import gymnasium as gym

import erp_sim
import erp_sim.envs
from erp_sim.envs.expense_env import expense_env_of
from erp_sim.oracle import oracle_trace
from erp_sim.verbosity import Verbosity

PATHS = ("ErpSession.call (direct)", "env.step (unwrapped)", "env.step (gym.make)")


def time_episode(
    task: erp_sim.Task, sequence, actions: list[str], envs_: list, verbosity: Verbosity
) -> list[list[float]]:
    """One episode on each path in lockstep, step by step, the order rotating so no path always goes first."""
    session = erp_sim.ErpSession(task, verbosity=verbosity)
    for env in envs_:
        env.reset(options={"task_id": task.task_id})
    runners = [lambda i: session.call(*sequence[i])] + [lambda i, env=env: env.step(actions[i]) for env in envs_]
    times: list[list[float]] = [[] for _ in runners]
    results: list[Any] = [None] * len(runners)
    for i in range(len(sequence)):
        for k in range(len(runners)):
            path = (i + k) % len(runners)
            start = time.perf_counter()
            results[path] = runners[path](i)
            times[path].append(time.perf_counter() - start)
    session.close()
    assert all(result[2] for result in results[1:]), "the oracle should finish the task on every env"
    return times


def row(label: str, values: list[float], base: list[float]) -> str:
    median, mean = statistics.median(values), statistics.fmean(values)
    return (
        f"{label:<50} {median * 1e6:>10.1f} {mean * 1e6:>9.1f} {1 / mean:>9,.0f} "
        f"{median / statistics.median(base) - 1:>+11.1%} {mean / statistics.fmean(base) - 1:>+11.1%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="erp_sim/ExpenseItemization-v0")
    parser.add_argument("--tasks", type=int, default=10, help="first N tasks of the env's task set")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--verbosity", default="default", choices=erp_sim.VERBOSITIES)
    args = parser.parse_args(argv)

    wrapped = gym.make(args.env, verbosity=args.verbosity)
    unwrapped = gym.make(args.env, verbosity=args.verbosity).unwrapped
    tasks = expense_env_of(wrapped).tasks[: args.tasks]
    sequences = {t.task_id: oracle_trace(t, args.verbosity) for t in tasks}
    actions = {tid: [json.dumps({"name": n, "arguments": a}) for n, a in seq] for tid, seq in sequences.items()}
    steps: dict[str, list[list[float]]] = {path: [] for path in PATHS}  # per path: one list of step times per episode
    for _ in range(args.rounds):
        for task in tasks:
            gc.collect()
            for path, episode in zip(
                PATHS,
                time_episode(
                    task, sequences[task.task_id], actions[task.task_id], [unwrapped, wrapped], args.verbosity
                ),
            ):
                steps[path].append(episode)

    every = {path: [t for episode in episodes for t in episode] for path, episodes in steps.items()}
    inner = {path: [t for episode in episodes for t in episode[:-1]] for path, episodes in steps.items()}
    last = {path: [episode[-1] for episode in episodes] for path, episodes in steps.items()}
    calls = sum(len(s) for s in sequences.values())
    print(
        f"{args.env}, verbosity={args.verbosity}: {len(tasks)} tasks x {args.rounds} rounds, {calls} steps per round\n"
    )
    print(f"{'path, steps':<50} {'median µs':>10} {'mean µs':>9} {'steps/s':>9} {'ovh median':>11} {'ovh mean':>11}")
    for label, subset in (("all steps", every), ("all but each episode's last", inner)):
        for path in PATHS:
            print(row(f"{path}, {label}", subset[path], subset[PATHS[0]]))
        print()
    last_env, last_direct = statistics.median(last[PATHS[2]]) * 1e3, statistics.median(last[PATHS[0]]) * 1e3
    print(
        f"last step of an episode (env adds the full grade to info): median {last_env:.2f} ms vs {last_direct:.2f} ms direct"
    )
    overhead = statistics.median(every[PATHS[2]]) / statistics.median(every[PATHS[0]]) - 1
    print(f"env.step overhead (gym.make stack, median over all steps): {overhead:+.1%}")
    print("\nper episode (env time / direct time - 1, the same steps timed in lockstep):")
    for path in PATHS[1:]:
        ratios = [sum(env) / sum(direct) - 1 for env, direct in zip(steps[path], steps[PATHS[0]])]
        print(
            f"  {path:<28} every episode ({len(ratios)}):        mean {statistics.fmean(ratios):+7.1%}   "
            f"median {statistics.median(ratios):+7.1%}"
        )
    # Preemption on a loaded machine adds milliseconds to random steps and swamps a 50 µs overhead;
    # it only ever adds time, so each step's fastest run over the rounds is its cost (as timeit advises).
    for path in PATHS[1:]:
        ratios = [
            sum(map(min, zip(*steps[path][n :: len(tasks)]))) / sum(map(min, zip(*steps[PATHS[0]][n :: len(tasks)])))
            - 1
            for n in range(len(tasks))
        ]
        print(
            f"  {path:<28} per task, fastest of rounds ({len(ratios)}): mean {statistics.fmean(ratios):+7.1%}   "
            f"median {statistics.median(ratios):+7.1%}   (target < +15%)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
