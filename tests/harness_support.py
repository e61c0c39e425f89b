"""Test helper shared by several test folders (moved from test_harness.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from erp_sim.agents.models.openai_chat import OpenAIChatModel
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent


def script_server_with_scripted_agent(server, env, task_id):
    """Queue on the fake server the replies the scripted agent would give (a stand-in LLM)."""
    reference = run_episode(env, ScriptedAgent(), task_id=task_id)
    for message in reference.messages:
        if message["role"] != "assistant":
            continue
        if message.get("tool_calls"):
            server.reply_tool_calls(
                [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]]
            )
        else:
            server.reply_text(message["content"])
    return reference


def recording(base_url: str, tmp_path: Path) -> list[str]:
    """The eval arguments that run against the fake server at ``base_url`` and record it: rows in
    ``tmp_path/run``, cassettes in ``tmp_path/rec``."""
    return ["--base-url", base_url, "--out", str(tmp_path / "run"), "--record", str(tmp_path / "rec")]


def one_retry_models(monkeypatch, **options) -> None:
    """Every role's model of an eval an OpenAIChatModel at temperature 0 that retries a failed call once
    (``options``: more of its settings, e.g. ``backoff_base=0.0``)."""
    monkeypatch.setattr(
        "erp_sim.agents.evaluation.episode_models._chat_model",
        lambda name, url, **_: OpenAIChatModel(name, base_url=url, temperature=0.0, max_retries=1, **options),
    )


#: The eval the kill tests start and kill: 5 tasks x C2-C4, each run a few seconds.
KILLED_EVAL = "--configs C2,C3,C4 --tasks hotel_50:hotel-010,hotel-020,hotel-030,hotel-040,hotel-049 --quiet"


def eval_command(options: str, out: Path) -> list[str]:
    """``erp-sim eval`` with ``KILLED_EVAL`` and ``options`` into ``out``, as a command of its own process."""
    return [
        sys.executable,
        "-m",
        "erp_sim.agents.cli",
        "eval",
        *KILLED_EVAL.split(),
        *options.split(),
        "--out",
        str(out),
    ]


def started_eval(command: list[str], rows: int, seconds: float) -> subprocess.Popen:
    """The eval ``command`` started, once its results file holds ``rows`` rows (or ``seconds`` have passed)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = Path(command[-1]) / "results.jsonl"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (not results.exists() or len(results.read_text().splitlines()) < rows):
        time.sleep(0.05)
    return process
