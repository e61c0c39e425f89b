"""The OpenEnv server and client (openenv-core): oracle episodes over WebSocket, errors as observations, HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

pytest.importorskip("openenv.core", reason="the openenv extra is not installed (pip install 'erp-sim[openenv]')")

import httpx
from openenv_support import frame, serve_openenv

import erp_sim
from erp_sim.envs.openenv import ErpAction, ErpEnvClient

pytestmark = pytest.mark.extras  # CI runs it after installing the extra


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``erp-sim serve --openenv`` in its own process, as a user starts it."""
    with serve_openenv(tmp_path_factory.mktemp("openenv"), "--max-sessions", "4") as served:
        yield served.url


async def play_oracle(client: ErpEnvClient, task_id: str) -> tuple[list, object]:
    """The oracle's calls through the client; the texts it read and the last result."""
    task = erp_sim.get_task("hotel_50", task_id)
    result = await client.reset(task_id=task_id)
    texts = [result.observation.text]
    calls = erp_sim.oracle_calls(task)
    name, arguments = next(calls)
    while not result.done:
        result = await client.step(ErpAction(tool=name, arguments=arguments))
        texts.append(result.observation.text)
        try:
            name, arguments = calls.send(result.observation.text)
        except StopIteration:
            break
    return texts, result


def test_oracle_earns_exactly_one_over_websocket(server):
    async def run():
        async with ErpEnvClient(base_url=server) as client:
            first = await client.reset(task_id="hotel-012")
            assert [m["role"] for m in first.observation.messages] == ["system", "user"]
            assert len(first.observation.tools) == 23 and first.reward == 0.0 and not first.done
            texts, last = await play_oracle(client, "hotel-012")
            state = await client.state()
            again, _ = await play_oracle(client, "hotel-012")
        return texts, last, state, again

    texts, last, state, again = asyncio.run(run())
    observation = last.observation
    assert last.done and last.reward == 1.0 and observation.episode_return == 1.0
    assert observation.final_grade["strict_success"] is True and observation.termination_reason == "success"
    assert observation.success and observation.remaining_amount == observation.progress["remaining_amount"] == "0.00"
    assert observation.counts["invalid_actions"] == 0
    assert state.task_id == "hotel-012" and state.done and state.episode_return == 1.0
    assert state.step_count == observation.counts["steps"] == len(texts) - 1
    assert texts == again  # deterministic: the same calls read the same texts


def test_bad_actions_get_error_observations_and_the_session_goes_on(server):
    async def run():
        async with ErpEnvClient(base_url=server) as client:
            before = await client.step(ErpAction(message="hello?"))
            refused = await client.reset(task_id="no-such-task")
            await client.reset(task_index=2)
            results = [
                await client.step(action)
                for action in (
                    ErpAction(tool="no_such_tool"),
                    ErpAction(tool="form_find_menu_item", arguments={"menuItemFilter": 7}),
                    ErpAction(tool="form_find_menu_item", message="both"),
                    ErpAction(),
                    ErpAction(tool="send_message_to_user", arguments={"message": "Which line?"}),
                )
            ]
            good = await client.step(ErpAction(tool="form_find_menu_item", arguments={"menuItemFilter": "expense"}))
            bad_reset = await client.reset(task_index=10_000)
            bad_seeds = [await client.reset(seed=seed) for seed in (-1, "abc")]  # gymnasium's own error class
            state = await client.state()
        return before, refused, results, good, bad_reset, bad_seeds, state

    before, refused, results, good, bad_reset, bad_seeds, state = asyncio.run(run())
    assert before.observation.error_code == "ResetNeeded" and before.done and before.reward == 0.0
    assert refused.observation.error_code == "ResetRefused" and "no-such-task" in refused.observation.text
    assert [r.observation.error_code for r in results[:4]] == ["InvalidAction"] * 4
    assert all(r.observation.is_error and not r.done and r.reward == 0.0 for r in results[:4])
    reply = results[4].observation
    assert reply.action_kind == "message" and reply.counts["user_turns"] == 1 and not reply.is_error
    assert good.observation.action_kind == "tool" and not good.observation.is_error
    assert good.observation.counts == {
        "steps": 6,
        "tool_calls": 1,
        "invalid_actions": 4,
        "tool_errors": 0,
        "user_turns": 1,
    }
    assert bad_reset.observation.error_code == "ResetRefused" and not bad_reset.done  # the running episode goes on
    assert [r.observation.error_code for r in bad_seeds] == ["ResetRefused"] * 2
    assert "seed" in bad_seeds[0].observation.text
    assert state.counts["steps"] == 6 and state.task_id == erp_sim.load_task_set("hotel_50")[2].task_id


