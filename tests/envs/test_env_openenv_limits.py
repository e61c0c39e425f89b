"""The OpenEnv server's transport under abuse (issue 38), against ``erp-sim serve --openenv`` started here:
bounded frames and bodies, idle sessions released, a refusal at capacity that says so, no server error for
odd JSON, quiet logs. Timings are never asserted (the bench, scripts/bench_openenv_load.py, prints them)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time

import pytest

pytest.importorskip("openenv.core", reason="the openenv extra is not installed (pip install 'erp-sim[openenv]')")

import httpx
from openenv_support import frame, serve_openenv
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from erp_sim.envs.openenv import ErpAction, ErpEnvClient

pytestmark = pytest.mark.extras  # CI runs it after installing the extra

FIND = {"tool": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}}


def closed_by_server(ws, *messages: str) -> ConnectionClosed:
    """The close the server sent after ``messages`` (if any), however the client noticed it (a send or a recv)."""
    try:
        for message in messages:
            ws.send(message)
        for _ in range(3):  # an error frame may come first
            ws.recv(timeout=30)
    except ConnectionClosed as closed:
        return closed
    raise AssertionError("the server kept the connection open")


def test_messages_over_the_limit_are_refused_from_their_header_and_others_go_on(tmp_path):
    """A frame just over the limit closes its connection with 1009 and the limit (one of 15 MiB too, though a
    client still writing megabytes may see only the connection cut); one under the limit holding an action over
    the env's limit is a counted invalid action; other sessions go on. A client offering permessage-deflate is
    served without it (the server declines it)."""
    with serve_openenv(tmp_path) as served, connect(served.ws) as bystander:
        bystander.send(frame("reset", {"task_id": "hotel-003"}))
        assert json.loads(bystander.recv())["type"] == "observation"
        for compression in (None, "deflate"):
            with connect(served.ws, max_size=None, compression=compression) as ws:
                assert ws.protocol.extensions == []
                refused = closed_by_server(ws, frame("step", {"tool": "x", "arguments": {"a": "x" * 270_000}}))
            assert refused.rcvd is not None and refused.rcvd.code == 1009, compression
            assert "exceeds limit of 262144 bytes" in refused.rcvd.reason
        with connect(served.ws, max_size=None) as ws:
            refused = closed_by_server(ws, frame("step", {"tool": "x", "arguments": {"a": "x" * (15 << 20)}}))
        assert refused.rcvd is None or refused.rcvd.code == 1009
        with connect(served.ws) as ws:
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            ws.recv()
            ws.send(frame("step", {"tool": "form_find_menu_item", "arguments": {"menuItemFilter": "x" * 250_000}}))
            observation = json.loads(ws.recv())["data"]["observation"]
        assert observation["error_code"] == "InvalidAction" and observation["counts"]["invalid_actions"] == 1
        assert "200,000 characters" in json.loads(observation["text"])["Error"]["Message"]
        bystander.send(frame("step", FIND))
        assert json.loads(bystander.recv())["data"]["observation"]["counts"] == {
            "steps": 1,
            "tool_calls": 1,
            "invalid_actions": 0,
            "tool_errors": 0,
            "user_turns": 0,
        }
    assert "Traceback" not in served.log.read_text()


def test_http_bodies_over_the_limit_get_413_before_they_are_read(tmp_path):
    with serve_openenv(tmp_path, "--max-message-bytes", "8192") as served:
        declared = raw_http(
            served, b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: 314572800\r\n\r\n" + b"x" * 4096
        )
        assert declared.startswith(b"HTTP/1.1 413") and b"connection: close" in declared.lower()
        assert b"8,192 bytes (--max-message-bytes)" in declared

        def pieces():
            for _ in range(64):
                yield b"x" * 1024

        streamed = httpx.post(f"{served.url}/reset", content=pieces(), timeout=30)  # chunked: no Content-Length
        assert streamed.status_code == 413 and "nothing was done" in streamed.json()["detail"]
        assert httpx.post(f"{served.url}/reset", json={"task_id": "hotel-003"}, timeout=30).status_code == 200
        with connect(served.ws) as ws:  # the flag is the frame limit too
            assert closed_by_server(ws, frame("reset", {"task_id": "x" * 10_000})).rcvd.code == 1009


def raw_http(served, request: bytes) -> bytes:
    """What the server answers ``request`` with, read until it closes the connection."""
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_while_a_session_is_open_http_requests_are_admitted_at_their_rate_and_health_at_once(tmp_path):
    """30 bodies refused for their size (413, each on its own connection) take at least (30 - 10) / 10 s while a
    WebSocket session is open, none of them before it; /health (outside the rate) answers; the session goes on."""
    big = b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: 314572800\r\n\r\n" + b"x" * 4096
    with serve_openenv(tmp_path) as served:
        assert all(raw_http(served, big).startswith(b"HTTP/1.1 413") for _ in range(40))  # nobody to yield to
        with connect(served.ws) as ws:
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            ws.recv()
            started = time.perf_counter()
            assert all(raw_http(served, big).startswith(b"HTTP/1.1 413") for _ in range(30))
            assert time.perf_counter() - started >= 1.8
            assert httpx.get(f"{served.url}/health", timeout=30).status_code == 200
            ws.send(frame("step", FIND))
            assert json.loads(ws.recv())["data"]["observation"]["counts"]["tool_calls"] == 1


@pytest.mark.parametrize(
    "path, body, problem",
    [
        ("/reset", b'{"seed": NaN}', "NaN is not a JSON number"),
        ("/reset", b'{"seed": -Infinity}', "-Infinity is not a JSON number"),
        ("/reset", b'{"seed": 1e400}', "1e400 is beyond a float's range"),
        ("/reset", b'{"episode_id": Infinity}', "Infinity is not a JSON number"),
        ("/step", b'{"action": {"tool": NaN}}', "NaN is not a JSON number"),
        ("/step", b'{"action": {"tool": "x", "arguments": {"a": [1e999]}}}', "beyond a float's range"),
    ],
)
def test_odd_json_bodies_get_a_422_that_says_why_never_a_500(tmp_path, path, body, problem, served_once):
    answer = httpx.post(f"{served_once.url}{path}", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422 and problem in answer.json()["detail"]


@pytest.fixture(scope="module")
def served_once(tmp_path_factory):
    with serve_openenv(tmp_path_factory.mktemp("openenv")) as served:
        yield served


@pytest.mark.parametrize("name", ["self", "func", "session_id", "action"])
def test_options_named_like_openenv_cores_own_parameters_are_refused_options(name, served_once):
    """Each was a keyword of openenv-core's own helper too: a TypeError, a 500 over HTTP."""
    reset = httpx.post(f"{served_once.url}/reset", json={name: 1}).json()["observation"]
    assert reset["error_code"] == "ResetRefused" and f"Unknown reset option(s) '{name}'" in reset["text"]
    step = httpx.post(f"{served_once.url}/step", json={"action": {"tool": "x"}, "self": 1, "func": 1, "session_id": 1})
    assert step.status_code == 200 and step.json()["observation"]["error_code"] == "ResetNeeded"


