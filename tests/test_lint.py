"""The tree is clean under the project's lint rules (pyproject.toml [tool.ruff]), so the README's test
command, which CI runs, checks them too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing_in_the_tree():
    pytest.importorskip("ruff", reason="ruff comes with the dev extra")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
