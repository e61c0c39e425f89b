"""The merge rule (``erp_sim.agents.models.turns``): one system message first, then alternating turns."""

from __future__ import annotations

from request_messages import CALL, MEMORY, QUESTION, REPLY, RESULT, SUMMARY, SYSTEM, TASK

from erp_sim.agents.models.turns import chat_messages, turns


def test_systems_fold_into_the_first_and_users_merge():
    wire = chat_messages([SYSTEM, MEMORY, TASK, SUMMARY, CALL, RESULT])
    assert wire[0] == {"role": "system", "content": SYSTEM["content"] + "\n\n" + MEMORY["content"]}
    assert wire[1] == {"role": "user", "content": TASK["content"] + "\n\n" + SUMMARY["content"]}
    assert wire[2:] == [CALL, RESULT]


def test_a_text_joins_the_calls_that_follow_it_but_not_the_other_way():
    wire = chat_messages([SYSTEM, TASK, QUESTION, CALL, RESULT, QUESTION, REPLY])
    assert wire[2] == {"role": "assistant", "content": "Shall I?", "tool_calls": CALL["tool_calls"]}
    assert wire[3:] == [RESULT, QUESTION, REPLY]


def test_a_user_message_after_tool_results_follows_an_empty_assistant_turn():
    wire = chat_messages([SYSTEM, TASK, CALL, RESULT, REPLY])
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert wire[4] == {"role": "assistant", "content": ""}


def test_messages_that_say_nothing_are_left_out():
    wire = chat_messages([SYSTEM, TASK, {"role": "assistant", "content": ""}, REPLY])
    assert wire == [SYSTEM, {"role": "user", "content": "Itemize EXP-1.\n\nYes."}]


def test_list_contents_keep_their_parts():
    parts = {"role": "user", "content": [{"type": "text", "text": "b"}]}
    assert chat_messages([TASK, parts])[0]["content"] == [
        {"type": "text", "text": "Itemize EXP-1.\n\n"},
        {"type": "text", "text": "b"},
    ]


def test_tool_results_join_the_users_turn_for_the_messages_api():
    grouped = turns([SYSTEM, TASK, CALL, RESULT, REPLY], tool_results="user")
    assert [turn.role for turn in grouped] == ["system", "user", "assistant", "user"]
    assert [index for index, _ in grouped[-1].members] == [3, 4]