def test_sessions_are_isolated(server):
    async def run():
        async with ErpEnvClient(base_url=server) as a, ErpEnvClient(base_url=server) as b:
            return await asyncio.gather(play_oracle(a, "hotel-003"), play_oracle(b, "hotel-017"))

    (texts_a, last_a), (texts_b, last_b) = asyncio.run(run())
    assert last_a.reward == last_b.reward == 1.0 and texts_a != texts_b


def test_http_routes_answer_with_observations_not_server_errors(server):
    step = httpx.post(f"{server}/step", json={"action": {"tool": "form_find_menu_item"}}, timeout=30)
    assert step.status_code == 200 and step.json()["observation"]["error_code"] == "ResetNeeded"
    assert step.json()["done"] is True
    reset = httpx.post(f"{server}/reset", json={"task_id": "hotel-012"}, timeout=30)
    assert reset.status_code == 200
    observation = reset.json()["observation"]
    assert observation["messages"][1]["content"] == erp_sim.get_task("hotel_50", "hotel-012").instruction()
    refused = httpx.post(f"{server}/reset", json={"task_index": "x"}, timeout=30).json()["observation"]
    assert refused["error_code"] == "ResetRefused" and "task_index" in json.loads(refused["text"])["Error"]["Message"]
    unknown = httpx.post(f"{server}/reset", json={"weird": 1}, timeout=30).json()["observation"]
    assert unknown["error_code"] == "ResetRefused"
    schema = httpx.get(f"{server}/schema", timeout=30).json()
    assert {"tool", "arguments", "message"} <= set(schema["action"]["properties"])


