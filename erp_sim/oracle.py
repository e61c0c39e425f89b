"""The oracles: a scripted solver per workflow, through the tools only, reading only responses.

A workflow's oracle (``erp_sim.workflows.Workflow.oracle``) is a generator: it yields
``(tool, arguments)`` and is sent each response text back, so the same oracle drives an
``ErpSession`` directly, a Gymnasium env, or an MCP client.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from erp_sim import workflows
from erp_sim.erp_session import ErpSession
from erp_sim.workflows import Call, OracleError

if TYPE_CHECKING:
    from erp_sim.erp_session import ToolResponse
    from erp_sim.verbosity import Verbosity
    from erp_sim.workflow_task import WorkflowTask


def oracle_calls(task: WorkflowTask) -> Generator[Call, str, None]:
    """Yield the calls that solve ``task`` (its workflow's oracle); receive each response text via ``send``."""
    return workflows.of_task(task).oracle(task)


def run_oracle(session: ErpSession) -> list[ToolResponse]:
    """Drive ``oracle_calls`` on an ``ErpSession``; returns the responses. Raises OracleError on any error response."""
    calls = oracle_calls(session.task)
    responses = []
    try:
        name, arguments = next(calls)
        while True:
            response = session.call(name, arguments)
            responses.append(response)
            if response.is_error:
                raise OracleError(f"{name} failed: {response.envelope['Result']}")
            name, arguments = calls.send(response.text)
    except StopIteration:
        return responses


def oracle_trace(task: WorkflowTask, verbosity: Verbosity = "default") -> list[Call]:
    """The oracle's whole call sequence for ``task``, played on a side session (for replays and benchmarks)."""
    session = ErpSession(task, verbosity=verbosity)
    calls, trace = oracle_calls(task), []
    name, arguments = next(calls)
    try:
        while True:
            trace.append((name, arguments))
            name, arguments = calls.send(session.call(name, arguments).text)
    except StopIteration:
        return trace
    finally:
        session.close()
