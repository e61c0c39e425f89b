"""The Responses API backend against the strict fake: stateless requests, items, reasoning kept or dropped.

The validator first (the API's words for unpaired calls and outputs, reasoning without its encrypted
content or its following item, a call without its reasoning, unknown keys); then the backend: ``store:
false``, the whole context each call as items, ``include`` for the encrypted reasoning, a kept step's
reasoning sent back with its items' ids and a dropped step's gone with it, and the usage's reasoning and
cached tokens. Azure's Responses deployments go through the same code (``test_model_backends_eval``).
"""

from __future__ import annotations

import pytest
from fake_responses_server import REASONING_TOKENS, FakeResponsesServer
from prompt_cache_rules import AutomaticPrefixCache
from strict_responses_request import Issued, rejection

from erp_sim.agents.models.openai_responses import OpenAIResponsesModel, render_input
from erp_sim.agents.policies import wrap
from erp_sim.agents.types import ContextOverflowError, InfrastructureError

FAKE_SERVER = FakeResponsesServer  # the service of the ``server`` fixture (tests/conftest.py)

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
USER = {"role": "user", "content": "hi"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "x"}
BAD = [
    ("an unknown key", {"model": "gpt-5", "input": "x", "seed": 1}, "Unknown parameter: 'seed'."),
    (
        "an output without its call",
        {"model": "gpt-5", "input": [USER, OUTPUT]},
        "No tool call found for function call output",
    ),
    (
        "a call without its output",
        {"model": "gpt-5", "input": [USER, CALL]},
        "No tool output found for function call call_1.",
    ),
    ("a message key", {"model": "gpt-5", "input": [{**USER, "name": "a"}]}, "Unknown parameter: 'input[0].name'."),
    (
        "reasoning without encrypted content",
        {
            "model": "gpt-5",
            "store": False,
            "input": [USER, {"type": "reasoning", "id": "rs_1", "summary": []}, CALL, OUTPUT],
        },
        "Items are not persisted when `store` is set to false",
    ),
    (
        "temperature on a reasoning model",
        {"model": "gpt-5", "input": "x", "temperature": 0},
        "not supported with this model",
    ),
    ("a nested tool", {"model": "gpt-5", "input": "x", "tools": [TOOL]}, "Unknown parameter: 'tools[0].function'."),
]


@pytest.mark.parametrize(("case", "body", "words"), BAD, ids=[case for case, _, _ in BAD])
def test_the_fake_refuses_what_the_api_refuses(case, body, words):
    refused = rejection(body)
    assert refused is not None and words in refused[1], refused


def test_reasoning_must_come_with_its_items():
    issued = Issued(encrypted={"rs_1": "enc"}, reasoning_of={"fc_1": "rs_1"})
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}
    paired = {**CALL, "id": "fc_1"}
    assert rejection({"model": "gpt-5", "store": False, "input": [USER, reasoning, paired, OUTPUT]}, issued) is None
    alone = rejection({"model": "gpt-5", "store": False, "input": [USER, reasoning, CALL, OUTPUT]}, issued)
    assert alone and "without its required following item" in alone[1]
    orphan = rejection({"model": "gpt-5", "store": False, "input": [USER, paired, OUTPUT]}, issued)
    assert orphan and "without its required 'reasoning' item: 'rs_1'" in orphan[1]
    forged = rejection(
        {"model": "gpt-5", "store": False, "input": [USER, {**reasoning, "encrypted_content": "x"}, paired, OUTPUT]},
        issued,
    )
    assert forged and "could not be verified" in forged[1]


def model(server, **options):
    return OpenAIResponsesModel("gpt-5", base_url=server.base_url, sleep=lambda s: None, **options)


def episode(server, reasoning_items: str):
    """Two calls: a tool call, then the answer after its result."""
    server.reply_tool_calls([("lookup", {})])
    server.reply_text("done")
    agent = model(server, reasoning_items=reasoning_items)
    first = agent.complete([{"role": "system", "content": "s"}, USER], [TOOL])
    result = {"role": "tool", "tool_call_id": first.message["tool_calls"][0]["id"], "name": "lookup", "content": "x"}
    second = agent.complete([{"role": "system", "content": "s"}, USER, first.message, result], [TOOL])
    return first, second


