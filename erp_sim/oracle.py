"""The oracles: a scripted solver per workflow, through the tools only, reading only responses.

A workflow's oracle (``erp_sim.workflows.Workflow.oracle``) is a generator: it yields
``(tool, arguments)`` and is sent each response text back, so the same oracle drives an
``ErpSession`` directly, a Gymnasium env, or an MCP client.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim import task_sets, workflows
from erp_sim.erp_session import ErpSession
from erp_sim.task_sets import get_task, task_rows
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


ORACLE_STEPS_FILE = "oracle_steps.json"  # in the fixtures folder, written by scripts/generate_fixtures.py


def oracle_steps(task_set: str, task_ids: Iterable[str]) -> dict[str, int]:
    """Task id -> the calls its oracle makes, the fewest env steps that solve it: read from the fixtures' cached
    counts (``ORACLE_STEPS_FILE``; 0.1 s against 9 s to play long_horizon's 50 oracles), played here for a
    task the cache does not hold (a set of one's own, or a changed fixture)."""
    wanted = list(task_ids)
    cached = _cached_oracle_steps(task_sets.FIXTURES_DIR / ORACLE_STEPS_FILE)  # read here: tests point it elsewhere
    digests = {row.task_id: _row_digest(row.line) for row in task_rows(task_set)}
    steps = {}
    for task_id in wanted:
        entry = cached.get(digests.get(task_id, ""))
        steps[task_id] = entry if entry is not None else len(oracle_trace(get_task(task_set, task_id)))
    return steps


def oracle_steps_cache(tasks: Iterable[tuple[str, WorkflowTask]]) -> str:
    """``ORACLE_STEPS_FILE``'s text for (fixture line, task) pairs: each line's digest -> its task's oracle call
    count (keyed by the task's content, so a changed or regenerated fixture is never read a stale count)."""
    counts = {_row_digest(line.strip()): len(oracle_trace(task)) for line, task in tasks}
    return json.dumps(dict(sorted(counts.items())), indent=0) + "\n"


def _row_digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()[:16]


@cache
def _cached_oracle_steps(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no cache (an installed copy without it): every count is played
        return {}
    return {key: value for key, value in data.items() if isinstance(value, int)} if isinstance(data, dict) else {}


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
