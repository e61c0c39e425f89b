"""A task's first open and first gym reset in a process, beside tau2-bench's retail environment.

Every figure comes from a child process that imports its package, warms up on one task, then opens (or
resets) each of ``--tasks`` other tasks once: that task's first open in the process. Ours is measured twice:
as a user gets it (the template of each task restored from the disk cache, ``erp_sim.database.template_cache``,
which the first child fills) and on the build path (``ERP_SIM_TEMPLATE_CACHE=off``: every template built).
tau2-bench's retail environment is opened with ``get_environment()`` (its database read from JSON, the tools
and policy), and reset through its Gymnasium env (``AgentGymEnv(domain="retail", task_id=...).reset()``)
with the user simulator's model call replaced by a fixed first message, so that no model is in the figure.
The children run interleaved, ``--repeats`` rounds; medians of the per-task CPU times (``time.process_time``:
every thread of the process) and wall times, and the ratios tau2 / ours.

tau2-bench needs Python 3.12 and its own environment: ``--tau2-python`` (its interpreter) and
``--tau2-data`` (its ``data`` folder, ``TAU2_DATA_DIR``); without them only our two paths are printed.

    .venv/bin/python scripts/bench_cold_open.py --tau2-python /tmp/tau2/.venv/bin/python --tau2-data /tmp/tau2/data
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

OURS = r"""
import json, sys, time
import gymnasium as gym
import erp_sim.envs
from erp_sim import get_task, load_task_set
from erp_sim.erp_session import ErpSession
kind, count = sys.argv[1], int(sys.argv[2])
tasks = [task.task_id for task in load_task_set("hotel_50")][: count + 1]
env = gym.make("erp_sim/ExpenseItemization-v0")
env.reset(options={"task_id": tasks[0]})  # warm: imports, forms, the tokenizer-free parts of a reset
ErpSession(get_task("hotel_50", tasks[0])).close()
cpu, wall = [], []
for task_id in tasks[1:]:
    task = get_task("hotel_50", task_id)  # parsed before: a task set is read once per process
    c, w = time.process_time(), time.perf_counter()
    if kind == "open":
        ErpSession(task).close()
    else:
        env.reset(options={"task_id": task_id})
    cpu.append(time.process_time() - c)
    wall.append(time.perf_counter() - w)
print(json.dumps({"cpu": cpu, "wall": wall}))
"""

TAU2 = r"""
import json, sys, time, logging
from loguru import logger
logger.remove()
import tau2.user.user_simulator as user_simulator
from tau2.data_model.message import AssistantMessage
from tau2.domains.retail.environment import get_environment, get_tasks
from tau2.gym.gym_agent import AgentGymEnv

def first_message(**kwargs):  # the user simulator's model call, answered without a model
    return AssistantMessage(role="assistant", content="Hi, I would like to return an item from my last order.")

user_simulator.generate = first_message
kind, count = sys.argv[1], int(sys.argv[2])
tasks = [task.id for task in get_tasks()][: count + 1]
get_environment()
AgentGymEnv(domain="retail", task_id=tasks[0]).reset()
cpu, wall = [], []
for task_id in tasks[1:]:
    c, w = time.process_time(), time.perf_counter()
    if kind == "open":
        get_environment()
    else:
        AgentGymEnv(domain="retail", task_id=task_id).reset()
    cpu.append(time.process_time() - c)
    wall.append(time.perf_counter() - w)
print(json.dumps({"cpu": cpu, "wall": wall}))
"""


def child(python: str, code: str, kind: str, count: int, env: dict[str, str]) -> dict[str, list[float]]:
    """One child's per-task figures (run from a temporary folder: a checkout's ``erp_sim`` is not imported)."""
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [python, "-c", code, kind, str(count)], cwd=folder, env=env, capture_output=True, text=True, check=False
        )
    if done.returncode:
        raise RuntimeError(f"{python} {kind}: {done.stderr[-2000:]}")
    figures: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="tasks opened (or reset) per child")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tau2-python", help="the interpreter of an environment with tau2-bench installed")
    parser.add_argument("--tau2-data", help="tau2-bench's data folder (TAU2_DATA_DIR)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        restore = {**os.environ, "ERP_SIM_TEMPLATE_CACHE": cache}
        build = {**os.environ, "ERP_SIM_TEMPLATE_CACHE": "off"}
        child(sys.executable, OURS, "open", 50, restore)  # fills the cache: every hotel_50 template built once
        child(sys.executable, OURS, "reset", 50, restore)
        paths: dict[str, tuple[str, str, dict[str, str]]] = {
            "erp-sim (template restored)": (sys.executable, OURS, restore),
            "erp-sim (template built)": (sys.executable, OURS, build),
        }
        if args.tau2_python:
            tau2_env = {**os.environ, **({"TAU2_DATA_DIR": args.tau2_data} if args.tau2_data else {})}
            paths["tau2-bench retail"] = (args.tau2_python, TAU2, tau2_env)
        figures: dict[tuple[str, str], dict[str, list[float]]] = {}
        for _ in range(args.repeats):  # interleaved: a slow spell of the machine spreads over every path
            for kind in ("open", "reset"):
                for name, (python, code, env) in paths.items():
                    got = child(python, code, kind, args.tasks, env)
                    into = figures.setdefault((name, kind), {"cpu": [], "wall": []})
                    into["cpu"] += got["cpu"]
                    into["wall"] += got["wall"]
    medians = {
        key: {unit: statistics.median(values) * 1e3 for unit, values in got.items()} for key, got in figures.items()
    }
    print(
        f"First open / first gym reset of a task in a process (medians over {args.tasks} tasks x {args.repeats} rounds)"
    )
    print(f"{'':<30}{'open CPU ms':>13}{'open wall ms':>14}{'reset CPU ms':>14}{'reset wall ms':>15}")
    for name in paths:
        row = [medians[name, kind][unit] for kind in ("open", "reset") for unit in ("cpu", "wall")]
        print(f"{name:<30}{row[0]:>13.3f}{row[1]:>14.3f}{row[2]:>14.3f}{row[3]:>15.3f}")
    if "tau2-bench retail" in paths:
        print("\ntau2-bench / erp-sim (target: at least 10x)")
        for name in [n for n in paths if n.startswith("erp-sim")]:
            ratios = [
                medians["tau2-bench retail", kind][unit] / medians[name, kind][unit]
                for kind in ("open", "reset")
                for unit in ("cpu", "wall")
            ]
            print(
                f"{name:<30}open {ratios[0]:.1f}x CPU, {ratios[1]:.1f}x wall; reset {ratios[2]:.1f}x CPU, {ratios[3]:.1f}x wall"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
