"""The strict fake server refuses what the real Chat Completions API refuses, and everything we send passes it.

The first half pins the validator: each bad body gets the API's 400 error (so loosening a
rule fails a test) and the bodies we and the API consider normal are accepted (so tightening
it past the API fails one too). The second half runs ``erp-sim eval`` with an ``openai:``
agent through the strict server under every context policy, the LLM summarizer, the LLM
user and the LLM consolidator: a request the API would refuse shows as a rejection here.
"""

from __future__ import annotations

import copy
import json
import re
import urllib.error
import urllib.request
from typing import Any

import gymnasium as gym
import pytest
from fake_acon_roles import acon_role_reply
from fake_openai_server import FakeOpenAIServer
from strict_chat_request import rejection

from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.model_agent import ModelAgent
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.policies import POLICIES, wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.summarizers import LLMSummarizer

TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a thing up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
CALL = {"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
GOOD = {
    "model": "fake-model",
    "stream": False,
    "temperature": 0,
    "seed": 7,
    "tools": [TOOL],
    "tool_choice": "auto",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Find x."}], "name": "alice"},
        {"role": "assistant", "content": None, "tool_calls": [CALL, {**CALL, "id": "call_b"}]},
        {"role": "tool", "tool_call_id": "call_b", "content": "found"},
        {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": "found"}]},
        {"role": "assistant", "content": "Done.", "refusal": None},
        {"role": "user", "content": ""},
    ],
}


def changed(path: str, value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    """GOOD with the value at a dotted path (list indexes as numbers) set or deleted."""
    body = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node: Any = body
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = int(last) if isinstance(node, list) else last
    if delete:
        del node[key]
    else:
        node[key] = value
    return body


def missing(case: str, path: str) -> tuple[str, dict[str, Any], str, str]:
    """A case that deletes the key at ``path``, which the API names as a missing required parameter (its indices
    bracketed: messages.3.content is messages[3].content)."""
    param = re.sub(r"\.(\d+)", r"[\1]", path)
    return case, changed(path, delete=True), f"Missing required parameter: '{param}'", param


def with_messages(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "fake-model", "messages": list(messages)}


USER = {"role": "user", "content": "hi"}
CALLING = {"role": "assistant", "tool_calls": [CALL]}
ANSWER = {"role": "tool", "tool_call_id": "call_a", "content": "ok"}

# (case, body, words of the API's error message, param)
BAD_BODIES = [
    ("unknown key", GOOD | {"previous_summary": "x"}, "Unrecognized request argument supplied: previous_summary", None),
    ("no model", changed("model", delete=True), "you must provide a model parameter", None),
    ("model not a string", changed("model", 4), "Invalid type for 'model'", "model"),
    ("no messages", changed("messages", delete=True), "Missing required parameter: 'messages'", "messages"),
    ("empty messages", changed("messages", []), "Invalid 'messages': empty array", "messages"),
    ("unknown role", changed("messages.0.role", "robot"), "Invalid value: 'robot'", "messages[0].role"),
    (
        "bookkeeping key on a user message",
        changed("messages.6.pinned", True),
        "Additional properties are not allowed ('pinned' was unexpected) - 'messages.6'",
        None,
    ),
    (
        "name on a tool message",
        changed("messages.3.name", "lookup"),
        "Additional properties are not allowed ('name' was unexpected) - 'messages.3'",
        None,
    ),
    (
        "two bookkeeping keys",
        with_messages(USER | {"pinned": True, "summary": "x"}),
        "Additional properties are not allowed ('pinned', 'summary' were unexpected) - 'messages.0'",
        None,
    ),
    ("tool_calls on a user message", changed("messages.1.tool_calls", [CALL]), "('tool_calls' was unexpected)", None),
    (
        "content not a string or parts",
        changed("messages.0.content", 5),
        "Invalid type for 'messages[0].content'",
        "messages[0].content",
    ),
    (
        "image part in a system message",
        changed("messages.0.content", [{"type": "image_url", "image_url": {"url": "u"}}]),
        "Invalid value: 'image_url'",
        "messages[0].content[0].type",
    ),
    (
        "text part without text",
        changed("messages.1.content", [{"type": "text"}]),
        "Missing required parameter: 'messages[1].content[0].text'",
        "messages[1].content[0].text",
    ),
    missing("user message without content", "messages.6.content"),
    (
        "assistant with neither content nor tool_calls",
        changed("messages.5.content", None),
        "Invalid value for 'content': expected a string, got null.",
        "messages[5].content",
    ),
    missing("tool message without tool_call_id", "messages.3.tool_call_id"),
    missing("tool message without content", "messages.3.content"),
    (
        "tool call without type",
        changed("messages.2.tool_calls.0.type", delete=True),
        "Invalid value: None. Supported values are: 'function' and 'custom'.",
        "messages[2].tool_calls[0].type",
    ),
    missing("tool call without id", "messages.2.tool_calls.0.id"),
    ("tool call with an extra key", changed("messages.2.tool_calls.0.index", 0), "('index' was unexpected)", None),
    (
        "arguments as an object",
        changed("messages.2.tool_calls.0.function.arguments", {"q": "x"}),
        "Invalid type for 'messages[2].tool_calls[0].function.arguments': expected a string",
        "messages[2].tool_calls[0].function.arguments",
    ),
    (
        "tool result with no call before it",
        with_messages(USER, ANSWER),
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
        "messages.[1].role",
    ),
    (
        "tool result for another call",
        with_messages(USER, CALLING, ANSWER | {"tool_call_id": "call_z"}),
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
        "messages.[2].role",
    ),
    (
        "tool result after a user message",
        with_messages(USER, CALLING, ANSWER, USER, ANSWER),
        "must be a response to a preceeding message",
        "messages.[4].role",
    ),
    (
        "a call left unanswered",
        changed("messages.4", USER),
        "The following tool_call_ids did not have response messages: call_a",
        "messages.[2].role",
    ),
    (
        "a call unanswered at the end",
        with_messages(USER, CALLING),
        "The following tool_call_ids did not have response messages: call_a",
        "messages.[1].role",
    ),
    ("empty tools", changed("tools", []), "Invalid 'tools': empty array", "tools"),
    (
        "too many tools",
        GOOD | {"tools": [{"type": "function", "function": {"name": f"t{i}"}} for i in range(129)]},
        "Expected an array with maximum length 128, but got an array with length 129",
        "tools",
    ),
    ("tool without type", changed("tools.0.type", delete=True), "Invalid value: None.", "tools[0].type"),
    missing("tool function without name", "tools.0.function.name"),
    (
        "tool name with a dot",
        changed("tools.0.function.name", "erp.lookup"),
        "string does not match pattern",
        "tools[0].function.name",
    ),
    (
        "tool name of 65 characters",
        changed("tools.0.function.name", "a" * 65),
        "string too long",
        "tools[0].function.name",
    ),
    (
        "description not a string",
        changed("tools.0.function.description", ["x"]),
        "Invalid type for 'tools[0].function.description'",
        "tools[0].function.description",
    ),
    (
        "parameters not an object schema",
        changed("tools.0.function.parameters", {"type": "string"}),
        "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"string\"'",
        "tools[0].function.parameters",
    ),
    (
        "strict not a boolean",
        changed("tools.0.function.strict", "yes"),
        "Invalid type for 'tools[0].function.strict'",
        "tools[0].function.strict",
    ),
    ("unknown key in a function", changed("tools.0.function.returns", {}), "('returns' was unexpected)", None),
    ("duplicate tool names", changed("tools", [TOOL, TOOL]), "duplicate function name 'lookup'", "tools"),
    (
        "tool_choice without tools",
        changed("tools", delete=True),
        "'tool_choice' is only allowed when 'tools' are specified",
        "tool_choice",
    ),
    (
        "parallel_tool_calls without tools",
        with_messages(USER) | {"parallel_tool_calls": False},
        "'parallel_tool_calls' is only allowed when 'tools' are specified",
        "parallel_tool_calls",
    ),
    ("temperature above 2", changed("temperature", 2.5), "Expected a value <= 2, but got 2.5", "temperature"),
    ("temperature below 0", changed("temperature", -0.1), "Expected a value >= 0", "temperature"),
    ("top_p above 1", GOOD | {"top_p": 1.5}, "Expected a value <= 1", "top_p"),
    ("n of 0", GOOD | {"n": 0}, "Expected a value >= 1, but got 0", "n"),
    ("max_tokens of 0", GOOD | {"max_tokens": 0}, "Expected a value >= 1", "max_tokens"),
    (
        "max_completion_tokens of 0",
        GOOD | {"max_completion_tokens": 0},
        "Expected a value >= 1",
        "max_completion_tokens",
    ),
    ("presence_penalty above 2", GOOD | {"presence_penalty": 2.5}, "Expected a value <= 2", "presence_penalty"),
    ("frequency_penalty below -2", GOOD | {"frequency_penalty": -3}, "Expected a value >= -2", "frequency_penalty"),
    ("seed not an integer", changed("seed", 1.5), "Invalid type for 'seed': expected an integer", "seed"),
    ("seed a boolean", changed("seed", True), "Invalid type for 'seed': expected an integer", "seed"),
    (
        "message name with a space",
        changed("messages.1.name", "alice smith"),
        "string does not match pattern",
        "messages[1].name",
    ),
    (
        "message name with a slash",
        changed("messages.1.name", "a/b"),
        "string does not match pattern",
        "messages[1].name",
    ),
]


def post(server: FakeOpenAIServer, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_valid_body_is_accepted_by_the_validator():
    assert rejection(GOOD) is None


@pytest.mark.parametrize("case,body,words,param", BAD_BODIES, ids=[case[0] for case in BAD_BODIES])
def test_the_server_refuses_what_the_api_refuses_with_its_error(fake_openai_server, case, body, words, param):
    fake_openai_server.reply_text("kept for the next valid request")
    status, answer = post(fake_openai_server, body)
    assert status == 400
    assert set(answer) == {"error"} and set(answer["error"]) == {"message", "type", "param", "code"}
    assert answer["error"]["type"] == "invalid_request_error"
    assert words in answer["error"]["message"] and answer["error"]["param"] == param
    assert fake_openai_server.rejections == [answer["error"]]
    # a refused request does not use up the scripted reply
    assert post(fake_openai_server, GOOD)[1]["choices"][0]["message"]["content"] == "kept for the next valid request"


def test_a_body_that_is_not_json_is_refused(fake_openai_server):
    request = urllib.request.Request(
        fake_openai_server.base_url + "/chat/completions",
        data=b"{not json",
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert (
        refused.value.code == 400
        and "could not parse the JSON body" in json.loads(refused.value.read())["error"]["message"]
    )


def test_a_lenient_server_takes_odd_bodies():
    with FakeOpenAIServer(strict=False) as server:
        server.reply_text("fine")
        status, _answer = post(server, GOOD | {"previous_summary": "x", "tools": []})
    assert status == 200 and server.rejections == []


def test_answers_are_shaped_like_the_api(fake_openai_server):
    fake_openai_server.reply_tool_calls([("lookup", {"q": "x"})])
    fake_openai_server.reply_text("hello")
    _, calling = post(fake_openai_server, GOOD)
    _, texting = post(fake_openai_server, GOOD)
    for answer in (calling, texting):
        assert answer["id"].startswith("chatcmpl-") and answer["object"] == "chat.completion"
        assert isinstance(answer["created"], int) and answer["model"] == "fake-model"
        assert answer["system_fingerprint"].startswith("fp_")
        [choice] = answer["choices"]
        assert choice["index"] == 0 and choice["logprobs"] is None
        assert choice["message"]["refusal"] is None and choice["message"]["annotations"] == []
        usage = answer["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == 0
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 0
    assert calling["id"] != texting["id"]
    assert (
        calling["choices"][0]["finish_reason"] == "tool_calls" and calling["choices"][0]["message"]["content"] is None
    )
    assert calling["choices"][0]["message"]["tool_calls"][0]["id"].startswith("call_")
    assert texting["choices"][0]["message"]["content"] == "hello"


def test_a_refused_request_is_a_model_request_error_not_retried(fake_openai_server):
    from erp_sim.agents.types import ModelRequestError

    model = OpenAIChatModel("fake-model", base_url=fake_openai_server.base_url, extra_params={"top_p": 3})
    with pytest.raises(ModelRequestError, match="top_p"):
        model.complete([USER])
    assert len(fake_openai_server.requests) == 1


def test_tool_settings_are_left_out_of_a_request_without_tools(fake_openai_server):
    fake_openai_server.reply_text("a summary")
    fake_openai_server.reply_text("an action")
    model = OpenAIChatModel(
        "fake-model",
        base_url=fake_openai_server.base_url,
        temperature=0.0,
        extra_params={"tool_choice": "auto", "parallel_tool_calls": False},
    )
    model.complete([USER])
    model.complete([USER], [TOOL])
    assert fake_openai_server.rejections == []
    without, with_tools = fake_openai_server.requests
    assert "tool_choice" not in without and "parallel_tool_calls" not in without and without["temperature"] == 0.0
    assert with_tools["tool_choice"] == "auto" and with_tools["parallel_tool_calls"] is False


# --- everything we send passes --------------------------------------------------------------
USER_PROMPT_MARK = "You are the user in this conversation"


def roles_reply(body: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
    """ACON's roles (scripted agent, compressor), plus an LLM user that confirms and ends, plus a consolidator."""
    first = body["messages"][0]
    if first["role"] == "system" and USER_PROMPT_MARK in first["content"] and not body.get("tools"):
        return (
            {
                "role": "assistant",
                "content": "Yes, please add every charge as its own line; tell me when it is done. ###END###",
            },
            50,
            10,
        )
    if first["role"] == "user" and len(body["messages"]) == 1:  # the consolidator's one request
        return {"role": "assistant", "content": "No procedure to add."}, 50, 5
    return acon_role_reply(body)


# One spec per policy, with parameters small enough that it acts within a short episode.
POLICY_SPECS = {
    "full": "full",
    "last_n": "last_n:n=1",
    "last_n_summary": "last_n_summary:n=1,w=1",
    "fifo": "fifo:k=2",
    "acon_history": "acon_history:t=600,k=1",
    "acon_observation": "acon_observation:t=60,recent=1",
    "head_tail": "head_tail:chars=120",
    "budget_eviction": "budget_eviction:budget=2500,min_units=1",
    "working_memory_anchor": "working_memory_anchor+last_n:n=2",
    "retrieval": "retrieval:k=1,keep=1,backend=bm25",
    "ga_memory": "ga_memory",
    "clear_tool_uses": "clear_tool_uses:trigger=1500,keep=1,clear_tool_inputs=true",
}


def test_every_policy_is_covered():
    assert set(POLICY_SPECS) == set(POLICIES)


@pytest.fixture
def role_server():
    with FakeOpenAIServer() as server:
        server.answer_with(roles_reply)
        yield server


def eval_through(server: FakeOpenAIServer, out, *extra: str) -> list[dict[str, Any]]:
    assert (
        eval_main(
            [
                *"--tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --max-steps 80 --agent openai:fake-model --base-url".split(),
                server.base_url,
                "--out",
                str(out),
                *extra,
            ]
        )
        == 0
    )
    return read_rows(out / "results.jsonl")


@pytest.mark.parametrize("name", list(POLICY_SPECS))
def test_eval_under_each_policy_sends_only_what_the_api_accepts(role_server, tmp_path, name):
    extra = ["--memory", str(tmp_path / "memory")] if name == "ga_memory" else []
    rows = eval_through(role_server, tmp_path / "run", "--policy", POLICY_SPECS[name], "--user", "rule", *extra)
    assert role_server.rejections == []
    assert [(row["model_error"], row["infra_error"]) for row in rows] == [(None, None)]
    assert rows[0]["metrics"]["model_calls"] > 1


def test_eval_with_an_llm_user_and_consolidator_sends_only_what_the_api_accepts(role_server, tmp_path):
    rows = eval_through(
        role_server,
        tmp_path / "run",
        "--policy",
        "ga_memory",
        "--user",
        "openai:fake-user",
        "--sequential",
        "--memory",
        str(tmp_path / "memory"),
        "--consolidator",
        "openai:fake-consolidator",
    )
    assert role_server.rejections == []
    assert rows and {(row["model_error"], row["infra_error"]) for row in rows} == {(None, None)}
    assert {"fake-model", "fake-user", "fake-consolidator"} <= {request["model"] for request in role_server.requests}
    assert all(row["metrics"]["user_model_calls"] > 0 for row in rows)


@pytest.mark.parametrize(
    "spec",
    [
        "last_n_summary:n=1,w=1",
        "acon_history:t=600,k=1",
        "acon_observation:t=60,recent=1",
        "acon_history:t=600,k=1+acon_observation:t=60,recent=1",
    ],
)
def test_llm_summarizers_send_only_what_the_api_accepts(role_server, spec):
    env = gym.make("erp_sim/ExpenseItemization-v0")
    agent_model = OpenAIChatModel("fake-model", base_url=role_server.base_url, temperature=0.0, seed=1)
    summarizer = LLMSummarizer(OpenAIChatModel("fake-compressor", base_url=role_server.base_url, temperature=0.0))
    trajectory = run_episode(env, wrap(ModelAgent(agent_model), spec, summarizer=summarizer), task_id="hotel-003")
    assert role_server.rejections == []
    assert trajectory.model_error is None and trajectory.infra_error is None
    assert trajectory.metrics.summarizer_calls > 0
    assert "fake-compressor" in {request["model"] for request in role_server.requests}
