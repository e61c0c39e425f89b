"""CPU of the end of an itemization episode: the save of every itemized row, the close (with the env's grade
that finds success there) and the runner's final grade, against an ordinary call of the same episode.

Records the scripted agent's actions on a single-line ``long_horizon`` task once, then replays them on the env
``--repeats`` times (the env is deterministic: every replay reaches the same states), timing with
``time.thread_time``: ``env.step`` of the last ``form_save_form``, of the ``form_close_form`` after it, and
``env.unwrapped.grade()`` (what ``run_episode`` grades with); the baseline is the median ``env.step`` of the
episode's other calls, measured in the same replays. Prints medians (ms) and each figure's ratio to the baseline.

    .venv/bin/python scripts/bench_end.py                      # 10 and 200 charges, 7 repeats
    .venv/bin/python scripts/bench_end.py --charges 200 --repeats 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import gymnasium as gym

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.envs.expense_env import expense_env_of

ENV_ID = "erp_sim/LongHorizon-v0"
MAX_MODEL_CALLS = 1_500  # the env's step limit: the episode runs to its end


def task_id(charges: int) -> str:
    return f"long-{charges:03d}-00"


def recorded_actions(task: str) -> list[str]:
    """The scripted agent's actions on ``task``, in order (what the replays step)."""
    env = gym.make(ENV_ID)
    actions: list[str] = []
    step = env.step

    def recording_step(action):
        actions.append(action)
        return step(action)

    env.step = recording_step  # type: ignore[method-assign]
    run_episode(env, ScriptedAgent(), task_id=task, seed=0, max_model_calls=MAX_MODEL_CALLS)
    env.close()
    return actions


def replay(task: str, actions: list[str]) -> dict[str, float]:
    """One replay's CPU (s): the save, the close after it, the final grade, and the median other call."""
    env = gym.make(ENV_ID)
    env.reset(seed=0, options={"task_id": task})
    names = [json.loads(action).get("name") for action in actions]  # a message to the user has none
    save = max(n for n, name in enumerate(names) if name == "form_save_form")
    assert names[save + 1] == "form_close_form", "the episode ends with a save and a close"
    times = []
    for action in actions:
        start = time.thread_time()
        env.step(action)
        times.append(time.thread_time() - start)
    start = time.thread_time()
    grade = expense_env_of(env).grade()
    grade_time = time.thread_time() - start
    assert grade.success, "the replay reached the recorded end"
    env.close()
    return {
        "call": statistics.median(times[:save] + times[save + 2 :]),
        "save": times[save],
        "close": times[save + 1],
        "grade": grade_time,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--charges", nargs="*", type=int, default=[10, 200], help="long_horizon rungs (first task)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    recorded = {charges: recorded_actions(task_id(charges)) for charges in args.charges}
    runs: dict[int, list[dict[str, float]]] = {charges: [] for charges in args.charges}
    for _ in range(args.repeats):  # interleaved: a slow spell of the machine spreads over every rung
        for charges, actions in recorded.items():
            runs[charges].append(replay(task_id(charges), actions))
    print(f"CPU at the end of a long_horizon episode (thread time; medians over {args.repeats} replays), ms")
    print(f"{'charges':<9}{'call':>7}{'save':>8}{'x call':>8}{'close':>8}{'x call':>8}{'grade':>8}{'x call':>8}")
    for charges, cell in runs.items():
        median = {key: statistics.median(run[key] for run in cell) for key in cell[0]}
        ratios = "".join(
            f"{median[key] * 1e3:>8.3f}{median[key] / median['call']:>8.2f}" for key in ("save", "close", "grade")
        )
        print(f"{charges:<9}{median['call'] * 1e3:>7.3f}{ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
