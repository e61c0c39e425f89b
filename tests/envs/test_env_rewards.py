"""Rewards cannot be earned without doing the task: success is judged against the task's facts."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal

import gymnasium as gym
import pytest

import erp_sim
import erp_sim.envs
from erp_sim.workflows.itemization.grading import target_line_id


def _step(env, name, arguments):
    return env.step(json.dumps({"name": name, "arguments": arguments}))


def _oracle_until(env, control: str) -> None:
    """Play the oracle's calls up to (not including) its click on ``control``."""
    calls = erp_sim.oracle_calls(env.unwrapped.task)
    name, arguments = next(calls)
    while name != "form_click_control" or arguments.get("controlName") != control:
        observation, *_ = _step(env, name, arguments)
        name, arguments = calls.send(observation)


def _itemize(env, charges):
    """Open the target line's itemization through the report form and save ``charges`` (sub, date, amount)."""
    _oracle_until(env, "Itemize")
    _step(env, "form_click_control", {"controlName": "Itemize"})
    for sub, day, amount in charges:
        _step(env, "form_click_control", {"controlName": "NewLine"})
        observation, *_ = _step(
            env,
            "form_set_control_values",
            {
                "controlValues": [
                    {"controlName": "TrvExpTrans_ExpSubCategory", "value": sub},
                    {"controlName": "TrvExpTrans_TransDate", "value": day},
                    {"controlName": "TrvExpTrans_AmountCurr", "value": amount},
                ]
            },
        )
        assert '"is_error"' not in observation
    _step(env, "form_save_form", {})
    return _step(env, "form_close_form", {})


def _shrink_target_amount(env, new_amount: str) -> None:
    session = env.unwrapped.session
    line_id = target_line_id(session)
    observation, reward, terminated, _, info = _step(
        env,
        "data_update_entities",
        {"entitySetName": "ExpenseLines", "entities": [{"RecId": line_id, "Amount": new_amount}]},
    )
    assert not info["action"]["is_error"], observation
    assert reward == 0.0 and not terminated


@pytest.mark.parametrize("reward", ["success", "strict"])
def test_rewriting_the_line_amount_and_itemizing_it_earns_nothing(reward):
    env = gym.make("erp_sim/ExpenseItemization-v0", reward=reward)
    env.reset(options={"task_index": 0})
    task = env.unwrapped.task
    _shrink_target_amount(env, "10.00")
    first = task.receipt_items[0]
    _, reward_value, terminated, _, info = _itemize(env, [(first.subcategory, first.date, "10.00")])
    assert reward_value == 0.0 and not terminated and info["termination_reason"] is None
    assert (
        not info["grade"]["success"] and info["grade"]["remaining_amount"] == f"{Decimal(task.header_amount) - 10:.2f}"
    )
    grade = env.unwrapped.grade()
    assert not grade.success and not grade.strict_success and grade.header_amount == task.header_amount
    assert any("expense_line" in change and "amount" in change for change in grade.collateral)


def test_rewriting_the_amount_through_the_report_form_earns_nothing():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(options={"task_index": 1})
    task = env.unwrapped.task
    _oracle_until(env, "ViewReceipt")
    observation, _, _, _, info = _step(
        env, "form_set_control_values", {"controlValues": [{"controlName": "TrvExpTrans_AmountCurr", "value": "20.00"}]}
    )
    assert not info["action"]["is_error"], observation
    _, _, _, _, info = _step(env, "form_save_form", {})
    assert not info["action"]["is_error"]
    assert (
        env.unwrapped.session.db.execute(
            "SELECT amount FROM expense_line WHERE id = ?", (target_line_id(env.unwrapped.session),)
        ).fetchone()[0]
        == "20.00"
    )
    _step(env, "form_click_control", {"controlName": "Itemize"})
    first = task.receipt_items[0]
    for action in (
        ("form_click_control", {"controlName": "NewLine"}),
        (
            "form_set_control_values",
            {
                "controlValues": [
                    {"controlName": "TrvExpTrans_ExpSubCategory", "value": first.subcategory},
                    {"controlName": "TrvExpTrans_TransDate", "value": first.date},
                    {"controlName": "TrvExpTrans_AmountCurr", "value": "20.00"},
                ]
            },
        ),
        ("form_save_form", {}),
    ):
        _step(env, *action)
    _, reward, terminated, _, info = _step(env, "form_close_form", {})
    assert reward == 0.0 and not terminated and not info["grade"]["success"]


