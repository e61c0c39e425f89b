"""Record model calls against the fake OpenAI server, then replay them offline."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import FakeOpenAIServer  # the fixture comes from conftest.py

from erp_sim.agents.models.cassette import CassetteMissError, RecordingModel, ReplayModel, read_cassette, request_key
from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.types import ChatResponse

SYSTEM = {"role": "system", "content": "You itemize hotel expenses in D365."}
INSTRUCTION = {"role": "user", "content": "Itemize the hotel line of EXP-000123."}
TOOLS = [{"type": "function", "function": {"name": "form_open_menu_item", "parameters": {"type": "object"}}}]


def conversation(*later: dict) -> list[dict]:
    return [SYSTEM, INSTRUCTION, *later]


def record_three_calls(server: FakeOpenAIServer, cassette) -> tuple[list[list[dict]], list[ChatResponse]]:
    """Steps 0 and 2 ask the same question and get different answers, as a sampled model may."""
    server.reply_tool_calls([("form_open_menu_item", {"name": "TrvExpenses"})], prompt_tokens=100)
    server.reply_text("Which report?", prompt_tokens=120)
    server.reply_text("Opening it now.", prompt_tokens=100)
    recorder = RecordingModel(OpenAIChatModel("gpt-x", base_url=server.base_url, temperature=0.0, seed=1), cassette)
    requests = [conversation(), conversation({"role": "assistant", "content": "Hi"}), conversation()]
    return requests, [recorder.complete(messages, TOOLS) for messages in requests]


def test_key_is_canonical_and_model_independent():
    message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}
    reordered_without_none = {"tool_calls": [{"type": "function", "id": "c1"}], "role": "assistant"}

    assert request_key([message], TOOLS, {"seed": 1}) == request_key([reordered_without_none], TOOLS, {"seed": 1})
    assert request_key([message], TOOLS, {"seed": 1}) != request_key([message], TOOLS, {"seed": 2})
    assert request_key([message], None) == request_key([message], [])
    assert len(request_key([message])) == 64


def test_record_then_replay_gives_identical_responses_offline(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    requests, recorded = record_three_calls(fake_openai_server, cassette)
    fake_openai_server.fail_always(500)  # the replay must not touch the server

    replay = ReplayModel(cassette)
    replayed = [replay.complete(messages, TOOLS) for messages in requests]

    assert replayed == recorded
    assert [response.message.get("content") for response in replayed] == [None, "Which report?", "Opening it now."]
    assert replay.unserved == 0
    assert replay.sampling_params == {"temperature": 0.0, "seed": 1}
    assert len(fake_openai_server.requests) == 3


def test_cassette_is_one_readable_json_line_per_call(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    requests, recorded = record_three_calls(fake_openai_server, cassette)

    lines = cassette.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(lines) == 3
    assert [record["step"] for record in records] == [0, 1, 2]
    assert records[0]["key"] == records[2]["key"] == request_key(requests[0], TOOLS, {"temperature": 0.0, "seed": 1})
    assert records[1]["request"] == {"messages": requests[1], "tools": TOOLS, "params": {"temperature": 0.0, "seed": 1}}
    assert records[1]["response"] == recorded[1].model_dump(mode="json")


def test_strict_replay_names_the_step_and_message_where_the_run_diverged(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    requests, _ = record_three_calls(fake_openai_server, cassette)
    replay = ReplayModel(cassette)
    replay.complete(requests[0], TOOLS)

    edited = conversation({"role": "assistant", "content": "Hello"})
    with pytest.raises(CassetteMissError, match=r'step 1: .*at message 2 \(assistant\).*"Hi".*"Hello"'):
        replay.complete(edited, TOOLS)


def test_strict_replay_reports_a_call_past_the_end_and_a_repeat_too_many(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    requests, _ = record_three_calls(fake_openai_server, cassette)
    replay = ReplayModel(cassette)
    for messages in requests:
        replay.complete(messages, TOOLS)

    with pytest.raises(CassetteMissError, match="step 3: this request was recorded 2 time"):
        replay.complete(requests[0], TOOLS)
    with pytest.raises(CassetteMissError, match=r"step 4: .*no call at step 4 \(3 calls recorded\)"):
        replay.complete(conversation({"role": "user", "content": "new"}), TOOLS)


def test_changed_sampling_params_or_tools_are_a_miss(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    requests, _ = record_three_calls(fake_openai_server, cassette)

    with pytest.raises(CassetteMissError, match="step 0: .*sampling params differ"):
        ReplayModel(cassette, params={"temperature": 1.0, "seed": 1}).complete(requests[0], TOOLS)
    with pytest.raises(CassetteMissError, match="step 0: .*tools differ"):
        ReplayModel(cassette).complete(requests[0], [])


def test_lenient_replay_serves_the_response_recorded_at_that_step(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    requests, recorded = record_three_calls(fake_openai_server, cassette)
    replay = ReplayModel(cassette, strict=False)

    replay.complete(requests[0], TOOLS)
    edited = conversation({"role": "assistant", "content": "Hello"})

    assert replay.complete(edited, TOOLS) == recorded[1]
    assert replay.complete(requests[2], TOOLS) == recorded[2]


def test_recording_appends_and_continues_step_numbers(fake_openai_server, tmp_path):
    cassette = tmp_path / "runs" / "episode.jsonl"
    record_three_calls(fake_openai_server, cassette)
    fake_openai_server.reply_text("second run")
    RecordingModel(
        OpenAIChatModel("gpt-x", base_url=fake_openai_server.base_url, temperature=0.0, seed=1), cassette
    ).complete(conversation({"role": "user", "content": "again"}))

    assert [record["step"] for record in read_cassette(cassette)] == [0, 1, 2, 3]


async def test_async_record_then_replay(fake_openai_server, tmp_path):
    cassette = tmp_path / "episode.jsonl"
    fake_openai_server.reply_tool_calls([("form_open_menu_item", {"name": "TrvExpenses"})])
    recorder = RecordingModel(OpenAIChatModel("gpt-x", base_url=fake_openai_server.base_url, seed=3), cassette)

    recorded = await recorder.acomplete(conversation(), TOOLS)
    replayed = await ReplayModel(cassette).acomplete(conversation(), TOOLS)

    assert replayed == recorded
    assert replayed.message["tool_calls"][0]["id"] == "call_1"
