"""Gymnasium environments over erp_sim: each workflow's tasks (expense itemization, ...) with a simulated user.

    import gymnasium as gym, erp_sim.envs
    env = gym.make("erp_sim/ExpenseItemization-v0")            # or "erp_sim.envs:erp_sim/..." without the import
    obs, info = env.reset(seed=0, options={"task_id": "hotel-007"})
    obs, reward, terminated, truncated, info = env.step(
        '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}}')

Vector envs: ``erp_sim.envs.make_vec(env_id, n)`` (async, with the ``shared_memory=False`` that text
observations need). Each workflow names its ids and their task sets (``erp_sim.workflows.TaskSets.env_ids``:
itemization has one per fixture set and per expense type); variants are kwargs of one class
(``erp_sim.envs.expense_env.ErpEnv``), overridable in ``gym.make``. Importing this package only
registers ids: ``gym.make`` checks its arguments without the simulator, which loads (pydantic
models, SQLite) at the first ``reset``.
"""

from __future__ import annotations

from importlib import import_module

from gymnasium import registry
from gymnasium.envs.registration import register

from erp_sim import workflows

ENTRY_POINT = "erp_sim.envs.expense_env:ErpEnv"
MAX_EPISODE_STEPS = 200


def register_envs() -> tuple[str, ...]:
    """Register every workflow's env ids (``erp_sim.workflows.TaskSets.env_ids``) not registered yet, and
    return them all: importing this package calls it; call it again after adding a workflow to the registry.

    Each id is the one env class with its task set. disable_env_checker: gymnasium 1.4's PassiveEnvChecker
    marks its first reset as checked before the reset runs, so after a refused first reset (bad options)
    every later step fails inside the checker. The envs pass gymnasium's full ``check_env`` in the tests instead.
    """
    ids = []
    for sets in workflows.task_sets().values():
        for env_id, task_set in sets.env_ids.items():
            if env_id not in registry:
                register(
                    id=env_id,
                    entry_point=ENTRY_POINT,
                    kwargs={"task_set": task_set},
                    max_episode_steps=sets.step_limits.get(env_id, MAX_EPISODE_STEPS),  # registered_step_limit's
                    disable_env_checker=True,
                )
            ids.append(env_id)
    return tuple(ids)


ENV_IDS = register_envs()
# Each id's task set, and its step limit where it is not MAX_EPISODE_STEPS, as the workflows declare them.
ENV_TASK_SETS = {
    env_id: task_set for sets in workflows.task_sets().values() for env_id, task_set in sets.env_ids.items()
}
STEP_LIMITS = {env_id: limit for sets in workflows.task_sets().values() for env_id, limit in sets.step_limits.items()}
#: The id of the default task set (``erp_sim.workflows.DEFAULT_TASK_SET``): what commands and adapters make
#: when no id is named (the env class is one: an id with another ``task_set`` kwarg serves any workflow's set).
DEFAULT_ENV_ID = next(env_id for env_id, task_set in ENV_TASK_SETS.items() if task_set == workflows.DEFAULT_TASK_SET)


def registered_step_limit(env_id: str) -> int:
    """The step limit ``env_id`` is registered with (``TimeLimit``'s ``max_episode_steps``)."""
    return STEP_LIMITS.get(env_id, MAX_EPISODE_STEPS)


def task_set_step_limit(task_set: str) -> int:
    """A task set's own step limit: that of the env id registered for it (long_horizon: 1,500), else the
    default; every command that runs episodes of a task set reads its limit here."""
    env_id = next((env_id for env_id, tasks in ENV_TASK_SETS.items() if tasks == task_set), None)
    return MAX_EPISODE_STEPS if env_id is None else registered_step_limit(env_id)


_LAZY = {
    "ErpEnv": "erp_sim.envs.expense_env",
    "ExpenseItemizationEnv": "erp_sim.envs.expense_env",
    "system_prompt": "erp_sim.envs.prompts",
    "UserModel": "erp_sim.envs.user_models",
    "UserReply": "erp_sim.envs.user_models",
    "UserView": "erp_sim.envs.user_models",
    "RuleBasedUser": "erp_sim.envs.user_models",
    "ErpToolEnv": "erp_sim.envs.trl_adapter",
    "tool_env_factory": "erp_sim.envs.trl_adapter",
    "Episode": "erp_sim.envs.episode",
    "McpEnv": "erp_sim.envs.mcp_env",
    "make_vec": "erp_sim.envs.vector",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'erp_sim.envs' has no attribute {name!r}")


__all__ = [
    "DEFAULT_ENV_ID",
    "ENV_IDS",
    "ENV_TASK_SETS",
    "MAX_EPISODE_STEPS",
    "STEP_LIMITS",
    "register_envs",
    "registered_step_limit",
    "task_set_step_limit",
    *_LAZY,
]
