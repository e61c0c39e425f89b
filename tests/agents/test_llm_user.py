"""The LLM user speaks the env's user-model protocol through any chat model (here the fake server)."""

from __future__ import annotations

import gymnasium as gym

import erp_sim.envs  # noqa: F401
from erp_sim.agents.llm_user import END_TOKEN, LLMUser
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent


def test_llm_user_answers_the_agent_and_sees_the_real_state(fake_openai_server):
    fake_openai_server.reply_text("Yes, please add every missing charge as its own itemized line.")
    user = LLMUser(OpenAIChatModel("fake-user", base_url=fake_openai_server.base_url))
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=user)
    trajectory = run_episode(env, ScriptedAgent(), task_id="hotel-006")
    assert trajectory.termination == "success"
    [request] = fake_openai_server.requests
    system = request["messages"][0]["content"]
    assert "Completion protocol" in system and "not complete" in system and END_TOKEN in system
    assert request["messages"][-1]["content"].startswith("I found")  # the agent's question, as the user's input
    assert any(m["role"] == "user" and m["content"].startswith("Yes, please add") for m in trajectory.messages)
    assert user.usage.input_tokens == 10


def test_the_conversation_ends_only_when_the_user_says_so_and_the_state_is_complete(fake_openai_server):
    fake_openai_server.reply_text(f"Great, thanks! {END_TOKEN}")
    user = LLMUser(OpenAIChatModel("fake-user", base_url=fake_openai_server.base_url))
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=user)
    env.reset(options={"task_id": "hotel-006"})
    observation, reward, terminated, _, info = env.step('{"message": "I am done."}')
    assert observation == "Great, thanks!" and reward == 0.0
    assert not terminated and info["termination_reason"] is None  # nothing is itemized: the user may not end it


def test_an_empty_user_answer_ends_the_episode_as_the_user_model_s_scored_failure(fake_openai_server):
    """An empty answer is what the user model did: a scored model_error named as the user's, not a harness bug."""
    fake_openai_server.reply_text("")
    user = LLMUser(OpenAIChatModel("fake-user", base_url=fake_openai_server.base_url))
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=user)
    trajectory = run_episode(env, ScriptedAgent(), task_id="hotel-006")
    assert trajectory.termination == "model_error" and trajectory.infra_error is None
    assert trajectory.model_error == "user: the model answered with no text"
