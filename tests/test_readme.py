"""The README as written: every JSON block is one valid file, every Python block runs as a script
and prints something, and its test command is the one CI runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.S | re.M)
PYTHON = [code for kind, code in BLOCKS if kind == "python"]


def test_every_json_block_is_one_valid_file():
    blocks = [code for kind, code in BLOCKS if kind == "json"]
    assert len(blocks) >= 3
    for code in blocks:
        assert isinstance(json.loads(code), dict), code  # json.loads refuses two objects in one block


@pytest.mark.parametrize("code", PYTHON, ids=[f"block{i}" for i in range(len(PYTHON))])
def test_every_python_block_runs_as_a_script(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    missing = re.search(r"No module named '(trl|openenv|verifiers)'", done.stderr)
    if done.returncode and missing:  # a training example whose extra is not installed (CI installs them all)
        pytest.skip(f"the {missing.group(1)} extra is not installed")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "the block prints nothing when run as a script"


def test_the_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = [code for kind, code in BLOCKS if kind == "bash" and "pytest" in code]
    install = re.search(r'pip install (-e "\.\[[\w,]+\]")', command).group(1)
    assert f"pip install --quiet {install}" in ci
    assert ".venv/bin/python -m pytest -q" in command and ".venv/bin/python -m pytest -q\n" in ci
    assert "npx -y @modelcontextprotocol/inspector --cli" in README and "npx @modelcontextprotocol" not in README
