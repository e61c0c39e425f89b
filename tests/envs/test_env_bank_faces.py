"""Bank reconciliation on every face an outsider reaches: its Gymnasium ids, garbage steps, an outside solver
through env.step, the MCP server, the scripted agent under C1 and C2, and the eval command."""

from __future__ import annotations

import json
import random

import gymnasium as gym
import pytest
from erp_support import oracle_lines
from fastmcp import Client
from gymnasium.utils.env_checker import check_env
from mcp.types import TextContent

import erp_sim
import erp_sim.envs
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.mcp.server import build_server

IDS = ("erp_sim/BankReconciliation-v0", "erp_sim/BankReconciliationLong-v0")


@pytest.mark.parametrize("env_id", IDS)
def test_both_ids_make_and_pass_check_env(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.unwrapped.tasks[0].task_set == ("bank_recon_50" if env_id == IDS[0] else "bank_recon_long")
    env.close()


def test_random_garbage_steps_never_raise_and_keep_the_books():
    env = gym.make(IDS[0])
    rng = random.Random(0)
    env.reset(seed=0)
    garbage = ["", "{", "null", "[]", '{"name": "form_click_control"}', "\x00" * 50, "nan", '{"name": 5}']
    tools = list(erp_sim.TOOLS)
    for _ in range(200):
        if rng.random() < 0.5:
            action = rng.choice(garbage)
        else:
            action = json.dumps({"name": rng.choice(tools), "arguments": {"rowNumber": rng.choice(["1", "-1", 2])}})
        _, reward, terminated, truncated, _info = env.step(action)
        assert reward == 0.0 and not terminated
        if truncated:
            env.reset()
    env.close()


@pytest.mark.parametrize("reward", ["success", "strict"])
def test_an_outside_solver_through_env_step_gets_reward_one_on_every_task(reward):
    env = gym.make(IDS[0], reward=reward, user_model=None)
    for task in env.unwrapped.tasks:
        env.reset(options={"task_id": task.task_id})
        calls = erp_sim.oracle_calls(env.unwrapped.task)
        name, arguments = next(calls)
        total, steps = 0.0, 0
        while True:
            observation, step_reward, terminated, truncated, info = env.step(
                json.dumps({"name": name, "arguments": arguments})
            )
            total, steps = total + step_reward, steps + 1
            if terminated or truncated:
                break
            try:
                name, arguments = calls.send(observation)
            except StopIteration:
                break
        assert total == 1.0 and info["final_grade"]["strict_success"], task.task_id
        assert steps < env.spec.max_episode_steps
    env.close()


async def test_the_mcp_server_serves_bank_recon_50_and_the_oracle_solves_through_it():
    server = build_server(task_set="bank_recon_50")
    async with Client(server) as client:
        prompt = await client.get_prompt("bank_reconciliation_task")
        task = erp_sim.get_task("bank_recon_50", "bank-000")
        calls, meta = erp_sim.oracle_calls(task), {"erp-sim/session": "s1", "erp-sim/task": "bank-000"}
        name, arguments = next(calls)
        try:
            while True:
                result = await client.call_tool_mcp(name, arguments, meta=meta)
                block = result.content[0]
                assert isinstance(block, TextContent) and not result.is_error, block
                name, arguments = calls.send(block.text)
        except StopIteration:
            pass
    assert "Matching rules" in prompt.messages[0].content.text
    episode = next(e for e in server.episodes.summaries() if e["key"] == "client:process:s1")
    grade = server.episodes.grade(episode["session_id"])
    assert grade["grade"]["strict_success"]


@pytest.mark.parametrize("task_id", ["bank-003", "bank-049"])
def test_the_scripted_agent_reconciles_under_c2_and_stalls_under_c1(task_id):
    env = gym.make(IDS[0])
    trajectory = run_episode(env, wrap(ScriptedAgent(), "full"), task_id=task_id)
    assert trajectory.grade.strict_success, trajectory.grade
    env.close()
    silent = gym.make(IDS[0], user_model=None)
    stalled = run_episode(silent, wrap(ScriptedAgent(), "full"), task_id=task_id)
    assert not stalled.grade.success and not stalled.grade.over_posted_fees
    silent.close()


def test_demo_shows_the_oracle_on_bank_recon_50(capsys):
    from erp_sim.agents import demo

    assert demo.main(["--task-set", "bank_recon_50"]) == 0
    out = capsys.readouterr().out
    assert "Drew Edwards" in out and '"strict_success": true' in out and '"reconciled": true' in out


def test_play_on_the_bank_id_answers_a_fee_question_and_solves_the_task(monkeypatch, capsys):
    import io

    from erp_sim.envs import play

    task = erp_sim.get_task("bank_recon_50", "bank-003")
    lines = oracle_lines(task)
    fee = task.fees[0].line_number
    typed = [f"say Should I post line {fee} as new, and to which account?", *lines, "quit"]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in typed)))
    code = play.main(["--env", IDS[0], "--task", "bank-003", "--raw"])
    out = capsys.readouterr().out
    assert code == 0 and f"Yes, please post line {fee}" in out
    assert "Episode ended: success." in out and "Grade: success=True strict_success=True" in out


def test_the_trl_adapter_on_the_bank_id_solves_a_task_and_logs_reconciled_fraction():
    from erp_sim.envs.trl_adapter import metric_funcs, reward_func, tool_env_factory, training_rows

    env = tool_env_factory(IDS[0], user_model="rule")()
    env.reset(task_id="bank-003")
    calls = erp_sim.oracle_calls(erp_sim.get_task("bank_recon_50", "bank-003"))
    name, arguments = next(calls)
    while not env.done:
        observation = getattr(env, name)(**arguments)
        try:
            name, arguments = calls.send(observation)
        except StopIteration:
            break
    funcs = metric_funcs(IDS[0])
    assert env.done and reward_func([env]) == [1.0]
    assert [f.__name__ for f in funcs] == ["strict_success", "reconciled_fraction", "invalid_actions", "tool_errors"]
    assert [f([env]) for f in funcs] == [[1.0], [1.0], [0.0], [0.0]]
    rows = training_rows(IDS[0])
    assert len(rows) == 50 and "Matching rules" in rows[0]["prompt"][0]["content"]


async def test_erp_sim_serve_task_set_bank_recon_50_over_stdio_with_the_mcp_sdk_client(tmp_path):
    import asyncio
    import sys

    from agents_sdk_checks import solve
    from mcp import Client as SdkClient
    from mcp import StdioServerParameters
    from mcp_support import ROOT, SERVE

    grades = tmp_path / "grades.jsonl"
    args = [*SERVE[1:], "--task-set", "bank_recon_50", "--task", "bank-010", "--grade-file", str(grades)]
    async with SdkClient(StdioServerParameters(command=sys.executable, args=args, cwd=ROOT)) as client:
        await solve(client.call_tool, erp_sim.get_task("bank_recon_50", "bank-010"))
    for _ in range(100):  # the server writes its final grade on its way out
        lines = grades.read_text().splitlines() if grades.exists() else []
        if lines and json.loads(lines[-1])["state"] == "closed":
            break
        await asyncio.sleep(0.05)
    session = json.loads(grades.read_text().splitlines()[-1])
    assert session["grade"]["strict_success"] and session["grade"]["reconciled_fraction"] == 1.0
