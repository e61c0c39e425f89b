"""Bank reconciliation's forms weigh what itemization's do: default responses of 500-3,000 o200k tokens, compact
smaller, for every form, including full pages of every worksheet grid."""

from __future__ import annotations

import statistics
from collections import defaultdict

import pytest
from bank_support import bank_task, open_worksheet
from bpe_openai import get_encoding

from erp_sim import ErpSession, load_task_set, run_oracle
from erp_sim.verbosity import VERBOSITIES, Verbosity
from erp_sim.workflows.bank_reconciliation import reading as R

ENCODING = get_encoding("o200k_base")


def form_tokens(verbosity: Verbosity) -> dict[str, list[int]]:
    """Tokens per response, by form: the oracle on every bank_recon_50 task, then full pages of the worksheet's
    grids (the transactions and the matched items unfiltered) on the largest task."""
    counts: dict[str, list[int]] = defaultdict(list)
    for task in load_task_set("bank_recon_50"):
        for response in run_oracle(ErpSession(task, verbosity=verbosity)):
            if response.form_state is not None:
                counts[response.form_state["Name"]].append(len(ENCODING.encode(response.text)))
    session = ErpSession(bank_task("bank-049"), verbosity=verbosity)
    open_worksheet(session)
    for name, arguments in [
        ("form_open_or_close_tab", {"tabName": R.TRANSACTION_TAB, "tabAction": "Open"}),
        ("form_click_control", {"controlName": R.TRANSACTION_GRID, "actionId": "LoadNextPage"}),
        ("form_open_or_close_tab", {"tabName": R.MATCHED_TAB, "tabAction": "Open"}),
    ]:
        response = session.call(name, arguments)
        counts[R.WORKSHEET_FORM].append(len(ENCODING.encode(response.text)))
    solved = ErpSession(bank_task("bank-049"), verbosity=verbosity)
    run_oracle(solved)
    solved.call("form_click_control", {"controlName": R.WORKSHEET_BUTTON})
    full = solved.call("form_open_or_close_tab", {"tabName": R.MATCHED_TAB, "tabAction": "Open"})
    assert len(R.matched_rows(full.form_state)) == 25
    counts[R.WORKSHEET_FORM].append(len(ENCODING.encode(full.text)))
    return counts


@pytest.fixture(scope="module")
def tokens():
    return {verbosity: form_tokens(verbosity) for verbosity in VERBOSITIES}


def test_default_responses_weigh_500_to_3000_tokens_on_every_form(tokens):
    default = tokens["default"]
    assert set(default) == {R.LIST_FORM, R.HEADER_FORM, R.WORKSHEET_FORM}
    for form, counts in default.items():
        print(f"{form}: median {statistics.median(counts)}, range {min(counts)}-{max(counts)}, n={len(counts)}")
        assert min(counts) >= 500 and max(counts) <= 3000, form


def test_compact_responses_are_lighter_on_every_form(tokens):
    for form, counts in tokens["compact"].items():
        assert statistics.median(counts) < 0.6 * statistics.median(tokens["default"][form]), form
        assert max(counts) < max(tokens["default"][form]), form