@pytest.mark.parametrize(
    "argv, problem",
    [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--max-sessions", "0"], "at least 1"),
        (["--max-message-bytes", "100"], "at least 4,096"),
        (["--idle-timeout", "nan"], "--idle-timeout"),
        (["--idle-timeout", "-1"], "--idle-timeout"),
        (["--http-header-timeout", "0"], "--http-header-timeout"),
        (["--connect-rate", "-1"], "--connect-rate"),
        (["--connect-rate", "inf"], "--connect-rate"),
        (["--read-rate", "nan"], "--read-rate"),
    ],
)
def test_serve_refuses_bad_options_in_one_line(argv, problem):
    done = subprocess.run(
        [sys.executable, "-m", "erp_sim.agents.cli", "serve", "--openenv", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and problem in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_what_openenv_core_leaves_open_is_guarded(tmp_path):
    """openenv-core's /mcp routes (no MCP tools here) took session slots without auth; a frame that is JSON but
    not an object ended the session and its episode; every normal close logged a traceback."""
    from websockets.sync.client import connect

    with serve_openenv(tmp_path, "--max-sessions", "1") as served:
        for _ in range(3):  # each once took the only session slot
            created = httpx.post(
                f"{served.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
            )
            assert created.status_code == 404
        with connect(served.ws) as ws:
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            assert json.loads(ws.recv())["type"] == "observation"
            deep_in_an_object = '{"type": "step", "data": {"tool": "x", "arguments": {"a": ' + "[" * 100_000
            long_in_an_object = '{"type": "step", "data": {"tool": "x", "arguments": {"n": ' + "9" * 5000 + "}}}"
            for bad in (
                "[1, 2]",
                "7",
                '"step"',
                "[" * 100_000 + "]" * 100_000,
                "1" * 5000,
                b'{"type": "state"}',
                deep_in_an_object,
                long_in_an_object,
            ):
                ws.send(bad)
                error = json.loads(ws.recv())
                assert error["type"] == "error" and error["data"]["code"] == "INVALID_JSON", bad[:20]
            ws.send(frame("step", {"message": "Which line?"}))
            reply = json.loads(ws.recv())
            assert reply["type"] == "observation" and reply["data"]["observation"]["counts"]["steps"] == 1
        with connect(served.ws) as ws:  # the slot was freed
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            assert json.loads(ws.recv())["type"] == "observation"
        time.sleep(0.5)
    assert "Traceback" not in served.log.read_text()


WRONGLY_SHAPED = [  # (action, what the env says); none may end the rollout
    (ErpAction(tool=5), "tool must be a tool's name (a string), got int"),
    (ErpAction(message=7), "message must be text (a string), got int"),
    (ErpAction(tool=["form_find_menu_item"]), "got list"),
    (ErpAction(tool="form_find_menu_item", arguments="[1, 2]"), "The arguments must be a JSON object, got list"),
    (ErpAction(tool="form_find_menu_item", arguments="{oops"), "not valid JSON"),
    (ErpAction(tool="form_find_menu_item", arguments=7), "The arguments must be a JSON object, got int"),
    (ErpAction(tool="form_find_menu_item", arguments=None), "menuItemFilter: Field required"),
    (ErpAction(tool="form_find_menu_item", args={}), "Unknown action field(s) 'args'"),
    (ErpAction(message="hi", arguments={"a": 1}), "arguments go with a tool, not with a message"),
    (ErpAction(tool="x", message="y"), "not both"),
    (ErpAction(), "neither was given"),
]


def test_every_wrongly_shaped_action_is_a_counted_invalid_step_through_openenvs_client(server):
    """What openenv-core answered with an out-of-band VALIDATION_ERROR frame (its client raised, the rollout
    died, invalid_actions stayed 0) is the env's invalid action: an observation, reward 0, counted. What the
    other faces accept is accepted: arguments as JSON text (OpenAI's tool calls), or null."""

    async def run():
        async with ErpEnvClient(base_url=server) as client:
            await client.reset(task_id="hotel-012")
            results = [await client.step(action) for action, _ in WRONGLY_SHAPED]
            text_arguments = await client.step(
                ErpAction(tool="form_find_menu_item", arguments='{"menuItemFilter": "expense"}')
            )
            message_tool = await client.step(
                ErpAction(tool="send_message_to_user", arguments='{"message": "Which line?"}')
            )
            return results, text_arguments, message_tool, await client.state()

    results, text_arguments, message_tool, state = asyncio.run(run())
    for (action, says), result in zip(WRONGLY_SHAPED, results, strict=True):
        observation = result.observation
        assert observation.error_code == "InvalidAction" and observation.action_kind == "invalid", action
        assert says in json.loads(observation.text)["Error"]["Message"], (action, observation.text)
        assert result.reward == 0.0 and not result.done
    assert results[-1].observation.counts["invalid_actions"] == len(WRONGLY_SHAPED)
    assert text_arguments.observation.action_kind == "tool" and not text_arguments.observation.is_error
    assert message_tool.observation.action_kind == "message"
    assert state.counts == {
        "steps": len(WRONGLY_SHAPED) + 2,
        "tool_calls": 1,
        "invalid_actions": len(WRONGLY_SHAPED),
        "tool_errors": 0,
        "user_turns": 1,
    }


def test_raw_step_frames_of_any_action_are_steps_and_frames_that_are_no_action_are_error_frames(tmp_path):
    """Over a raw WebSocket: ``data`` of any object is an action (counted); a step whose data is no object, an
    unknown message type or extra envelope keys get OpenEnv's error frame, nothing is counted, the session
    goes on (docs/training.md lists them)."""
    from websockets.sync.client import connect

    with serve_openenv(tmp_path) as served, connect(served.ws) as ws:
        ws.send(frame("reset", {"task_id": "hotel-012"}))
        ws.recv()
        for data in ({"tool": 5}, {"tool": None, "arguments": None, "message": None}, {"metadata": 5}, {}):
            ws.send(frame("step", data))
            reply = json.loads(ws.recv())
            assert reply["type"] == "observation" and reply["data"]["observation"]["error_code"] == "InvalidAction"
        for message, code in (
            (frame("step", "text"), "VALIDATION_ERROR"),
            (frame("step", [1]), "VALIDATION_ERROR"),
            (json.dumps({"type": "step"}), "VALIDATION_ERROR"),
            (json.dumps({"type": "step", "data": {}, "id": 1}), "VALIDATION_ERROR"),
            (frame("dance", {}), "UNKNOWN_TYPE"),
        ):
            ws.send(message)
            reply = json.loads(ws.recv())
            assert reply["type"] == "error" and reply["data"]["code"] == code, message
        for name in ("func", "session_id", "self"):  # keywords of openenv-core's own helpers once: EXECUTION_ERROR
            ws.send(frame("reset", {name: 1}))
            assert json.loads(ws.recv())["data"]["observation"]["error_code"] == "ResetRefused"
        ws.send(frame("state"))
        assert json.loads(ws.recv())["data"]["counts"]["invalid_actions"] == 4


def test_a_refused_reset_changes_nothing_and_state_keeps_answering(server):
    """A non-string episode_id (a number, an object, 100 KB of text) was accepted over the WebSocket, and then
    every state request failed until the next reset; a bool seed drew a task."""

    async def run():
        async with ErpEnvClient(base_url=server) as client:
            await client.reset(task_id="hotel-012", episode_id="run-7")
            await client.step(ErpAction(message="Which line?"))
            refused = [
                await client.reset(task_id="hotel-003", **options)
                for options in (
                    {"episode_id": 5},
                    {"episode_id": {"a": 1}},
                    {"episode_id": "x" * 100_000},
                    {"episode_id": "\ud800"},
                    {"seed": True},
                    {"task_index": True},
                )
            ]
            return refused, await client.state()

    refused, state = asyncio.run(run())
    for result in refused:
        assert result.observation.error_code == "ResetRefused" and not result.done
        assert result.observation.counts["steps"] == 1  # the running episode's figures, as they stand
    assert (
        "episode_id must be text" in refused[0].observation.text and "100,000 characters" in refused[2].observation.text
    )
    assert "seed: True is a bool" in refused[4].observation.text
    assert state.episode_id == "run-7" and state.task_id == "hotel-012" and state.counts["steps"] == 1


def test_an_ended_episode_says_what_it_was(server):
    """After an episode that returned 1.0, a further step (EpisodeOver) and a refused reset carry its figures
    (the return, counts, termination, final grade) and done, as state does; nothing more is counted."""

    async def run():
        async with ErpEnvClient(base_url=server) as client:
            _, last = await play_oracle(client, "hotel-012")
            after = await client.step(ErpAction(message="Anything else?"))
            refused = await client.reset(task_id="no-such-task")
            return last, after, refused, await client.state()

    last, after, refused, state = asyncio.run(run())
    assert last.reward == 1.0 and last.done
    for result, code in ((after, "EpisodeOver"), (refused, "ResetRefused")):
        observation = result.observation
        assert observation.error_code == code and observation.is_error and result.done and result.reward == 0.0
        assert observation.episode_return == 1.0 and observation.termination_reason == "success"
        assert observation.counts == last.observation.counts and observation.success
        assert observation.final_grade == last.observation.final_grade and observation.action_kind is None
    assert state.done and state.episode_return == 1.0 and state.counts == last.observation.counts
