"""OpenAIChatModel and whole episodes against the fake server's local-server modes.

The modes (``tests/fake_openai_server.py``) stand in for what llama-cpp-python, vLLM and
Ollama servers do differently from the API: tools ignored without ``tool_choice``, HTTP 500
to an assistant message without content, a runaway generation without ``max_tokens``, and
token counts from another tokenizer. Each test shows the failure first, then the setting
that fixes it, and that the strict checks (what the API accepts) still pass with that setting.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from fake_acon_roles import acon_role_reply
from fake_openai_server import CACHE_BLOCK, RUNAWAY_TOKENS, TEMPLATE_ERROR, FakeOpenAIServer, own_tokens, prompt_tokens

import erp_sim.envs  # noqa: F401  (registers the env ids)
from erp_sim.agents.model_agent import ModelAgent
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.runner import run_episode
from erp_sim.agents.tokens import get_counter
from erp_sim.agents.types import ContextOverflowError, InfrastructureError, ModelRequestError

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a thing up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
ASKED = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Find x."}]
CALLED = {
    "role": "assistant",
    "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
}
CONVERSATION = [*ASKED, CALLED, {"role": "tool", "tool_call_id": "call_a", "content": "x is 4"}]


def model_reply(body: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
    """The scripted agent's answer as a real model gives it: a message that only calls tools has null content."""
    message, prompt, completion = acon_role_reply(body)
    if message.get("tool_calls") and not message.get("content"):
        message = {**message, "content": None}
    return message, prompt, completion


def model_on(server: FakeOpenAIServer, **options) -> OpenAIChatModel:
    options.setdefault("max_retries", 2)
    return OpenAIChatModel("fake-model", base_url=server.base_url, sleep=lambda _: None, **options)


def episode(modes: dict[str, Any], **extra: Any):  # FakeOpenAIServer's switches
    """hotel-003 played by the scripted agent behind a server in these modes; the API's rules hold throughout."""
    with FakeOpenAIServer(**modes) as server:
        server.answer_with(model_reply)
        model = model_on(server, temperature=0.0, extra_params=extra)
        trajectory = run_episode(gym.make("erp_sim/ExpenseItemization-v0"), ModelAgent(model), task_id="hotel-003")
    assert server.rejections == []
    return trajectory