def test_any_collateral_change_fails_success_even_when_the_itemization_is_right():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(options={"task_index": 2})
    task = env.unwrapped.task
    report = env.unwrapped.session.db.execute(
        "SELECT report_number FROM expense_report WHERE report_number != ? AND status = 'Draft'", (task.report_number,)
    ).fetchone()
    if report is None:
        report = (task.report_number,)
    _, _, _, _, info = _step(
        env,
        "data_update_entities",
        {"entitySetName": "ExpenseReports", "entities": [{"ReportNumber": report[0], "Purpose": "Changed"}]},
    )
    assert not info["action"]["is_error"]
    charges = [(i.subcategory, i.date, i.amount) for i in task.receipt_items]
    _, reward, terminated, _, info = _itemize(env, charges)
    assert reward == 0.0 and not terminated and not info["grade"]["success"]
    grade = env.unwrapped.grade()
    assert grade.remaining_amount == "0.00" and not grade.success and grade.collateral


def test_one_line_with_the_whole_amount_earns_success_but_not_strict():
    task = erp_sim.get_task("hotel_50", 3)
    whole = [(task.receipt_items[0].subcategory, task.receipt_items[0].date, task.header_amount)]
    rewards = {}
    for reward in ("success", "strict"):
        env = gym.make("erp_sim/ExpenseItemization-v0", reward=reward)
        env.reset(options={"task_index": 3})
        _, rewards[reward], terminated, _, info = _itemize(env, whole)
        assert terminated and info["termination_reason"] == "success" and info["reward"] == reward
        assert info["final_grade"]["success"] and not info["final_grade"]["strict_success"]
        assert info["final_grade"] == env.unwrapped.grade().model_dump(mode="json")
        assert info["final_grade"]["unexpected_lines"] == [list(whole[0])]
    assert rewards == {"success": 1.0, "strict": 0.0}


def test_strict_reward_is_earned_by_the_receipts_charges():
    env = gym.make("erp_sim/ExpenseItemization-v0", reward="strict", reward_shaping="potential")
    _, info = env.reset(options={"task_index": 4})
    assert info["reward"] == "strict"
    task = env.unwrapped.task
    total = 0.0
    calls = erp_sim.oracle_calls(task)
    name, arguments = next(calls)
    while True:
        observation, reward, terminated, _, info = _step(env, name, arguments)
        total += reward
        if terminated:
            break
        name, arguments = calls.send(observation)
    assert info["final_grade"]["strict_success"] and abs(total - 1.0) < 1e-9


def test_unknown_reward_is_refused():
    with pytest.raises(ValueError, match="reward must be one of"):
        gym.make("erp_sim/ExpenseItemization-v0", reward="dense")


def test_the_logged_collateral_diff_equals_the_full_table_diff():
    from erp_sim.workflows.itemization.grading import collateral_changes, full_collateral_changes

    session = erp_sim.ErpSession(erp_sim.get_task("hotel_50", 8))
    line_id = target_line_id(session)
    erp_sim.run_oracle(session)
    assert collateral_changes(session, line_id) == full_collateral_changes(session, line_id) == []
    other = session.db.execute(
        "SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id WHERE "
        "l.line_type = 'ItemizedLine' AND r.status = 'Draft' AND l.parent_line_id != ?",
        (line_id,),
    ).fetchone()
    calls = [
        ("data_update_entities", {"entitySetName": "ExpenseLines", "entities": [{"RecId": line_id, "Amount": "5.00"}]}),
        (
            "data_update_entities",
            {
                "entitySetName": "ExpenseReports",
                "entities": [{"ReportNumber": session.task.report_number, "Purpose": "x"}],
            },
        ),
    ]
    if other is not None:
        calls.append(("data_delete_entities", {"entitySetName": "ExpenseLines", "keys": [other[0]]}))
    for name, arguments in calls:
        failed = session.call(name, arguments).is_error  # the first: an itemized line's amount is locked
        logged = collateral_changes(session, line_id)
        assert logged == full_collateral_changes(session, line_id) and (failed or logged)
    clone = pickle.loads(pickle.dumps(session))  # the log travels with the database
    assert collateral_changes(clone, line_id) == full_collateral_changes(session, line_id)
