"""The tree is clean under mypy as pyproject.toml [tool.mypy] configures it (strict on erp_sim/, checked on
envs/ and agents/, then tests/ and scripts/), run the way scripts/typecheck.py runs it.

Skipped where scripts/typecheck.py has already passed on this very tree and these installed packages (its
stamp, .typecheck/clean, says so): CI's lint stage runs it before the README's test command, which then
does not run mypy a second time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TYPECHECK = [sys.executable, str(ROOT / "scripts" / "typecheck.py")]


def test_mypy_finds_nothing_in_the_tree():
    if subprocess.run([*TYPECHECK, "--stamp-matches"], cwd=ROOT, timeout=120).returncode == 0:
        pytest.skip("scripts/typecheck.py passed on this tree already (its stamp .typecheck/clean matches)")
    done = subprocess.run(TYPECHECK, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
