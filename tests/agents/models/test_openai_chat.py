"""OpenAIChatModel against a scripted OpenAI-compatible server on loopback (no network, no key)."""

from __future__ import annotations

import json
import socket

import pytest
from fake_openai_server import FakeOpenAIServer  # the fixture comes from conftest.py

from erp_sim.agents.models.openai_chat import ModelRequestError, OpenAIChatModel
from erp_sim.agents.types import ChatModel, ChatResponse, ContextOverflowError, InfrastructureError, Usage

MESSAGES = [
    {"role": "system", "content": "You itemize hotel expenses in D365."},
    {"role": "user", "content": "Itemize the hotel line of EXP-000123."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "form_open_menu_item",
            "description": "Open a menu item.",
            "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        },
    }
]


def make_model(server: FakeOpenAIServer, sleeps: list[float], **options) -> OpenAIChatModel:
    """A model on the fake server that records its backoff waits instead of sleeping."""

    async def record_async_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return OpenAIChatModel(
        "fake-model", base_url=server.base_url, sleep=sleeps.append, async_sleep=record_async_sleep, **options
    )


def test_tool_call_answer_becomes_an_openai_assistant_message(fake_openai_server):
    fake_openai_server.reply_tool_calls(
        [("form_open_menu_item", {"name": "TrvExpenses"})], prompt_tokens=321, completion_tokens=17
    )
    model = make_model(fake_openai_server, [])

    response = model.complete(MESSAGES, TOOLS)

    assert isinstance(model, ChatModel)
    assert response.message == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "form_open_menu_item", "arguments": json.dumps({"name": "TrvExpenses"})},
            }
        ],
    }
    assert response.usage == Usage(
        input_tokens=321, output_tokens=17, cached_input_tokens=0, reasoning_tokens=0
    )  # reported 0
    assert response.model == "fake-model"
    (request,) = fake_openai_server.requests
    assert request["messages"] == MESSAGES
    assert request["tools"] == TOOLS
    assert request["model"] == "fake-model"
    assert not request.get("stream")


def test_text_answer_has_content_and_no_tool_calls(fake_openai_server):
    fake_openai_server.reply_text("Which report do you mean?")
    response = make_model(fake_openai_server, []).complete(MESSAGES)

    assert response.message == {"role": "assistant", "content": "Which report do you mean?"}
    assert "tools" not in fake_openai_server.requests[0]


def test_temperature_seed_and_extra_params_reach_the_server(fake_openai_server):
    fake_openai_server.reply_text("ok")
    fake_openai_server.reply_text("ok")
    make_model(fake_openai_server, [], temperature=0.3, seed=7, extra_params={"max_completion_tokens": 64}).complete(
        MESSAGES
    )
    make_model(fake_openai_server, []).complete(MESSAGES)

    with_params, without_params = fake_openai_server.requests
    assert (with_params["temperature"], with_params["seed"], with_params["max_completion_tokens"]) == (0.3, 7, 64)
    assert not {"temperature", "seed", "max_completion_tokens"} & without_params.keys()


def test_rate_limit_then_success_retries_once(fake_openai_server):
    fake_openai_server.fail(429)
    fake_openai_server.reply_text("done")
    sleeps: list[float] = []

    response = make_model(fake_openai_server, sleeps).complete(MESSAGES)

    assert response.message["content"] == "done"
    assert len(fake_openai_server.requests) == 2
    assert sleeps == [1.0]


def test_retry_after_header_sets_the_wait_within_the_cap(fake_openai_server):
    fake_openai_server.fail(429, retry_after=2.5)
    fake_openai_server.fail(429, retry_after=999)
    fake_openai_server.reply_text("done")
    sleeps: list[float] = []

    make_model(fake_openai_server, sleeps, backoff_max=30.0).complete(MESSAGES)

    assert sleeps == [2.5, 30.0]


def test_server_error_until_retries_run_out_raises_infrastructure_error(fake_openai_server):
    fake_openai_server.fail_always(500)
    sleeps: list[float] = []

    with pytest.raises(InfrastructureError, match=r"gave up after 4 attempts.*HTTP 500"):
        make_model(fake_openai_server, sleeps, max_retries=3).complete(MESSAGES)

    assert len(fake_openai_server.requests) == 3 + 1
    assert sleeps == [1.0, 2.0, 4.0]  # exponential, no jitter


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_setup_error_is_an_unscored_failure_and_not_retried(fake_openai_server, status):
    """A wrong key, a key without access, a wrong model name or URL: the run's setup, run again once fixed."""
    fake_openai_server.fail(status)
    sleeps: list[float] = []
    with pytest.raises(InfrastructureError, match=f"HTTP {status}.*check the API key, the model name and the base URL"):
        make_model(fake_openai_server, sleeps).complete(MESSAGES)
    assert len(fake_openai_server.requests) == 1 and sleeps == []


