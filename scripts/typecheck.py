#!/usr/bin/env python3
"""mypy over the installed layout: erp_sim with envs/ and agents/ as erp_sim.envs and erp_sim.agents.

setuptools' editable install maps those two folders with an import hook that mypy cannot follow, so this
builds .typecheck/erp_sim/ (links to every entry of erp_sim/, plus envs and agents) and checks it with
the [tool.mypy] settings of pyproject.toml: strict on the simulator (erp_sim/), checked on the envs and
the harness. Then tests/ and scripts/ (their unannotated test functions are not checked, and errors of
the modules they import are not repeated). An error in .typecheck/erp_sim/agents/x.py is one in
agents/x.py. Exit status: 0 when both runs are clean.

    .venv/bin/python scripts/typecheck.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".typecheck" / "erp_sim"


def build_tree() -> None:
    shutil.rmtree(TREE.parent, ignore_errors=True)
    TREE.mkdir(parents=True)
    for entry in (ROOT / "erp_sim").iterdir():
        if entry.name != "__pycache__":
            (TREE / entry.name).symlink_to(os.path.relpath(entry, TREE))
    for folder in ("envs", "agents"):
        (TREE / folder).symlink_to(os.path.relpath(ROOT / folder, TREE))


def main() -> int:
    build_tree()
    mypy = [sys.executable, "-m", "mypy"]
    package = subprocess.run(mypy, cwd=ROOT).returncode
    # Test files are modules named by their basename (tests/ folders have no __init__.py): without explicit
    # package bases, tests/simulator/forms/test_x.py is `test_x`, its folder is searched (same-folder test
    # imports), and MYPYPATH adds tests/ for the support modules.
    env = {**os.environ, "MYPYPATH": str(ROOT / "tests")}
    rest = subprocess.run(
        [
            *mypy,
            "--no-check-untyped-defs",
            "--follow-imports=silent",
            "--no-explicit-package-bases",
            "tests",
            "scripts",
        ],
        cwd=ROOT,
        env=env,
    ).returncode
    return package or rest


if __name__ == "__main__":
    sys.exit(main())
