"""Gymnasium environments over erp_sim: expense itemization with a simulated user.

    import gymnasium as gym, erp_sim.envs
    env = gym.make("erp_sim/ExpenseItemization-v0")            # or "erp_sim.envs:erp_sim/..." without the import
    obs, info = env.reset(seed=0, options={"task_id": "hotel-007"})
    obs, reward, terminated, truncated, info = env.step(
        '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}}')

Vector envs: ``erp_sim.envs.make_vec(env_id, n)`` (async, with the ``shared_memory=False`` that text
observations need). One id per fixture set and per expense type; variants are kwargs of one class
(``erp_sim.envs.expense_env.ExpenseItemizationEnv``), overridable in ``gym.make``. Importing this
package only registers ids: ``gym.make`` checks its arguments without the simulator, which
loads (pydantic models, SQLite, Faker) at the first ``reset``.
"""

from __future__ import annotations

from importlib import import_module

from gymnasium.envs.registration import register

ENTRY_POINT = "erp_sim.envs.expense_env:ExpenseItemizationEnv"
MAX_EPISODE_STEPS = 200

# One id per fixture set and per expense type; each is the same class with its task set.
ENV_TASK_SETS = {
    "erp_sim/ExpenseItemization-v0": "hotel_50",
    "erp_sim/AllExpenseTypes-v0": "expense_types",
    "erp_sim/HotelItemization-v0": "Hotel",
    "erp_sim/CarRentalItemization-v0": "CarRental",
    "erp_sim/AirfareItemization-v0": "Airfare",
    "erp_sim/MealsItemization-v0": "Meals",
    "erp_sim/ConferenceItemization-v0": "Conference",
    "erp_sim/LongHorizon-v0": "long_horizon",
}
# Up to 200 receipt charges over 1-5 lines take two calls a charge and more: room for them.
STEP_LIMITS = {"erp_sim/LongHorizon-v0": 1500}


def registered_step_limit(env_id: str) -> int:
    """The step limit ``env_id`` is registered with (``TimeLimit``'s ``max_episode_steps``)."""
    return STEP_LIMITS.get(env_id, MAX_EPISODE_STEPS)


def task_set_step_limit(task_set: str) -> int:
    """A task set's own step limit: that of the env id registered for it (long_horizon: 1,500), else the
    default; every command that runs episodes of a task set reads its limit here."""
    env_id = next((env_id for env_id, tasks in ENV_TASK_SETS.items() if tasks == task_set), None)
    return MAX_EPISODE_STEPS if env_id is None else registered_step_limit(env_id)


# disable_env_checker: gymnasium 1.4's PassiveEnvChecker marks its first reset as checked before the
# reset runs, so after a refused first reset (bad options) every later step fails inside the
# checker. The envs pass gymnasium's full ``check_env`` in the tests instead.
for _env_id, _task_set in ENV_TASK_SETS.items():
    register(
        id=_env_id,
        entry_point=ENTRY_POINT,
        kwargs={"task_set": _task_set},
        max_episode_steps=registered_step_limit(_env_id),
        disable_env_checker=True,
    )
ENV_IDS = tuple(ENV_TASK_SETS)

_LAZY = {
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


__all__ = ["ENV_IDS", "MAX_EPISODE_STEPS", "STEP_LIMITS", "registered_step_limit", "task_set_step_limit", *_LAZY]
