"""erp-sim and OpenAI's Agents SDK (``openai-agents``, import name ``agents``) in one environment.

The test venv holds both (the SDK is in the ``dev`` extra; erp-sim is an editable install): the
checks of tests/agents_sdk_checks.py run here. A second venv gets both wheels installed the
ordinary, non-editable way into one site-packages, erp-sim last and then reinstalled (which used
to empty the SDK's ``agents/__init__.py``), and runs the same checks as a script. The SDK's own MCP
clients (``MCPServerStdio``, ``MCPServerStreamableHttp``) drive ``erp-sim serve``; no model is needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytest.importorskip("agents.mcp", reason="openai-agents is not installed (pip install -e '.[dev]')")

import agents_sdk_checks as checks

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(checks.CHECKS))
def test_editable_install_beside_the_sdk(name, tmp_path):
    check = checks.CHECKS[name]
    assert check(tmp_path) if name.startswith("mcp") else check()


def test_from_the_repository_root_the_sdk_is_imported():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from agents import Agent, Runner; from agents.mcp import MCPServerStdio;"
            "import agents, erp_sim.agents.runner; print(agents.__file__)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "site-packages" in done.stdout and Path(done.stdout.strip()).parent != ROOT / "agents"


def pip(*args: str) -> subprocess.CompletedProcess:
    """This venv's pip (it reuses pip's cache)."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.extras  # a download, and a second venv
@pytest.mark.xdist_group("wheel")  # pip wheel builds in the source tree (build/, *.egg-info)
def test_non_editable_wheels_side_by_side(tmp_path):
    from importlib.metadata import version

    # The SDK's wheel, the version this venv holds, from the registry (or pip's cache).
    sdk = pip(
        "download", "--quiet", "--no-deps", "-d", str(tmp_path / "sdk"), f"openai-agents=={version('openai-agents')}"
    )
    if sdk.returncode != 0:
        pytest.skip(f"cannot download the openai-agents wheel (no package registry?): {sdk.stderr.strip()[-300:]}")
    built = pip("wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "erp"), str(ROOT))
    assert built.returncode == 0, built.stderr
    (sdk_wheel,), (erp_wheel,) = (tmp_path / "sdk").glob("*.whl"), (tmp_path / "erp").glob("*.whl")

    # A second venv; both wheels go into its own site-packages, installed by this venv's pip
    # (--python), the erp-sim wheel last and then once more.
    target = tmp_path / "venv"
    venv.create(target, with_pip=False, symlinks=os.name != "nt")
    python = target / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    for args in ([str(sdk_wheel)], [str(erp_wheel)], ["--force-reinstall", str(erp_wheel)]):
        done = pip("--python", str(python), "install", "--quiet", "--no-deps", "--no-index", *args)
        assert done.returncode == 0, done.stderr
    # Their dependencies (numpy, mcp, openai, ...) are this venv's, reached through a path entry
    # placed after the venv's own site-packages rather than installed a second time.
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    (site / "test_venv_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    sdk_init = site / "agents" / "__init__.py"
    assert "Agent" in sdk_init.read_text(), "reinstalling erp-sim emptied the SDK's agents/__init__.py"
    assert (site / "erp_sim" / "agents" / "runner.py").exists() and not (site / "envs").exists()
    script = tmp_path / "agents_sdk_checks.py"  # outside the repository: nothing of the checkout is on sys.path
    script.write_text(Path(checks.__file__).read_text())
    done = subprocess.run(
        [str(python), str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SDK at {site / 'agents'}" in done.stdout and f"harness at {site / 'erp_sim' / 'agents'}" in done.stdout
    assert "MCPServerStdio: 22 tools" in done.stdout and "MCPServerStreamableHttp: 22 tools" in done.stdout