def test_a_request_body_that_cannot_be_json_is_a_harness_bug_and_not_retried(fake_openai_server):
    sleeps: list[float] = []
    model = make_model(fake_openai_server, sleeps)
    for odd in (object(), float("nan")):  # was retried with backoff and recorded as an outage
        with pytest.raises((TypeError, ValueError)):
            model.complete([{"role": "user", "content": "hi", "extra": odd}])
    assert fake_openai_server.requests == [] and sleeps == []


def test_client_error_is_not_retried(fake_openai_server):
    fake_openai_server.fail(400)
    sleeps: list[float] = []

    with pytest.raises(ModelRequestError, match="HTTP 400") as refused:
        make_model(fake_openai_server, sleeps).complete(MESSAGES)

    assert refused.value.status_code == 400
    assert not isinstance(refused.value, InfrastructureError)
    assert len(fake_openai_server.requests) == 1
    assert sleeps == []


def test_timeout_is_retried(fake_openai_server):
    fake_openai_server.reply_text("too late", delay=3.0)
    fake_openai_server.reply_text("in time")
    sleeps: list[float] = []

    response = make_model(fake_openai_server, sleeps, timeout=0.5).complete(MESSAGES)

    assert response.message["content"] == "in time"
    assert sleeps == [1.0]


def test_unreachable_server_raises_infrastructure_error_after_retries():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps: list[float] = []
    model = OpenAIChatModel("fake-model", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, sleep=sleeps.append)

    with pytest.raises(InfrastructureError, match="gave up after 3 attempts"):
        model.complete(MESSAGES)
    assert sleeps == [1.0, 2.0]


def test_local_server_needs_no_api_key_but_a_remote_one_does(monkeypatch, fake_openai_server):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai_server.reply_text("ok")

    assert make_model(fake_openai_server, []).complete(MESSAGES).message["content"] == "ok"
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-5", base_url="https://api.example.com/v1")


async def test_async_path_retries_and_parses_tool_calls(fake_openai_server):
    fake_openai_server.fail(503)
    fake_openai_server.reply_tool_calls([("form_open_menu_item", {"name": "TrvExpenses"})], content="Opening.")
    sleeps: list[float] = []

    response = await make_model(fake_openai_server, sleeps, temperature=0.0).acomplete(MESSAGES, TOOLS)

    assert response.message["content"] == "Opening."
    assert response.message["tool_calls"][0]["function"]["name"] == "form_open_menu_item"
    assert sleeps == [1.0]
    assert [request["temperature"] for request in fake_openai_server.requests] == [0.0, 0.0]


def test_a_truncated_json_body_with_status_200_is_retried_then_an_infrastructure_error(fake_openai_server):
    fake_openai_server.truncated_body()
    fake_openai_server.reply_text("whole")
    sleeps: list[float] = []
    assert make_model(fake_openai_server, sleeps).complete(MESSAGES).message["content"] == "whole"
    assert sleeps == [1.0]

    fake_openai_server.truncated_body(times=2)
    with pytest.raises(InfrastructureError, match="gave up after 2 attempts"):
        make_model(fake_openai_server, [], max_retries=1).complete(MESSAGES)


def test_empty_choices_are_retried(fake_openai_server):
    fake_openai_server.empty_choices()
    fake_openai_server.reply_text("second try")
    sleeps: list[float] = []
    assert make_model(fake_openai_server, sleeps).complete(MESSAGES).message["content"] == "second try"
    assert sleeps == [1.0] and len(fake_openai_server.requests) == 2

    fake_openai_server.empty_choices(times=3)
    with pytest.raises(InfrastructureError, match="no choices"):
        make_model(fake_openai_server, [], max_retries=2).complete(MESSAGES)


@pytest.mark.parametrize(
    "wording",
    [
        "maximum context length",  # OpenAI's, then vLLM's (the fake server's full text)
        "the request exceeds the available context size, try increasing it",  # llama.cpp's server
    ],
)
def test_a_context_length_400_is_a_context_overflow_and_not_retried(fake_openai_server, wording):
    from fake_openai_server import CONTEXT_LENGTH_MESSAGE

    fake_openai_server.fail(400, message=CONTEXT_LENGTH_MESSAGE if wording == "maximum context length" else wording)
    sleeps: list[float] = []
    with pytest.raises(ContextOverflowError, match=wording) as overflow:
        make_model(fake_openai_server, sleeps).complete(MESSAGES)
    assert overflow.value.status_code == 400 and sleeps == [] and len(fake_openai_server.requests) == 1


def test_random_tool_call_ids_differ_between_identical_answers():
    with FakeOpenAIServer(random_tool_call_ids=True) as server:
        for _ in range(2):
            server.reply_tool_calls([("form_open_menu_item", {"name": "TrvExpenses"})])
        model = make_model(server, [])
        first, second = (model.complete(MESSAGES, TOOLS).message["tool_calls"][0]["id"] for _ in range(2))
    assert first != second and first.startswith("call_")


