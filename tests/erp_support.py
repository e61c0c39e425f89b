"""Test helper shared by several test folders (moved from test_erp_session.py)."""

from __future__ import annotations

from erp_sim import ErpSession, oracle_calls


def open_itemization(session: ErpSession) -> list:
    """Drive the oracle up to the opened itemization form; returns the charges it read."""
    calls = oracle_calls(session.task)
    name, args = next(calls)
    while True:
        response = session.call(name, args)
        assert not response.is_error, response.result
        if name == "form_click_control" and args.get("controlName") == "Itemize":
            return response
        name, args = calls.send(response.text)
