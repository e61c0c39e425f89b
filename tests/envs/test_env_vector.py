"""Vector envs: SyncVectorEnv and AsyncVectorEnv(shared_memory=False) give the same, fresh strings."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

import erp_sim.envs

ENV_ID = "erp_sim/ExpenseItemization-v0"
ACTIONS = [
    ('{"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}}', '{"message": "Should I add it?"}'),
    ('{"name": "form_open_menu_item", "arguments": {"name": "TrvExpenses"}}', "not json"),
    ('{"name": "form_close_form"}', '{"message": "Please attach the receipt."}'),
]


def rollout(vector_env) -> list:
    observations, info = vector_env.reset(seed=[5, 6], options={"task_index": 3})
    transcript: list[tuple[Any, ...]] = [(observations, info["task"]["task_id"].tolist())]
    for actions in ACTIONS:
        observations, rewards, terminated, _truncated, info = vector_env.step(actions)
        transcript.append((observations, rewards.tolist(), terminated.tolist(), info["counts"]["steps"].tolist()))
    vector_env.close()
    return transcript


def test_sync_and_async_vector_envs_agree_and_return_fresh_observations():
    sync = rollout(SyncVectorEnv([lambda: gym.make(ENV_ID) for _ in range(2)]))
    async_ = rollout(AsyncVectorEnv([lambda: gym.make(ENV_ID) for _ in range(2)], shared_memory=False))
    assert sync == async_
    observations = [step[0] for step in sync]
    assert all(
        isinstance(obs, tuple) and len(obs) == 2 and all(isinstance(o, str) for o in obs) for obs in observations
    )
    assert len({obs[0] for obs in observations}) == len(observations)  # every step brings a new observation
    assert sync[0][1] == ["hotel-003", "hotel-003"]
    assert sync[2][0][0].startswith('{"SessionId"') and '"InvalidAction"' in sync[2][0][1]


def test_make_vec_defaults_to_the_working_async_path():
    vector_env = erp_sim.envs.make_vec(ENV_ID, 2)
    assert isinstance(vector_env, AsyncVectorEnv) and vector_env.shared_memory is False
    assert rollout(vector_env) == rollout(erp_sim.envs.make_vec(ENV_ID, 2, vectorization_mode="sync"))


def test_async_with_shared_memory_fails_loudly_instead_of_returning_stale_strings():
    with pytest.raises(ValueError, match="shared_memory"):
        AsyncVectorEnv([lambda: gym.make(ENV_ID) for _ in range(2)])


@pytest.mark.parametrize("mode, context", [("sync", None), ("async", "spawn")])
def test_make_vec_passes_vector_kwargs_and_both_autoreset_modes_work(mode, context):
    say, find = '{"message": "I am stuck."}', ACTIONS[0][0]
    kwargs = {"context": context} if context else {}

    def vector(autoreset_mode):
        return erp_sim.envs.make_vec(
            ENV_ID,
            2,
            vectorization_mode=mode,
            user_model=None,  # a message ends the episode
            vector_kwargs={**kwargs, "autoreset_mode": autoreset_mode},
        )

    next_step = vector(AutoresetMode.NEXT_STEP)
    assert next_step.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    next_step.reset(seed=[1, 2])
    assert next_step.step([say, find])[2].tolist() == [True, False]
    observations, rewards, terminated, truncated, info = next_step.step([find, find])  # env 0 ignores its action: reset
    assert info["counts"]["steps"].tolist() == [0, 2] and not observations[0].startswith("{")
    assert rewards.tolist() == [0.0, 0.0] and not terminated.any() and not truncated.any()
    next_step.close()

    same_step = vector(AutoresetMode.SAME_STEP)
    assert same_step.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    same_step.reset(seed=[1, 2])
    observations, _, terminated, _, info = same_step.step([say, find])
    assert terminated.tolist() == [True, False] and info["_final_obs"].tolist() == [True, False]
    assert info["final_obs"][0] == "" and info["final_info"]["termination_reason"][0] == "stalled"
    assert info["counts"]["steps"].tolist() == [0, 1] and not observations[0].startswith("{")
    same_step.close()
