#!/usr/bin/env python3
"""mypy over the installed layout: erp_sim with envs/ and agents/ as erp_sim.envs and erp_sim.agents.

setuptools' editable install maps those two folders with an import hook that mypy cannot follow, so this
builds .typecheck/erp_sim/ (links to every entry of erp_sim/, plus envs and agents) and checks it with
the [tool.mypy] settings of pyproject.toml: strict on the simulator (erp_sim/), checked on the envs and
the harness. Then tests/ and scripts/ (their unannotated test functions are not checked, and errors of
the modules they import are not repeated). An error in .typecheck/erp_sim/agents/x.py is one in
agents/x.py. Exit status: 0 when both runs are clean.

A clean run leaves a stamp, .typecheck/clean: a digest of what mypy read (the Python files of the tree,
pyproject.toml, the installed distributions and Python's version). ``--stamp-matches`` exits 0 when the
stamp holds for the tree as it is now, so tests/test_typecheck.py skips a second run of the same check
(CI's lint stage runs this script before the README's test command).

    .venv/bin/python scripts/typecheck.py [--stamp-matches]
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".typecheck" / "erp_sim"
STAMP = ROOT / ".typecheck" / "clean"
CHECKED = ("erp_sim", "envs", "agents", "tests", "scripts")


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


def inputs_digest() -> str:
    """What a run's result depends on: the tree's Python files (path and bytes), pyproject.toml, the
    installed distributions (name and version: stubs, plugins, mypy itself) and Python's version."""
    from importlib.metadata import distributions

    digest = hashlib.sha256(sys.version.encode())
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions())
    digest.update("\n".join(installed).encode())
    for path in [ROOT / "pyproject.toml", *sorted(p for folder in CHECKED for p in (ROOT / folder).rglob("*.py"))]:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def main(arguments: list[str]) -> int:
    if arguments == ["--stamp-matches"]:
        return 0 if STAMP.is_file() and STAMP.read_text() == inputs_digest() else 1
    if arguments:
        print("usage: typecheck.py [--stamp-matches]", file=sys.stderr)
        return 2
    before = inputs_digest()
    build_tree()
    mypy = [sys.executable, "-m", "mypy"]
    package = subprocess.run(mypy, cwd=ROOT).returncode
    rest = check_tests_and_scripts(mypy)
    if not (package or rest) and inputs_digest() == before:  # nothing changed while mypy read the tree
        STAMP.write_text(before)
    return package or rest


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
