"""Issue 35's one settings model: an episode's verbosity, step limit and context window are typed once
(``EpisodeSettings``) and read from there by the command line, the eval spec, the env and a row's sampling."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from erp_sim.agents.evaluation.episode_row import RowSampling
from erp_sim.agents.evaluation.eval_options import EpisodeSpec, add_common_arguments, episode_options
from erp_sim.agents.evaluation.settings import SAMPLED, EpisodeSettings
from erp_sim.verbosity import VERBOSITIES, checked_verbosity


def eval_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="erp-sim eval")
    add_common_arguments(parser)
    return parser


def test_the_command_line_offers_what_the_model_types():
    parser = eval_parser()
    verbosity = next(a for a in parser._actions if a.dest == "verbosity")
    assert tuple(verbosity.choices) == VERBOSITIES == ("default", "compact")
    options = episode_options(parser.parse_args(["--verbosity", "compact", "--max-steps", "7"]))
    assert {k: options[k] for k in EpisodeSettings.model_fields} == {
        "verbosity": "compact",
        "max_steps": 7,
        "context_window": None,
    }


@pytest.mark.parametrize("argv", [["--max-steps", "0"], ["--context-window", "-5"], ["--verbosity", "loud"]])
def test_the_command_line_refuses_what_the_model_refuses(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        eval_parser().parse_args(argv)
    assert exit_info.value.code == 2
    assert argv[0] in capsys.readouterr().err
    with pytest.raises(ValidationError):
        EpisodeSettings.model_validate({argv[0][2:].replace("-", "_"): argv[1]})


def test_env_kwargs_run_kwargs_and_sampling_come_from_one_model():
    from erp_sim.agents.runner import DEFAULT_MAX_MODEL_CALLS
    from erp_sim.envs import MAX_EPISODE_STEPS

    plain = EpisodeSettings()
    assert plain.env_kwargs() == {"verbosity": "default", "max_episode_steps": MAX_EPISODE_STEPS}
    assert plain.run_kwargs() == {"context_window": None, "max_model_calls": DEFAULT_MAX_MODEL_CALLS}
    long = EpisodeSettings(max_steps=1500, context_window=128_000, verbosity="compact")
    assert long.run_kwargs() == {"context_window": 128_000, "max_model_calls": 1500}  # a model call per env step
    # a row's sampling holds the three settings, in its field order, with the step limit the episode ran with
    assert tuple(long.sampling()) == SAMPLED == tuple(f for f in RowSampling.model_fields if f in SAMPLED)
    row = RowSampling(**plain.sampling())
    assert row.max_steps == MAX_EPISODE_STEPS and row.verbosity == "default" and row.context_window is None


def test_the_eval_spec_is_the_settings_plus_what_it_runs():
    spec = EpisodeSpec(
        config="C2", policy="full", user="rule", agent="scripted", task_set="hotel_50", task_id="hotel-000", run=0,
        seed=0, out_dir="out", verbosity="compact",
    )  # fmt: skip
    assert isinstance(spec, EpisodeSettings) and spec.env_kwargs()["verbosity"] == "compact"
    with pytest.raises(ValidationError, match="verbosity"):
        EpisodeSpec.model_validate({**spec.model_dump(), "verbosity": "loud"})


def test_verbosity_is_checked_by_one_function_everywhere():
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401
    from erp_sim import get_task
    from erp_sim.erp_session import ErpSession
    from erp_sim.mcp.episode_store import EpisodeStore

    assert checked_verbosity("compact") == "compact"
    message = "verbosity must be one of ('default', 'compact'), got 'loud'"
    for make in (
        lambda: checked_verbosity("loud"),
        lambda: ErpSession(get_task("hotel_50", "hotel-000"), verbosity="loud"),
        lambda: EpisodeStore(verbosity="loud"),
        lambda: gym.make("erp_sim/ExpenseItemization-v0", verbosity="loud"),
    ):
        with pytest.raises(ValueError, match="verbosity must be") as error:
            make()
        assert str(error.value) == message


def test_the_argument_limit_is_the_sessions_constant():
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401
    from erp_sim.envs.spaces import MAX_ACTION_CHARS
    from erp_sim.json_values import MAX_ARGUMENT_CHARS

    assert MAX_ACTION_CHARS == MAX_ARGUMENT_CHARS == 200_000
    env = gym.make("erp_sim/ExpenseItemization-v0")
    assert env.action_space.max_length == MAX_ARGUMENT_CHARS
    env.reset(seed=0)
    too_long = '{"name": "form_find_menu_item", "arguments": "' + "x" * MAX_ARGUMENT_CHARS + '"}'
    observation, *_ = env.step(too_long)
    assert f"the limit is {MAX_ARGUMENT_CHARS:,}" in observation


def test_the_window_is_checked_with_one_count(fake_openai_server):
    """ModelAgent (before it sends) and the runner (what any agent was shown) count a request alike."""
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401
    from erp_sim.agents.model_agent import ModelAgent
    from erp_sim.agents.models.openai_chat import OpenAIChatModel
    from erp_sim.agents.runner import run_episode
    from erp_sim.agents.scripted import ScriptedAgent
    from erp_sim.agents.tokens import get_counter

    env = gym.make("erp_sim/ExpenseItemization-v0")
    scripted = run_episode(env, ScriptedAgent(), task_id="hotel-000")
    counter = get_counter()
    for step, record in enumerate(scripted.steps):  # the runner's running count is count_request's
        assert record.input_tokens == counter.count_request(scripted.context.shown(step), scripted.tools)
    size = scripted.steps[0].input_tokens
    model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url, max_retries=0)
    for agent in (ScriptedAgent(), ModelAgent(model, context_window=size - 1)):
        cut = run_episode(env, agent, task_id="hotel-000", context_window=size - 1)
        assert cut.termination == "context_overflow" and f"{size:,} tokens" in (cut.model_error or "")
    assert fake_openai_server.requests == []  # the model agent's request was refused before it was sent
    env.close()
