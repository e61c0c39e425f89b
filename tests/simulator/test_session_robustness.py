"""No exception escapes ErpSession.call or env.step: hostile values become error responses in the usual shape."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import erp_sim
import erp_sim.envs

HOSTILE = [
    ("data_find_entities_sql", {"sqlQuery": "SELECT 1\x00"}, "NUL"),
    ("data_find_entities_sql", {"sqlQuery": "SELECT '\ud800'"}, "lone surrogate"),
    ("form_find_menu_item", {"menuItemFilter": "\udfff expense"}, "lone surrogate"),
    ("data_create_entities", {"entitySetName": "ExpenseLines", "entities": [{"Description": "a\x00b"}]}, "NUL"),
    ("api_invoke_action", {"actionName": "x", "parameters": {"n": 10**5000}}, "too many digits"),
    (
        "data_update_entities",
        {"entitySetName": "ExpenseLines", "entities": [{"RecId": 1, "Amount": -(10**4400)}]},
        "too many digits",
    ),
    ("form_set_control_values", {"controlValues": [{"controlName": "\ud800", "value": "1"}]}, "lone surrogate"),
    ("form_find_menu_item", {"menuItemFilter": "x", "\ud800": 1}, "lone surrogate"),
    ("form_find_menu_item", "[" * 100_000, "nested"),
    ("form_find_menu_item", '{"menuItemFilter": "\\u0000"}', "NUL"),
    ("form_find_menu_item", '{"menuItemFilter": "\\ud800"}', "lone surrogate"),
    (
        "form_find_menu_item",
        {"menuItemFilter": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
        "nested",
    ),
    ("form_find_menu_item", {"menuItemFilter": b"bytes"}, "not a JSON value"),
]


@pytest.mark.parametrize("name,arguments,problem", HOSTILE)
def test_hostile_arguments_become_error_responses(name, arguments, problem):
    session = erp_sim.ErpSession(erp_sim.get_task("hotel_50", 0))
    before = session.state_hash()
    response = session.call(name, arguments)
    assert response.is_error and response.error_code == "ValidationError"
    assert problem in response.envelope["Error"]["Message"]
    assert json.loads(response.text)["Error"]["Code"] == "ValidationError"
    response.text.encode("utf-8")  # the text itself is valid UTF-8
    assert session.state_hash() == before
    assert not session.call("form_find_menu_item", {"menuItemFilter": "expense"}).is_error  # the session goes on


@pytest.mark.parametrize("name,arguments,problem", HOSTILE[:8] + HOSTILE[9:11])
def test_hostile_arguments_through_env_step(name, arguments, problem):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    actions = [{"name": name, "arguments": arguments}]
    try:
        actions.append(json.dumps(actions[0]))
    except ValueError:  # the standard library cannot write integers this long
        pass
    for action in actions:
        observation, reward, terminated, _truncated, info = env.step(action)
        assert reward == 0.0 and not terminated and isinstance(observation, str)
        assert info["action"]["is_error"] and problem.split()[0] in observation
    observation, *_ = env.step({"message": "hello \ud800 \x00"})
    assert isinstance(observation, str)
