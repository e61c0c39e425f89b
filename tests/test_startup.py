"""Start-up stays light: heavy libraries load where they are used, not at import.

No timings here (scripts/bench_startup.py prints them); these tests check which modules a fresh
process has loaded after each entry point, so a stray top-level import shows up as a failure. The
other half (issue 35, item 5): modules import at their top, and the laziness that keeps these entry
points light sits in the facades and in named loaders (tests/import_graph.py's ``stray_local_imports``),
so a scattered function-local import shows up as a failure too.
"""

from __future__ import annotations

import json
import textwrap

from import_graph import stray_local_imports
from process_support import fresh_python

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

#: The lazy facades: ``import erp_sim`` and the envs' names resolve on first use, the CLI imports a
#: subcommand's module when it runs.
FACADES = {"erp_sim", "erp_sim.envs", "erp_sim.agents.cli"}


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nimport json; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    return set(json.loads(fresh_python(probe).strip().splitlines()[-1])) & set(HEAVY)


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


def test_function_local_imports_are_in_the_facades_and_named_loaders_only():
    found = stray_local_imports(FACADES)
    assert not found, f"{len(found)} (import at the module's top, or behind one loader):\n" + "\n".join(found)


def test_a_scattered_local_import_is_found_and_a_loader_or_a_probe_is_not(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"erp_sim.envs" = "envs"\n')
    (tmp_path / "erp_sim").mkdir()
    (tmp_path / "erp_sim" / "__init__.py").write_text("def lazy():\n    import json\n")  # a facade
    (tmp_path / "erp_sim" / "plots.py").write_text(
        textwrap.dedent(
            '''\
            def pyplot():
                """pyplot, imported on first use: a worker need not load it (tests/test_startup.py)."""
                import matplotlib.pyplot

                return matplotlib.pyplot


            def unnamed():
                """Imported on first use, but no reason given."""
                import numpy

                return numpy


            def plot(rows):
                import matplotlib  # scattered

                return [row for row in rows]


            def big():
                """scipy, imported on first use (scripts/bench_startup.py), in a function that does more."""
                from scipy import stats

                a = 1
                b = 2
                c = 3
                return stats, a, b, c


            def complete():
                try:
                    import readline
                except ImportError:
                    return None
                return readline
            '''
        )
    )
    assert stray_local_imports({"erp_sim"}, tmp_path) == [
        "erp_sim/plots.py:10 unnamed: import numpy",
        "erp_sim/plots.py:16 plot: import matplotlib",
        "erp_sim/plots.py:23 big: from scipy import stats",
    ]
    assert stray_local_imports(set(), tmp_path)[0] == "erp_sim/__init__.py:2 lazy: import json"
