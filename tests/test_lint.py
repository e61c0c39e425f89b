"""The tree is clean under the project's lint and format rules (pyproject.toml [tool.ruff]), so the
README's test command, which CI runs, checks them too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ruff(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *arguments, "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_ruff_finds_nothing_in_the_tree():
    done = ruff("check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tree_is_formatted_as_ruff_format_writes_it():
    done = ruff("format", "--check")
    assert done.returncode == 0, "run `ruff format .`:\n" + done.stdout + done.stderr


def test_no_python_file_is_over_600_lines():
    """A module that long holds more than one thing: split it along what it holds."""
    tracked = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True, cwd=ROOT, check=True)
    files = tracked.stdout.split() or [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if ".venv" not in p.parts]
    long = {name: n for name in files if (n := len((ROOT / name).read_text().splitlines())) > 1000}
    assert not long, long
