"""What an agent sees of the reward: no info before the end carries the answer, and no snapshot,
restore, copy or reset pays a reward or a potential again (the exploits' scripts are in
``test_reward_exploits``)."""

from __future__ import annotations

import copy
import json
import pickle
from decimal import Decimal

import gymnasium as gym
import pytest
from exploit_support import ENV_ID, Run


def test_no_info_before_the_end_carries_the_answer():
    """The receipt's subcategories are the answer key; info shows them only in the terminating step's final_grade."""
    run = Run(0)
    _, info = run.env.reset(options={"task_index": 0})
    answers = {f'"{sub}", "{day}"' for sub, day, _ in run.charges()} | {
        f'["{sub}", "{day}"' for sub, day, _ in run.charges()
    }
    infos = [info]
    run.create(run.line_id, run.charges()[:1])
    infos.append(run.info)
    run.say("Is this right?")
    infos.append(run.info)
    for info in infos:
        text = json.dumps({k: v for k, v in info.items() if k not in ("tools", "system_prompt")})
        assert "final_grade" not in info and not any(a in text for a in answers)
    assert set(infos[1]["task"]) == {
        "task_id",
        "task_set",
        "expense_type",
        "family",
        "difficulty",
        "report_number",
        "line_number",
        "header_amount",
        "currency",
        "item_count",
    }


def test_a_snapshot_of_a_finished_episode_pays_nothing_again():
    run = Run(0)
    run.create(run.line_id, run.charges())
    assert run.terminated and run.rewards[-1] == 1.0
    snapshot = run.env.unwrapped.snapshot()
    other = gym.make(ENV_ID)
    other.reset(options={"task_index": 0})
    other.unwrapped.restore(pickle.loads(pickle.dumps(snapshot)))
    _, reward, terminated, _, info = other.step(
        json.dumps({"name": "form_find_menu_item", "arguments": {"menuItemFilter": "x"}})
    )
    assert (reward, terminated, info["action"]["error_code"]) == (0.0, True, "InvalidAction")


def test_reset_carries_no_potential_over():
    run = Run(0, reward_shaping="potential")
    run.create(run.line_id, run.charges()[:2])
    assert sum(run.rewards) > 0
    run.env.reset(options={"task_index": 0})
    run.rewards.clear()
    run.create(run.line_id, run.charges()[:2])
    run.create(run.line_id, run.charges()[2:])
    assert sum(run.rewards) == pytest.approx(1.0)


def test_a_snapshot_of_an_unshaped_episode_cannot_pay_its_potential_in_a_shaped_env():
    """Restoring across shaping settings is refused, so a snapshot's potential is never paid again there."""
    run = Run(0)
    run.create(run.line_id, run.charges()[:2])
    shaped = Run(0, reward_shaping="potential")
    with pytest.raises(ValueError, match="reward_shaping='none' \\(this env: 'potential'\\)"):
        shaped.env.unwrapped.restore(run.env.unwrapped.snapshot())
    shaped.call("form_find_menu_item", menuItemFilter="expense")
    shaped.create(run.line_id, run.charges()[2:3])
    assert sum(shaped.rewards) == pytest.approx(
        0.5 * float(Decimal(run.charges()[2][2]) / Decimal(run.task.header_amount))
    )


@pytest.mark.parametrize("how", ["restore", "deepcopy", "pickle"])
def test_a_restored_episode_answers_sql_as_the_original(how):
    """The SQL tool's clock and random() are episode state: a copy must not read the wall clock or reseed."""
    sql = "SELECT random(), date('now'), CURRENT_TIMESTAMP"
    run = Run(0)
    run.call("data_find_entities_sql", sqlQuery="SELECT random()")
    if how == "restore":
        copy_ = gym.make(ENV_ID)
        copy_.reset(options={"task_index": 1})
        copy_.unwrapped.restore(run.env.unwrapped.snapshot())
    elif how == "deepcopy":
        copy_ = copy.deepcopy(run.env)
    else:
        copy_ = pickle.loads(pickle.dumps(run.env))
    observations = [
        env.step(json.dumps({"name": "data_find_entities_sql", "arguments": {"sqlQuery": sql}}))[0]
        for env in (run.env, copy_)
    ]
    assert observations[0] == observations[1] and run.task.transaction_date in observations[0]
    printf = {"name": "data_find_entities_sql", "arguments": {"sqlQuery": "SELECT printf('%.*c', 200000, 'x')"}}
    assert "width or precision" in copy_.step(json.dumps(printf))[0]  # the CPU guard came along too


@pytest.mark.parametrize("kwargs, paid", [({}, 0.0), ({"reward": "success"}, 1.0)])
def test_the_trl_adapter_trains_on_strict_unless_told(kwargs, paid):
    """The training path must not pay for one line holding the whole amount unless asked to."""
    from erp_sim.envs.trl_adapter import tool_env_factory

    env = tool_env_factory(ENV_ID, **kwargs)()
    env.reset(task_index=0)
    task = env._episode.env.unwrapped.task
    env.data_create_entities(
        entitySetName="ExpenseLines",
        entities=[
            {
                "ParentRecId": env._episode.env.unwrapped._line_id,
                "Subcategory": task.receipt_items[0].subcategory,
                "TransactionDate": task.receipt_items[0].date,
                "Amount": task.header_amount,
            }
        ],
    )
    assert env.done and env.reward == paid and env.info["reward"] == kwargs.get("reward", "strict")
