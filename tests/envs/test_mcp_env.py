"""The harness drives a remote ERP over MCP with the same agent and policies."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx

from erp_sim import get_task
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.envs.mcp_env import McpEnv, admin_grade, store_grade
from erp_sim.envs.user_models import RuleBasedUser
from erp_sim.mcp.server import build_server


def test_scripted_agent_with_a_policy_solves_tasks_in_process_one_episode_per_reset():
    server = build_server(task_set="hotel_50")  # no pinned task: each session names its own
    for task_id in ("hotel-007", "hotel-011"):
        task = get_task("hotel_50", task_id)
        env = McpEnv(server, task=task, user_model=RuleBasedUser(), grade=store_grade(server))
        try:
            trajectory = run_episode(env, wrap(ScriptedAgent(), "last_n:n=5"))
            assert trajectory.termination == "success" and trajectory.grade.strict_success
            assert len(trajectory.tools) == 22 and trajectory.metrics.tool_errors == 0
        finally:
            env.close()


def test_without_a_user_model_a_question_stalls_over_mcp():
    server = build_server(task_set="hotel_50", task_id="hotel-002")
    env = McpEnv(server, task=get_task("hotel_50", "hotel-002"), grade=store_grade(server))
    try:
        trajectory = run_episode(env, ScriptedAgent())
        assert trajectory.termination == "stalled" and trajectory.failure_category == "stalled_unanswered_question"
    finally:
        env.close()


def test_a_step_after_close_is_a_failed_call_not_a_crash():
    server = build_server(task_set="hotel_50", task_id="hotel-002")
    env = McpEnv(server, task=get_task("hotel_50", "hotel-002"), grade=store_grade(server))
    env.reset()
    env.close()
    observation, reward, terminated, _truncated, info = env.step({"name": "form_find_menu_item", "arguments": {}})
    assert "the MCP call failed: ResetNeeded: Call reset() before step()." in observation
    assert (reward, terminated, info["counts"]["tool_errors"]) == (0.0, False, 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_over_streamable_http_with_tokens_and_the_admin_grade_route(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            *"-m erp_sim.mcp.server --http --port".split(),
            str(port),
            *"--auth-token client-secret --admin-token admin-secret --log-level warning".split(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert server.poll() is None, "the server exited"
            try:
                httpx.get(f"{base}/admin/sessions", headers={"Authorization": "Bearer admin-secret"}, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        env = McpEnv(
            f"{base}/mcp",
            task=get_task("hotel_50", "hotel-013"),
            user_model=RuleBasedUser(),
            grade=admin_grade(base, "admin-secret"),
            auth_token="client-secret",
        )
        try:
            trajectory = run_episode(env, wrap(ScriptedAgent(), "last_n_summary:n=5,w=3"))
        finally:
            env.close()
        assert trajectory.termination == "success" and trajectory.grade.strict_success
    finally:
        server.terminate()
        server.wait(timeout=30)
