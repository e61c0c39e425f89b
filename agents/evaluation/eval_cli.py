"""``erp-sim eval``'s command line: its options, the default configurations, and the choice between a plain
run (``evaluate.run_from_args``) and a sequential one (``--sequential``: ``sequential.run_sequential``, which
runs its episodes through ``evaluate`` and so sits above it). The command's description is ``evaluate``'s."""

from __future__ import annotations

import argparse
import sys

from erp_sim.agents.command_line import PlainDefaultsHelpFormatter, refuse
from erp_sim.agents.evaluation import evaluate
from erp_sim.agents.evaluation.eval_options import add_common_arguments, parse_configs
from erp_sim.agents.evaluation.sequential import run_sequential, with_memory_dir
from erp_sim.agents.policies import PRESETS

DEFAULT_CONFIGS = ["C1", "C2", "C3", "C4"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim eval", description=evaluate.__doc__.splitlines()[0], formatter_class=PlainDefaultsHelpFormatter
    )
    parser.add_argument(
        "--configs",
        default=None,
        help=f"comma-separated presets ({', '.join(PRESETS)}); None: C1-C4 unless --policy is given",
    )
    parser.add_argument("--policy", action="append", default=[], help="a policy spec, e.g. last_n:n=5 (repeatable)")
    add_common_arguments(parser)
    # -- long-term memory across episodes (erp_sim.agents.evaluation.sequential) --
    parser.add_argument("--memory", metavar="DIR", help="memory store (directory or *.sqlite) for ga_memory policies")
    parser.add_argument(
        "--sequential", action="store_true", help="tasks in order, memory carried over; adds a learning curve"
    )
    parser.add_argument(
        "--consolidator", default="deterministic", help="deterministic | API:MODEL (with --sequential; API as --agent)"
    )
    args = parser.parse_args(argv)
    if args.sequential:
        if len(args.policy) != 1 or args.configs:
            parser.error("--sequential takes exactly one --policy (with a ga_memory layer) and no --configs")
        try:
            return run_sequential(args, args.policy[0])
        except ValueError as exc:
            refuse(parser, exc)
    if args.memory:
        try:
            args.policy = [with_memory_dir(spec, args.memory) for spec in args.policy]
        except ValueError as exc:
            refuse(parser, exc)
    names = args.configs.split(",") if args.configs else ([] if args.policy else DEFAULT_CONFIGS)
    try:
        configs = parse_configs([n for n in names if n], args.policy, args.user)
    except ValueError as exc:  # a bad preset name or policy spec: the message lists what exists
        refuse(parser, exc)
    return evaluate.run_from_args(args, configs)


if __name__ == "__main__":
    sys.exit(main())