def test_why_the_model_stopped_is_kept_and_a_role_call_records_it(fake_openai_server):
    """A summary cut at its token limit (finish_reason "length") is used as it is, but the episode's record of the
    summarizer's call says so; an answer that says nothing of it keeps None."""
    from erp_sim.agents.tokens.prompt_cache import EpisodeMeter

    fake_openai_server.reply_text("## Task\nreport R-1, li", finish_reason="length")
    fake_openai_server.reply_text("fine")
    model = make_model(fake_openai_server, [])
    cut, whole = model.complete(MESSAGES), model.complete(MESSAGES)
    assert (cut.finish_reason, whole.finish_reason) == ("length", "stop")
    meter = EpisodeMeter()
    meter.record("summarizer", MESSAGES, None, cut)
    meter.record("user", MESSAGES, None, ChatResponse(message={"role": "assistant", "content": "ok"}))
    assert [call.finish_reason for call in meter.drain()] == ["length", None]


def test_an_agents_cut_answer_and_its_served_model_reach_the_step_the_metrics_and_a_replay(tmp_path):
    """The agent's own answers keep why they stopped and the model the service named: a step records both, the
    episode counts answers cut at the token limit, and a replay of the recording gives the same record. An
    offline (scripted) episode stores neither (its trajectory keeps the bytes it had)."""
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401  (registers the ids)
    from erp_sim.agents.model_agent import ModelAgent
    from erp_sim.agents.models.cassette import RecordingModel, ReplayModel
    from erp_sim.agents.runner import run_episode
    from erp_sim.agents.scripted import ScriptedAgent

    def episode(agent):
        env = gym.make("erp_sim/ExpenseItemization-v0")
        try:
            return run_episode(env, agent, task_id="hotel-000", seed=0, max_model_calls=2)
        finally:
            env.close()

    with FakeOpenAIServer(model="fake-model-2026-01-01") as server:  # a dated snapshot behind the asked alias
        server.reply_tool_calls([("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"})])
        server.reply_text("I will now add the lines for", finish_reason="length")
        recorded = episode(ModelAgent(RecordingModel(make_model(server, []), tmp_path / "agent.jsonl")))
    replayed = episode(ModelAgent(ReplayModel(tmp_path / "agent.jsonl")))

    for trajectory in (recorded, replayed):
        assert [(s.finish_reason, s.served_model) for s in trajectory.steps] == [
            ("tool_calls", "fake-model-2026-01-01"),
            ("length", "fake-model-2026-01-01"),
        ]
        assert trajectory.metrics.length_stops == 1
        assert trajectory.served_models() == {"agent": ["fake-model-2026-01-01"]}
    assert replayed.deterministic_dump()["steps"] == recorded.deterministic_dump()["steps"]

    offline = episode(ScriptedAgent()).deterministic_dump()
    assert offline["metrics"].keys().isdisjoint({"length_stops"})
    assert all(step.keys().isdisjoint({"finish_reason", "served_model"}) for step in offline["steps"])


def test_a_served_name_of_another_type_or_size_does_not_lose_the_answer(fake_openai_server):
    """A server that names its model with a number, or with a megabyte of text, still answered: the answer is
    used, the name kept only as a short text."""
    model = make_model(fake_openai_server, [])
    for served, kept in ((12345, ""), ("m" * 1_000_000, "m" * 256), ("gpt-4o\n# heading\t x", "gpt-4o # heading x")):
        fake_openai_server.model = served
        fake_openai_server.reply_text("fine")
        response = model.complete(MESSAGES)
        assert (response.message["content"], response.model) == ("fine", kept)


def test_a_call_without_type_or_with_arguments_as_an_object_is_kept_as_the_api_would_send_it(fake_openai_server):
    """Out of spec but seen: a call with no ``type`` (chat completions has only functions) and ``arguments`` as a
    JSON object. The calls reach the env as OpenAI-shaped calls instead of vanishing (an empty message to the
    user) or failing the episode as a harness error."""
    calls = [
        {"id": "call_a", "function": {"name": "form_open_menu_item", "arguments": {"name": "TrvExpenses"}}},
        {"id": "call_b", "type": "function", "function": {"name": "form_close_form", "arguments": "{}"}},
    ]
    fake_openai_server.answer_with(lambda body: ({"role": "assistant", "content": None, "tool_calls": calls}, 10, 5))
    message = make_model(fake_openai_server, []).complete(MESSAGES, TOOLS).message
    assert message["tool_calls"] == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "form_open_menu_item", "arguments": '{"name": "TrvExpenses"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "form_close_form", "arguments": "{}"}},
    ]
