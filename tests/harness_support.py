"""Test helper shared by several test folders (moved from test_harness.py)."""

from __future__ import annotations

import json

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
