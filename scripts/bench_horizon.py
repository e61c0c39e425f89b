"""CPU per model call against the episode's length on the long-horizon set: does the cost of a call stay flat?

Runs C2 (full history) and C4 (last_n_summary:n=5,w=3) with the scripted agent on single-line
``long_horizon`` tasks (10 and 200 receipt charges by default: every call is one ``env.step``), every cell
once per repeat, and prints, per cell, the median CPU per model call
(``time.thread_time`` from one call to the next, in a run with nothing but that timestamp), the mean of
the first and of the last 20% of the calls and their ratio, and the split of a call (from a second,
instrumented run of the same deterministic episode): the simulator (``env.step``), the policy's own work
(its ``act`` minus the agent it wraps), the agent's decision and the harness's tokenizing (every call into the encoder
and the counter's chunking of long texts, outside the policy's and the agent's ``act``: the figures' counts), and the rest (the harness's bookkeeping,
the recorder, the prompt-cache figure). The targets (issue 40): the last 20% of an episode's calls cost at most
1.2x its first 20%, and the CPU per call at 200 charges at most 1.5x that at 10, for each policy.

Every run (uninstrumented or instrumented, of each cell and repeat) is a process of its own, warmed up on
another task: in one process a later run met the texts of the same deterministic episode in the caches an
earlier run had filled (parses, form indexes, token counts), which a user's first episode does not. Its
``PYTHONHASHSEED`` is the repeat's number: the token counter cuts long texts into chunks by their lines'
hashes, so which chunks a fold finds in its cache (and a call's cost, by up to a third) depends on the
process's hash seed. Fixed seeds make two runs of the bench measure the same chunks; the medians span seeds.

    .venv/bin/python scripts/bench_horizon.py                    # C2 and C4, 10 and 200 charges, 5 repeats
    .venv/bin/python scripts/bench_horizon.py --charges 10 50 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval import CallStarts, Timed, TimedEnv

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.tokens import get_counter

ENV_ID = "erp_sim/LongHorizon-v0"
POLICIES = {"C2": "full", "C4": "last_n_summary:n=5,w=3"}
MAX_MODEL_CALLS = 1_500  # the env's step limit: every rung's episode runs to its end
SHARE = 0.2  # the first and last fifth of an episode's calls
TARGET_TAIL, TARGET_LENGTH = 1.2, 1.5
PARTS = ("simulator", "policy", "agent", "tokenizer")


def task_id(charges: int) -> str:
    """The rung's first task: one expense line with ``charges`` receipt charges."""
    return f"long-{charges:03d}-00"


def bare_run(policy: str, task: str) -> list[float]:
    """CPU from one model call to the next (the last call's interval ends with its ``env.step``)."""
    agent = CallStarts(wrap(ScriptedAgent(), policy))
    env = TimedEnv(gym.make(ENV_ID), agent)  # only for where the last call's step ends
    get_counter().cache_clear()
    ends: list[float] = []
    step = env.step

    def timed_step(action):
        result = step(action)
        ends.append(time.thread_time())
        return result

    env.step = timed_step  # type: ignore[method-assign]
    run_episode(env, agent, task_id=task, seed=0, policy=policy, max_model_calls=MAX_MODEL_CALLS)
    env.close()
    return [later - earlier for earlier, later in zip(agent.starts, [*agent.starts[1:], ends[-1]])]


@contextmanager
def timed_encoder(timed_agent: Timed) -> Iterator[dict[int, float]]:
    """The tokenizer's CPU per model call outside the policy's and the agent's ``act`` (whose columns hold what they
    tokenize): every ``count`` and ``encode`` into the backend the harness makes, and the counter's chunking of a
    long text around them (``TokenCounter._count_long``: its splitting and cache lookups are the tokenizer's work
    too), while the block runs; a call inside another is timed once, in the outer one."""
    counter = get_counter()
    targets = [(counter.encoder, "count"), (counter.encoder, "encode"), (counter, "_count_long")]
    per_call: dict[int, float] = {}
    depth = [0]

    def timing(original):
        def timed(text):
            if depth[0]:
                return original(text)
            depth[0] += 1
            start = time.thread_time()
            try:
                return original(text)
            finally:
                depth[0] -= 1
                if len(timed_agent.starts) == len(timed_agent.durations):  # outside the policy's and agent's act
                    call = len(timed_agent.starts) - 1
                    per_call[call] = per_call.get(call, 0.0) + time.thread_time() - start

        return timed

    for owner, name in targets:
        setattr(owner, name, timing(getattr(owner, name)))
    try:
        yield per_call
    finally:
        for owner, name in targets:
            delattr(owner, name)  # the instance attributes go: the class's methods are back


def instrumented_run(policy: str, task: str) -> dict[str, list[float]]:
    """The split of each call: simulator, policy, agent, tokenizer."""
    inner = Timed(ScriptedAgent())
    outer = Timed(wrap(inner, policy))
    env = TimedEnv(gym.make(ENV_ID), outer)
    get_counter().cache_clear()
    with timed_encoder(outer) as tokenizer:
        run_episode(env, outer, task_id=task, seed=0, policy=policy, max_model_calls=MAX_MODEL_CALLS)
    env.close()
    calls = range(len(outer.starts))
    return {
        "simulator": [env.per_call.get(k, 0.0) for k in calls],
        "policy": [outer.durations[k] - inner.durations[k] for k in calls],
        "agent": list(inner.durations),
        "tokenizer": [tokenizer.get(k, 0.0) for k in calls],
    }


