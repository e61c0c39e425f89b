"""Refactors must change no response: a digest of every response text of fixed call sequences.

For every task of hotel_50, expense_types and bank_recon_50 and the first tasks of long_horizon and
bank_recon_long, at both verbosities, the oracle's solution is played on an ``ErpSession``, followed by a fixed list of
probes that reach the data tools, the SQL tool, the actions and the error paths (unknown tool,
bad arguments, a business-rule refusal). Every response text and the final grade are hashed into
one digest per task set and verbosity, stored in ``response_digests.json`` before a refactor.

Regenerate only for a change that is meant to change responses:
``.venv/bin/python tests/simulator/test_response_digest.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

DIGESTS = Path(__file__).with_name("response_digests.json")
# task set -> how many tasks (None: all)
SELECTIONS = {"hotel_50": None, "expense_types": None, "long_horizon": 3, "bank_recon_50": None, "bank_recon_long": 2}
VERBOSITIES = ("default", "compact")

# After the oracle's solution: reads, data tools, SQL, actions, and calls that must fail without writing.
PROBES: list[tuple[str, Any]] = [
    ("form_find_menu_item", {"menuItemFilter": "expense"}),
    ("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}),
    ("form_sort_grid_column", {"gridName": "ExpenseReportsGrid", "gridColumnName": "TrvExpTable_ExpNumber"}),
    ("form_click_control", {"controlName": "ExpenseReportsGrid", "actionId": "LoadNextPage"}),
    ("form_find_controls", {"controlSearchTerm": "status"}),
    ("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": "3"}),
    ("form_filter_form", {"filterValue": "Draft"}),
    ("form_close_form", {}),
    ("data_find_entity_type", {"tableSearchFilter": "expense"}),
    ("data_get_entity_metadata", {"entitySetName": "ExpenseLines"}),
    ("data_find_entities", {"odataPath": "ExpenseLines", "odataQueryOptions": "$top=5&$orderby=RecId desc"}),
    ("data_find_entities_sql", {"sqlQuery": "SELECT category_id, COUNT(*), SUM(amount) FROM expense_line GROUP BY 1"}),
    ("api_find_actions", {"actionSearchFilter": ""}),
    ("data_delete_entities", {"entitySetName": "ExpenseReports", "keys": [1]}),
    ("data_update_entities", {"entitySetName": "ExpenseLines", "entities": [{"RecId": 1, "Amount": "-5"}]}),
    ("form_set_control_values", {"controlValues": [{"controlName": "Nope", "value": "x"}]}),
    ("no_such_tool", {}),
    ("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": 3}),
    ("data_find_entities_sql", {"sqlQuery": "DELETE FROM expense_line"}),
]


# The same for bank reconciliation: its worksheet's tab pages and grids, its entity sets and actions, and refusals
# (an unequal match, marking reconciled twice, a write to a reconciled reconciliation, an unknown tool).
BANK_PROBES: list[tuple[str, Any]] = [
    ("form_find_menu_item", {"menuItemFilter": "bank"}),
    ("form_open_menu_item", {"name": "BankReconciliation", "type": "Display"}),
    ("form_sort_grid_column", {"gridName": "BankReconciliationGrid", "gridColumnName": "BankRecon_StatementTotal"}),
    ("form_select_grid_row", {"gridName": "BankReconciliationGrid", "rowNumber": "2"}),
    ("form_click_control", {"controlName": "OpenReconciliation"}),
    ("form_click_control", {"controlName": "Worksheet"}),
    ("form_open_or_close_tab", {"tabName": "MatchedTabPage", "tabAction": "Open"}),
    ("form_click_control", {"controlName": "MatchedGrid", "actionId": "LoadNextPage"}),
    ("form_select_grid_row", {"gridName": "MatchedGrid", "rowNumber": "1", "marking": "Marked"}),
    ("form_click_control", {"controlName": "Unmatch"}),
    ("form_open_lookup", {"controlName": "Worksheet_OffsetAccount"}),
    ("form_close_form", {}),
    ("form_click_control", {"controlName": "MarkAsReconciled"}),
    ("data_find_entity_type", {"tableSearchFilter": "bank"}),
    ("data_get_entity_metadata", {"entitySetName": "BankReconciliationMatches"}),
    ("data_find_entities", {"odataPath": "BankTransactions", "odataQueryOptions": "$top=5&$orderby=Amount desc"}),
    ("data_find_entities_sql", {"sqlQuery": "SELECT match_type, COUNT(*) FROM bank_reconciliation_match GROUP BY 1"}),
    ("api_find_actions", {"actionSearchFilter": ""}),
    ("data_delete_entities", {"entitySetName": "BankReconciliationMatches", "keys": [1]}),
    ("data_update_entities", {"entitySetName": "BankReconciliations", "entities": [{"RecId": 1, "Reconciled": False}]}),
    ("form_set_control_values", {"controlValues": [{"controlName": "Nope", "value": "x"}]}),
    ("no_such_tool", {}),
    ("data_find_entities_sql", {"sqlQuery": "DELETE FROM bank_transaction"}),
]
PROBES_OF = {"itemization": PROBES, "bank_reconciliation": BANK_PROBES}


def selection_digest(task_set: str, count: int | None, verbosity: str) -> str:
    from erp_sim import load_task_set
    from erp_sim.erp_session import ErpSession
    from erp_sim.oracle import oracle_calls

    digest = hashlib.sha256()
    for task in load_task_set(task_set)[:count]:
        session = ErpSession(task, verbosity=verbosity)  # type: ignore[arg-type]
        calls = oracle_calls(task)
        name, arguments = next(calls)
        try:
            while True:
                response = session.call(name, arguments)
                digest.update(response.text.encode())
                name, arguments = calls.send(response.text)
        except StopIteration:
            pass
        for name, arguments in PROBES_OF[type(task).workflow]:
            digest.update(session.call(name, arguments).text.encode())
        digest.update(session.grade().model_dump_json().encode())
        digest.update(session.state_hash().encode())
        session.close()
    return digest.hexdigest()


def current_digests() -> dict[str, str]:
    return {
        f"{task_set}/{verbosity}": selection_digest(task_set, count, verbosity)
        for task_set, count in SELECTIONS.items()
        for verbosity in VERBOSITIES
    }


@pytest.mark.parametrize("key", [f"{s}/{v}" for s in SELECTIONS for v in VERBOSITIES])
def test_responses_are_byte_identical_to_the_stored_digests(key: str) -> None:
    stored = json.loads(DIGESTS.read_text(encoding="utf-8"))
    task_set, verbosity = key.split("/")
    assert selection_digest(task_set, SELECTIONS[task_set], verbosity) == stored[key], (
        f"responses of {key} changed; if that is meant, regenerate with: python {__file__} --write"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python {sys.argv[0]} --write")
    DIGESTS.write_text(json.dumps(current_digests(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {DIGESTS}")
