"""Every model call's cacheable prefix and both token units, recorded per step and per episode."""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401  (registers the env ids)
from erp_sim.agents.llm_user import LLMUser
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.summarizers import LLMSummarizer, load_prompt
from erp_sim.agents.tokens import REPLY_PRIMING_TOKENS, get_counter

TASK = "hotel-003"


def episode(policy: str, **env_options):
    env = gym.make("erp_sim/ExpenseItemization-v0", **env_options)
    try:
        return run_episode(env, wrap(ScriptedAgent(), policy), task_id=TASK, policy=policy)
    finally:
        env.close()


def test_full_history_makes_each_request_but_the_first_cacheable_up_to_the_previous_one():
    trajectory = episode("full")
    steps = trajectory.steps
    assert len(steps) > 5 and steps[0].cacheable_prefix_tokens == 0
    for before, after in itertools.pairwise(steps):
        # the previous request (tools + messages) is a prefix of this one; only its reply priming is not
        assert after.cacheable_prefix_tokens == before.input_tokens - REPLY_PRIMING_TOKENS
    metrics = trajectory.metrics
    assert metrics.cacheable_prefix_tokens == sum(s.cacheable_prefix_tokens for s in steps) < metrics.input_tokens
    assert metrics.provider_cached_tokens is None and all(s.provider_cached_tokens is None for s in steps)  # offline


def test_pruning_and_summarising_rewrite_the_prefix():
    full, last_n, summary = (episode(p) for p in ("full", "last_n:n=2", "last_n_summary:n=2,w=1"))
    share = {
        name: t.metrics.cacheable_prefix_tokens / t.metrics.input_tokens
        for name, t in (("full", full), ("last_n", last_n), ("summary", summary))
    }
    assert share["full"] > share["last_n"] and share["full"] > share["summary"]
    pruned = [
        s
        for before, s in zip(last_n.steps, last_n.steps[1:])
        if s.cacheable_prefix_tokens < before.input_tokens - REPLY_PRIMING_TOKENS
    ]
    assert pruned  # a step whose window moved keeps only the part before the first dropped message
    assert all(s.cacheable_prefix_tokens <= s.input_tokens for s in last_n.steps + summary.steps)


def answer_roles(body):
    """The fake server as the LLM summarizer and the LLM user (told apart by their prompts)."""
    system = body["messages"][0]["content"]
    if system == load_prompt("summarize_history.md"):
        return {"role": "assistant", "content": "## Task\nitemize the hotel line; steps folded"}, 400, 12
    return {"role": "assistant", "content": "Yes, please go ahead and add them all. ###END###"}, 300, 11


@pytest.mark.parametrize("cached", [0, 256])
def test_summarizer_and_user_calls_get_both_units_and_the_providers_cached_figure_apart(fake_openai_server, cached):
    fake_openai_server.answer_with(answer_roles)
    fake_openai_server.cached_tokens = cached
    model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url, temperature=0.0, max_retries=0)
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=LLMUser(model))
    agent = wrap(ScriptedAgent(), "last_n_summary:n=2,w=1", summarizer=LLMSummarizer(model))
    trajectory = run_episode(env, agent, task_id=TASK)
    env.close()
    calls = [call for step in trajectory.steps for call in step.role_calls]
    summarizer = [c for c in calls if c.role == "summarizer"]
    user = [c for c in calls if c.role == "user"]
    assert len(summarizer) >= 2 and len(user) >= 1 and len(calls) == len(fake_openai_server.requests)
    counter = get_counter()
    sent = {id(body): counter.count_messages(body["messages"]) for body in fake_openai_server.requests}
    assert sorted(c.input_tokens for c in calls) == sorted(sent.values())  # o200k counts of what was sent
    assert all(c.reported_input_tokens == (400 if c.role == "summarizer" else 300) for c in calls)  # the service's
    assert all(c.provider_cached_tokens == cached for c in calls)  # reported, never replaced by ours
    assert summarizer[0].cacheable_prefix_tokens == 0 < summarizer[1].cacheable_prefix_tokens  # the prompt repeats
    m = trajectory.metrics
    assert m.summarizer_input_tokens == sum(c.input_tokens for c in summarizer)
    assert m.summarizer_tokens == m.summarizer_input_tokens + m.summarizer_output_tokens
    assert m.summarizer_reported_input_tokens == 400 * len(summarizer)
    assert m.summarizer_cacheable_prefix_tokens == sum(c.cacheable_prefix_tokens for c in summarizer)
    assert m.summarizer_provider_cached_tokens == cached * len(summarizer)
    assert (m.user_reported_input_tokens, m.user_input_tokens) == (300 * len(user), sum(c.input_tokens for c in user))
    assert m.user_provider_cached_tokens == cached * len(user)
    assert m.user_model_calls == len(user)
    # the agent is scripted: its own figures are ours only
    assert m.reported_input_tokens == 0 and m.provider_cached_tokens is None and m.cacheable_prefix_tokens > 0


