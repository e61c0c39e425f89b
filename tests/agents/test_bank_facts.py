"""Bank reconciliation's summary facts (C4's structured summary, ACON's observation refinement), folded from
the responses of an oracle episode: the open lines with reference and amount, shrinking as lines clear."""

from __future__ import annotations

import json

import erp_sim
from erp_sim import workflows
from erp_sim.workflows.bank_reconciliation import reading as R

FACE = workflows.harness("bank_reconciliation")


def observe(facts, text: str) -> None:
    state = json.loads(text).get("FormState") or {}
    if state:
        FACE.facts.observe(facts, state.get("Name", ""), state.get("Caption", ""), state)


def test_the_open_lines_shrink_as_the_statement_grid_shows_them_cleared_and_vanish_at_the_end():
    task = erp_sim.get_task("bank_recon_50", "bank-003")
    session, calls = erp_sim.ErpSession(task), erp_sim.oracle_calls(task)
    facts = FACE.facts.new(task.instruction())
    name, arguments = next(calls)
    matches = 0
    try:
        while True:
            text = session.call(name, arguments).text
            observe(facts, text)
            if name == "form_click_control" and arguments["controlName"] == R.MATCH_BUTTON:
                matches += 1
                if matches == 2:  # look at the statement lines: the two cleared ones are gone from the summary
                    observe(
                        facts,
                        session.call("form_open_or_close_tab", {"tabName": R.STATEMENT_TAB, "tabAction": "Open"}).text,
                    )
                    shown = "\n".join(FACE.facts.key_variables(facts))
                    assert "Open statement lines (7," in shown and "  3. WRO-987136 | -12,190.84 |" in shown
                    assert "  1. " not in shown and FACE.facts.todo(facts, R.WORKSHEET_FORM)[0].startswith(
                        "Clear statement line 3:"
                    )
                    text = session.call(
                        "form_open_or_close_tab", {"tabName": R.TRANSACTION_TAB, "tabAction": "Open"}
                    ).text
            name, arguments = calls.send(text)
    except StopIteration:
        pass
    shown = "\n".join(FACE.facts.key_variables(facts))
    assert session.grade().strict_success and "Reconciliation: open lines 0, difference 0.00, reconciled Yes" in shown
    assert "Open statement lines" not in shown
    session.close()
