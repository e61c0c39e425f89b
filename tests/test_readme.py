"""The README and the docs/ pages as written: every JSON block is one valid file, every Python block runs
as a script and prints something, the README's test command is the one CI runs, every docs/ page is
linked from the README and every relative link resolves (to a file, and to a heading when it names one)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXT = {page: page.read_text() for page in PAGES}
README = TEXT[ROOT / "README.md"]


def blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


BLOCKS = blocks(README)
PYTHON = [
    (f"{name(page)}:block{i}", code)
    for page in PAGES
    for i, code in enumerate(code for kind, code in blocks(TEXT[page]) if kind == "python")
]


def test_every_json_block_is_one_valid_file():
    found = [code for page in PAGES for kind, code in blocks(TEXT[page]) if kind == "json"]
    assert len(found) >= 3
    for code in found:
        assert isinstance(json.loads(code), dict), code  # json.loads refuses two objects in one block


@pytest.mark.parametrize("code", [code for _, code in PYTHON], ids=[block_id for block_id, _ in PYTHON])
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
    everything = "".join(TEXT.values())
    assert (
        "npx -y @modelcontextprotocol/inspector --cli" in everything and "npx @modelcontextprotocol" not in everything
    )


def test_every_docs_page_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(([^)#\s]+)", README))
    assert len(PAGES) > 1
    for page in PAGES[1:]:
        assert name(page) in linked, f"{name(page)} is not linked from README.md"


def anchors(text: str) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens (headings in code blocks are not headings)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    headings = re.findall(r"^#+ (.+)$", prose, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_resolves():
    checked = 0
    for page in PAGES:
        prose = re.sub(r"^```.*?^```", "", TEXT[page], flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not relative
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.is_file(), f"{name(page)}: {target} does not resolve"
            if anchor and file.suffix == ".md":
                assert anchor in anchors(file.read_text()), f"{name(page)}: {target} names no heading"
            checked += 1
    assert checked >= len(PAGES) - 1
