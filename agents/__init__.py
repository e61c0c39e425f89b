"""The agent harness, installed as ``erp_sim.agents``: chat models, agents, context policies,
the episode runner and the offline evaluation.

This folder is not an installed top-level package. From the repository root, where the current
directory is on ``sys.path``, ``import agents`` would still find it and hide OpenAI's Agents SDK
(also ``agents``), so when imported under that name it steps aside for the installed package.
"""

if __name__ == "agents":
    import importlib.machinery
    import importlib.util
    import sys
    from pathlib import Path

    _repository = Path(__file__).resolve().parent.parent
    _elsewhere = [entry for entry in sys.path if Path(entry or ".").resolve() != _repository]
    _spec = importlib.machinery.PathFinder.find_spec("agents", _elsewhere)
    if _spec is None or _spec.loader is None:
        raise ModuleNotFoundError("No module named 'agents' (this folder installs as erp_sim.agents)", name="agents")
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["agents"] = _module  # the import system returns what sys.modules holds after this file runs
    _spec.loader.exec_module(_module)
