"""Issue 35's floor plan, read from the source tree (tests/import_graph.py parses it; nothing is imported),
so the rules hold for whatever packages the tree has.

- Private names. A name with a leading underscore (not a dunder) is private to its package, the folder it
  lies in: the modules of one folder may share their internals, a module of any other folder (a sibling,
  a subpackage, the parent) may not take them, by ``from m import _x``, by importing a private module
  (``m._mod``) or by ``m._x`` on an imported module. tests/ and scripts/ are not packages of the library and
  may reach privates for white-box tests and benchmarks.
- Circles. Imports at module level count: those that run at import time and those under
  ``if TYPE_CHECKING:`` (a circle closed only for annotations is still two modules that need each other,
  and wants a module below both, e.g. a Protocol). Imports inside functions do not (lazy loads).
- Layers. ``LAYERS``: the simulator (erp_sim/) imports nothing of envs/ and agents/, envs/ nothing of
  agents/; ``AGENTS_LAYERS`` orders the harness. An import into a later layer is refused wherever it runs,
  inside a function and under ``if TYPE_CHECKING:`` included.

Each rule is also tested on a small tree of its own, so a rule that could never fail would be seen.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from import_graph import (
    Layers,
    find_modules,
    layer_of,
    module_level_circles,
    private_imports_across_packages,
    read_graph,
    upward_imports,
)

# Lowest first, by installed name (longest prefix wins).
LAYERS: Layers = [("simulator", ("erp_sim",)), ("envs", ("erp_sim.envs",)), ("agents", ("erp_sim.agents",))]

MODEL_BACKENDS = ("backend", "azure", "openai_chat", "openai_responses", "anthropic_messages")

# The harness, lowest first: names relative to erp_sim.agents, each a module or a package with all below
# it (the longest prefix wins, so "evaluation.failures" may sit below "evaluation"); "" is agents/__init__.
# A module may import its own layer and those above it in this list, never one below.
AGENTS_LAYERS: Layers = [
    # what every layer reads: message, agent and harness-tool types, the command-line helpers
    ("types", ("types", "command_line")),
    ("tokens", ("tokens",)),  # o200k counts, the shared prefix, the prompt cache
    # the model roles' names and settings, request turns, claimed prefixes, record/replay: what every backend reads
    ("models", ("models",)),
    # one backend per model API, over the shared failure table and retries (models.backend)
    ("model backends", tuple(f"models.{name}" for name in MODEL_BACKENDS)),
    ("model factory", ("models.factory",)),  # a role's API:MODEL to its backend's model
    ("facts and summarizers", ("expense_facts", "summarizers")),  # what the structured summaries read
    ("memory", ("memory",)),  # the store, its tools and consolidation; the ga_memory policy sits in policies
    ("policies", ("policies",)),
    ("agents", ("scripted", "model_agent", "llm_user")),
    ("runner and trajectory", ("trajectory", "failures", "runner")),
    ("evaluation", ("evaluation",)),
    ("acon", ("acon",)),
    ("commands", ("cli", "demo", "")),
]


@pytest.fixture(scope="module")
def graph():
    return read_graph()


def listing(findings: list[str]) -> str:
    return f"{len(findings)}:\n" + "\n".join(findings)


def test_no_private_name_is_imported_across_packages(graph):
    found = private_imports_across_packages(graph)
    assert not found, listing(found)


def test_no_import_circle_at_module_level(graph):
    found = module_level_circles(graph)
    assert not found, listing(found)


def test_simulator_envs_and_agents_only_import_down(graph):
    found = upward_imports(graph, LAYERS)
    assert not found, listing(found)


def test_the_harness_layers_only_import_down(graph):
    found = upward_imports(graph, AGENTS_LAYERS, base="erp_sim.agents")
    assert not found, listing(found)


def test_every_module_has_a_layer(graph):
    """A new module of the harness gets a place in AGENTS_LAYERS (else its imports would go unchecked)."""
    unplaced = [name for name in graph.modules if layer_of(name, LAYERS) is None]
    unplaced += [
        name
        for name in graph.modules
        if name.startswith("erp_sim.agents") and layer_of(name, AGENTS_LAYERS, "erp_sim.agents") is None
    ]
    assert not unplaced, unplaced


# The reading of the tree, on a small tree of its own: each rule finds what it should and only that.


def write_tree(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"erp_sim.envs" = "envs"\n')
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def small_tree(tmp_path):
    write_tree(
        tmp_path,
        {
            "erp_sim/__init__.py": "",
            "erp_sim/core.py": """\
                from typing import TYPE_CHECKING
                from erp_sim.helpers import _shared, public
                if TYPE_CHECKING:
                    from erp_sim.session import Session
                def later():
                    from erp_sim.envs.env import Env  # function-local, but upward
                """,
            "erp_sim/helpers.py": "import erp_sim.session\n_shared = public = 1\n",
            "erp_sim/session.py": "from erp_sim import core\n",
            "erp_sim/forms/__init__.py": "",
            "erp_sim/forms/base.py": """\
                import erp_sim.helpers
                from erp_sim.forms import _registry
                from erp_sim import helpers as h
                def f():
                    return h._shared, erp_sim.helpers._shared, h.public
                """,
            "erp_sim/forms/_registry.py": "",
            "envs/__init__.py": "",
            "envs/env.py": """\
                from erp_sim.forms import base
                from erp_sim.forms._registry import x
                def g():
                    from erp_sim import core  # a local import closes no circle
                    return base._hidden
                """,
        },
    )
    return read_graph(tmp_path)


def test_modules_are_named_as_installed(small_tree):
    assert set(small_tree.modules) == {
        "erp_sim",
        "erp_sim.core",
        "erp_sim.helpers",
        "erp_sim.session",
        "erp_sim.forms",
        "erp_sim.forms.base",
        "erp_sim.forms._registry",
        "erp_sim.envs",
        "erp_sim.envs.env",
    }
    assert small_tree.modules["erp_sim.forms"].package == "erp_sim.forms"
    assert small_tree.modules["erp_sim.forms.base"].package == "erp_sim.forms"


def test_private_names_across_packages_are_found_and_within_one_are_not(small_tree):
    found = private_imports_across_packages(small_tree)
    assert found == [
        "envs/env.py:2: erp_sim.envs.env uses erp_sim.forms._registry (from-import)",
        "envs/env.py:5: erp_sim.envs.env uses erp_sim.forms.base._hidden (attribute)",
        "erp_sim/forms/base.py:5: erp_sim.forms.base uses erp_sim.helpers._shared (attribute)",
    ]  # core's `_shared` and forms.base's `_registry` stay within their packages


def test_circles_count_type_checking_imports_but_not_local_ones(small_tree):
    (circle,) = module_level_circles(small_tree)
    assert circle.splitlines()[0] == (
        "erp_sim.core, erp_sim.helpers, erp_sim.session (shortest: erp_sim.core -> erp_sim.session -> erp_sim.core)"
    )
    assert "erp_sim/core.py:4 (type) erp_sim.core -> erp_sim.session" in circle
    assert "envs" not in circle


def test_upward_imports_are_found_wherever_they_run(small_tree):
    assert upward_imports(small_tree, LAYERS) == [
        "erp_sim/core.py:6 (local) simulator -> envs: erp_sim.core imports erp_sim.envs.env (Env)"
    ]
    assert upward_imports(small_tree, [("low", ("helpers",)), ("high", ("session",))], "erp_sim") == [
        "erp_sim/helpers.py:1 (top) low -> high: erp_sim.helpers imports erp_sim.session"
    ]


def test_the_longest_prefix_names_the_layer():
    layers: Layers = [("low", ("evaluation.failures", "")), ("high", ("evaluation",))]
    assert layer_of("erp_sim.agents.evaluation.failures", layers, "erp_sim.agents") == "low"
    assert layer_of("erp_sim.agents.evaluation.report", layers, "erp_sim.agents") == "high"
    assert layer_of("erp_sim.agents", layers, "erp_sim.agents") == "low"
    assert layer_of("erp_sim.agents.runner", layers, "erp_sim.agents") is None


def test_the_tree_read_is_the_installed_tree():
    """Every package read here is one that setuptools installs (pyproject.toml's packages)."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    packages = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {module.name for module in find_modules().values() if module.is_package}
    assert found <= packages, found - packages
