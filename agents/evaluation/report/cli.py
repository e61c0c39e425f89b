"""``erp-sim report DIR``: write DIR/report.md and the plots from DIR/results.jsonl (``--view``: and the run page)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from erp_sim.agents.command_line import PlainDefaultsHelpFormatter, usage_errors
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.costs import add_price_argument, checked_prices
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, load_results, results_dir
from erp_sim.agents.evaluation.report import write_report
from erp_sim.agents.evaluation.report.formats import plural


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim report", description=__doc__, formatter_class=PlainDefaultsHelpFormatter
    )
    parser.add_argument(
        "results_dir",
        type=results_dir,
        help="a directory with results.jsonl (written by erp-sim eval or sweep), or the file",
    )
    parser.add_argument("--baseline", help="configuration to compare against (None: C2, else the first)")
    add_price_argument(parser)
    parser.add_argument("--view", action="store_true", help="also write the run page, view.html (else: erp-sim view)")
    args = parser.parse_args(argv)
    with usage_errors(parser):
        prices = checked_prices(args.price)
    if not (Path(args.results_dir) / RESULTS_FILE).is_file():
        print(
            f"erp-sim report: {args.results_dir} has no {RESULTS_FILE} (pass the folder erp-sim eval --out wrote, or "
            "its results.jsonl)",
            file=sys.stderr,
        )
        return 2
    rows, refused = load_results(args.results_dir)
    for problem in refused:  # one line each, naming the line: a renamed field is not a silent NaN
        print(f"erp-sim report: skipped {problem}", file=sys.stderr)
    if not rows:
        print(f"erp-sim report: no results in {Path(args.results_dir) / RESULTS_FILE}", file=sys.stderr)
        return 2
    path = write_report(args.results_dir, baseline=args.baseline, prices=prices, view=args.view)
    skipped = f" ({len(refused)} malformed lines skipped)" if refused else ""
    print(f"{plural(len(latest_attempts(rows)), 'episode')}{skipped}; wrote {path}")
    return 0
