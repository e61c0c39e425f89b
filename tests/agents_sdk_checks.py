"""erp-sim beside OpenAI's Agents SDK (``openai-agents``, import name ``agents``) in one environment.

Run by tests/agents/test_agents_sdk.py in the test venv (editable install) and, as a script, in a second
venv that holds both wheels installed the ordinary way. It needs only erp-sim and the SDK: each
check raises AssertionError on failure; ``python agents_sdk_checks.py`` runs them all and prints
one line per check.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

TASK_ID = "hotel-009"


def erp_sim_command() -> str:
    """The ``erp-sim`` script of this interpreter's environment (not whatever is first on PATH)."""
    script = Path(sys.executable).parent / ("erp-sim.exe" if os.name == "nt" else "erp-sim")
    return str(script) if script.exists() else shutil.which("erp-sim") or "erp-sim"


def check_imports() -> str:
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp  # noqa: F401

    import agents
    import erp_sim.agents.runner
    import erp_sim.envs
    from agents import Agent, Runner  # noqa: F401  (the SDK's own names)

    sdk_dir = Path(agents.__file__).parent
    assert (sdk_dir / "mcp").is_dir(), f"`agents` is not the SDK: {agents.__file__}"
    assert Path(erp_sim.agents.runner.__file__).parent.name == "agents"  # our folder, under its installed name
    assert Path(erp_sim.agents.runner.__file__).resolve().parent != sdk_dir.resolve()
    Agent(name="erp", instructions="Itemize expenses.")  # the SDK's Agent builds beside ours
    return f"SDK at {sdk_dir}, harness at {Path(erp_sim.agents.runner.__file__).parent}"


def check_cli() -> str:
    done = subprocess.run([erp_sim_command(), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "serve" in done.stdout and "play" in done.stdout, done.stderr
    demo = subprocess.run([erp_sim_command(), "demo", "--task", TASK_ID], capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stderr
    assert '"strict_success": true' in demo.stdout, demo.stdout[-800:]
    return "erp-sim --help and erp-sim demo ran"


def check_env_and_harness() -> str:
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401  (registers the ids)
    from erp_sim.agents.runner import run_episode
    from erp_sim.agents.scripted import ScriptedAgent

    env = gym.make("erp_sim/ExpenseItemization-v0")
    trajectory = run_episode(env, ScriptedAgent(), task_id=TASK_ID)
    graded = trajectory.grade
    assert graded is not None, "run_episode grades the episode"
    grade = graded if isinstance(graded, dict) else graded.model_dump()
    assert grade["success"] and grade["strict_success"], grade
    return f"scripted agent: {trajectory.termination} after {len(trajectory.steps)} steps, graded strict_success"


async def solve(call_tool, task) -> int:
    """Drive the oracle through an MCP client's ``call_tool``; returns the number of calls."""
    from erp_sim import oracle_calls

    calls, count = oracle_calls(task), 0
    name, arguments = next(calls)
    try:
        while True:
            result = await call_tool(name, arguments)
            assert not result.is_error, result.content[0].text[:400]
            count += 1
            name, arguments = calls.send(result.content[0].text)
    except StopIteration:
        return count


async def solve_through(server) -> tuple[int, int]:
    """Connect an SDK MCP client, list the tools, and let the oracle solve the task through call_tool."""
    from erp_sim import TOOLS, get_task

    await server.connect()
    try:
        tools = await server.list_tools()
        assert [tool.name for tool in tools] == list(TOOLS), [tool.name for tool in tools]
        schema = {tool.name: tool.input_schema for tool in tools}["form_select_grid_row"]
        assert schema["properties"]["rowNumber"]["type"] == "string", schema
        bad = await server.call_tool("form_click_control", {"controlName": "NoSuchControl"})
        assert bad.is_error, bad  # a business error comes back as a tool error; the episode goes on
        count = await solve(server.call_tool, get_task("hotel_50", TASK_ID))
        return len(tools), count
    finally:
        await server.cleanup()


def wait_for_grade(path: Path) -> dict:
    for _ in range(200):  # the server appends one JSON line per grade (after writes, at close and at exit)
        if path.exists():
            for line in reversed(path.read_text().splitlines()):
                try:
                    session = json.loads(line)
                except json.JSONDecodeError:  # a line being written
                    continue
                if session["grade"]["strict_success"]:
                    return session
        time.sleep(0.05)
    raise AssertionError(f"no successful grade in {path}: {path.read_text() if path.exists() else 'missing'}")


def check_mcp_stdio(workdir: Path) -> str:
    from agents.mcp import MCPServerStdio

    grades = workdir / "stdio-grades.json"
    server = MCPServerStdio(
        {"command": erp_sim_command(), "args": ["serve", "--task", TASK_ID, "--grade-file", str(grades)]},
        client_session_timeout_seconds=60,
    )
    listed, calls = asyncio.run(solve_through(server))
    wait_for_grade(grades)
    return f"MCPServerStdio: {listed} tools listed, task solved in {calls} calls, graded strict_success"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_mcp_http(workdir: Path) -> str:
    from agents.mcp import MCPServerStreamableHttp

    port, token, grades = free_port(), "sdk-check-token", workdir / "http-grades.json"
    log = (workdir / "http-server.log").open("w")
    proc = subprocess.Popen(
        [erp_sim_command(), "serve", "--http", "--port", str(port), "--grade-file", str(grades)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        env={**os.environ, "ERP_SIM_AUTH_TOKEN": token},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (workdir / "http-server.log").read_text()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "erp-sim serve --http did not listen within 60 s"
            time.sleep(0.05)
        headers = {"Authorization": f"Bearer {token}", "X-ERP-Session": "sdk-1", "X-ERP-Task": TASK_ID}
        server = MCPServerStreamableHttp(
            {"url": f"http://127.0.0.1:{port}/mcp", "headers": headers}, client_session_timeout_seconds=60
        )
        listed, calls = asyncio.run(solve_through(server))
        wait_for_grade(grades)
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
    return f"MCPServerStreamableHttp: {listed} tools listed, task solved in {calls} calls, graded strict_success"


CHECKS: dict[str, Callable[..., str]] = {
    "imports": check_imports,
    "cli": check_cli,
    "env_and_harness": check_env_and_harness,
    "mcp_stdio": check_mcp_stdio,
    "mcp_http": check_mcp_http,
}


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, check in CHECKS.items():
            args = (Path(tmp),) if name.startswith("mcp") else ()
            print(f"{name}: {check(*args)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
