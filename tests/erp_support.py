"""Test helper shared by several test folders (moved from test_erp_session.py)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from erp_sim import ErpSession, oracle_calls
from erp_sim.erp_session import ToolResponse
from erp_sim.workflow_task import WorkflowTask


def oracle_until_click(session: ErpSession, control_name: str) -> ToolResponse:
    """Drive the oracle up to its click on ``control_name``; returns that click's response."""
    calls = oracle_calls(session.task)
    name, args = next(calls)
    while True:
        response = session.call(name, args)
        assert not response.is_error, response.result
        if name == "form_click_control" and args.get("controlName") == control_name:
            return response
        name, args = calls.send(response.text)


def open_itemization(session: ErpSession) -> ToolResponse:
    """Drive the oracle up to the opened itemization form; returns the Itemize click's response."""
    return oracle_until_click(session, "Itemize")


def new_line(session: ErpSession, subcategory: str, amount: str) -> ToolResponse:
    """NewLine on the open itemization form, then its subcategory and amount in one call; returns that call's
    response."""
    session.call("form_click_control", {"controlName": "NewLine"})
    values = {"TrvExpTrans_ExpSubCategory": subcategory, "TrvExpTrans_AmountCurr": amount}
    return session.call(
        "form_set_control_values", {"controlValues": [{"controlName": k, "value": v} for k, v in values.items()]}
    )


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


def oracle_prefix(task: WorkflowTask, n: int) -> list[tuple[str, dict]]:
    """The oracle's first n calls, so that random calls start from the forms it opens too."""
    session, calls, out = ErpSession(task), oracle_calls(task), []
    name, args = next(calls)
    for _ in range(n):
        out.append((name, args))
        name, args = calls.send(session.call(name, args).text)
    return out


# --- random tool calls, for the property tests ---------------------------------------------------
def tool_call(tool: str | st.SearchStrategy, /, **arguments: st.SearchStrategy) -> st.SearchStrategy:
    """A (tool name, arguments) pair: the name ``tool`` (or one drawn from it), each argument drawn from its
    strategy."""
    return st.tuples(tool if isinstance(tool, st.SearchStrategy) else st.just(tool), st.fixed_dictionaries(arguments))


def one_to_three(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """A list of one to three draws: what a call's list argument (values, entities, keys) gets."""
    return st.lists(strategy, min_size=1, max_size=3)


def form_calls(
    buttons: list[str], grids: list[str], page_actions: list[str], row_numbers: st.SearchStrategy
) -> list[st.SearchStrategy]:
    """A workflow's clicks on buttons and on grids' page actions, and its row selections."""
    return [
        tool_call("form_click_control", controlName=st.sampled_from(buttons)),
        tool_call("form_click_control", controlName=st.sampled_from(grids), actionId=st.sampled_from(page_actions)),
        tool_call("form_select_grid_row", gridName=st.sampled_from(grids), rowNumber=row_numbers),
    ]
