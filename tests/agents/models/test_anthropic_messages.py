"""The Messages API backend against the strict fake: what the fake refuses, what we send, what comes back.

The first part pins the validator (each bad body gets the API's words; the bodies we send pass). Then the
backend: the system prompt at the top level, ``tool_use``/``tool_result`` blocks, one turn per role in
alternation, ``max_tokens`` always, breakpoints where the sender's claim says (at most 4) or none, the
usage (input = uncached + written + read) and the failure table. Last, the cache figures of hand-built
request sequences under Anthropic's rules (minimum length, lookback, time to live).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fake_anthropic_server import FakeAnthropicServer
from prompt_cache_rules import AnthropicCache
from request_messages import ANCHOR, CALL, MEMORY, RESULT, SUMMARY, SYSTEM, TASK
from strict_messages_request import rejection

from erp_sim.agents.models.anthropic_messages import AnthropicMessagesModel, render_request
from erp_sim.agents.models.stable_prefix import with_stable_prefixes
from erp_sim.agents.types import ContextOverflowError, InfrastructureError, ModelRequestError

FAKE_SERVER = FakeAnthropicServer  # the service of the ``server`` fixture (tests/conftest.py)

TOOL = {
    "type": "function",
    "function": {"name": "lookup", "description": "Look up.", "parameters": {"type": "object", "properties": {}}},
}
GOOD: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "Find x."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                {"type": "text", "text": "ok"},
            ],
        },
    ],
}


def changed(**changes):
    body = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is None:
            del body[key]
        else:
            body[key] = value
    return body


def messages(*items):
    return changed(messages=list(items))


USER = {"role": "user", "content": "hi"}
ASSISTANT = {"role": "assistant", "content": "hello"}
BAD_BODIES = [
    ("unknown field", changed(seed=1), "seed: Extra inputs are not permitted"),
    ("no max_tokens", changed(max_tokens=None), "max_tokens: Field required"),
    ("max_tokens zero", changed(max_tokens=0), "max_tokens: Input should be greater than or equal to 1"),
    ("a system role message", messages({"role": "system", "content": "x"}), "Input should be 'user' or 'assistant'"),
    ("assistant first", messages(ASSISTANT, USER), 'first message must use the "user" role'),
    ("two users in a row", messages(USER, USER), 'found multiple "user" roles in a row'),
    ("two assistants in a row", messages(USER, ASSISTANT, ASSISTANT), 'found multiple "assistant" roles in a row'),
    (
        "a tool_result without its tool_use",
        messages(USER, ASSISTANT, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}]}),
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9",
    ),
    (
        "a tool_use without its tool_result",
        messages(USER, GOOD["messages"][1], USER),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
    ),
    (
        "text before the tool_result",
        messages(
            USER,
            GOOD["messages"][1],
            {
                "role": "user",
                "content": [{"type": "text", "text": "ok"}, {"type": "tool_result", "tool_use_id": "toolu_1"}],
            },
        ),
        "`tool_use` ids were found without `tool_result` blocks immediately after",
    ),
    ("an empty text block", messages({"role": "user", "content": [{"type": "text", "text": ""}]}), "must be non-empty"),
    ("a message key", messages({**USER, "name": "a"}), "messages.0.name: Extra inputs are not permitted"),
    ("an OpenAI tool", changed(tools=[TOOL]), "tools.0.custom.function: Extra inputs are not permitted"),
    (
        "five breakpoints",
        messages(
            *[
                {"role": role, "content": [{"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}}]}
                for role in ("user", "assistant", "user", "assistant")
            ]
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    ("temperature above 1", changed(temperature=1.5), "temperature: Input should be less than or equal to 1"),
    ("temperature with top_p", changed(temperature=0.0, top_p=0.9), "cannot both be specified for this model"),
]


@pytest.mark.parametrize(("case", "body", "words"), BAD_BODIES, ids=[case for case, _, _ in BAD_BODIES])
def test_the_fake_refuses_what_the_api_refuses(case, body, words):
    refused = rejection(body)
    assert refused is not None and words in refused, refused


def test_the_fake_accepts_the_apis_own_forms():
    assert rejection(GOOD) is None
    assert rejection(messages(USER, ASSISTANT, USER)) is None
    assert rejection(changed(temperature=0.0, system="Be brief.")) is None


# --- the backend ---------------------------------------------------------------------------------------


def test_requests_are_the_apis_form():
    body = render_request([SYSTEM, MEMORY, TASK, SUMMARY, CALL, RESULT, ANCHOR], [TOOL], breakpoints=False)
    assert body["system"] == [{"type": "text", "text": SYSTEM["content"] + "\n\n" + MEMORY["content"]}]
    assert body["tools"] == [
        {"name": "lookup", "input_schema": TOOL["function"]["parameters"], "description": "Look up."}
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in body["messages"][0]["content"]] == ["text", "text"]
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"q": "x"}}
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "found"},
        {"type": "text", "text": ANCHOR["content"]},
    ]
    assert rejection({"model": "claude-sonnet-4-5", "max_tokens": 5, **body}) is None


def test_breakpoints_go_where_the_claim_says_at_most_four():
    sent = [SYSTEM, TASK, SUMMARY, CALL, RESULT, ANCHOR]
    body = render_request(with_stable_prefixes(sent, [1, 2, 3, 5, 6]), [TOOL])
    marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
    marked += [b for b in body["system"] if "cache_control" in b]
    assert len(marked) == 4  # of five claims: the longest, the shortest, then the longest others
    assert "cache_control" in body["messages"][-1]["content"][-1]  # all of it
    assert "cache_control" in body["system"][0]  # the shortest: the system prompt
    assert "cache_control" not in body["messages"][0]["content"][0]  # 2 (the instruction): the fifth, left out
    none = render_request(with_stable_prefixes(sent, [2, 6]), [TOOL], breakpoints=False)
    assert "cache_control" not in str(none)


def test_a_request_without_a_claim_caches_its_system_prompt():
    body = render_request([SYSTEM, TASK], None)
    assert "cache_control" in body["system"][0] and "cache_control" not in body["messages"][-1]["content"][-1]


def model(server, **options):
    return AnthropicMessagesModel("claude-sonnet-4-5", base_url=server.base_url, sleep=lambda s: None, **options)


def test_answers_come_back_as_assistant_messages(server):
    server.reply_tool_use([("lookup", {"q": "y"})], text="Looking.")
    server.reply_text("Half an answ", stop_reason="max_tokens")
    first = model(server).complete([SYSTEM, TASK], [TOOL])
    assert first.message == {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {"id": "toolu_000001", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "y"}'}}
        ],
    }
    assert first.finish_reason == "tool_calls" and first.model == "claude-sonnet-4-5"
    cut = model(server).complete([SYSTEM, TASK])
    assert cut.finish_reason == "length"
    usage = server.answered[-1]["usage"]
    assert cut.usage.input_tokens == (
        usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    )
    assert cut.usage.cached_input_tokens == usage["cache_read_input_tokens"]
    assert cut.usage.cache_write_input_tokens == usage["cache_creation_input_tokens"]


def test_max_tokens_is_always_sent_and_settable(server):
    server.reply_text("a")
    server.reply_text("b")
    model(server).complete([TASK])
    model(server, max_tokens=100, extra_params={"max_tokens": 64, "top_k": 5}).complete([TASK])
    assert server.requests[0]["max_tokens"] == 4096
    assert server.requests[1]["max_tokens"] == 64 and server.requests[1]["top_k"] == 5
    for refused in ({"seed": 1}, {"max_completion_tokens": 9}, {"max_tokens": None}):
        with pytest.raises(ValueError, match="Messages API"):
            model(server, extra_params=refused)


def test_failures_follow_the_shared_table(server):
    server.fail(529, times=2)
    server.reply_text("back")
    assert model(server).complete([TASK]).message["content"] == "back"  # overloaded: an outage, retried
    server.fail_always(529)
    with pytest.raises(InfrastructureError, match="overloaded|Overloaded"):
        model(server, max_retries=1).complete([TASK])
    server.stop_failing()
    server.fail(413)
    with pytest.raises(ModelRequestError) as refused:
        model(server).complete([TASK])
    assert not isinstance(refused.value, ContextOverflowError) and refused.value.status_code == 413
    server.fail(400, message="prompt is too long: 210000 tokens > 200000 maximum")
    with pytest.raises(ContextOverflowError):
        model(server).complete([TASK])
    server.fail(401)
    with pytest.raises(InfrastructureError, match="check the API key"):
        model(server).complete([TASK])
    server.truncated_body()
    server.reply_text("whole")
    assert model(server).complete([TASK]).message["content"] == "whole"


def test_a_refused_body_is_the_harness_bug_it_is(server):
    server.reply_text("never")
    with pytest.raises(ModelRequestError, match="Extra inputs are not permitted"):
        model(server, extra_params={"frequency_penalty": 1}).complete([TASK])
    assert server.rejections


# --- the cache figures of hand-built request sequences ----------------------------------------------------
def body(model_name: str, turns: list[str], marks: list[int]) -> dict:
    """A request of alternating user/assistant text turns, with breakpoints on the given turns."""
    wire = []
    for index, text in enumerate(turns):
        block: dict[str, Any] = {"type": "text", "text": text}
        if index in marks:
            block["cache_control"] = {"type": "ephemeral"}
        wire.append({"role": "user" if index % 2 == 0 else "assistant", "content": [block]})
    return {"model": model_name, "max_tokens": 5, "messages": wire}


LONG = "expense line " * 400  # about 800 tokens a turn


def test_a_growing_conversation_reads_what_the_last_request_wrote():
    cache = AnthropicCache()
    first = cache.usage(body("claude-sonnet-4-5", [LONG, LONG], [1]))
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 1024
    second = cache.usage(body("claude-sonnet-4-5", [LONG, LONG, LONG], [2]))
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] > 0 and second["input_tokens"] == 0
    same = cache.usage(body("claude-sonnet-4-5", [LONG, LONG, LONG], [2]))
    assert same["cache_creation_input_tokens"] == 0 and same["input_tokens"] == 0


def test_nothing_is_cached_below_the_models_minimum_or_without_breakpoints():
    cache = AnthropicCache()
    assert cache.usage(body("claude-haiku-4-5", [LONG, LONG], [1]))["cache_creation_input_tokens"] == 0  # < 4,096
    assert cache.usage(body("claude-haiku-4-5", [LONG] * 6, [5]))["cache_creation_input_tokens"] > 4096
    unmarked = cache.usage(body("claude-sonnet-4-5", [LONG] * 3, []))
    assert unmarked["cache_creation_input_tokens"] == unmarked["cache_read_input_tokens"] == 0


def test_the_lookback_reaches_20_blocks_and_entries_live_5_minutes():
    cache = AnthropicCache()
    cache.usage(body("claude-sonnet-4-5", [LONG, LONG], [1]))
    far = cache.usage(body("claude-sonnet-4-5", [LONG, LONG] + ["a"] * 21, [22]))
    assert far["cache_read_input_tokens"] == 0  # the cached prefix ends 21 blocks before the breakpoint
    near = cache.usage(body("claude-sonnet-4-5", [LONG, LONG] + ["a"] * 19, [20]))
    assert near["cache_read_input_tokens"] > 1024
    late = AnthropicCache()
    late.usage(body("claude-sonnet-4-5", [LONG, LONG], [1]), now=0)
    assert late.usage(body("claude-sonnet-4-5", [LONG, LONG], [1]), now=301)["cache_read_input_tokens"] == 0


def test_a_request_reads_what_the_last_one_claimed_even_when_it_claims_less():
    """Before a fold, C4 claims only its head for the next request, yet this request starts with everything
    the last one claimed: a breakpoint there reads that cache (and writes nothing)."""
    from erp_sim.agents.models.stable_prefix import PolicyContext

    earlier = [SYSTEM, TASK, CALL, RESULT]
    last = PolicyContext(earlier, lambda: [2, 4])
    assert last.stable_prefixes == (2, 4)
    now = PolicyContext(
        [
            *earlier,
            {**CALL, "tool_calls": [{**CALL["tool_calls"][0], "id": "call_2"}]},
            {**RESULT, "tool_call_id": "call_2"},
        ],
        lambda: [2],
        last,
    )
    assert now.reused_prefixes == (2, 4)
    body = render_request(now, [TOOL])
    marked = [i for i, m in enumerate(body["messages"]) for b in m["content"] if "cache_control" in b]
    assert marked == [0, 2]  # the instruction (claimed) and the last request's end (reused)


def test_thinking_blocks_go_back_with_their_step_unless_dropped():
    from anthropic.types import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage

    answer = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[
            ThinkingBlock(type="thinking", thinking="The report first.", signature="sig"),
            TextBlock(type="text", text="Opening."),
            ToolUseBlock(type="tool_use", id="toolu_1", name="lookup", input={}),
        ],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=5, output_tokens=7, cache_read_input_tokens=100, cache_creation_input_tokens=20),
    )
    from erp_sim.agents.models.anthropic_messages import to_chat_response

    response = to_chat_response(answer)
    assert response.usage.input_tokens == 125 and response.usage.cached_input_tokens == 100
    step = response.message
    assert step["provider_items"]["items"][0]["signature"] == "sig"
    result = {"role": "tool", "tool_call_id": "toolu_1", "content": "x"}
    kept = render_request([SYSTEM, TASK, step, result], [TOOL], breakpoints=False)
    assert [b["type"] for b in kept["messages"][1]["content"]] == ["thinking", "text", "tool_use"]
    dropped = render_request([SYSTEM, TASK, step, result], [TOOL], breakpoints=False, thinking=False)
    assert [b["type"] for b in dropped["messages"][1]["content"]] == ["text", "tool_use"]
    assert rejection({"model": "claude-sonnet-4-5", "max_tokens": 5, **kept}) is None
