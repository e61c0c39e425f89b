"""snapshot()/restore() for tree search; deepcopy and pickle mid-episode; async vector envs with spawn."""

from __future__ import annotations

import copy
import json
import pickle
import re

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import data_equivalence
from test_env_vector import ENV_ID, rollout

import erp_sim
import erp_sim.envs  # noqa: F401
from erp_sim.oracle import oracle_trace


def _oracle_actions(task) -> list[str]:
    return [json.dumps({"name": name, "arguments": arguments}) for name, arguments in oracle_trace(task)]


def _play(env, actions) -> list:
    return [env.step(action) for action in actions]


@pytest.fixture
def midway():
    """An env 12 oracle steps into task 5, and the oracle's remaining actions (with a message and a bad action)."""
    env = gym.make(ENV_ID, reward_shaping="potential")
    env.reset(seed=3, options={"task_index": 5})
    actions = _oracle_actions(env.unwrapped.task)
    _play(env, actions[:12])
    rest = actions[12:16] + ['{"message": "Should I add the lines?"}', "not json"] + actions[16:]
    return env, rest


def test_steps_after_a_restore_equal_the_steps_after_the_snapshot(midway):
    env, rest = midway
    inner = env.unwrapped
    snapshot = inner.snapshot()
    original = _play(env, rest)
    assert original[-1][2] and original[-1][4]["termination_reason"] == "success"
    inner.restore(snapshot)
    _play(env, ['{"name": "form_close_form", "arguments": {}}'] * 3)  # branch elsewhere, then back
    inner.restore(snapshot)
    assert data_equivalence(_play(env, rest), original)
    other = gym.make(ENV_ID, reward_shaping="potential")  # in another env, through pickle (as across processes)
    other.reset(seed=99)
    other.unwrapped.restore(pickle.loads(pickle.dumps(snapshot)))
    assert data_equivalence(_play(other, rest), original)


@pytest.mark.parametrize(
    "clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))], ids=["deepcopy", "pickle"]
)
def test_deepcopy_and_pickle_mid_episode(midway, clone):
    env, rest = midway
    twin = clone(env)
    assert twin.unwrapped.session is not env.unwrapped.session
    assert data_equivalence(_play(twin, rest), _play(env, rest))
    assert twin.unwrapped.session.state_hash() == env.unwrapped.session.state_hash()


def test_restore_refuses_foreign_snapshots():
    env = gym.make(ENV_ID).unwrapped
    with pytest.raises(gym.error.ResetNeeded):
        env.snapshot()
    env.reset(seed=0)
    with pytest.raises(TypeError):
        env.restore(b"bytes")
    meals = gym.make("erp_sim/MealsItemization-v0").unwrapped
    meals.reset(seed=0)
    with pytest.raises(ValueError, match="task_set='Meals' \\(this env: 'hotel_50'\\)"):
        env.restore(meals.snapshot())
    snapshot = env.snapshot()
    for kwargs, named in [
        ({"reward": "success"}, "reward='strict' (this env: 'success')"),
        ({"verbosity": "compact"}, "verbosity="),
        ({"faults": 0.2}, "faults="),
        ({"reward_shaping": "potential"}, "reward_shaping="),
        ({"max_user_turns": 3}, "max_user_turns="),
        ({"receipt_in_instruction": True}, "receipt_in_instruction="),
    ]:
        other = gym.make(ENV_ID, **kwargs).unwrapped
        other.reset(seed=0)
        before = other.session.state_hash()
        with pytest.raises(ValueError, match=re.escape(named)):
            other.restore(snapshot)
        assert other.session.state_hash() == before  # refused before anything changed
    same = gym.make(ENV_ID, faults="rate=0").unwrapped  # the same profile spelled otherwise
    same.reset(seed=1)
    faulted = gym.make(ENV_ID, faults=0.0).unwrapped
    faulted.reset(seed=0)
    same.restore(faulted.snapshot())


def test_async_vector_env_with_spawn_matches_sync():
    spawn = gym.make_vec(
        ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={"context": "spawn", "shared_memory": False}
    )
    sync = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    assert rollout(spawn) == rollout(sync)
