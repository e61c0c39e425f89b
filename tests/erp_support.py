"""Test helper shared by several test folders (moved from test_erp_session.py)."""

from __future__ import annotations

import json

from erp_sim import ErpSession, oracle_calls
from erp_sim.erp_session import ToolResponse
from erp_sim.workflow_task import WorkflowTask


def open_itemization(session: ErpSession) -> ToolResponse:
    """Drive the oracle up to the opened itemization form; returns the Itemize click's response."""
    calls = oracle_calls(session.task)
    name, args = next(calls)
    while True:
        response = session.call(name, args)
        assert not response.is_error, response.result
        if name == "form_click_control" and args.get("controlName") == "Itemize":
            return response
        name, args = calls.send(response.text)


def oracle_lines(task: WorkflowTask) -> list[str]:
    """The oracle's calls as ``erp-sim play`` commands (it reads responses, so it runs on a session of its own)."""
    session, calls, lines = ErpSession(task), oracle_calls(task), []
    name, arguments = next(calls)
    while True:
        lines.append(f"{name} {json.dumps(arguments)}")
        try:
            name, arguments = calls.send(session.call(name, arguments).text)
        except StopIteration:
            session.close()
            return lines
