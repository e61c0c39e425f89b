"""The LLM user on bank reconciliation: its prompt is the workflow's own (the statement, the user's word on
the lines to post, the real state), and an answer from it carries the scripted agent's episode to a reconciled
statement (the fee posted to the account the user named), as the rule-based user's does (here a fake server answers as an obedient model would)."""

from __future__ import annotations

import re

import gymnasium as gym

import erp_sim.envs  # noqa: F401
from erp_sim.agents.llm_user import END_TOKEN, LLMUser
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent


def obedient_user(body: dict) -> tuple[dict, int, int]:
    """What a model following the prompt says: the listed word on posting while the state is not complete, thanks
    and the end token once it is."""
    system = body["messages"][0]["content"]
    if "\ncomplete: no line is open" in system:
        return {"role": "assistant", "content": f"Thanks, that's all. {END_TOKEN}"}, 10, 5
    words = re.findall(r"^- (.+)$", system.split("answer from this list only:")[1], re.MULTILINE)
    return {"role": "assistant", "content": " ".join(words) or "Please carry on."}, 10, 5


def test_the_llm_user_answers_a_bank_reconciliation_from_its_prompt(fake_openai_server):
    fake_openai_server.answer_with(obedient_user)
    user = LLMUser(OpenAIChatModel("fake-user", base_url=fake_openai_server.base_url))
    env = gym.make("erp_sim/BankReconciliation-v0", user_model=user)
    task = env.unwrapped.tasks[20]
    assert task.fees, "a task with a line to post, so that the agent must ask"
    trajectory = run_episode(env, ScriptedAgent(), task_id=task.task_id)
    assert trajectory.termination == "success", trajectory.termination
    systems = [request["messages"][0]["content"] for request in fake_openai_server.requests]
    assert systems  # the question about posting (marking it reconciled then ends the episode)
    assert all(task.statement_id in system and "Never say which bank transaction" in system for system in systems)
    assert "not complete:" in systems[0]
    assert fake_openai_server.requests[0]["messages"][-1]["role"] == "user"  # the agent's question, as input
    answers = [m["content"] for m in trajectory.messages if m["role"] == "user"][1:]
    assert any(answer.startswith("Yes, please post line") for answer in answers), answers