def test_a_model_agents_provider_cached_tokens_are_kept_beside_our_bound(fake_openai_server):
    import json

    from erp_sim.agents.model_agent import ModelAgent

    reference = episode("full")
    fake_openai_server.cached_tokens = 128  # in every answer built from now on
    for message in reference.messages:  # the server answers what the scripted agent did
        if message["role"] == "assistant":
            if message.get("tool_calls"):
                fake_openai_server.reply_tool_calls(
                    [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]],
                    prompt_tokens=900,
                )
            else:
                fake_openai_server.reply_text(message["content"], prompt_tokens=900)
    model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url, temperature=0.0, max_retries=0)
    env = gym.make("erp_sim/ExpenseItemization-v0")
    trajectory = run_episode(env, ModelAgent(model), task_id=TASK)
    env.close()
    assert trajectory.grade.success
    steps = trajectory.steps
    assert all((s.provider_cached_tokens, s.reported_input_tokens) == (128, 900) for s in steps)
    assert [s.cacheable_prefix_tokens for s in steps] == [s.cacheable_prefix_tokens for s in reference.steps]
    m = trajectory.metrics
    assert (m.provider_cached_tokens, m.reported_input_tokens) == (128 * len(steps), 900 * len(steps))
    assert m.cacheable_prefix_tokens == reference.metrics.cacheable_prefix_tokens != m.provider_cached_tokens


def test_show_and_the_run_page_give_each_calls_cacheable_prefix_and_both_units():
    from erp_sim.agents.evaluation import show
    from erp_sim.agents.evaluation.episode_row import EpisodeRow
    from erp_sim.agents.evaluation.report import view
    from erp_sim.agents.tokens.prompt_cache import ModelCall

    trajectory = episode("full")
    step = trajectory.steps[1]
    step.reported_input_tokens, step.provider_cached_tokens = step.input_tokens + 40, 1024
    step.role_calls = [
        ModelCall(
            role="summarizer",
            input_tokens=500,
            output_tokens=20,
            cacheable_prefix_tokens=300,
            reported_input_tokens=480,
            provider_cached_tokens=None,
        )
    ]
    row = EpisodeRow(config="C2", policy="full", task_id=trajectory.task_id, run=0, agent="openai:m")
    text = show.render(row, trajectory)
    spread = (step.input_tokens + 40) / step.input_tokens - 1
    assert (
        f"cacheable prefix {step.cacheable_prefix_tokens:,} (" in text
        and f"the service reported {step.input_tokens + 40:,} input ({spread:+.1%} vs o200k), 1,024 cached" in text
    )
    assert (
        "summarizer model call: 500 input tokens (o200k), cacheable prefix 300 (60%); the service reported 480 "
        "input (-4.0% vs o200k), 20 output" in text
    )
    record = view.episode_record(row, trajectory.deterministic_dump(), view.MessageTable())
    call = record["calls"][1]
    assert (call["cacheable_prefix_tokens"], call["provider_cached_tokens"]) == (step.cacheable_prefix_tokens, 1024)
    assert call["role_calls"] == [
        {
            "role": "summarizer",
            "input_tokens": 500,
            "output_tokens": 20,
            "cacheable_prefix_tokens": 300,
            "reported_input_tokens": 480,
            "provider_cached_tokens": None,
        }
    ]
    assert "provider_cached_tokens" not in record["calls"][0]  # offline: nothing reported, nothing shown