def test_other_bad_bodies_are_fastapis_4xx_and_the_server_goes_on(served_once):
    for body in (b"{", b"[" * 100_000 + b"]" * 100_000, b'{"seed": ' + b"1" * 5000 + b"}", b'{"episode_id": 5}'):
        answer = httpx.post(f"{served_once.url}/reset", content=body, headers={"content-type": "application/json"})
        assert 400 <= answer.status_code < 500, body[:20]
    assert httpx.get(f"{served_once.url}/health").status_code == 200
    assert "Traceback" not in served_once.log.read_text()


def test_an_idle_session_is_closed_with_its_reason_and_its_slot_freed(tmp_path):
    with serve_openenv(
        tmp_path, "--max-sessions", "1", "--idle-timeout", "1", "--http-header-timeout", "0.5"
    ) as served:
        with connect(served.ws) as busy:  # pauses under the timeout, and longer than the HTTP header deadline
            busy.send(frame("reset", {"task_id": "hotel-003"}))
            busy.recv()
            for _ in range(4):
                time.sleep(0.6)
                busy.send(frame("step", FIND))
                assert json.loads(busy.recv())["type"] == "observation"
        closed = once_a_slot_is_free(served, closed_by_server)  # it sends nothing
        assert closed.rcvd.code == 1001 and closed.rcvd.reason.startswith("IDLE_TIMEOUT: no message for 1 s")

        def reset(ws) -> dict:
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            return json.loads(ws.recv())

        assert once_a_slot_is_free(served, reset)["type"] == "observation"  # the slot is free again


def once_a_slot_is_free(served, talk):
    """``talk(ws)`` on a new connection, again while the server refuses it at capacity: a session's slot is
    freed moments after its connection closes (the server ends its episode first), so a client connecting at
    once may be told CAPACITY_REACHED (with "retry")."""
    for _ in range(100):
        with connect(served.ws) as ws:
            try:
                said = talk(ws)
            except ConnectionClosed as closed:
                said = closed
        refused = said.rcvd.code == 1013 if isinstance(said, ConnectionClosed) else "CAPACITY_REACHED" in str(said)
        if not refused:
            return said
        time.sleep(0.05)
    raise AssertionError("the slot was never freed")


