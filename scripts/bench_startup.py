"""Start-up times: `import erp_sim`, `erp-sim --help` and the first `gym.make`, each in a fresh process.

    python scripts/bench_startup.py [--runs 9]

Prints the median wall time of several cold subprocess runs of each, next to a bare interpreter
(`python -c pass`) measured in the same loop as the baseline, and the time spent inside the
process on the work itself (measured by the child around its imports and `gym.make`), in wall time
and in CPU time (what a loaded machine inflates less). Targets: `import erp_sim` and `erp-sim
--help` under 0.3 s, the first `gym.make` under 0.5 s, the first `gym.make` + `reset` under 0.5 s.
Find what an import costs with `python -X importtime -c "import erp_sim"`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = str(Path(sys.executable).parent / "erp-sim")
# Each child prints the seconds its own work took (after the interpreter itself started).
TIMED = (
    "import time; t, c = time.perf_counter(), time.process_time(); {work}; "
    "print(time.perf_counter() - t, time.process_time() - c)"
)
CASES = {
    "python -c pass (baseline)": [sys.executable, "-c", TIMED.format(work="pass")],
    "import erp_sim": [sys.executable, "-c", TIMED.format(work="import erp_sim")],
    "erp-sim --help": [
        sys.executable,
        "-c",
        TIMED.format(
            work="import sys, contextlib, io; sys.argv = ['erp-sim', '--help']; from erp_sim.agents.cli import main; "
            "f = io.StringIO(); ctx = contextlib.redirect_stdout(f); ctx.__enter__(); main(); ctx.__exit__(None, None, None)"
        ),
    ],
    "erp-sim --help (script)": [CLI, "--help"],
    "import gymnasium (alone)": [sys.executable, "-c", TIMED.format(work="import gymnasium")],
    "first gym.make": [
        sys.executable,
        "-c",
        TIMED.format(work="import gymnasium as gym, erp_sim.envs; gym.make('erp_sim/ExpenseItemization-v0')"),
    ],
    "first gym.make + reset": [
        sys.executable,
        "-c",
        TIMED.format(
            work="import gymnasium as gym, erp_sim.envs; gym.make('erp_sim/ExpenseItemization-v0').reset(seed=0)"
        ),
    ],
}
TARGETS = {
    "import erp_sim": 0.3,
    "erp-sim --help": 0.3,
    "erp-sim --help (script)": 0.3,
    "first gym.make": 0.5,
    "first gym.make + reset": 0.5,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    walls: dict[str, list[float]] = {name: [] for name in CASES}
    inside: dict[str, list[float]] = {name: [] for name in CASES}
    inside_cpu: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.runs):  # interleaved, so load on the machine hits every case alike
        for name, command in CASES.items():
            start = time.perf_counter()
            # from a neutral folder: run in a checkout, `python -c` would import that checkout's erp_sim first
            done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
            walls[name].append(time.perf_counter() - start)
            if not command[0].endswith("erp-sim"):
                wall_inside, cpu_inside = done.stdout.strip().splitlines()[-1].split()
                inside[name].append(float(wall_inside))
                inside_cpu[name].append(float(cpu_inside))
    base = statistics.median(walls["python -c pass (baseline)"])
    print(f"{args.runs} cold runs each, medians; python {sys.version.split()[0]} at {sys.executable}")
    print(
        f"{'case':<28}{'wall s':>8}{'x base':>8}{'wall-base s':>13}{'in-process s':>14}{'its CPU s':>11}{'target s':>10}"
    )
    for name in CASES:
        wall = statistics.median(walls[name])
        work = f"{statistics.median(inside[name]):.3f}" if inside[name] else "-"
        cpu = f"{statistics.median(inside_cpu[name]):.3f}" if inside_cpu[name] else "-"
        target = f"{TARGETS[name]:.1f}" if name in TARGETS else ""
        print(f"{name:<28}{wall:8.3f}{wall / base:8.2f}{wall - base:13.3f}{work:>14}{cpu:>11}{target:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