# --- tools ignored unless tool_choice is sent ------------------------------------------------------
def test_without_tool_choice_the_tools_are_ignored_and_the_call_comes_back_as_text():
    with FakeOpenAIServer(tools_need_tool_choice=True) as server:
        server.reply_tool_calls([("lookup", {"q": "x"})])
        server.reply_tool_calls([("lookup", {"q": "x"})])
        ignored = model_on(server).complete(ASKED, TOOLS).message
        called = model_on(server, extra_params={"tool_choice": "auto"}).complete(ASKED, TOOLS).message
    assert ignored == {"role": "assistant", "content": '{"name": "lookup", "arguments": {"q": "x"}}'}
    assert called["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"q": "x"}'}
    assert [request.get("tool_choice") for request in server.requests] == [None, "auto"]
    assert server.rejections == []


def test_an_episode_without_tool_choice_never_calls_a_tool_and_with_it_succeeds():
    ignored, chosen = (
        episode({"tools_need_tool_choice": True}),
        episode({"tools_need_tool_choice": True}, tool_choice="auto"),
    )
    assert ignored.metrics.tool_calls == 0 and not ignored.grade.success
    assert chosen.metrics.tool_calls > 0 and chosen.grade.success


# --- HTTP 500 to an assistant message without content ----------------------------------------------
@pytest.mark.parametrize("calling", [CALLED, {**CALLED, "content": None}], ids=["content missing", "content null"])
def test_a_500_on_every_attempt_says_it_looked_like_a_refused_request(calling):
    with FakeOpenAIServer(null_content_500=True) as server:
        server.reply_text("x is 4.")
        with pytest.raises(InfrastructureError) as failed:
            model_on(server).complete([*ASKED, calling, CONVERSATION[-1]], TOOLS)
    text = str(failed.value)
    assert text.startswith(
        f"fake-model at {server.base_url}: gave up after 3 attempts, the same answer every time, "
        f"so a refused request rather than an outage: HTTP 500: {TEMPLATE_ERROR}"
    )
    assert "assistant_content=empty" in text  # the hint: the request had an assistant message without content
    assert text.count("HTTP 500") == 1
    assert len(server.requests) == 3 and server.rejections == []  # the API would have taken it


def test_the_async_path_says_the_same_and_sends_the_same():
    import asyncio

    with FakeOpenAIServer(null_content_500=True) as server:
        server.reply_text("x is 4.")

        async def both():
            with pytest.raises(InfrastructureError, match="the same answer every time, so a refused request"):
                await model_on(server, max_retries=1, async_sleep=_no_wait).acomplete(CONVERSATION, TOOLS)
            model = model_on(server, async_sleep=_no_wait, extra_params={"assistant_content": "empty"})
            return await model.acomplete(CONVERSATION, TOOLS)

        assert asyncio.run(both()).message["content"] == "x is 4."
    assert [r["messages"][2].get("content") for r in server.requests] == [None, None, ""]


async def _no_wait(_: float) -> None:
    return None


def test_assistant_content_empty_sends_an_empty_string_which_both_servers_accept():
    for strict_only in (False, True):  # the local server's rule, then the API's strict rules alone
        with FakeOpenAIServer(null_content_500=not strict_only) as server:
            server.reply_text("x is 4.")
            answer = model_on(server, extra_params={"assistant_content": "empty"}).complete(CONVERSATION, TOOLS)
        assert answer.message["content"] == "x is 4."
        (request,) = server.requests
        assert request["messages"][2] == {**CALLED, "content": ""}
        assert "assistant_content" not in request  # a switch of ours, never a request key
        assert server.rejections == []


@pytest.mark.parametrize("switch", ["null", None])  # None: a command line that parsed the value as JSON
def test_the_default_sends_no_content_which_the_strict_server_accepts(fake_openai_server, switch):
    fake_openai_server.reply_text("x is 4.")
    model = model_on(fake_openai_server, extra_params={"assistant_content": switch})
    model.complete([*ASKED, {**CALLED, "content": None}, CONVERSATION[-1]], TOOLS)
    assert fake_openai_server.requests[0]["messages"][2]["content"] is None
    assert model.sampling_params == {} and model.assistant_content == "null" and fake_openai_server.rejections == []


def test_tool_arguments_object_sends_an_empty_object_for_arguments_vllm_cannot_parse():
    """A model's cut-short or malformed call stays in the history: vLLM parses it and refuses every later
    request (a scored refusal, where OpenAI goes on); with tool_arguments=object it goes as "{}"."""
    broken = {
        **CALLED,
        "tool_calls": [{**CALLED["tool_calls"][0], "function": {"name": "lookup", "arguments": '{"q": "x'}}],
    }
    conversation = [*ASKED, broken, CONVERSATION[-1]]
    with FakeOpenAIServer(parses_tool_arguments=True) as server:
        with pytest.raises(ModelRequestError, match="HTTP 400: Expecting ','"):
            model_on(server).complete(conversation, TOOLS)
        server.reply_text("x is 4.")
        model = model_on(server, extra_params={"tool_arguments": "object"})
        assert model.complete(conversation, TOOLS).message["content"] == "x is 4."
        sent = server.requests[-1]["messages"][2]
    assert (
        sent["tool_calls"][0]["function"] == {"name": "lookup", "arguments": "{}"}
        and "tool_arguments" not in server.requests[-1]
    )
    assert (
        conversation[2] is broken and broken["tool_calls"][0]["function"]["arguments"] == '{"q": "x'
    )  # kept as written
    assert model.recorded_params == {"tool_arguments": "object"} and model.sampling_params == {}
    with pytest.raises(ValueError, match=r"^tool_arguments='repair': use as_written"):
        model_on(server, extra_params={"tool_arguments": "repair"})


def test_an_unknown_assistant_content_value_is_refused_in_one_line(fake_openai_server):
    with pytest.raises(ValueError, match=r"^assistant_content='none': use null .* or empty "):
        model_on(fake_openai_server, extra_params={"assistant_content": "none"})


def test_an_episode_with_assistant_content_empty_gets_through_a_template_server():
    refused = episode({"null_content_500": True})
    assert refused.termination == "infra_error" and "so a refused request rather than an outage" in refused.infra_error
    accepted = episode({"null_content_500": True}, assistant_content="empty")
    assert accepted.infra_error is None and accepted.grade.success


@pytest.mark.parametrize(
    "errors, note",
    [
        ([(503, "overloaded"), (502, "bad gateway"), (500, "worker died")], False),  # an outage: the answers change
        ([(500, "model not loaded")] * 3, True),  # the same answer: a refusal, but no assistant message to blame
        ([(503, "Service unavailable")] * 3, False),  # an overloaded service says the same each time: an outage
    ],
)
def test_only_the_same_500_on_every_attempt_is_called_a_refused_request(fake_openai_server, errors, note):
    for status, message in errors:
        fake_openai_server.fail(status, message=message)
    with pytest.raises(InfrastructureError) as failed:
        model_on(fake_openai_server).complete(ASKED)
    text = str(failed.value)
    assert f"HTTP {errors[-1][0]}: {errors[-1][1]}" in text
    assert "gave up after 3 attempts" in text
    assert ("the same answer every time, so a refused request rather than an outage" in text) is note
    assert "assistant_content" not in text


def test_a_refused_request_names_its_status_once(fake_openai_server):
    fake_openai_server.fail(400, message="Invalid value for 'content'.")
    with pytest.raises(ModelRequestError) as refused:
        model_on(fake_openai_server).complete(ASKED)
    text = str(refused.value)
    assert (
        text == f"fake-model at {fake_openai_server.base_url}: request refused: HTTP 400: Invalid value for 'content'."
    )
    assert "Error code" not in text


@pytest.mark.parametrize(
    "body, said",
    [
        ({"detail": [{"loc": ["body", "top_k"], "msg": "extra"}]}, '[{"loc": ["body", "top_k"], "msg": "extra"}]'),
        ({"error": "Input validation error: bad request"}, "Input validation error: bad request"),
    ],
)
def test_a_refusal_keeps_the_servers_reason_wherever_it_puts_it(fake_openai_server, body, said):
    """transformers serve (FastAPI) and TGI put it elsewhere than OpenAI's error.message: it read "(no message)"."""
    fake_openai_server.fail_with_body(400, body)
    with pytest.raises(ModelRequestError) as refused:
        model_on(fake_openai_server).complete(ASKED)
    assert str(refused.value).endswith(f"request refused: HTTP 400: {said}")


@pytest.mark.parametrize(
    "message",
    ["Server is pinned to 'tiny'; requested 'qwen'.", "The model `qwen` does not exist.", "model 'qwen' not found"],
)
def test_a_wrong_model_name_is_a_setup_error_whatever_the_status(fake_openai_server, message):
    """Issue 39, point 9: transformers serve answers a wrong name with a 400, which was scored as model_error (and a
    --resume with the right name then refused); like a 404 it is now an unscored, resumable setup error."""
    fake_openai_server.fail_with_body(400, {"detail": message})
    with pytest.raises(InfrastructureError) as setup:
        model_on(fake_openai_server).complete(ASKED)
    assert str(setup.value).endswith(f"HTTP 400: {message} (check the API key, the model name and the base URL)")
    assert len(fake_openai_server.requests) == 1  # not retried: the same request fails the same way
    fake_openai_server.fail(400, message="This model's maximum context length is 4096 tokens.")
    with pytest.raises(ContextOverflowError):  # a 400 that names the model for another reason stays a refusal
        model_on(fake_openai_server).complete(ASKED)


@pytest.mark.parametrize(
    "status, text",
    [
        (
            422,
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens",
        ),
        (400, "Input validation error: inputs tokens + max_new_tokens must be <= 4096"),
    ],
)
def test_a_context_overflow_worded_by_tgi_is_a_context_overflow(fake_openai_server, status, text):
    """Text-generation-inference answers 422 with its names in backticks."""
    fake_openai_server.fail_with_body(status, {"error": text, "error_type": "validation"})
    with pytest.raises(ContextOverflowError):
        model_on(fake_openai_server).complete(ASKED)


def test_a_password_in_the_base_url_is_in_no_error(fake_openai_server):
    """The rows strip it from base_url; the error text, stored in rows, trajectories and the report, kept it."""
    url = fake_openai_server.base_url.replace("http://", "http://alice:s3cret-pw@")
    fake_openai_server.fail(400, message="nope")
    model = OpenAIChatModel("fake-model", base_url=url, max_retries=0)
    with pytest.raises(ModelRequestError) as refused:
        model.complete(ASKED)
    assert "s3cret" not in str(refused.value) and "s3cret" not in repr(model)
    assert f"fake-model at {fake_openai_server.base_url}: request refused" in str(refused.value)


# --- a runaway generation without max_tokens -------------------------------------------------------
def test_without_max_tokens_the_generation_runs_away_and_times_out(fake_openai_server):
    with FakeOpenAIServer(runaway_seconds=2.0) as server:
        server.reply_text("x is 4.")
        with pytest.raises(InfrastructureError, match="gave up after 2 attempts.*APITimeoutError"):
            model_on(server, timeout=0.3, max_retries=1).complete(ASKED)
        answer = model_on(server, timeout=5.0, extra_params={"max_tokens": 64}).complete(ASKED)
    assert answer.message["content"] == "x is 4."  # the scripted reply was kept for the bounded request
    assert len(server.requests) == 3 and server.requests[-1]["max_tokens"] == 64


def test_a_runaway_that_comes_back_is_cut_at_the_length_limit():
    with FakeOpenAIServer(runaway_seconds=0.0) as server:
        answer = model_on(server).complete(ASKED)
    assert answer.usage.output_tokens == RUNAWAY_TOKENS
    assert len(answer.message["content"].split()) == RUNAWAY_TOKENS


# --- token counts of another tokenizer -------------------------------------------------------------
def test_own_token_counts_are_the_servers_and_differ_from_o200k():
    with FakeOpenAIServer(own_token_counts=True) as server:
        server.reply_text("The remaining amount is 0.00, all lines saved.")
        answer = model_on(server).complete(CONVERSATION, TOOLS)
        raw = server.requests[0]
    assert answer.usage.input_tokens == len(prompt_tokens(raw))
    assert answer.usage.output_tokens == len(own_tokens("The remaining amount is 0.00, all lines saved."))
    counter = get_counter()
    o200k = counter.count_messages(CONVERSATION) + counter.count_tools(TOOLS)
    assert answer.usage.input_tokens != o200k


def test_cached_tokens_report_the_prefix_shared_with_the_request_before():
    with FakeOpenAIServer(own_token_counts=True, cached_tokens=True) as server:
        for _ in range(3):
            server.reply_text("ok")
        model = model_on(server)
        model.complete(CONVERSATION, TOOLS)
        model.complete(
            [*CONVERSATION, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "More."}], TOOLS
        )
        model.complete([{"role": "system", "content": "Rewritten."}, *CONVERSATION[1:]], TOOLS)  # an early change
    cached = [_cached(server, n) for n in range(3)]
    first_prompt = len(prompt_tokens(server.requests[0]))
    assert cached[0] == 0
    assert cached[1] == first_prompt // CACHE_BLOCK * CACHE_BLOCK > 0  # the whole first prompt, in whole blocks
    assert 0 <= cached[2] < cached[1]  # a rewritten system message keeps only the tools' prefix


