"""The tree is clean under the project's lint and format rules (pyproject.toml [tool.ruff]), so the
README's test command checks them too, and no module outgrows the size guide."""

from __future__ import annotations

import subprocess
import sys
import warnings
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


# A size guide, not a reason to split a concept: a module past SIZE_NOTE lines is named in a warning (it may
# hold more than one thing), one past SIZE_LIMIT fails (fastmcp's cap).
SIZE_NOTE, SIZE_LIMIT = 600, 1000


class LongModuleWarning(UserWarning):
    """A module over SIZE_NOTE lines: worth a look at what it holds."""


def python_file_lengths() -> dict[str, int]:
    tracked = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True, cwd=ROOT, check=True)
    files = tracked.stdout.split() or [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if ".venv" not in p.parts]
    return {name: len((ROOT / name).read_text().splitlines()) for name in files}


def test_no_python_file_is_over_1000_lines_and_those_over_600_are_named():
    lengths = python_file_lengths()
    noted = {name: n for name, n in lengths.items() if SIZE_NOTE < n <= SIZE_LIMIT}
    if noted:
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(noted.items()))
        warnings.warn(LongModuleWarning(f"over {SIZE_NOTE} lines: {listed}"), stacklevel=1)
    too_long = {name: n for name, n in lengths.items() if n > SIZE_LIMIT}
    assert not too_long, f"over {SIZE_LIMIT} lines (split along what the module holds): {too_long}"
