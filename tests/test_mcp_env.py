"""The harness drives a remote ERP over MCP with the same agent and policies."""

from __future__ import annotations

from agents.mcp_env import McpEnv, store_grade
from agents.policies import wrap
from agents.runner import run_episode
from agents.scripted import ScriptedAgent
from envs.user_models import RuleBasedUser
from erp_sim import get_task
from erp_sim.mcp_server import build_server


def test_scripted_agent_with_a_policy_solves_a_task_over_mcp():
    task = get_task("hotel_50", "hotel-007")
    server = build_server(task_set="hotel_50", task_id="hotel-007")
    env = McpEnv(server, task=task, user_model=RuleBasedUser(), grade=store_grade(server))
    try:
        trajectory = run_episode(env, wrap(ScriptedAgent(), "last_n:n=5"))
        assert trajectory.termination == "success" and trajectory.grade["strict_success"]
        assert len(trajectory.tools) == 22 and trajectory.metrics.tool_errors == 0
    finally:
        env.close()


def test_without_a_user_model_a_question_stalls_over_mcp():
    task = get_task("hotel_50", "hotel-002")
    server = build_server(task_set="hotel_50", task_id="hotel-002")
    env = McpEnv(server, task=task, grade=store_grade(server))
    try:
        trajectory = run_episode(env, ScriptedAgent())
        assert trajectory.termination == "stalled" and trajectory.failure_category == "stalled_unanswered_question"
    finally:
        env.close()
