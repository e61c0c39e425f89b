"""A workflow is a folder and one registry line, on the env's and the agent harness's faces too: the toy second
workflow (tests/toy_workflow) gets its Gymnasium id, the env's info and system prompt, the rule-based user, the
MCP prompt, a scripted episode, the structured summary, the failure taxonomy and the LLM user's context, from
its folder alone."""

from __future__ import annotations

import gymnasium as gym
import pytest

from erp_sim import task_sets, workflows
from erp_sim.agents.facts import facts_from_messages, render_summary
from erp_sim.agents.failures import classify_failure
from erp_sim.agents.llm_user import LLMUser
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent, decide
from erp_sim.agents.types import ChatResponse
from erp_sim.envs.user_models import UserView
from erp_sim.outcomes import failure_report_order


def test_the_toy_env_id_is_registered_from_the_workflow_s_task_sets(toy):
    spec = gym.spec(toy.ENV_ID)
    assert spec.kwargs == {"task_set": "toy_notes"} and spec.max_episode_steps == 20
    env = gym.make(toy.ENV_ID)
    observation, info = env.reset(options={"task_id": "notes-1"})
    assert observation == "Open the notes and count them: there should be 4."
    assert info["system_prompt"].startswith("You count notes")
    assert info["task"] == {"task_id": "notes-1", "task_set": "toy_notes"}
    assert info["grade"] == {"success": False, "done_fraction": 0.0}
    assert env.unwrapped.render() is None  # no render mode asked for
    observation, reward, terminated, _, info = env.step({"message": "Anything?"})
    assert observation == "Please open the notes and count them." and not terminated
    observation, reward, terminated, _, info = env.step({"message": "All done."})  # checked against the state
    assert (observation, reward, terminated) == ("The notes are not open yet.", 0.0, False)
    _, reward, terminated, _, info = env.step({"name": "form_open_menu_item", "arguments": {"name": "ToyNotes"}})
    assert (reward, terminated, info["termination_reason"]) == (1.0, True, "success")
    assert info["final_grade"] == {"success": True, "strict_success": True, "notes": 4}
    env.close()


def test_the_toy_env_shapes_by_the_workflow_s_done_fraction(toy):
    env = gym.make(toy.ENV_ID, reward_shaping="potential", render_mode="ansi")
    env.reset(options={"task_index": 0})
    _, reward, terminated, _, info = env.step({"name": "form_open_menu_item", "arguments": {"name": "ToyNotes"}})
    assert terminated and reward == 1.0 and info["grade"] == {"success": True, "done_fraction": 1.0}
    assert env.unwrapped.render().endswith("\n--- success True, done fraction 1.0\n")
    env.close()


def test_a_scripted_episode_of_the_toy_workflow(toy):
    env = gym.make(toy.ENV_ID)
    trajectory = run_episode(env, wrap(ScriptedAgent(), "last_n_summary:n=2,w=1"), task_id="notes-2")
    env.close()
    calls = [c["function"]["name"] for m in trajectory.messages for c in m.get("tool_calls") or []]
    assert calls == ["form_find_menu_item", "form_open_menu_item"]
    assert trajectory.termination == "success" and trajectory.grade.model_dump() == {
        "success": True,
        "strict_success": True,
        "notes": 5,
    }
    assert trajectory.failure_category is None


def test_the_scripted_agent_picks_the_workflow_from_the_instruction(toy):
    toy_task = [{"role": "system", "content": "x"}, {"role": "user", "content": "Count them: there should be 3."}]
    toy_task[1]["content"] = "Open the notes and count them: there should be 3."
    assert decide(toy_task) == ("form_find_menu_item", {"menuItemFilter": "notes"})
    itemization = [
        {"role": "system", "content": "x"},
        {"role": "user", "content": "Please itemize line 1 of EXP-000001."},
    ]
    assert decide(itemization) == ("form_find_menu_item", {"menuItemFilter": "expense reports"})
    assert decide(toy_task[:1] + [{"role": "user", "content": "Hello"}], workflow="toy") == (
        "How many notes should there be?"
    )


def test_the_summary_facts_and_the_failure_taxonomy_are_the_toy_s(toy):
    env = gym.make(toy.ENV_ID, user_model=None)
    trajectory = run_episode(env, ScriptedAgent(), task_id="notes-0", max_model_calls=1)
    env.close()
    assert trajectory.termination == "step_limit" and classify_failure(trajectory) == "step_limit"
    trajectory.termination = "agent_stopped"
    assert classify_failure(trajectory) == "notes_unopened"
    assert "notes_unopened" in workflows.failure_categories()
    assert failure_report_order(workflows.harness("toy").failures.categories)[4] == "notes_unopened"
    instruction = trajectory.messages[1]["content"]
    facts = facts_from_messages(trajectory.messages[2:], instruction)
    assert facts.workflow == "toy" and facts.task.rows_seen == 0
    summary = render_summary(instruction, facts)
    assert "- Open the notes." in summary and "- Count every note." in summary


