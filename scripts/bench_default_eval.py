"""The default job's CPU (``erp-sim eval`` on the embedded defaults) beside a baseline install, in one run.

Runs ``erp-sim eval --quiet`` (C1-C4, scripted agent, hotel_50, one process per core) with this checkout's
interpreter and, when given, a baseline's (``--baseline-python``: the interpreter of an environment where
another version of erp-sim is installed, e.g. main's), interleaved, ``--repeats`` rounds, each into a fresh
folder of the same name (the run page's title is the folder's name). Prints each run's CPU time (user +
system of the eval and all its workers, from ``os.wait4``), wall time and peak RSS, their medians, the ratio
to the baseline (target: at most 0.6), and which output files differ from the baseline's once each run's
own clock readings are left out (``timing`` in results and trajectories, the wall-time column of
``report.md``); trajectories are compared as JSON values, so a change of whitespace or compression shows
apart ("same JSON") from a change of content.

    .venv/bin/python scripts/bench_default_eval.py --baseline-python /tmp/main/.venv/bin/python --repeats 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WALL_COLUMN = re.compile(r"\| [\d.]+ \[[\d.]+, [\d.]+\] s \|")  # report.md's episode wall-time cell


def run_eval(python: str, out: Path, args: list[str]) -> dict[str, float]:
    """One default job: CPU of the process tree (user + sys of it and its reaped children), wall, peak RSS."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cwd:  # a checkout's erp_sim is not imported from the working folder
        process = subprocess.Popen(
            [python, "-m", "erp_sim.agents.cli", "eval", "--out", str(out), "--quiet", *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(
            f"{python}: erp-sim eval failed: {process.stderr.read().decode()[-2000:] if process.stderr else ''}"
        )
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "rss_mb": usage.ru_maxrss / 1024}


def _without_timing(value: object) -> object:
    if isinstance(value, dict):
        return {key: _without_timing(item) for key, item in value.items() if key != "timing"}
    if isinstance(value, list):
        return [_without_timing(item) for item in value]
    return value


def _normalized(path: Path) -> object:
    """A file's content with the run's clock readings left out."""
    if path.name == "results.jsonl":
        return [_without_timing(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    if path.name.endswith(".json.gz"):
        return _without_timing(json.loads(gzip.decompress(path.read_bytes())))
    if path.name == "report.md":
        return WALL_COLUMN.sub("| (wall time) |", path.read_text(encoding="utf-8"))
    if path.name == "report.json":
        return _without_timing(json.loads(path.read_text(encoding="utf-8")))
    return path.read_bytes()


def compare_outputs(ours: Path, baseline: Path) -> list[str]:
    """Lines saying which files differ (or exist on one side only), trajectories summed up."""
    mine = {p.relative_to(ours) for p in ours.rglob("*") if p.is_file() and p.name != "eval.lock"}
    theirs = {p.relative_to(baseline) for p in baseline.rglob("*") if p.is_file() and p.name != "eval.lock"}
    lines = [f"only in this run: {p}" for p in sorted(mine - theirs)]
    lines += [f"only in the baseline's: {p}" for p in sorted(theirs - mine)]
    trajectories = {"same bytes": 0, "same JSON": 0, "different": 0}
    for relative in sorted(mine & theirs):
        a, b = ours / relative, baseline / relative
        same_bytes = a.read_bytes() == b.read_bytes()
        if relative.name.endswith(".json.gz"):
            same = _normalized(a) == _normalized(b)
            trajectories["same bytes" if same_bytes else "same JSON" if same else "different"] += 1
        elif not same_bytes:
            same = _normalized(a) == _normalized(b)
            lines.append(f"{relative}: {'same but for the clock readings' if same else 'differs'}")
    lines.append("trajectories: " + ", ".join(f"{n} {kind}" for kind, n in trajectories.items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", help="interpreter of an environment with the baseline erp-sim")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("eval_args", nargs="*", help="more erp-sim eval arguments (after --)")
    args = parser.parse_args(argv)
    paths = {"this checkout": sys.executable}
    if args.baseline_python:
        paths["baseline"] = args.baseline_python
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.repeats):  # interleaved: a slow spell of the machine spreads over both
            for name, python in paths.items():
                out = Path(scratch) / name.replace(" ", "-") / str(round_) / "eval"
                got = run_eval(python, out, args.eval_args)
                figures[name].append(got)
                print(
                    f"{name:<14} round {round_}: {got['cpu']:6.2f} s CPU, {got['wall']:6.2f} s wall, {got['rss_mb']:.0f} MB"
                )
        print()
        medians = {name: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for name, runs in figures.items()}
        for name, median in medians.items():
            print(
                f"{name:<14} median {median['cpu']:.2f} s CPU, {median['wall']:.2f} s wall, {median['rss_mb']:.0f} MB peak RSS"
            )
        if "baseline" in medians:
            ratio = medians["this checkout"]["cpu"] / medians["baseline"]["cpu"]
            print(f"CPU this checkout / baseline: {ratio:.2f} (target <= 0.6)")
            print("outputs against the baseline's (last round):")
            last = str(args.repeats - 1)
            for line in compare_outputs(
                Path(scratch) / "this-checkout" / last / "eval", Path(scratch) / "baseline" / last / "eval"
            ):
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
