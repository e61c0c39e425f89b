"""reset(options=...) refuses unknown keys and bad values before any state changes."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import erp_sim.envs  # noqa: F401

FIND_MENU = json.dumps({"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}})
BAD_OPTIONS = [
    ({"taskId": "hotel-007"}, "Unknown reset option"),
    ({"task_index": "3"}, "task_index must be an int"),
    ({"task_index": 3.7}, "task_index must be an int"),
    ({"task_index": None}, "task_index must be an int"),
    ({"task_index": True}, "task_index must be an int"),
    ({"task_index": -1}, "task_index must be an int"),
    ({"task_index": 50}, "task_index must be an int"),
    ({"task_id": "nope"}, "is not a task of"),
    ({"task_id": None}, "is not a task of"),
    ({"task_id": 7}, "is not a task of"),
    ({"task_id": "hotel-007", "task_index": 7}, "not both"),
    ("task_index=3", "options must be a dict"),
]


@pytest.mark.parametrize("options,message", BAD_OPTIONS)
def test_bad_options_raise_value_error_and_change_nothing(options, message):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    _observation, _info = env.reset(seed=5, options={"task_index": 2})
    env.step(FIND_MENU)
    inner = env.unwrapped
    before = (
        inner.task,
        inner.session,
        inner.session.state_hash(),
        dict(inner._counts),
        inner.np_random.bit_generator.state,
    )
    with pytest.raises(ValueError, match=message):
        env.reset(seed=9, options=options)
    assert (
        inner.task,
        inner.session,
        inner.session.state_hash(),
        dict(inner._counts),
        inner.np_random.bit_generator.state,
    ) == before
    assert env.step(FIND_MENU)[4]["counts"]["steps"] == 2  # the episode goes on


@pytest.mark.parametrize("seed", [-1, "abc", 1.5, float("nan"), True, False])
def test_a_bad_seed_is_refused_like_bad_options(seed):
    """gymnasium refuses such a seed with its own error class; the env says it as a ValueError (what every
    adapter answers as a refused reset) and the episode goes on."""
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=5, options={"task_index": 2})
    state = env.unwrapped.np_random.bit_generator.state
    with pytest.raises(ValueError, match="seed: .*non-negative integer"):
        env.reset(seed=seed)
    assert env.unwrapped.np_random.bit_generator.state == state
    assert env.step(FIND_MENU)[4]["counts"]["steps"] == 1  # the episode goes on


@pytest.mark.parametrize("arguments", ["", "  ", None, "{}"])
def test_no_arguments_may_be_sent_as_empty_text(arguments):
    """Some OpenAI-compatible servers send "" as the arguments of a call without any: the call runs."""
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    info = env.step(json.dumps({"name": "form_close_form", "arguments": arguments}))[4]
    assert info["action"]["kind"] == "tool"


@pytest.mark.parametrize("options,message", BAD_OPTIONS[:3])
def test_a_failed_first_reset_through_gym_make_leaves_the_env_usable(options, message):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    with pytest.raises(ValueError, match=message):
        env.reset(seed=0, options=options)
    _observation, info = env.reset(seed=0, options={"task_index": np.int64(4)})
    assert info["task"]["task_id"] == env.unwrapped.tasks[4].task_id
    _observation, _reward, terminated, _truncated, info = env.step(FIND_MENU)
    assert not info["action"]["is_error"] and not terminated


def test_good_options_pick_the_task():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    assert env.reset(options={"task_id": "hotel-007"})[1]["task"]["task_id"] == "hotel-007"
    assert env.reset(options={"task_index": 7})[1]["task"]["task_id"] == env.unwrapped.tasks[7].task_id
    assert env.reset(seed=3, options={})[1]["task"]["task_id"] == env.reset(seed=3, options=None)[1]["task"]["task_id"]
