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
import re
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


def check_tests_and_scripts(mypy: list[str]) -> int:
    """mypy on tests/ and scripts/ as pytest and ``python scripts/x.py`` import them.

    Test folders have no __init__.py: a test file is a module named by its basename (pytest's import mode
    needs those unique too), its folder is searched (same-folder imports), and MYPYPATH adds tests/ for
    the support modules (conftest puts tests/ on sys.path). mypy also searches its working directory, and
    the repository root holds agents/, which would shadow OpenAI's Agents SDK (import name ``agents``,
    used by tests/agents_sdk_checks.py): so this run works from .typecheck/, which holds only erp_sim.
    """
    env = {**os.environ, "MYPYPATH": str(ROOT / "tests")}
    run = subprocess.run(
        [
            *mypy,
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "tests-and-scripts"),  # its own: other flags than the package run
            "--no-check-untyped-defs",
            "--no-warn-unused-configs",  # the package run warns about the config
            "--disable-error-code=annotation-unchecked",  # unannotated tests are unchecked on purpose
            "--follow-imports=silent",
            "--no-explicit-package-bases",
            os.path.relpath(ROOT / "tests", TREE.parent),
            os.path.relpath(ROOT / "scripts", TREE.parent),
        ],
        cwd=TREE.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    # paths as from the repository root, like the package run's
    print(re.sub(r"^\.\./", "", run.stdout, flags=re.MULTILINE), end="")
    print(run.stderr, end="", file=sys.stderr)
    return run.returncode


def main() -> int:
    build_tree()
    mypy = [sys.executable, "-m", "mypy"]
    package = subprocess.run(mypy, cwd=ROOT).returncode
    rest = check_tests_and_scripts(mypy)
    return package or rest


if __name__ == "__main__":
    sys.exit(main())
