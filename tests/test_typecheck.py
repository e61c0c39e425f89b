"""The tree is clean under mypy as pyproject.toml [tool.mypy] configures it (strict on erp_sim/, checked on
envs/ and agents/, then tests/ and scripts/), run the way scripts/typecheck.py runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_nothing_in_the_tree():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "typecheck.py")], capture_output=True, text=True, cwd=ROOT, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
