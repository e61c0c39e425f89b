"""``erp-sim report DIR``: write DIR/report.md and the plots from DIR/results.jsonl."""

from __future__ import annotations

import argparse

from erp_sim.agents.evaluation.report import load_results, write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="erp-sim report", description=__doc__)
    parser.add_argument("results_dir", help="a directory with results.jsonl (written by erp-sim eval or sweep)")
    parser.add_argument("--baseline", help="configuration to compare against (default C2, else the first)")
    args = parser.parse_args(argv)
    rows, malformed = load_results(args.results_dir)
    if not rows:
        parser.error(f"no results in {args.results_dir}/results.jsonl")
    path = write_report(args.results_dir, baseline=args.baseline)
    print(f"{len(rows)} episodes{f' ({malformed} malformed lines skipped)' if malformed else ''}; wrote {path}")
    return 0
