"""Test helper shared by several test folders (moved from test_erp_session.py)."""

from __future__ import annotations

from erp_sim import ErpSession, oracle_calls
from erp_sim.erp_session import ToolResponse


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
