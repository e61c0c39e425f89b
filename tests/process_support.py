"""Test helper shared by several test folders: code run in a fresh interpreter (what a new process loads)."""

from __future__ import annotations

import subprocess
import sys


def fresh_python(code: str, timeout: float = 120) -> str:
    """What ``python -c code`` prints in a fresh interpreter (this one); it must exit 0 (else its stderr fails)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout
