"""The TRL environment_factory adapter: typed tool methods from the registry, and an oracle run through them."""

from __future__ import annotations

import inspect
import json
import pickle
import re
import typing

import pytest

import erp_sim
from erp_sim.envs.trl_adapter import (
    COMPACT_COMPLETION_TOKENS,
    METRIC_FUNCS,
    ErpToolEnv,
    reward_func,
    tool_env_factory,
    training_rows,
)


def public_methods(obj) -> dict:
    return {name: member for name, member in inspect.getmembers(obj, inspect.ismethod) if not name.startswith("_")}


def args_section(doc: str) -> dict[str, str]:
    """The ``Args:`` block as transformers' Google-docstring parser reads it."""
    args = re.search(r"\n\s*Args:\n\s*(.*?)[\n\s]*(Returns:|Raises:|\Z)", doc, re.DOTALL)
    assert args is not None, doc
    block = args.group(1)
    return dict(re.findall(r"(?:^|\n)\s*(\w+):\s*(.*?)\s*(?=\n\s*\w+:|\Z)", block, re.DOTALL))


def test_tools_are_the_registry_plus_a_message_method():
    methods = public_methods(ErpToolEnv())
    assert set(methods) == set(erp_sim.TOOLS) | {"reset", "get_reward", "send_message_to_user"}
    # what TRL 1.16 lists as tools: the class's public functions but reset and get_reward
    listed = {name for name, _ in inspect.getmembers(ErpToolEnv, inspect.isfunction) if not name.startswith("_")}
    assert listed - {"reset", "get_reward"} == set(erp_sim.TOOLS) | {"send_message_to_user"}


@pytest.mark.parametrize("name", sorted(erp_sim.TOOLS))
def test_tool_methods_are_typed_and_documented(name):
    tool, method = erp_sim.TOOLS[name], getattr(ErpToolEnv(), name)
    schema = tool.input_schema
    signature, hints, doc = inspect.signature(method), typing.get_type_hints(method), inspect.getdoc(method)
    assert list(signature.parameters) == list(schema.get("properties", {}))
    assert hints.pop("return") is str and set(hints) == set(signature.parameters)
    required = {p for p, param in signature.parameters.items() if param.default is inspect.Parameter.empty}
    assert required == set(schema.get("required", []))
    assert doc.startswith(tool.description) and "Args:" in doc and "Returns:" in doc
    assert set(args_section(doc)) == set(signature.parameters)


def test_send_message_to_user_is_documented():
    method = ErpToolEnv().send_message_to_user
    assert typing.get_type_hints(method) == {"message": str, "return": str}
    assert set(args_section(inspect.getdoc(method))) == {"message"}


def play_oracle(env, task) -> int:
    """Solve ``task`` through the adapter's methods; the o200k tokens of the calls and observations."""
    from erp_sim.agents.tokens import get_encoder

    encoder = get_encoder()
    calls = erp_sim.oracle_calls(task)
    name, arguments, tokens = *next(calls), 0
    while not env.done:
        observation = getattr(env, name)(**arguments)
        tokens += len(encoder.encode(observation)) + len(encoder.encode(name + json.dumps(arguments)))
        try:
            name, arguments = calls.send(observation)
        except StopIteration:
            break
    return tokens


def test_adapter_solves_a_task_through_its_methods():
    env = ErpToolEnv()
    assert env.reset(task_id="hotel-012", prompt="ignored dataset column") is None  # TRL appends nothing
    assert env.get_reward() == 0.0 and not env.done
    play_oracle(env, erp_sim.get_task("hotel_50", "hotel-012"))
    assert env.done and env.get_reward() == 1.0 and env.info["termination_reason"] == "success"
    assert reward_func([env]) == [1.0]
    assert [f([env]) for f in METRIC_FUNCS] == [[1.0], [1.0], [0.0], [0.0]]
    assert [f.__name__ for f in METRIC_FUNCS] == [
        "strict_success",
        "itemized_fraction",
        "invalid_actions",
        "tool_errors",
    ]
    with pytest.raises(ValueError, match="over"):
        env.form_save_form()
    env.reset(task_index=0)
    assert env.get_reward() == 0.0 and not env.done


def test_compact_budget_holds_the_oracle():
    """The recommended max_completion_length fits every hotel_50 oracle episode at compact verbosity."""
    env = ErpToolEnv(verbosity="compact")
    longest = 0
    for task in erp_sim.load_task_set("hotel_50"):
        env.reset(task_id=task.task_id)
        longest = max(longest, play_oracle(env, task))
        assert env.get_reward() == 1.0
    assert 0.9 * COMPACT_COMPLETION_TOKENS < longest <= COMPACT_COMPLETION_TOKENS


def test_adapter_messages_the_user_and_handles_bad_values():
    env = ErpToolEnv()
    env.reset(seed=1)
    assert "receipt is already attached" in env.send_message_to_user("Can you attach the receipt?")
    assert '"InvalidAction"' in env.form_select_grid_row(gridName="X", rowNumber=5)  # an int: fails the schema
    assert env.info["counts"]["invalid_actions"] == 1 and METRIC_FUNCS[2]([env]) == [1.0]


def test_raise_on_invalid_lets_trl_count_the_failure():
    env = tool_env_factory(raise_on_invalid=True)()
    env.reset(task_index=3)
    with pytest.raises(ValueError, match="rowNumber"):
        env.form_select_grid_row(gridName="X", rowNumber=5)
    assert env.info["counts"]["invalid_actions"] == 1  # counted by the env too, and the episode goes on
    assert '"Result"' in env.form_find_menu_item(menuItemFilter="expense")


def test_factory_pickles_mid_episode_and_binds_kwargs():
    factory = tool_env_factory("erp_sim/MealsItemization-v0", user_model=None, verbosity="compact")
    env = pickle.loads(pickle.dumps(factory))()
    env.reset(task_index=0)
    env.form_find_menu_item(menuItemFilter="expense")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.info == env.info and copy.info["task"]["expense_type"] == "Meals"
    assert copy.form_find_menu_item(menuItemFilter="expense") == env.form_find_menu_item(menuItemFilter="expense")


def test_tool_env_factory_binds_an_id_and_kwargs():
    env = tool_env_factory("erp_sim/MealsItemization-v0", user_model=None)()
    env.reset(task_index=0)
    assert env.info["task"]["expense_type"] == "Meals"
    assert env.send_message_to_user("hello?") == "" and env.done and env.reward == 0.0


def test_training_rows_are_a_system_and_a_user_turn():
    rows = training_rows("erp_sim/CarRentalItemization-v0", receipt_in_instruction=True)
    assert len(rows) == 20 and [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    assert "Airport concession fee" in rows[0]["prompt"][0]["content"] and rows[0]["task_id"]
    task = erp_sim.get_task("CarRental", rows[0]["task_id"])
    assert rows[0]["prompt"][1]["content"] == task.instruction(include_receipt=True)
