"""``erp-sim demo``: the oracle solves one task through the tools; prints the calls and the grade."""

from __future__ import annotations

import argparse

from erp_sim import ErpSession, get_task, run_oracle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="erp-sim demo", description=__doc__)
    parser.add_argument("--task-set", default="hotel_50")
    parser.add_argument("--task", default="hotel-007", help="task id or index")
    parser.add_argument("--verbosity", default="default", choices=["default", "compact"])
    args = parser.parse_args(argv)
    session = ErpSession(get_task(args.task_set, args.task), verbosity=args.verbosity)
    print(session.task.instruction(), "\n")
    for number, response in enumerate(run_oracle(session), start=1):
        print(f"{number:3d} {response.tool:<26} {len(response.text):6d} chars  {response.result}")
    print("\n" + session.grade().model_dump_json(indent=2))
    return 0