def test_stateless_requests_send_kept_reasoning_back(server):
    first, second = episode(server, "keep")
    assert first.usage.reasoning_tokens == REASONING_TOKENS and second.message["content"] == "done"
    assert all(
        body["store"] is False and body["include"] == ["reasoning.encrypted_content"] for body in server.requests
    )
    items = server.requests[1]["input"]
    assert [item.get("type", "message") for item in items] == [
        "message",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert items[3]["id"].startswith("fc_") and not server.rejections


def test_dropped_reasoning_goes_without_ids(server):
    episode(server, "drop")
    items = server.requests[1]["input"]
    assert "include" not in server.requests[1]
    assert [item.get("type", "message") for item in items] == [
        "message",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert "id" not in items[2] and not server.rejections


def test_a_pruned_step_takes_its_reasoning_with_it():
    """Under last_n:n=1 the older call leaves the request, and its reasoning with it: nothing is unpaired."""
    step = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
    }
    reasoned = {
        **step,
        "provider_items": {
            "api": "openai-responses",
            "items": [
                {"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "e"},
                {"type": "function_call", "id": "fc_9", "call_id": "c1"},
            ],
        },
    }
    newer = {**step, "tool_calls": [{**step["tool_calls"][0], "id": "c2"}]}
    transcript = [
        {"role": "system", "content": "s"},
        USER,
        reasoned,
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        newer,
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
    ]
    seen = []

    class Keep:
        def reset(self):
            pass

        def act(self, messages, tools):
            seen.append(render_input(messages))
            raise StopIteration

    with pytest.raises(StopIteration):
        wrap(Keep(), "last_n:n=1").act(transcript, [TOOL])
    assert all(item.get("type") != "reasoning" for item in seen[0])
    assert [item.get("call_id") for item in seen[0] if item.get("type") == "function_call"] == ["c2"]


def test_the_token_limit_and_the_failure_table(server):
    server.reply_text("ok")
    model(server, extra_params={"max_tokens": 300}).complete([USER])
    assert server.requests[-1]["max_output_tokens"] == 300 and "max_tokens" not in server.requests[-1]
    with pytest.raises(ValueError, match="no seed"):
        model(server, extra_params={"seed": 1})
    server.fail(400, message="Your input exceeds the context window of this model.", code="context_length_exceeded")
    with pytest.raises(ContextOverflowError):
        model(server).complete([USER])
    server.fail(500, times=3)
    with pytest.raises(InfrastructureError, match="gave up after 3 attempts"):
        model(server, max_retries=2).complete([USER])


def test_automatic_prefix_caching_counts_whole_128_token_steps():
    cache = AutomaticPrefixCache()
    long = [{"role": "user", "content": "expense line " * 600}, {"role": "user", "content": "more " * 600}]
    assert cache.cached_tokens(long) == 0
    cached = cache.cached_tokens([*long, {"role": "user", "content": "new"}])
    assert cached >= 1024 and (cached - 1024) % 128 == 0
    assert cache.cached_tokens([{"role": "user", "content": "other"}, *long]) == 0


def test_an_azure_responses_deployment_takes_the_same_requests(monkeypatch):
    from fake_azure_server import API_VERSION, FakeAzureServer

    from erp_sim.agents.models.factory import chat_model
    from erp_sim.agents.models.roles import settings_of

    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)  # a local endpoint needs none
    with FakeAzureServer(("gpt-5-prod",)) as azure:
        azure.responses.reply_text("ok")
        deployment = chat_model(
            "gpt-5-prod", None, api="azure-responses", azure_endpoint=azure.endpoint, api_version=API_VERSION
        )
        assert deployment.complete([USER]).message["content"] == "ok"
        assert azure.paths == ["/openai/responses"] and azure.responses.requests[0]["store"] is False
        settings = settings_of(deployment)
        assert settings is not None
        assert (settings.api, settings.model, settings.base_url, settings.api_version) == (
            "azure-responses",
            "gpt-5-prod",
            azure.endpoint,
            API_VERSION,
        )
        missing = chat_model(
            "gpt-4", None, api="azure-responses", azure_endpoint=azure.endpoint, api_version=API_VERSION
        )
        with pytest.raises(InfrastructureError, match="DeploymentNotFound|deployment for this resource"):
            missing.complete([USER])
