"""``erp-sim demo``: the oracle solves one task through the tools; prints the calls and the grade."""

from __future__ import annotations

import argparse
import sys

from erp_sim import ErpSession, get_task, run_oracle
from erp_sim.agents.command_line import PlainHelpFormatter
from erp_sim.verbosity import VERBOSITIES

# hotel-007 is the task the README walks through; other sets start at their first task
DEFAULT_TASKS = {"hotel_50": "hotel-007"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="erp-sim demo", description=__doc__, formatter_class=PlainHelpFormatter)
    parser.add_argument("--task-set", default="hotel_50")
    parser.add_argument(
        "--task",
        default=None,
        help="task id or 0-based index (default: hotel-007 in hotel_50, else the set's first task)",
    )
    parser.add_argument("--verbosity", default="default", choices=VERBOSITIES)
    args = parser.parse_args(argv)
    try:
        task = get_task(args.task_set, args.task if args.task is not None else DEFAULT_TASKS.get(args.task_set, 0))
    except KeyError as exc:  # unknown task set, task id or index: the message names what exists
        print(f"erp-sim demo: {exc.args[0]}", file=sys.stderr)
        return 2
    session = ErpSession(task, verbosity=args.verbosity)
    print(session.task.instruction(), "\n")
    for number, response in enumerate(run_oracle(session), start=1):
        print(f"{number:3d} {response.tool:<26} {len(response.text):6d} chars  {response.result}")
    print("\n" + session.grade().model_dump_json(indent=2))
    return 0
