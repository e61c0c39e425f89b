"""``erp-sim sweep``: a grid over context-policy parameters (the study's N x W sensitivity analysis).

    erp-sim sweep --family last_n_summary --grid n=3,5,7 --grid w=1,3,-1 --runs 1

Each grid point becomes one configuration named by its policy spec; the results go to one
directory, and the report adds the N x W tables and heatmap.
"""

from __future__ import annotations

import argparse
import itertools

from erp_sim.agents.command_line import PlainDefaultsHelpFormatter, refuse, usage_errors
from erp_sim.agents.evaluation.eval_options import add_common_arguments
from erp_sim.agents.evaluation.evaluate import command_text, run_from_args
from erp_sim.agents.policies import parse_policy


def grid_specs(family: str, grid: list[str], fixed: str = "") -> list[str]:
    """``["n=3,5", "w=1,3"]`` -> ``["family:n=3,w=1", ...]``, each validated by the policy parser."""
    axes = []
    for axis in grid:
        name, _, values = axis.partition("=")
        if not name or not values:
            raise ValueError(f"--grid {axis!r}: expected NAME=V1,V2,...")
        axes.append([f"{name.strip()}={v.strip()}" for v in values.split(",") if v.strip()])
    specs = []
    for point in itertools.product(*axes):
        params = ",".join([*point, *([fixed] if fixed else [])])
        specs.append(parse_policy(f"{family}:{params}").spec)
    return specs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim sweep", description=__doc__.splitlines()[0], formatter_class=PlainDefaultsHelpFormatter
    )
    parser.add_argument("--family", default="last_n_summary", help="policy name to sweep")
    parser.add_argument(
        "--grid", action="append", default=None, help="NAME=V1,V2,... (repeatable; None: n=3,5,7 and w=1,3,-1)"
    )
    parser.add_argument("--fixed", default="", help="parameters held fixed, e.g. t=4096")
    add_common_arguments(parser)
    parser.set_defaults(runs=1, out="runs/sweep")
    args = parser.parse_args(argv)
    args.command = command_text(parser.prog, argv)
    try:
        specs = grid_specs(args.family, args.grid or ["n=3,5,7", "w=1,3,-1"], args.fixed)
    except ValueError as exc:
        refuse(parser, exc)
    with usage_errors(parser):
        return run_from_args(args, [(spec, spec, args.user) for spec in specs])
