"""The toy second workflow (tests/toy_workflow) plugged in by its one registry line, for the tests that hold
"adding a workflow touches no generic file" on every face: the simulator, the env, the agent harness."""

from __future__ import annotations

import gymnasium as gym
import pytest

from erp_sim import task_sets, workflows


def clear_caches() -> None:
    for cached in (
        workflows.task_sets,
        workflows.load,
        workflows.harness,
        workflows.harness_for,
        task_sets.task_rows,
        task_sets._load_task_set,
    ):
        cached.cache_clear()


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """The toy workflow registered (its one line in PACKAGES) with its fixture beside the real ones, and its
    Gymnasium id registered as erp_sim.envs registers every workflow's (removed again afterwards)."""
    import toy_workflow

    import erp_sim.envs

    for fixture in task_sets.FIXTURES_DIR.glob("*.jsonl"):
        (tmp_path / fixture.name).symlink_to(fixture)
    (tmp_path / toy_workflow.FIXTURE).write_text("".join(f"{line}\n" for line in toy_workflow.generate("toy_notes")))
    monkeypatch.setattr(task_sets, "FIXTURES_DIR", tmp_path)
    monkeypatch.setitem(workflows.PACKAGES, "toy", "toy_workflow")
    clear_caches()
    erp_sim.envs.register_envs()
    yield toy_workflow
    gym.registry.pop(toy_workflow.ENV_ID, None)
    monkeypatch.undo()
    clear_caches()