def test_without_cached_tokens_no_prompt_token_details_are_reported():
    with FakeOpenAIServer(own_token_counts=True) as server:
        server.reply_text("ok")
        model_on(server).complete(ASKED)
        assert "prompt_tokens_details" not in _usage(server, 0)


def _usage(server: FakeOpenAIServer, number: int) -> dict:
    return server.answered[number]["usage"]


def _cached(server: FakeOpenAIServer, number: int) -> int:
    return _usage(server, number)["prompt_tokens_details"]["cached_tokens"]


def test_the_row_of_an_eval_against_a_template_server_says_the_500_looked_like_a_refused_request(tmp_path, monkeypatch):
    from erp_sim.agents.evaluation.episode_row import read_rows
    from erp_sim.agents.evaluation.eval_cli import main as eval_main
    from erp_sim.agents.evaluation.report import REPORT_FILE

    monkeypatch.setattr(
        "erp_sim.agents.evaluation.episode_models._chat_model",
        lambda name, url, *_, **__: OpenAIChatModel(
            name, base_url=url, temperature=0.0, max_retries=1, backoff_base=0.0
        ),
    )
    with FakeOpenAIServer(null_content_500=True) as server:
        server.answer_with(model_reply)
        code = eval_main(
            [
                *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent openai:fake-model --base-url".split(),
                server.base_url,
                "--out",
                str(tmp_path),
            ]
        )
    assert code != 0  # nothing scored: the run says so
    [row] = read_rows(tmp_path / "results.jsonl")
    assert row["termination"] == "infra_error"
    assert (
        "gave up after 2 attempts, the same answer every time, so a refused request rather than an outage"
        in row["infra_error"]
    )
    assert "so a refused request rather than an outage" in (tmp_path / REPORT_FILE).read_text(encoding="utf-8")