def summarize(runs: list[dict[str, list[float]]]) -> dict[str, float]:
    """Medians over repeats per call, then the cell's figures (ms)."""
    per_call = {key: [statistics.median(values) for values in zip(*(r[key] for r in runs))] for key in runs[0]}
    total = per_call["total"]
    share = max(1, round(len(total) * SHARE))
    first, last = statistics.fmean(total[:share]), statistics.fmean(total[-share:])
    row = {
        "calls": len(total),
        "cpu": statistics.median(total) * 1e3,
        "mean": statistics.fmean(total) * 1e3,
        "first": first * 1e3,
        "last": last * 1e3,
        "tail_ratio": last / first,
    }
    for key in PARTS:
        values = per_call[key]
        row[key] = statistics.median(values) * 1e3
        row[f"{key}_first"] = statistics.fmean(values[:share]) * 1e3
        row[f"{key}_last"] = statistics.fmean(values[-share:]) * 1e3
    rest = [t - sum(per_call[key][k] for key in PARTS) for k, t in enumerate(total)]
    row["rest_first"], row["rest_last"] = statistics.fmean(rest[:share]) * 1e3, statistics.fmean(rest[-share:]) * 1e3
    return row


WARM_UP_TASK = "long-010-01"  # not a measured task: a process's caches hold none of the measured episode's texts


def one_run(kind: str, policy: str, charges: int) -> dict[str, list[float]]:
    """In this process: warm up (imports, a first session) on another task, then one run of the cell."""
    bare_run("full", WARM_UP_TASK)
    if kind == "bare":
        return {"total": bare_run(policy, task_id(charges))}
    return instrumented_run(policy, task_id(charges))


def run_in_process(seed: int, kind: str, policy: str, charges: int) -> dict[str, list[float]]:
    """``one_run`` in a fresh process whose hash seed is ``seed``: every measured episode is a process's first
    sight of its texts (the runs of one process would find the parses, form indexes and token counts of the
    same deterministic episode that an earlier run left in their caches)."""
    command = [sys.executable, __file__, "--one-run", kind, policy, str(charges)]
    done = subprocess.run(
        command, env={**os.environ, "PYTHONHASHSEED": str(seed)}, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{kind} run of {policy} at {charges} charges, hash seed {seed}, failed:\n{done.stderr}")
    run: dict[str, list[float]] = json.loads(done.stdout)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="*", default=list(POLICIES), help="C2, C4 or policy specs")
    parser.add_argument("--charges", nargs="*", type=int, default=[10, 200], help="long_horizon rungs (first task)")
    parser.add_argument("--repeats", type=int, default=5, help="hash seeds 0 to repeats - 1, one process per run")
    parser.add_argument("--one-run", nargs=3, metavar=("KIND", "POLICY", "CHARGES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_run:  # a run's own process
        kind, policy, charges = args.one_run
        print(json.dumps(one_run(kind, policy, int(charges))))
        return 0
    cells = [(name, charges) for name in args.policies for charges in args.charges]
    runs: dict[tuple[str, int], list[dict[str, list[float]]]] = {cell: [] for cell in cells}
    for seed in range(args.repeats):  # interleaved: a slow spell of the machine spreads over every cell
        for name, charges in cells:
            policy = POLICIES.get(name, name)
            total = run_in_process(seed, "bare", policy, charges)
            split = run_in_process(seed, "split", policy, charges)
            assert all(len(v) == len(total["total"]) for v in split.values()), "the runs made other calls"
            runs[name, charges].append({**total, **split})
    rows = {cell: summarize(cell_runs) for cell, cell_runs in runs.items()}
    print(
        f"CPU per model call on long_horizon (thread time; medians over {args.repeats} repeats, hash seeds 0-{args.repeats - 1}, a process per run), ms"
    )
    print(
        f"{'policy, charges':<20}{'calls':>7}{'CPU/call':>10}{'mean':>8}{'first 20%':>11}{'last 20%':>10}"
        f"{'last/first':>11}{'simulator':>11}{'policy':>8}{'agent':>7}{'tokenizer':>11}"
    )
    for (name, charges), row in rows.items():
        print(
            f"{f'{name}, {charges}':<20}{row['calls']:>7,}{row['cpu']:>10.2f}{row['mean']:>8.2f}{row['first']:>11.2f}"
            f"{row['last']:>10.2f}{row['tail_ratio']:>11.2f}{row['simulator']:>11.2f}{row['policy']:>8.2f}"
            f"{row['agent']:>7.2f}{row['tokenizer']:>11.2f}"
        )
    print("\nmean ms of the first -> last 20% of calls, per part (rest: the harness, recorder and prompt-cache figure)")
    print(f"{'policy, charges':<20}" + "".join(f"{key:>16}" for key in (*PARTS, "rest")))
    for (name, charges), row in rows.items():
        parts = "".join(f"{row[f'{key}_first']:>8.2f}->{row[f'{key}_last']:<6.2f}" for key in (*PARTS, "rest"))
        print(f"{f'{name}, {charges}':<20}{parts}")
    print()
    shortest, longest = min(args.charges), max(args.charges)
    for name in args.policies:
        tails = [rows[name, charges]["tail_ratio"] for charges in args.charges]
        line = f"{name}: last/first 20% worst {max(tails):.2f} (target <= {TARGET_TAIL})"
        if longest != shortest:
            growth = rows[name, longest]["cpu"] / rows[name, shortest]["cpu"]
            line += f"; CPU per call at {longest} / at {shortest} charges {growth:.2f} (target <= {TARGET_LENGTH})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
