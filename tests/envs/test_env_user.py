"""The simulated user: the study's user protocol, the C1 stall, the turn limit and pluggable user models."""

from __future__ import annotations

import gymnasium as gym
import pytest

import erp_sim
import erp_sim.envs
from erp_sim.envs.user_models import RuleBasedUser, UserModel, UserReply, UserView
from erp_sim.workflows.itemization.user import CARRY_ON, CONFIRM_ADD, DECLINE_ATTACHMENT, THANKS, VERIFY


def make(**kwargs):
    env = gym.make("erp_sim/ExpenseItemization-v0", **kwargs)
    env.reset(options={"task_id": "hotel-003"})
    return env


def play_oracle_until(env, stop_before: str | None = None, *, skip: int = 0):
    """Run the oracle's calls; stop before the (skip+1)-th call named ``stop_before``."""
    calls = erp_sim.oracle_calls(env.unwrapped.task)
    name, arguments = next(calls)
    while True:
        if name == stop_before:
            if skip == 0:
                return
            skip -= 1
        observation = env.step({"name": name, "arguments": arguments})[0]
        try:
            name, arguments = calls.send(observation)
        except StopIteration:
            return


def say(env, text: str):
    return env.step({"message": text})


def test_no_user_model_stalls_on_a_question():
    env = make(user_model=None)
    obs, reward, terminated, truncated, info = say(env, "Should I add the missing breakfast charge?")
    assert (obs, reward, terminated, truncated) == ("", 0.0, True, False)
    assert info["termination_reason"] == "stalled" and info["counts"]["user_turns"] == 1
    assert info["final_grade"]["success"] is False
    assert make(user_model="none").step({"message": "?"})[4]["termination_reason"] == "stalled"


@pytest.mark.parametrize(
    "message",
    [
        "Should I add the missing items?",
        "Shall I continue with the remaining charges?",
        "Can you confirm I should create a line for the parking fee?",
    ],
)
def test_rule_user_confirms_adding_missing_items(message):
    obs, reward, terminated, _, info = say(make(), message)
    assert obs == CONFIRM_ADD and not terminated and reward == 0.0 and info["action"]["kind"] == "message"


@pytest.mark.parametrize(
    "message",
    [
        "Could you attach the hotel folio?",
        "Please upload the receipt so I can read it.",
        "Can you send me a copy of the invoice?",
    ],
)
def test_rule_user_declines_to_attach_documents(message):
    obs, _, terminated, _, _ = say(make(), message)
    assert obs == DECLINE_ATTACHMENT and not terminated


def test_rule_user_checks_the_real_state_when_the_agent_claims_it_is_done():
    env = make()
    header = env.unwrapped.task.header_amount
    obs, _, terminated, _, _ = say(env, "I'm done, everything is itemized.")
    assert not terminated and f"remaining amount is {header}" in obs and "no itemized line is saved" in obs

    play_oracle_until(env, "form_close_form", skip=1)  # saved, but the itemization form is still open
    obs, _, terminated, _, info = say(env, "I attached every receipt charge as a line; the itemization is complete.")
    assert not terminated and "form is still open" in obs and "remaining amount" not in obs
    assert info["grade"]["remaining_amount"] == "0.00" and info["grade"]["itemization_form_open"]


def test_rule_user_asks_for_verification_after_an_itemization_pass():
    env = make()
    assert say(env, "I opened the expense report.")[0] == CARRY_ON
    play_oracle_until(env, "form_close_form", skip=1)
    assert say(env, "I saved the itemized lines.")[0] == VERIFY


def test_rule_user_ends_the_conversation_when_the_state_is_complete():
    env = make().unwrapped
    grade = env.grade().model_copy(update={"success": True})
    reply = RuleBasedUser().reply("All done!", UserView(env.task, 1, lambda: grade))
    assert reply == UserReply(THANKS, True)


def test_rule_user_replies_are_deterministic():
    messages = ["Should I add the tax?", "Please attach the folio.", "Done.", "What next?", "Progress: 3 lines."]
    replies = [[say(env, m)[0] for m in messages] for env in (make(), make())]
    assert replies[0] == replies[1]


def test_max_user_turns_ends_the_conversation():
    env = make(max_user_turns=2)
    assert not say(env, "Hello?")[2]
    obs, _, terminated, _, info = say(env, "Still there?")
    assert terminated and obs and info["termination_reason"] == "user_turn_limit"


class ScriptedUser:
    """A custom user model: ends the conversation on its second message."""

    def __init__(self):
        self.seen: list[tuple[str, int, str]] = []

    def reset(self, task):
        self.seen.clear()

    def reply(self, message: str, view: UserView) -> UserReply:
        self.seen.append((message, view.turn, view.grade.remaining_amount))
        return UserReply(f"reply {view.turn}", ends_conversation=view.turn == 2)


def test_custom_user_model_plugs_in():
    user = ScriptedUser()
    assert isinstance(user, UserModel)
    env = make(user_model=user)
    assert say(env, "one")[0] == "reply 1"
    obs, _, terminated, _, info = say(env, "two")
    assert obs == "reply 2" and terminated and info["termination_reason"] == "user_ended"
    assert user.seen == [("one", 1, env.unwrapped.task.header_amount), ("two", 2, env.unwrapped.task.header_amount)]
    env.reset(seed=0)
    assert user.seen == []


def test_user_view_grades_lazily():
    calls = []
    view = UserView(None, 1, lambda: calls.append(1) or "grade")
    assert calls == []
    assert view.grade == view.grade == "grade" and calls == [1]
