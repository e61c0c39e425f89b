"""The verifiers environment, run by verifiers' own rollout machinery against the strict fake OpenAI server,
whose replies a scripted oracle (or a bad agent) computes from each request."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import verifiers

vf = pytest.importorskip("verifiers", reason="the verifiers extra is not installed (see docs/training.md)")

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from oracle_model import oracle_reply  # noqa: E402

from erp_sim.envs.verifiers_env import ErpMultiTurnEnv, dataset_rows, load_environment  # noqa: E402

pytestmark = pytest.mark.extras  # CI runs it after installing the extra


def bad_reply(body: dict):
    """A bad agent: a call to no tool and a malformed call, then messages to the user, as the message tool
    (with OpenAI's JSON-text arguments) and as plain assistant turns, in turn, until the user has had enough."""
    turn = sum(m["role"] == "assistant" for m in body["messages"])
    if turn == 0:
        calls = [
            {"id": "call_a", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}},
            {"id": "call_b", "type": "function", "function": {"name": "form_find_menu_item", "arguments": "{x"}},
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}, 10, 5
    if turn % 2:
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "send_message_to_user", "arguments": '{"message": "Which receipt?"}'},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, 10, 5
    return {"role": "assistant", "content": "I cannot find the receipt. Can you help?"}, 10, 5


@pytest.fixture
def model_server():
    """Not strict: verifiers' OpenAI client sends ``reasoning_content`` on assistant turns, which vLLM (its usual
    server) accepts and OpenAI's API does not; every other check of a request still holds."""
    with FakeOpenAIServer(strict=False) as server:
        yield server


def client_for(server) -> verifiers.Client:
    return vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0))


def test_rows_are_system_and_user_turns_without_reserved_columns():
    rows = dataset_rows("erp_sim/MealsItemization-v0")
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"] and set(rows[0]) == {"prompt", "info"}
    env = load_environment(env_id="erp_sim/MealsItemization-v0", verbosity="compact")
    dataset = env.get_eval_dataset()
    assert len(dataset) == len(rows) and dataset[0]["info"]["task_id"] == rows[0]["info"]["task_id"]
    assert env.erp_env_kwargs == {"verbosity": "compact"} and len(env.tool_defs) == 23
    loaded = vf.load_environment("erp_sim.envs.verifiers_env", erp_env_id="erp_sim/MealsItemization-v0")
    assert isinstance(loaded, ErpMultiTurnEnv) and loaded.erp_env_id == "erp_sim/MealsItemization-v0"


def test_oracle_rollouts_earn_exactly_one(model_server):
    model_server.answer_with(oracle_reply)
    env = load_environment(verbosity="compact")
    results = env.evaluate_sync(client=client_for(model_server), model="fake-model", num_examples=2, max_concurrent=2)
    outputs = results["outputs"]
    assert [o["reward"] for o in outputs] == [1.0, 1.0]
    for output in outputs:
        assert output["metrics"]["strict_success"] == 1.0 and output["metrics"]["itemized_fraction"] == 1.0
        assert output["metrics"]["invalid_actions"] == 0.0 and output["is_completed"]
        assert output["completion"][-1]["role"] == "tool"  # the call that completed the itemization, answered


def test_bad_actions_are_answered_and_counted(model_server):
    model_server.answer_with(bad_reply)
    env = load_environment()
    outputs = env.evaluate_sync(client=client_for(model_server), model="fake-model", num_examples=1)["outputs"]
    output, max_user_turns = outputs[0], 10
    completion = output["completion"]
    tool_texts = [m["content"] for m in completion if m["role"] == "tool"]
    assert all('"InvalidAction"' in text for text in tool_texts[:2])
    assert sum(m["role"] == "user" for m in completion) == max_user_turns // 2  # the plain-text turns
    assert len(tool_texts) == 2 + max_user_turns // 2 and not any('"InvalidAction"' in t for t in tool_texts[2:])
    assert output["reward"] == 0.0 and output["metrics"]["invalid_actions"] == 2.0
    assert output["metrics"]["strict_success"] == 0.0 and output["is_completed"]


def test_a_row_naming_no_task_is_a_rollout_error_not_a_crash(model_server):
    model_server.answer_with(oracle_reply)
    env = load_environment()
    row = dict(env.get_eval_dataset()[0]) | {"info": {"task_id": "hotel-999"}}
    output = env.generate_sync([row], client=client_for(model_server), model="fake-model")["outputs"][0]
    assert output["reward"] == 0.0 and output["stop_condition"] == "has_error"
    assert "hotel-999" in output["error"]["message"] and not model_server.requests  # no model call was made


def test_the_turn_limit_follows_the_episodes_step_limit():
    """A rollout's turn limit is the episode's step limit (every turn is a step or more), so a long-horizon
    episode is not cut at 200 turns; ``max_turns`` and ``max_episode_steps`` change it."""
    long = load_environment(env_id="erp_sim/LongHorizon-v0", verbosity="compact")
    assert long.max_turns == 1500
    assert load_environment().max_turns == 200
    assert load_environment(max_episode_steps=3000).max_turns == 3000
    assert load_environment(max_turns=50).max_turns == 50
    loaded = vf.load_environment("erp_sim.envs.verifiers_env", erp_env_id="erp_sim/LongHorizon-v0", max_turns=40)
    assert loaded.max_turns == 40
