"""The folders envs/ and agents/ install as erp_sim.envs and erp_sim.agents, never as top-level names."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, cwd: Path, *flags: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **env},
    )


def test_no_generic_top_level_names_are_installed(tmp_path):
    done = run_python(
        "import importlib.util as u; import erp_sim.envs, erp_sim.agents.runner;"
        "print(getattr(u.find_spec('agents'), 'origin', None), u.find_spec('envs'))",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    agents_origin, envs_spec = done.stdout.split()
    assert envs_spec == "None"
    # `agents` is either absent or another package (the dev extra installs OpenAI's Agents SDK).
    assert agents_origin == "None" or not Path(agents_origin).resolve().is_relative_to(ROOT / "agents")


def test_from_the_repository_root_agents_is_another_package(tmp_path):
    # Without another `agents` installed (-S: not even site-packages, where the dev extra puts
    # OpenAI's Agents SDK), the repository's folder does not pose as one ...
    alone = run_python("import agents", ROOT, "-S")
    assert "No module named 'agents' (this folder installs as erp_sim.agents)" in alone.stderr
    # ... and with one installed (a stand-in for OpenAI's Agents SDK), that one is imported.
    sdk = tmp_path / "site" / "agents"
    sdk.mkdir(parents=True)
    (sdk / "__init__.py").write_text("Agent = 'the SDK'\n")
    (sdk / "mcp.py").write_text("MCPServerStdio = 'stdio client'\n")
    done = run_python(
        "from agents import Agent; from agents.mcp import MCPServerStdio; import erp_sim.agents.runner;"
        "print(Agent, '/', MCPServerStdio)",
        cwd=ROOT,
        PYTHONPATH=str(tmp_path / "site"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the SDK / stdio client"


@pytest.mark.xdist_group("wheel")  # pip wheel builds in the source tree (build/, *.egg-info)
def test_the_wheel_holds_only_the_erp_sim_package(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("erp_sim-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert top_level == {"erp_sim"}
    for module in (
        "erp_sim/envs/expense_env.py",
        "erp_sim/agents/__init__.py",
        "erp_sim/agents/evaluation/evaluate.py",
        "erp_sim/agents/models/openai_chat.py",
        "erp_sim/workflows/itemization/user_context.md",
        "erp_sim/mcp/server.py",
        "erp_sim/agents/acon/optimize.py",
        "erp_sim/agents/acon/prompts/update.md",
        "erp_sim/odata/writes.py",
        "erp_sim/database/sql_sandbox.py",
        "erp_sim/workflows/itemization/forms/itemization.py",
        "erp_sim/data/world_names.json",
        "erp_sim/workflows/itemization/schema.json",
        "erp_sim/workflows/itemization/rules.md",
    ):  # the world's name lists and the compiled schema (every reset reads them), and the workflow's rules
        assert module in names
    # every module and data file of the three folders, under its installed name (a package or a folder of
    # prompts or viewer files left out of pyproject's lists would be missing here, and only here)
    tracked = subprocess.run(
        ["git", "ls-files", "erp_sim", "envs", "agents"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.split()
    installed = {"envs": "erp_sim/envs", "agents": "erp_sim/agents"}
    expected = {installed.get(path.split("/")[0], "erp_sim") + "/" + path.split("/", 1)[1] for path in tracked}
    assert expected - set(names) == set()
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)  # pyproject's license = "MIT"


def test_no_module_imports_the_folders_by_their_top_level_names():
    # From the repository root `envs` and `agents` resolve to the folders, so such an import passes
    # the tests there and fails in every installed copy.
    import ast

    offenders = []
    for path in [
        *ROOT.glob("erp_sim/**/*.py"),
        *ROOT.glob("envs/**/*.py"),
        *ROOT.glob("agents/**/*.py"),
        *ROOT.glob("scripts/*.py"),
        *ROOT.glob("tests/**/*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                else []
            )
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {name}"
                for name in names
                if name.split(".")[0] in ("envs", "agents") and path.name != "agents_sdk_checks.py"
            ]
    assert offenders == []


def test_the_tests_folder_on_sys_path_does_not_shadow_the_package(tmp_path):
    """pytest puts tests/ on sys.path (its conftest's folder); the `pytest` console script, unlike
    `python -m pytest`, does not put the repository root there too. A folder tests/erp_sim then made
    `erp_sim` a namespace package ahead of the editable install, and every test failed to import."""
    script = tmp_path / "imports.py"  # a script: sys.path[0] is its own folder, not the repository
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import erp_sim.forms\nprint(erp_sim.forms.__file__)\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(ROOT / "erp_sim")