def test_every_client_refused_at_capacity_is_told_capacity_reached(tmp_path):
    """20 clients over --max-sessions 2, raw and through OpenEnv's own client: each sees CAPACITY_REACHED, in an
    error frame or in the close reason (1013), whichever it reads first; the two sessions go on."""
    with serve_openenv(tmp_path, "--max-sessions", "2") as served, connect(served.ws) as a, connect(served.ws) as b:
        for ws in (a, b):
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            ws.recv()
        told = []
        for _ in range(10):
            with connect(served.ws) as refused:
                closed = closed_by_server(refused)
            told.append(closed.rcvd.code == 1013 and closed.rcvd.reason.startswith("CAPACITY_REACHED"))

        async def through_openenv() -> list[str]:
            said = []
            for _ in range(10):
                try:
                    async with ErpEnvClient(base_url=served.url) as client:
                        await client.reset(task_id="hotel-003")
                except Exception as exc:  # OpenEnv's client raises: RuntimeError (the frame) or ConnectionClosed
                    said.append(str(exc))
            return said

        said = asyncio.run(through_openenv())
        assert all(told) and len(said) == 10 and all("CAPACITY_REACHED" in text for text in said), said
        a.send(frame("step", FIND))
        assert json.loads(a.recv())["data"]["observation"]["counts"]["tool_calls"] == 1


def test_connections_beyond_the_burst_wait_for_their_turn_and_are_then_served(tmp_path):
    """--connect-rate 10 beyond a burst of --max-sessions 3: twelve connections one after the other, each played,
    take at least (12 - 3) / 10 s; none is refused. (A lower bound: a slow machine only makes it longer.)"""
    with serve_openenv(tmp_path, "--max-sessions", "3", "--connect-rate", "10") as served:
        started = time.perf_counter()
        for _ in range(12):
            with connect(served.ws) as ws:
                ws.send(frame("reset", {"task_id": "hotel-003"}))
                assert json.loads(ws.recv())["type"] == "observation"
        assert time.perf_counter() - started >= 0.8


def test_a_session_sending_big_frames_back_to_back_is_read_at_its_rate_and_every_frame_counted(tmp_path):
    """--read-rate 100000 bytes a second beyond a burst of four 16 KiB messages: ten 15 KB frames holding invalid
    actions take at least (150 - 65) / 100 s, each a counted invalid action; another session is not held up by
    it (its steps are answered while the first waits)."""
    limits = ("--max-message-bytes", "16384", "--read-rate", "100000")
    with serve_openenv(tmp_path, *limits) as served, connect(served.ws) as big, connect(served.ws) as other:
        for ws in (big, other):
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            ws.recv()
        bad = frame("step", {"tool": "form_find_menu_item", "arguments": {"menuItemFilter": 5, "a": "x" * 15_000}})
        started = time.perf_counter()
        for _ in range(10):
            big.send(bad)
        other.send(frame("step", FIND))
        assert json.loads(other.recv())["data"]["observation"]["counts"]["tool_calls"] == 1
        answers = []
        with contextlib.suppress(TimeoutError):  # what the big session had been answered by then: not all
            while len(answers) < 10:
                answers.append(json.loads(big.recv(timeout=0))["data"]["observation"])
        assert len(answers) < 10
        answers += [json.loads(big.recv())["data"]["observation"] for _ in range(10 - len(answers))]
        assert time.perf_counter() - started >= 0.8
        assert [answer["counts"]["invalid_actions"] for answer in answers] == list(range(1, 11))
        assert {answer["error_code"] for answer in answers} == {"InvalidAction"}


def test_clients_that_leave_mid_step_are_info_lines_not_tracebacks(tmp_path):
    with serve_openenv(tmp_path, "--log-level", "info") as served:
        for _ in range(10):
            ws = connect(served.ws)
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            ws.send(frame("step", FIND))
            ws.socket.close()  # gone before the answers
        with connect(served.ws) as ws:  # the server goes on
            ws.send(frame("reset", {"task_id": "hotel-003"}))
            assert json.loads(ws.recv())["type"] == "observation"
        time.sleep(1)
    log = served.log.read_text()
    assert "Traceback" not in log and "ERROR" not in log
    assert log.count("erp_sim.openenv:") >= 10  # one INFO line per client that left


def test_one_session_plays_through_openenvs_client_beside_the_limits(tmp_path):
    with serve_openenv(tmp_path, "--max-message-bytes", "65536", "--idle-timeout", "30") as served:

        async def run():
            async with ErpEnvClient(base_url=served.url) as client:
                await client.reset(task_id="hotel-003")
                return await client.step(ErpAction(**FIND))

        assert asyncio.run(run()).observation.counts["tool_calls"] == 1


def test_the_load_bench_runs_and_prints_every_phase():
    """scripts/bench_openenv_load.py, shortened: every abuser's row and both throughputs (figures unchecked)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_openenv_load.py"
    done = subprocess.run(
        [sys.executable, str(script), "--steps", "20", "--seconds", "1"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    assert {"big_frames", "frames_at_cap", "big_bodies", "reset_flood", "sessions_63"} <= rows
    assert "throughput, 64 sessions flat out:" in done.stdout and "throughput, 256 sessions" in done.stdout