def test_the_cli_settings_make_a_llama_cpp_like_server_work_and_its_replay_needs_no_server(tmp_path):
    """The local-server command of docs/evaluation.md, end to end: a server that ignores tools without tool_choice,
    answers 500 to null content, runs away without max_tokens and counts its own tokens. With the
    flags every role's episode is scored; the row records them and both token units; a replay with
    the server stopped gives the same rows."""
    from test_model_roles import role_reply, without_timing

    from erp_sim.agents.evaluation.episode_row import read_rows
    from erp_sim.agents.evaluation.eval_cli import main as eval_main

    flags = [
        *"--model-param tool_choice=auto --model-param assistant_content=empty --model-param max_tokens=512 --timeout 20 --max-retries 0".split()
    ]
    common = ["--configs", "C4", "--tasks", "hotel_50:hotel-006", "--runs", "1", "--quiet", "--concurrency", "1"]
    with FakeOpenAIServer(
        tools_need_tool_choice=True, null_content_500=True, runaway_seconds=60.0, own_token_counts=True
    ) as server:
        server.answer_with(role_reply)
        assert (
            eval_main(
                [
                    *common,
                    *flags,
                    *"--agent openai:local --user openai:local --summarizer openai:local --base-url".split(),
                    server.base_url,
                    "--summarizer-base-url",
                    server.base_url,
                    "--record",
                    str(tmp_path / "rec"),
                    "--out",
                    str(tmp_path / "live"),
                ]
            )
            == 0
        )
    [row] = read_rows(tmp_path / "live" / "results.jsonl")
    assert row["termination"] == "success" and row["grade"]["success"]
    agent = row["sampling"]["agent"]
    assert agent["params"]["assistant_content"] == "empty" and agent["params"]["tool_choice"] == "auto"
    assert (agent["timeout"], agent["max_retries"]) == (20.0, 0)
    metrics = row["metrics"]
    assert metrics["reported_input_tokens"] > 0 and metrics["reported_input_tokens"] != metrics["input_tokens"]
    assert metrics["user_reported_input_tokens"] > 0 and metrics["summarizer_reported_input_tokens"] > 0
    # the replay: the server is gone, every role answers from the recording
    assert (
        eval_main(
            [
                *common,
                *flags,
                "--agent",
                f"replay:{tmp_path / 'rec'}",
                *"--user openai:local --summarizer openai:local --out".split(),
                str(tmp_path / "replayed"),
            ]
        )
        == 0
    )
    assert without_timing(tmp_path / "replayed") == without_timing(tmp_path / "live")


def test_a_bare_500_on_a_malformed_earlier_call_names_its_cause():
    """Issue 39, point 9: a server whose template parses earlier calls' arguments (transformers serve) answers a
    bare 500 to every request once the model wrote a malformed call; the row said so without a cause."""
    malformed = {
        "role": "assistant",
        "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x'}}],
    }
    conversation = [*ASKED, malformed, {"role": "tool", "tool_call_id": "call_a", "content": "not JSON"}]
    with FakeOpenAIServer(malformed_call_500=True) as server:
        with pytest.raises(InfrastructureError) as gave_up:
            model_on(server, max_retries=1).complete(conversation, TOOLS)
        text = str(gave_up.value)
        assert "gave up after 2 attempts, the same answer every time" in text and "HTTP 500" in text
        assert "an earlier tool call whose arguments are not a JSON object" in text
        assert "tool_arguments=object" in text
        server.reply_text("fine")
        answer = model_on(server, extra_params={"tool_arguments": "object"}).complete(conversation, TOOLS)
        assert answer.message["content"] == "fine"  # the call went as "{}"
