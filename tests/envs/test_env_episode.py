"""The episode API every training adapter uses: messages and tools, actions, grade, refusals."""

from __future__ import annotations

import pytest

import erp_sim
from erp_sim.envs.episode import MESSAGE_TOOL, METRICS, Episode, EpisodeError, tool_schemas


def test_start_gives_a_system_and_a_user_turn_and_the_tools():
    episode = Episode()
    messages = episode.start(task_id="hotel-012")
    task = erp_sim.get_task("hotel_50", "hotel-012")
    assert messages == [
        {"role": "system", "content": erp_sim.envs.system_prompt(task)},
        {"role": "user", "content": task.instruction(include_receipt=False)},
    ]
    names = [tool["function"]["name"] for tool in tool_schemas()]
    assert names == [*erp_sim.TOOLS, MESSAGE_TOOL] and episode.tools == tool_schemas()
    assert episode.env_kwargs["reward"] == "strict" and episode.metrics()["steps"] == 0.0


def test_actions_match_env_step_and_the_message_tool_is_a_message():
    episode, env = Episode(), erp_sim.envs.expense_env.ExpenseItemizationEnv(task_set="hotel_50", reward="strict")
    episode.start(task_index=4)
    env.reset(options={"task_index": 4})
    turn = episode.call_tool("form_find_menu_item", '{"menuItemFilter": "expense"}')
    assert turn.observation == env.step({"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}})[0]
    reply = episode.call_tool(MESSAGE_TOOL, {"message": "Which receipt?"})
    assert reply.observation == env.step({"message": "Which receipt?"})[0] and episode.info["counts"]["user_turns"] == 1
    as_text = episode.call_tool(MESSAGE_TOOL, '{"message": "Which receipt?"}')  # OpenAI-style JSON arguments
    assert as_text.observation == reply.observation and episode.info["counts"]["user_turns"] == 2
    tool_shaped = [  # the message tool's arguments never run an ERP tool
        {"name": "form_open_menu_item", "arguments": {"name": "TrvExpenses"}},
        '{"name": "form_close_form"}',
    ]
    for bad_arguments in ({"message": "x", "extra": 1}, {}, '{"message": 7}', "not json", None, *tool_shaped):
        bad = episode.call_tool(MESSAGE_TOOL, bad_arguments)
        assert bad.invalid and '"InvalidAction"' in bad.observation and not bad.done, bad_arguments
        assert bad.info["action"]["kind"] == "invalid", bad_arguments
    assert episode.metrics()["invalid_actions"] == 7.0 and set(episode.metrics()) == set(METRICS)
    assert episode.metrics()["tool_calls"] == 1.0  # form_find_menu_item's


def test_refusals_change_nothing():
    episode = Episode(user_model=None)
    with pytest.raises(EpisodeError, match="start"):
        episode.act({"message": "hi"})
    with pytest.raises(EpisodeError, match="start"):
        episode.grade()
    assert episode.metrics() == dict.fromkeys(METRICS, 0.0)
    episode.start(task_index=0)
    episode.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
    with pytest.raises(ValueError, match="task_id"):
        episode.start(task_id="no-such-task")
    assert episode.info["counts"]["steps"] == 1 and episode.started  # the running episode goes on
    assert episode.send_message("stuck").done and episode.info["termination_reason"] == "stalled"
    with pytest.raises(EpisodeError, match="over"):
        episode.send_message("again")


def test_truncation_ends_the_episode():
    episode = Episode(max_episode_steps=2)
    episode.start(task_index=0)
    assert not episode.act("not json").done
    turn = episode.act("not json")
    assert turn.done and turn.truncated and episode.reward == 0.0
    with pytest.raises(EpisodeError, match="over"):
        episode.act("not json")
    assert episode.grade()["success"] is False
