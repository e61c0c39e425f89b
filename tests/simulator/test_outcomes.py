"""The one list of terminations and failure categories: every producer stays inside it, every report orders all of it."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from erp_sim import workflows
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.trajectory import Trajectory
from erp_sim.envs.expense_env import TERMINATION_REASONS
from erp_sim.outcomes import (
    ENV_TERMINATIONS,
    FAILURE_REPORT_HEAD,
    FAILURE_REPORT_TAIL,
    GENERIC_FAILURES,
    HARNESS_TERMINATIONS,
    TERMINATIONS,
    UNCLASSIFIED,
    Termination,
)

ROOT = Path(__file__).resolve().parents[2]


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _assigned(path: str, target: str) -> set[str]:
    """Every string literal assigned to ``target`` (a name or ``self.<attribute>``) in a source file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", None) == target or getattr(t, "attr", None) == target for t in targets):
                found |= _strings(node.value)
    return found


def _returned(path: str, function: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    [body] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    return {s for n in ast.walk(body) if isinstance(n, ast.Return) and n.value is not None for s in _strings(n.value)}


def test_every_termination_the_envs_and_the_runner_set_is_a_termination():
    expense_env = _assigned("envs/expense_env.py", "_termination")
    mcp_env = _assigned("envs/mcp_env.py", "_termination")
    runner = _assigned("agents/runner.py", "termination") | _returned("agents/runner.py", "_failure")
    assert expense_env == set(ENV_TERMINATIONS) == set(TERMINATION_REASONS)
    assert mcp_env and mcp_env <= set(ENV_TERMINATIONS)
    # the runner's own ends, plus the key it reads the env's from
    assert runner - {"termination_reason"} == set(HARNESS_TERMINATIONS)
    assert set(ENV_TERMINATIONS) | set(HARNESS_TERMINATIONS) == set(get_args(Termination))
    assert not set(ENV_TERMINATIONS) & set(HARNESS_TERMINATIONS)


def test_the_report_orders_cover_every_termination_and_failure_category():
    assert sorted(TERMINATIONS) == sorted(get_args(Termination))
    assert sorted((*FAILURE_REPORT_HEAD, *FAILURE_REPORT_TAIL)) == sorted(GENERIC_FAILURES)
    order = st.failure_categories(list(workflows.PACKAGES))
    assert sorted(order) == sorted(workflows.failure_categories()) and UNCLASSIFIED not in order
    every = {"C": dict.fromkeys([UNCLASSIFIED, *order], 1)}
    assert st.category_order(every, list(workflows.PACKAGES)) == [*order, UNCLASSIFIED]  # none in the "unknown" tail


def test_the_failure_table_keeps_itemization_s_order():
    assert st.failure_categories(["itemization"]) == (
        "context_overflow",
        "model_request_refused",
        "stalled_unanswered_question",
        "premature_termination",
        "stale_state",
        "wrong_subcategory",
        "wrong_amount",
        "duplicate_line",
        "over_itemization",
        "unsaved_or_unclosed_form",
        "invalid_tool_calls",
        "step_limit",
    )


def test_the_report_orders_keep_their_places():
    """harness_error and user_turn_limit joined the terminations' order; nothing else moved."""
    before = [
        "success",
        "user_ended",
        "stalled",
        "step_limit",
        "agent_stopped",
        "context_overflow",
        "model_error",
        "infra_error",
    ]
    assert [t for t in TERMINATIONS if t in before] == before
    assert TERMINATIONS.index("user_turn_limit") == TERMINATIONS.index("user_ended") + 1
    assert TERMINATIONS[-1] == "harness_error"


@pytest.mark.parametrize(
    "field, value",
    [
        ("termination", "timeout"),
        ("termination", "Success"),
        ("failure_category", "unclassified"),
        ("failure_category", "bad_luck"),
    ],
)
def test_a_trajectory_refuses_an_unknown_outcome(field, value):
    with pytest.raises(ValidationError, match=field):
        Trajectory(task_id="t", task_set="s", **{field: value})


@pytest.mark.parametrize("termination", [*TERMINATIONS, ""])
def test_a_trajectory_file_with_a_known_outcome_still_loads(termination):
    """A trajectory file written before the fields were typed (plain strings in the JSON) loads unchanged."""
    written = json.dumps(
        {"task_id": "t", "task_set": "s", "termination": termination, "failure_category": "stale_state"}
    )
    loaded = Trajectory.model_validate(json.loads(written))
    assert (loaded.termination, loaded.failure_category) == (termination, "stale_state")
    assert Trajectory.model_validate(loaded.deterministic_dump()) == loaded
