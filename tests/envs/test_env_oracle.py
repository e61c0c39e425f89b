"""The scripted oracle, driven through env.step, solves every fixture task; rewards and grades follow the state."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import erp_sim
import erp_sim.envs


def run_oracle(env, task_id: str, *, corrupt_first_amount: bool = False, check_grade: bool = False):
    """Play the oracle's calls as JSON actions; returns (return, last info, steps). Stops when the episode ends."""
    env.reset(options={"task_id": task_id})
    calls = erp_sim.oracle_calls(env.unwrapped.task)
    name, arguments = next(calls)
    total, steps, corrupted = 0.0, 0, False
    while True:
        if corrupt_first_amount and name == "form_set_control_values" and not corrupted:
            arguments = json.loads(json.dumps(arguments))
            arguments["controlValues"][2]["value"] = str(float(arguments["controlValues"][2]["value"]) + 1)
            corrupted = True
        observation, reward, terminated, truncated, info = env.step(json.dumps({"name": name, "arguments": arguments}))
        total, steps = total + reward, steps + 1
        if check_grade:
            grade = env.unwrapped.grade()
            assert info["grade"] == {key: getattr(grade, key) for key in info["grade"]}
        if terminated or truncated:
            return total, info, steps
        try:
            name, arguments = calls.send(observation)
        except StopIteration:
            return total, info, steps
        except erp_sim.OracleError:
            return total, info, steps


@pytest.mark.parametrize("reward", ["success", "strict"])
@pytest.mark.parametrize("env_id", ["erp_sim/ExpenseItemization-v0", "erp_sim/AllExpenseTypes-v0"])
def test_oracle_gets_reward_one_on_every_task(env_id, reward):
    env = gym.make(env_id, reward=reward)
    for task in env.unwrapped.tasks:
        total, info, steps = run_oracle(env, task.task_id)
        assert total == 1.0, task.task_id
        assert info["termination_reason"] == "success" and info["grade"]["success"], task.task_id
        assert info["final_grade"]["strict_success"] and not info["final_grade"]["collateral"], task.task_id
        assert info["counts"]["invalid_actions"] == 0 and info["counts"]["tool_errors"] == 0
        assert info["counts"]["steps"] == steps == info["counts"]["tool_calls"] < env.spec.max_episode_steps


@pytest.mark.parametrize("task_index", [0, 25, 40])
def test_cheap_grade_in_info_matches_the_full_grade_at_every_step(task_index):
    env = gym.make("erp_sim/AllExpenseTypes-v0")
    task_id = env.unwrapped.tasks[task_index].task_id
    run_oracle(env, task_id, check_grade=True)
    run_oracle(env, task_id, check_grade=True, corrupt_first_amount=True)


def test_over_itemization_fails_and_gets_no_reward():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    total, info, _ = run_oracle(env, "hotel-003", corrupt_first_amount=True)
    assert total == 0.0 and info["termination_reason"] is None
    assert info["grade"]["remaining_amount"] == "-1.00" and info["grade"]["itemized_fraction"] > 1.0


def test_potential_shaping_return_is_the_final_potential():
    env = gym.make("erp_sim/ExpenseItemization-v0", reward_shaping="potential")
    total, info, _ = run_oracle(env, "hotel-003")
    assert total == pytest.approx(1.0) and info["termination_reason"] == "success"
    total, info, _ = run_oracle(env, "hotel-003", corrupt_first_amount=True)
    header = float(info["task"]["header_amount"])
    assert total == pytest.approx(0.5 * (1 - 1.0 / header))


def test_potential_shaping_pays_partial_credit_before_truncation():
    """Two charges itemized and saved, then the step limit: the return is half the itemized share."""
    env = gym.make("erp_sim/ExpenseItemization-v0", reward_shaping="potential", max_episode_steps=40)
    env.reset(options={"task_id": "hotel-010"})
    calls, observation, total, lines = erp_sim.oracle_calls(env.unwrapped.task), None, 0.0, 0
    name, arguments = next(calls)
    while lines < 2:
        observation, reward, *_ = env.step({"name": name, "arguments": arguments})
        total += reward
        lines += name == "form_set_control_values"
        name, arguments = calls.send(observation)
    truncated = False
    for action in ['{"name": "form_save_form"}'] + ['{"name": "form_find_controls"}'] * 40:
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if truncated:
            break
    assert truncated and not terminated and info["termination_reason"] is None
    assert info["grade"]["saved_lines"] == 2
    assert total == pytest.approx(0.5 * info["grade"]["itemized_fraction"]) and 0 < total < 0.5
