"""The TRL environment_factory adapter: typed tool methods from the registry, and an oracle run through them."""

from __future__ import annotations

import inspect
import re
import typing

import pytest

import erp_sim
from erp_sim.envs.trl_adapter import ErpToolEnv, reward_func, tool_env_class, training_rows


def public_methods(obj) -> dict:
    return {name: member for name, member in inspect.getmembers(obj, inspect.ismethod) if not name.startswith("_")}


def args_section(doc: str) -> dict[str, str]:
    """The ``Args:`` block as transformers' Google-docstring parser reads it."""
    block = re.search(r"\n\s*Args:\n\s*(.*?)[\n\s]*(Returns:|Raises:|\Z)", doc, re.DOTALL).group(1)
    return dict(re.findall(r"(?:^|\n)\s*(\w+):\s*(.*?)\s*(?=\n\s*\w+:|\Z)", block, re.DOTALL))


def test_tools_are_the_registry_plus_a_message_method():
    methods = public_methods(ErpToolEnv())
    assert set(methods) == set(erp_sim.TOOLS) | {"reset", "send_message_to_user"}


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


def test_adapter_solves_a_task_through_its_methods():
    env = ErpToolEnv()
    instruction = env.reset(task_id="hotel-012", prompt="ignored dataset column")
    assert "EXP-" in instruction and env.reward == 0.0 and not env.done
    calls = erp_sim.oracle_calls(erp_sim.get_task("hotel_50", "hotel-012"))
    name, arguments = next(calls)
    while not env.done:
        observation = getattr(env, name)(**arguments)
        try:
            name, arguments = calls.send(observation)
        except StopIteration:
            break
    assert env.done and env.reward == 1.0 and env.info["termination_reason"] == "success"
    assert reward_func([env]) == [1.0]
    with pytest.raises(ValueError, match="over"):
        env.form_save_form()
    env.reset(task_index=0)
    assert env.reward == 0.0 and not env.done


def test_adapter_messages_the_user_and_handles_bad_values():
    env = ErpToolEnv()
    env.reset(seed=1)
    assert "receipt is already attached" in env.send_message_to_user("Can you attach the receipt?")
    assert '"InvalidAction"' in env.form_select_grid_row(gridName="X", rowNumber=5)  # an int: fails the schema
    assert env.info["counts"]["invalid_actions"] == 1


def test_tool_env_class_binds_an_id_and_kwargs():
    cls = tool_env_class("erp_sim/MealsItemization-v0", user_model=None)
    env = cls()
    env.reset(task_index=0)
    assert env.info["task"]["expense_type"] == "Meals"
    assert env.send_message_to_user("hello?") == "" and env.done and env.reward == 0.0


def test_training_rows_carry_the_system_prompt_and_task_id():
    rows = training_rows("erp_sim/CarRentalItemization-v0")
    assert len(rows) == 20 and rows[0]["prompt"][0]["role"] == "system"
    assert "Airport concession fee" in rows[0]["prompt"][0]["content"] and rows[0]["task_id"]
