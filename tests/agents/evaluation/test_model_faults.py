"""One episode's model failure is that episode's row, never the run's (fake server with real faults)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from fake_openai_server import CONTEXT_LENGTH_MESSAGE
from harness_support import script_server_with_scripted_agent
from usage_support import usage_error

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.model_agent import ModelAgent
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent


@pytest.fixture
def env():
    environment = gym.make("erp_sim/ExpenseItemization-v0")
    yield environment
    environment.close()


def fast_model(server) -> OpenAIChatModel:
    return OpenAIChatModel("fake-model", base_url=server.base_url, temperature=0.0, max_retries=1, backoff_base=0.0)


def test_a_context_length_400_ends_the_episode_as_a_scored_context_overflow(env, fake_openai_server):
    fake_openai_server.reply_tool_calls([("form_open_menu_item", {"name": "TrvExpenses"})])
    fake_openai_server.fail(400, message=CONTEXT_LENGTH_MESSAGE)
    trajectory = run_episode(env, ModelAgent(fast_model(fake_openai_server)), task_id="hotel-000")
    assert trajectory.termination == "context_overflow" and trajectory.failure_category == "context_overflow"
    assert "maximum context length" in trajectory.model_error and trajectory.infra_error is None
    assert len(trajectory.steps) == 1 and not trajectory.grade.success


def test_another_persistent_400_ends_the_episode_as_model_request_refused(env, fake_openai_server):
    fake_openai_server.fail_always(400, message="content filter: request blocked")
    trajectory = run_episode(env, ModelAgent(fast_model(fake_openai_server)), task_id="hotel-000")
    assert trajectory.termination == "model_error" and trajectory.failure_category == "model_request_refused"
    assert len(fake_openai_server.requests) == 1  # not retried


def test_context_window_ends_the_episode_before_an_oversized_request_is_sent(env, fake_openai_server):
    trajectory = run_episode(env, ModelAgent(fast_model(fake_openai_server), context_window=500), task_id="hotel-000")
    assert trajectory.termination == "context_overflow" and "not sent" in trajectory.model_error
    assert fake_openai_server.requests == []


def test_context_window_applies_to_any_agent_scored_as_a_failure(env):
    full = run_episode(env, ScriptedAgent(), task_id="hotel-000")
    window = max(s.input_tokens for s in full.steps) - 1
    cut = run_episode(env, ScriptedAgent(), task_id="hotel-000", context_window=window)
    assert full.grade.success and not cut.grade.success
    assert cut.failure_category == "context_overflow" and all(s.input_tokens <= window for s in cut.steps)


def _eval_argv(server, out, tasks="hotel_50:hotel-003,hotel-004"):
    return [
        *"--configs C2 --tasks".split(),
        tasks,
        *"--runs 1 --quiet --concurrency 1 --agent openai:fake-model --base-url".split(),
        server.base_url,
        "--out",
        str(out),
    ]


def test_faults_of_one_episode_are_its_own_rows_and_the_run_goes_on(tmp_path, fake_openai_server, monkeypatch, env):
    monkeypatch.setattr(
        "erp_sim.agents.evaluation.episode_models._chat_model", lambda name, url, **_: fast_model(fake_openai_server)
    )
    fake_openai_server.truncated_body(times=2)  # hotel-003: a cut-short body, twice: an infrastructure error
    script_server_with_scripted_agent(fake_openai_server, env, "hotel-004")  # hotel-004 is answered properly
    assert eval_main(_eval_argv(fake_openai_server, tmp_path)) == 0
    first, second = read_rows(tmp_path / "results.jsonl")
    assert first["termination"] == "infra_error" and "gave up after 2 attempts" in first["infra_error"]
    assert second["grade"]["success"] and second["infra_error"] is None


def test_a_persistent_400_is_a_recorded_outcome_that_resume_does_not_retry(tmp_path, fake_openai_server, monkeypatch):
    monkeypatch.setattr(
        "erp_sim.agents.evaluation.episode_models._chat_model", lambda name, url, **_: fast_model(fake_openai_server)
    )
    fake_openai_server.fail_always(400, message=CONTEXT_LENGTH_MESSAGE)
    argv = _eval_argv(fake_openai_server, tmp_path, "hotel_50:hotel-003")
    assert eval_main(argv) == 0
    [row] = read_rows(tmp_path / "results.jsonl")
    assert row["failure_category"] == "context_overflow" and row["infra_error"] is None
    requests = len(fake_openai_server.requests)
    assert eval_main([*argv, "--resume"]) == 0
    assert len(fake_openai_server.requests) == requests  # scored: not run again


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tasks", "nosuchset"], "--tasks nosuchset: Unknown task set 'nosuchset'. Known:"),
        (
            ["--tasks", "hotel_50:hotel-000", "--agent", "openai:gpt-5"],
            "no API key: set the environment variable OPENAI_API_KEY",
        ),
        (["--tasks", "hotel_50:hotel-000", "--agent", "openai:gpt-5", "--record", "REC"], "no API key"),
        (["--tasks", "hotel_50:hotel-000", "--agent", "mystery"], "unknown agent 'mystery'"),
        (["--tasks", "hotel_50:hotel-000", "--user", "openai:gpt-4.1"], "no API key"),
        (["--tasks", "hotel_50:hotel-000", "--agent", "replay:NOWHERE"], "no cassettes directory"),
    ],
)
def test_bad_arguments_are_one_line_errors_before_any_file_is_written(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "out"
    argv = [a.replace("REC", str(tmp_path / "rec")).replace("NOWHERE", str(tmp_path / "nowhere")) for a in argv]
    assert message in usage_error(capsys, eval_main, [*argv, "--runs", "1", "--quiet", "--out", str(out)])
    assert not out.exists() and not (tmp_path / "rec").exists()


def test_report_of_a_missing_directory_is_a_one_line_error(tmp_path, capsys):
    from erp_sim.agents.evaluation.report.cli import main as report_main

    assert report_main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no results.jsonl" in err


def test_a_run_where_nothing_was_scored_exits_non_zero_without_nan(tmp_path, fake_openai_server, monkeypatch, capsys):
    monkeypatch.setattr(
        "erp_sim.agents.evaluation.episode_models._chat_model", lambda name, url, **_: fast_model(fake_openai_server)
    )
    fake_openai_server.fail_always(503)
    assert eval_main(_eval_argv(fake_openai_server, tmp_path)) == 1
    captured = capsys.readouterr()
    assert "nothing was scored: all 2 episodes ended in infrastructure or harness errors" in captured.err
    assert "nan" not in captured.out and "no scored episode" in captured.out


def test_eval_help_states_the_default_of_every_option(capsys):
    import re

    with pytest.raises(SystemExit):
        eval_main(["--help"])
    out = capsys.readouterr().out
    options = re.findall(r"^  (--[a-z-]+)", out, re.MULTILINE)  # every option but -h, --help
    assert len(options) >= 18 and out.count("(default:") == len(options)


def test_an_llm_users_calls_and_tokens_are_counted_apart_from_the_agents(fake_openai_server):
    from erp_sim.agents.llm_user import LLMUser

    for _ in range(4):
        fake_openai_server.reply_text("Yes, please add all of them. ###END###", prompt_tokens=77, completion_tokens=9)
    user = LLMUser(fast_model(fake_openai_server))
    environment = gym.make("erp_sim/ExpenseItemization-v0", user_model=user)
    trajectory = run_episode(environment, ScriptedAgent(), task_id="hotel-000")
    calls = len(fake_openai_server.requests)
    metrics = trajectory.metrics
    assert calls >= 1 and metrics.user_model_calls == calls
    # two units, named apart: what the service reported, and our o200k counts of the same requests
    assert (metrics.user_reported_input_tokens, metrics.user_reported_output_tokens) == (77 * calls, 9 * calls)
    from erp_sim.agents.tokens import get_counter

    counter = get_counter()
    sent = fake_openai_server.requests
    assert metrics.user_input_tokens == sum(counter.count_messages(body["messages"]) for body in sent)
    assert metrics.user_output_tokens == calls * counter.count_message(
        {"role": "assistant", "content": "Yes, please add all of them. ###END###"}
    )
    assert metrics.user_provider_cached_tokens == 0  # the server reports cached_tokens 0: reported, not missing
    assert metrics.input_tokens == sum(s.input_tokens for s in trajectory.steps)  # the agent's, unchanged
