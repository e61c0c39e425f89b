"""The agent harness: the runner, the scripted agent, metrics, record/replay through the OpenAI path."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from harness_support import script_server_with_scripted_agent

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim import load_task_set
from erp_sim.agents.model_agent import ModelAgent
from erp_sim.agents.models.cassette import RecordingModel, ReplayModel
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent, decide
from erp_sim.agents.tokens import count_messages
from erp_sim.agents.trajectory import write_finetuning_jsonl
from erp_sim.agents.types import InfrastructureError


@pytest.fixture(scope="module")
def env():
    environment = gym.make("erp_sim/ExpenseItemization-v0")
    yield environment
    environment.close()


def test_scripted_agent_with_full_history_solves_every_hotel_task(env):
    for task in load_task_set("hotel_50"):
        trajectory = run_episode(env, ScriptedAgent(), task_id=task.task_id)
        assert trajectory.termination == "success" and trajectory.grade.strict_success, task.task_id
        assert trajectory.failure_category is None


def test_scripted_agent_solves_every_expense_type():
    environment = gym.make("erp_sim/AllExpenseTypes-v0")
    for task in load_task_set("expense_types"):
        trajectory = run_episode(environment, ScriptedAgent(), task_id=task.task_id)
        assert trajectory.grade.strict_success, task.task_id


def test_metrics_are_exact_token_counts_of_what_was_shown(env):
    trajectory = run_episode(env, ScriptedAgent(), task_id="hotel-005")
    shown_at = [trajectory.context.shown(k) for k in range(len(trajectory.steps))]
    tool_tokens = trajectory.steps[0].input_tokens - count_messages(shown_at[0])
    assert tool_tokens > 1000  # the 22 tool schemas are part of every input
    for step, shown in zip(trajectory.steps, shown_at):
        assert step.input_tokens == count_messages(shown) + tool_tokens
    metrics = trajectory.metrics
    assert metrics.input_tokens == sum(s.input_tokens for s in trajectory.steps)
    assert metrics.peak_tokens == max(s.input_tokens for s in trajectory.steps)
    assert metrics.dependency == sum(
        (s.input_tokens + 2 * s.output_tokens) * s.output_tokens / 2 for s in trajectory.steps
    )
    assert metrics.model_calls == len(trajectory.steps) and metrics.tool_calls == sum(
        s.tool_calls for s in trajectory.steps
    )


def test_the_scripted_agent_decides_only_from_what_it_is_shown(env):
    trajectory = run_episode(env, ScriptedAgent(), task_id="hotel-012")
    # Same visible messages -> same decision, whatever happened before (no hidden memory).
    for shown in (trajectory.context.shown(k) for k in range(0, len(trajectory.steps), 7)):
        assert decide(shown) == decide(json.loads(json.dumps(shown)))


def test_pruning_makes_the_agent_reread_and_a_summary_avoids_it(env):
    full = run_episode(env, ScriptedAgent(), task_id="hotel-049")
    pruned = run_episode(env, wrap(ScriptedAgent(), "last_n:n=5"), task_id="hotel-049")
    summarized = run_episode(env, wrap(ScriptedAgent(), "last_n_summary:n=5,w=3"), task_id="hotel-049")
    assert full.grade.success and pruned.grade.success and summarized.grade.success

    def rereads(trajectory):
        return sum(
            "ViewReceipt" in c["function"]["arguments"] for m in trajectory.messages for c in m.get("tool_calls") or []
        )

    assert rereads(full) == 1 and rereads(pruned) > 3 and rereads(summarized) == 1
    assert pruned.metrics.input_tokens < full.metrics.input_tokens / 2
    assert summarized.metrics.peak_tokens < full.metrics.peak_tokens / 3


def test_no_user_model_stalls_on_the_agents_question():
    environment = gym.make("erp_sim/ExpenseItemization-v0", user_model=None)
    trajectory = run_episode(environment, ScriptedAgent(), task_id="hotel-001")
    assert trajectory.termination == "stalled" and trajectory.failure_category == "stalled_unanswered_question"


def test_trajectory_exports_for_fine_tuning(env, tmp_path):
    trajectory = run_episode(env, ScriptedAgent(), task_id="hotel-000")
    path = tmp_path / "ft.jsonl"
    write_finetuning_jsonl([trajectory], path)
    record = json.loads(path.read_text())
    assert set(record) == {"messages", "tools"} and record["messages"][0]["role"] == "system"
    calls = {c["id"] for m in record["messages"] for c in m.get("tool_calls") or []}
    assert calls == {m["tool_call_id"] for m in record["messages"] if m["role"] == "tool"}


def test_openai_path_records_and_replays_an_identical_trajectory(env, fake_openai_server, tmp_path):
    reference = script_server_with_scripted_agent(fake_openai_server, env, "hotel-004")
    cassette = tmp_path / "episode.jsonl"
    model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url, temperature=0, seed=7)
    recorded = run_episode(env, ModelAgent(RecordingModel(model, cassette)), task_id="hotel-004")
    assert recorded.grade.success and recorded.grade == reference.grade
    assert recorded.steps[0].reported_input_tokens == 10  # usage as the server reported it
    assert fake_openai_server.requests[0]["temperature"] == 0 and fake_openai_server.requests[0]["seed"] == 7
    fake_openai_server.fail_always(500)  # replay must never touch the server
    replayed = run_episode(env, ModelAgent(ReplayModel(cassette, strict=True)), task_id="hotel-004")
    assert replayed.deterministic_dump() == recorded.deterministic_dump()


def test_infrastructure_errors_end_the_episode_as_infra_error(env, fake_openai_server):
    fake_openai_server.fail_always(500)
    model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url, max_retries=1, backoff_base=0.0)
    trajectory = run_episode(env, ModelAgent(model), task_id="hotel-000")
    assert trajectory.termination == "infra_error" and trajectory.failure_category is None
    assert "gave up" in trajectory.infra_error
    with pytest.raises(InfrastructureError):
        model.complete([{"role": "user", "content": "x"}])


def test_an_agent_answering_other_than_an_agent_step_ends_its_episode_with_a_clear_error(env):
    """User code's agent is checked (the policy layers pass a step on without copying it): a dict
    instead of an AgentStep is a harness error naming both, and the run goes on."""

    class DictAgent:
        def reset(self) -> None: ...

        def act(self, transcript, tools):
            return {"message": {"role": "assistant", "content": "done"}, "shown": transcript}

    for agent in (DictAgent(), wrap(DictAgent(), "last_n:n=5")):
        trajectory = run_episode(env, agent, task_id="hotel-000")
        assert trajectory.termination == "harness_error" and not trajectory.steps
        assert "DictAgent.act returned a dict, not an AgentStep" in trajectory.infra_error
    assert run_episode(env, ScriptedAgent(), task_id="hotel-000").termination == "success"


def test_recall_model_misreads_far_back_facts_deterministically(env):
    from erp_sim.agents.scripted import Recall, misread_amount

    assert misread_amount("43.81") == "43.18" and misread_amount("12.00") == "13.00" and misread_amount("?") == "?"
    recall = Recall(horizon=50_000, seed=3)
    for index in range(30):  # monotone in distance: once misread at d, misread at every larger d
        flips = [recall.misread("task", index, d) for d in range(0, 400_000, 10_000)]
        assert flips == sorted(flips)
    assert not any(recall.misread("task", i, 0) for i in range(50))  # a fresh read is always right

    def run(seed, spec="full"):
        agent = wrap(ScriptedAgent(recall_horizon=20_000, seed=seed), spec)
        return run_episode(env, agent, task_id="hotel-049")

    first, again = run(1), run(1)
    assert first.deterministic_dump() == again.deterministic_dump()
    assert not first.grade.success and first.failure_category in {"wrong_amount", "over_itemization"}
    pruned = run(1, "last_n:n=2")  # re-reading keeps the receipt close: fewer misreadings
    assert len(pruned.grade.unexpected_lines) < len(first.grade.unexpected_lines)


def test_eval_parses_scripted_agent_options():
    from erp_sim.agents.evaluation.episode_models import _scripted_recall

    assert _scripted_recall("") is None and _scripted_recall("recall=2e6") == 2e6
    with pytest.raises(ValueError, match="recall=TOKENS"):
        _scripted_recall("recal=1")
