"""Start-up stays light: heavy libraries load where they are used, not at import.

No timings here (scripts/bench_startup.py prints them); these tests check which modules a fresh
process has loaded after each entry point, so a stray top-level import shows up as a failure.
"""

from __future__ import annotations

import json
import subprocess
import sys

import erp_sim

HEAVY = (
    "sqlalchemy",
    "sqlmodel",
    "faker",
    "numpy",
    "scipy",
    "matplotlib",
    "openai",
    "fastmcp",
    "mcp",
    "bpe_openai",
    "gymnasium",
    "agents",
    "httpx",
    "uvicorn",
    "starlette",
    "tqdm",
    "orjson",
    "pydantic",
    "sqlite3",
)


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nimport json; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1])) & set(HEAVY)


def test_import_erp_sim_loads_no_heavy_library():
    assert loaded_after("import erp_sim") == set()


def test_cli_help_loads_no_heavy_library():
    code = (
        "import contextlib, io\nfrom erp_sim.agents.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])"
    )
    assert loaded_after(code) == set()


def test_first_gym_make_leaves_the_simulator_for_reset():
    # gym.make checks its arguments (task set, faults, verbosity) without the model or database layer
    made = loaded_after(
        "import gymnasium as gym, erp_sim.envs\ngym.make('erp_sim/ExpenseItemization-v0', task_set='Meals', "
        "faults='rate=0.1,seed=2', verbosity='compact')"
    )
    assert made <= {"gymnasium", "numpy"}, made
    reset = loaded_after(
        "import gymnasium as gym, erp_sim.envs\ngym.make('erp_sim/ExpenseItemization-v0').reset(seed=0)"
    )
    assert {"pydantic", "sqlite3"} <= reset
    assert "faker" not in reset  # only fixture generation needs it
    assert not {"sqlalchemy", "sqlmodel"} & reset  # the schema is read from its compiled copy


def test_an_eval_worker_loads_no_report_library():
    # a spawned worker imports the module of run_spec: statistics and plots are the parent's, at the report
    assert loaded_after("from erp_sim.agents.evaluation import evaluate") <= {"numpy", "pydantic", "sqlite3"}


def test_every_public_name_resolves():
    for name in erp_sim.__all__:
        assert getattr(erp_sim, name) is not None, name
    assert set(erp_sim.__all__) <= set(dir(erp_sim))
    namespace: dict = {}
    exec("from erp_sim import *", namespace)
    assert {"ErpSession", "TOOLS", "open_session", "Grade"} <= set(namespace)
