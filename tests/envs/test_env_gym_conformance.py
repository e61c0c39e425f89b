"""What a Gymnasium 1.x user expects beyond ``check_env``: the passive checker, the spaces, the RNG
across resets, specs, the wrappers a researcher stacks, close() and copies at every point."""

from __future__ import annotations

import copy
import json
import pickle
import warnings

import gymnasium as gym
import pytest
from gymnasium.wrappers import HumanRendering, OrderEnforcing, PassiveEnvChecker, RecordEpisodeStatistics, TimeLimit

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.envs.expense_env import ExpenseItemizationEnv
from erp_sim.envs.spaces import AnyText

ENV_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("erp_sim/"))
FIND_MENU = json.dumps({"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}})
SAY = json.dumps({"message": "I am stuck."})


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_passive_checker_path_warns_about_nothing(env_id):
    env = gym.make(env_id, disable_env_checker=False)
    assert any(isinstance(e, PassiveEnvChecker) for e in _wrappers(env))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the passive checker reports through warnings
        env.reset(seed=0)
        env.action_space.seed(0)
        for action in (FIND_MENU, env.action_space.sample(), SAY, "not json"):
            env.step(action)


def _wrappers(env):
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env


def test_text_space_holds_any_unicode_string_and_nothing_else():
    space = AnyText(10)
    assert all(text in space for text in ["", "😀é\u202e\x00", "\ud800", "€" * 10])
    assert not any(value in space for value in [b"bytes", None, 5, ["a"], "x" * 11])
    assert space.sample() in space


def test_reset_without_a_seed_continues_the_seeded_rng():
    def draws():
        env = gym.make("erp_sim/AllExpenseTypes-v0")
        return [env.reset(seed=3)[1]["task"]["task_id"]] + [env.reset()[1]["task"]["task_id"] for _ in range(5)]

    first = draws()
    assert first == draws() and len(set(first)) > 1


def test_make_from_the_spec_keeps_the_kwargs():
    env = gym.make("erp_sim/MealsItemization-v0", reward="strict", max_episode_steps=9)
    again = gym.make(env.spec)
    assert again.spec == env.spec and again.unwrapped.reward == "strict" and again.spec.max_episode_steps == 9
    assert again.reset(seed=1)[0] == env.reset(seed=1)[0]


def test_a_researchers_wrapper_stack_records_truncated_and_terminated_episodes():
    env = RecordEpisodeStatistics(
        TimeLimit(OrderEnforcing(PassiveEnvChecker(ExpenseItemizationEnv(user_model=None))), 2)
    )
    env.reset(seed=0)
    env.step(FIND_MENU)
    *_, terminated, truncated, info = env.step(FIND_MENU)
    assert (terminated, truncated, info["episode"]["l"]) == (False, True, 2)
    env.reset(seed=0)
    *_, terminated, truncated, info = env.step(SAY)  # no user to answer: the episode ends at once
    assert (terminated, truncated, info["termination_reason"], info["episode"]["l"]) == (True, False, "stalled", 1)


def test_human_rendering_refuses_a_text_env_cleanly():
    with pytest.raises(ValueError, match="render_mode"):
        HumanRendering(gym.make("erp_sim/ExpenseItemization-v0", render_mode="ansi"))


def test_close_is_idempotent_and_reset_reopens():
    env = gym.make("erp_sim/ExpenseItemization-v0", render_mode="ansi")
    env.close()  # before any reset
    obs, _ = env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(gym.error.ResetNeeded):
        env.step(FIND_MENU)
    assert env.reset(seed=0)[0] == obs and env.step(FIND_MENU)[4]["counts"]["tool_calls"] == 1


@pytest.mark.parametrize(
    "clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))], ids=["deepcopy", "pickle"]
)
def test_copies_at_every_point_of_an_episode(clone):
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=None)
    twin = clone(env)  # before reset
    assert twin.reset(seed=4)[0] == env.reset(seed=4)[0]
    ended = env.step(SAY)
    assert ended[2]
    twin = clone(env)  # after termination: the same refusal, then a working reset
    assert twin.step(FIND_MENU)[:4] == env.step(FIND_MENU)[:4]
    assert twin.reset(seed=5)[0] == env.reset(seed=5)[0]
    env.close()
    twin = clone(env)  # after close
    assert twin.reset(seed=6)[0] == env.reset(seed=6)[0]
