"""Benchmark: what the training integrations cost per step, against ``env.step`` in one process.

Plays the oracle's calls on a few tasks (compact verbosity) through: the episode API in this process
(``Episode.call_tool``, i.e. ``env.step``), OpenEnv's WebSocket client against ``erp-sim serve --openenv``
in another process, and OpenEnv's stateless HTTP ``/step`` (a fresh environment per request, answered
with an error observation: HTTP carries no episode). The three run in lockstep, step by step, so the
machine's noise hits all alike; medians per step and their ratios to ``env.step`` are printed. Then
verifiers rollouts per second: ``evaluate`` over the tasks, the oracle answering as the model through
the project's fake OpenAI server (tests/fake_openai_server.py), so the figure is the harness's cost.

    .venv/bin/python scripts/bench_training.py [--tasks 5]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

import erp_sim
from erp_sim.envs.episode import Episode
from erp_sim.envs.openenv import ErpAction, ErpEnvClient

ROOT = Path(__file__).resolve().parent.parent


def start_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, *"-m erp_sim.agents.cli serve --openenv --port".split(), str(port), "--verbosity", "compact"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the OpenEnv server did not start")


async def lockstep(url: str, tasks: list) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {
        "env.step (in process)": [],
        "OpenEnv WebSocket step": [],
        "OpenEnv HTTP /step (stateless)": [],
    }
    episode = Episode(verbosity="compact")
    async with ErpEnvClient(base_url=url) as client, httpx.AsyncClient(base_url=url, timeout=60) as http:
        for task in tasks:
            episode.start(task_id=task.task_id)
            await client.reset(task_id=task.task_id)
            calls = erp_sim.oracle_calls(task)
            name, arguments = next(calls)
            while True:
                start = time.perf_counter()
                turn = episode.call_tool(name, arguments)
                times["env.step (in process)"].append(time.perf_counter() - start)
                start = time.perf_counter()
                result = await client.step(ErpAction(tool=name, arguments=arguments))
                times["OpenEnv WebSocket step"].append(time.perf_counter() - start)
                start = time.perf_counter()
                await http.post("/step", json={"action": {"tool": name, "arguments": arguments}})
                times["OpenEnv HTTP /step (stateless)"].append(time.perf_counter() - start)
                assert result.observation.text == turn.observation, "the server and the process disagree"
                if turn.done:
                    break
                name, arguments = calls.send(turn.observation)
            assert episode.reward == 1.0 and result.reward == 1.0
    return times


def verifiers_rate(tasks: int) -> float:
    sys.path.insert(0, str(ROOT / "tests"))
    import verifiers as vf
    from fake_openai_server import FakeOpenAIServer
    from openai import AsyncOpenAI
    from oracle_model import oracle_reply

    from erp_sim.envs.verifiers_env import load_environment

    env = load_environment(verbosity="compact")
    with FakeOpenAIServer(strict=False) as server:
        server.answer_with(oracle_reply)
        client = vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0))
        start = time.perf_counter()
        outputs = env.evaluate_sync(client=client, model="oracle", num_examples=tasks, max_concurrent=1)["outputs"]
        elapsed = time.perf_counter() - start
    assert [o["reward"] for o in outputs] == [1.0] * tasks
    return tasks / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5)
    args = parser.parse_args()
    tasks = erp_sim.load_task_set("hotel_50")[: args.tasks]
    process, url = start_server()
    try:
        times = asyncio.run(lockstep(url, tasks))
    finally:
        process.terminate()
        process.wait(timeout=30)
    base = statistics.median(times["env.step (in process)"])
    print(f"{len(times['env.step (in process)'])} steps over {len(tasks)} oracle episodes (compact):")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:32s} median {median * 1e3:7.2f} ms   x{median / base:6.1f}")
    print(f"verifiers: {verifiers_rate(len(tasks)):.2f} oracle rollouts/s (one at a time, fake model server)")


if __name__ == "__main__":
    main()
