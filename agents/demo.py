"""``erp-sim demo``: the oracle solves one task through the tools; prints the calls and the grade."""

from __future__ import annotations

import argparse
import sys

from erp_sim import ErpSession, get_task, run_oracle, workflows
from erp_sim.agents.command_line import PlainHelpFormatter
from erp_sim.verbosity import VERBOSITIES


def demo_task(task_set: str) -> str | int:
    """The task a set's workflow shows first (``TaskSets.demo_tasks``: hotel_50's is hotel-007, the task the
    README walks through), else the set's first."""
    return next(
        (sets.demo_tasks[task_set] for sets in workflows.task_sets().values() if task_set in sets.demo_tasks), 0
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="erp-sim demo", description=__doc__, formatter_class=PlainHelpFormatter)
    parser.add_argument("--task-set", default=workflows.DEFAULT_TASK_SET)
    parser.add_argument(
        "--task",
        default=None,
        help=f"task id or 0-based index (default: the one its workflow shows first, {demo_task(workflows.DEFAULT_TASK_SET)}"
        f" in {workflows.DEFAULT_TASK_SET}; else the set's first task)",
    )
    parser.add_argument("--verbosity", default="default", choices=VERBOSITIES)
    args = parser.parse_args(argv)
    try:
        task = get_task(args.task_set, args.task if args.task is not None else demo_task(args.task_set))
    except KeyError as exc:  # unknown task set, task id or index: the message names what exists
        print(f"erp-sim demo: {exc.args[0]}", file=sys.stderr)
        return 2
    session = ErpSession(task, verbosity=args.verbosity)
    print(session.task.instruction(), "\n")
    for number, response in enumerate(run_oracle(session), start=1):
        print(f"{number:3d} {response.tool:<26} {len(response.text):6d} chars  {response.result}")
    print("\n" + session.grade().model_dump_json(indent=2))
    return 0
