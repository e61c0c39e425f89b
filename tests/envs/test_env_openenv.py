"""The OpenEnv server and client (openenv-core): oracle episodes over WebSocket, errors as observations, HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("openenv.core", reason="the openenv extra is not installed (pip install 'erp-sim[openenv]')")

import httpx

import erp_sim
from erp_sim.envs.openenv import ErpAction, ErpEnvClient

pytestmark = pytest.mark.extras  # CI runs it after installing the extra


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """``erp-sim serve --openenv`` in its own process, as a user starts it."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "erp_sim.agents.cli", "serve", "--openenv", "--port", str(port), "--max-sessions", "4"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if process.poll() is not None:
                pytest.fail(f"the server exited: {process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


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
    "argv, problem", [(["--host", "0.0.0.0"], "--allow-remote"), (["--max-sessions", "0"], "at least 1")]
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

    port, log = free_port(), tmp_path / "server.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "erp_sim.agents.cli",
                "serve",
                "--openenv",
                "--port",
                str(port),
                "--max-sessions",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            for _ in range(3):  # each once took the only session slot
                created = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})
                assert created.status_code == 404
            with connect(f"ws://127.0.0.1:{port}/ws") as ws:
                ws.send(json.dumps({"type": "reset", "data": {"task_id": "hotel-003"}}))
                assert json.loads(ws.recv())["type"] == "observation"
                for frame in ("[1, 2]", "7", '"step"', "[" * 100_000 + "]" * 100_000, "1" * 5000, b'{"type": "state"}'):
                    ws.send(frame)
                    error = json.loads(ws.recv())
                    assert error["type"] == "error" and error["data"]["code"] == "INVALID_JSON", frame[:20]
                ws.send(json.dumps({"type": "step", "data": {"message": "Which line?"}}))
                reply = json.loads(ws.recv())
                assert reply["type"] == "observation" and reply["data"]["observation"]["counts"]["steps"] == 1
            with connect(f"ws://127.0.0.1:{port}/ws") as ws:  # the slot was freed
                ws.send(json.dumps({"type": "reset", "data": {"task_id": "hotel-003"}}))
                assert json.loads(ws.recv())["type"] == "observation"
            time.sleep(0.5)
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert "Traceback" not in log.read_text()