def test_the_rule_based_and_the_llm_user_read_the_toy_s_rules(toy):
    task = task_sets.get_task("toy_notes", 0)
    grade = workflows.load("toy").grader.model(success=True, strict_success=True, notes=3)
    assert erp_sim_rule_reply("I am done", task, grade) == ("Thanks, that's it.", True)

    class Model:
        def __init__(self):
            self.requests = []

        def complete(self, messages, tools=None):
            self.requests.append(messages)
            return ChatResponse(message={"role": "assistant", "content": "Great ###END###"})

    model = Model()
    user = LLMUser(model)
    user.reset(task)
    reply = user.reply("Done: 3 notes.", UserView(task, 1, lambda: grade))
    assert reply.ends_conversation and reply.text == "Great"
    assert model.requests[0][0]["content"] == (
        "You asked an assistant: Open the notes and count them: there should be 3.\n"
        "Done in the ERP: True. Write ###END### when it is done.\n"
    )


def erp_sim_rule_reply(message: str, task, grade) -> tuple[str, bool]:
    from erp_sim.envs.user_models import RuleBasedUser

    reply = RuleBasedUser().reply(message, UserView(task, 1, lambda: grade))
    return reply.text, reply.ends_conversation


@pytest.mark.asyncio
async def test_the_mcp_server_offers_the_toy_s_task_prompt(toy):
    from fastmcp import Client

    from erp_sim.mcp.server import build_server

    server = build_server("toy_notes", idle_timeout_s=None)
    async with Client(server) as client:
        prompts = [prompt.name for prompt in await client.list_prompts()]
        assert prompts == ["notes_task"]
        prompt = await client.get_prompt("notes_task")
        assert prompt.messages[0].content.text == "Open the notes and count them: there should be 3."
    assert "one note-counting task: read the 'notes_task' prompt" in server.instructions


def test_the_training_episode_logs_the_toy_s_grade(toy):
    from erp_sim.envs.episode import Episode, logged_metrics

    episode = Episode(toy.ENV_ID)
    assert logged_metrics(toy.ENV_ID) == ("strict_success", "invalid_actions", "tool_errors")  # no fraction named
    episode.start(task_index=0)
    episode.call_tool("form_open_menu_item", {"name": "ToyNotes"})
    assert episode.done and episode.reward == 1.0
    assert episode.metrics() == {
        "strict_success": 1.0,
        "success": 1.0,
        "invalid_actions": 0.0,
        "tool_errors": 0.0,
        "tool_calls": 1.0,
        "user_turns": 0.0,
        "steps": 1.0,
    }
    episode.close()


def test_erp_sim_play_plays_the_toy_workflow(toy, monkeypatch, capsys):
    import io

    from erp_sim.envs import play

    lines = ["grade", 'form_open_menu_item {"name": "ToyNotes"}']
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    assert play.main(["--env", toy.ENV_ID, "--task", "notes-1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Task notes-1 (toy_notes). Type 'help' for commands.")
    assert "Grade: success=False strict_success=False; success False, done fraction 0.0" in out
    assert "[reward 1, success True, done fraction 1.0, step 1]" in out
    assert out.endswith(
        "Episode ended: success.\nGrade: success=True strict_success=True; success True, done fraction 1.0\n"
    )


def test_layered_memory_writes_the_toy_s_sop(toy, tmp_path):
    from erp_sim.agents.memory.consolidate import consolidate_episode
    from erp_sim.agents.memory.store import MemoryStore

    env = gym.make(toy.ENV_ID)
    trajectory = run_episode(env, ScriptedAgent(), task_id="notes-2")
    env.close()
    store = MemoryStore.open(tmp_path / "memory")
    consolidation = consolidate_episode(store, trajectory)
    assert consolidation.success and "sop/count_notes" in consolidation.promoted
    sop = store.sop("sop/count_notes")
    assert sop.goal == "Open ToyNotes and tell the user that there are {notes} notes." and sop.parameters == ["notes"]
    assert [step.tool for step in sop.steps] == ["form_find_menu_item", "form_open_menu_item"]


def test_an_offline_eval_row_of_the_toy_workflow(toy, tmp_path):
    from erp_sim.agents.evaluation.episode_row import EpisodeRow
    from erp_sim.agents.evaluation.eval_options import EpisodeSpec
    from erp_sim.agents.evaluation.evaluate import run_spec
    from erp_sim.agents.evaluation.statistics import summarize_config

    spec = EpisodeSpec(
        config="C1",
        policy="full",
        user="rule",
        agent="scripted",
        task_set="toy_notes",
        task_id="notes-2",
        run=0,
        seed=0,
        out_dir=str(tmp_path),
    )
    row = EpisodeRow.model_validate(run_spec(spec))
    assert row.termination == "success" and row.failure_category is None
    assert row.dump()["grade"] == {"success": True, "strict_success": True, "collateral": []}  # no itemized_fraction
    estimates = summarize_config([row]).estimates
    assert estimates["success"].mean == 1.0 and estimates["itemized_amount"].n == 0
