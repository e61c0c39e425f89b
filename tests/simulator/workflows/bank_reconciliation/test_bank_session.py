"""Bank reconciliation through the 22 tools: the worksheet's behaviour, the data tools, the SQL tool and the
actions on its tables (the same rules on every path, forms and data agree), determinism and pickling."""

from __future__ import annotations

import pickle

import pytest
from bank_support import assert_books_balance, bank_task, line_id, open_worksheet, trans_id

from erp_sim import ErpSession, formstate, oracle_calls, run_oracle
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation.grading import target_reconciliation

PROBES = [
    ("form_find_menu_item", {"menuItemFilter": "bank"}),
    ("data_find_entity_type", {"tableSearchFilter": "bank"}),
    ("data_find_entities", {"odataPath": "BankStatementLines", "odataQueryOptions": "$top=3&$orderby=Amount desc"}),
    (
        "data_find_entities_sql",
        {"sqlQuery": "SELECT account_id, COUNT(*), SUM(amount) FROM bank_transaction GROUP BY 1"},
    ),
    ("api_find_actions", {"actionSearchFilter": ""}),
    ("form_open_menu_item", {"name": "BankReconciliation"}),
]


def _played(task, verbosity="default"):
    session = ErpSession(task, verbosity=verbosity)
    texts = [r.text for r in run_oracle(session)] + [session.call(n, a).text for n, a in PROBES]
    return texts, session.state_hash(), session.grade().model_dump_json()


def test_same_task_and_calls_give_the_same_bytes_in_any_session():
    task = bank_task()
    assert _played(task) == _played(task)
    assert _played(task, "compact") == _played(task, "compact")


def test_a_pickled_session_goes_on_exactly_as_the_original():
    task = bank_task()
    original, calls = ErpSession(task), oracle_calls(task)
    name, arguments = next(calls)
    for _ in range(30):
        name, arguments = calls.send(original.call(name, arguments).text)
    copy = pickle.loads(pickle.dumps(original))
    assert copy.state_hash() == original.state_hash() and copy.workflow is original.workflow
    rest = []
    try:
        while True:
            a, b = original.call(name, arguments), copy.call(name, arguments)
            assert a.text == b.text
            rest.append(a)
            name, arguments = calls.send(a.text)
    except StopIteration:
        pass
    assert copy.grade().strict_success and copy.state_hash() == original.state_hash()


def _worksheet():
    session = ErpSession(bank_task("bank-045"))  # 36 lines: the statement grid pages
    return session, open_worksheet(session)


def test_the_worksheet_shows_one_tab_page_at_a_time_and_marks_stay_across_pages_and_tabs():
    session, response = _worksheet()
    state = response.form_state
    assert R.open_tab(state) == R.STATEMENT_TAB and formstate.has_next_page(state, R.STATEMENT_GRID)
    first = R.statement_rows(state)[0]
    session.call("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "1", "marking": "Marked"})
    page2 = session.call("form_click_control", {"controlName": R.STATEMENT_GRID, "actionId": "LoadNextPage"})
    assert R.statement_rows(page2.form_state)[0].row_number == "26"
    session.call("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "27", "marking": "Marked"})
    tab = session.call("form_open_or_close_tab", {"tabName": R.TRANSACTION_TAB, "tabAction": "Open"})
    assert R.open_tab(tab.form_state) == R.TRANSACTION_TAB and "were closed" in tab.result
    assert not R.statement_rows(tab.form_state)  # the closed tab page's grid is not shown
    marked = R.figure(tab.form_state, R.MARKED_LINES_AMOUNT)
    second = session.task.line(27).decimal
    assert marked == first.amount + second
    off_page = session.call("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "3"})
    assert off_page.is_error and "not on the current page" in off_page.result


def test_mark_as_new_needs_an_account_and_no_marked_transaction():
    session, _ = _worksheet()
    fee = session.task.fees[0]
    session.call(
        "form_filter_grid",
        {"gridName": R.STATEMENT_GRID, "gridColumnName": R.LINE_NUMBER, "filterValue": str(fee.line_number)},
    )
    session.call("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "1", "marking": "Marked"})
    before = session.state_hash()
    refused = session.call("form_click_control", {"controlName": R.NEW_BUTTON})
    assert refused.is_error and R.OFFSET_ACCOUNT in refused.result
    session.call("form_select_grid_row", {"gridName": R.TRANSACTION_GRID, "rowNumber": "1", "marking": "Marked"})
    session.call(
        "form_set_control_values", {"controlValues": [{"controlName": R.OFFSET_ACCOUNT, "value": fee.main_account_id}]}
    )
    refused = session.call("form_click_control", {"controlName": R.NEW_BUTTON})
    assert refused.is_error and "disabled" in refused.result
    assert session.state_hash() == before
    session.call("form_select_grid_row", {"gridName": R.TRANSACTION_GRID, "rowNumber": "1", "marking": "Unmarked"})
    posted = session.call("form_click_control", {"controlName": R.NEW_BUTTON})
    assert not posted.is_error and f"to {fee.account_label}" in posted.result
    assert_books_balance(session)


def test_an_invalid_value_in_a_batch_of_control_values_sets_none():
    session, _ = _worksheet()
    response = session.call(
        "form_set_control_values",
        {
            "controlValues": [
                {"controlName": R.OFFSET_ACCOUNT, "value": "618160"},
                {"controlName": R.OFFSET_ACCOUNT, "value": "999"},
            ]
        },
    )
    assert response.is_error and formstate.control_value(response.form_state, R.OFFSET_ACCOUNT) == ""
    closed = session.call("form_close_form", {})
    assert not closed.is_error and "was closed" in closed.result  # the account is no record edit: no warning


def test_unmatch_undoes_the_marked_or_selected_group():
    session, _ = _worksheet()
    task = session.task
    lines, vouchers = task.groups[0]
    rec = target_reconciliation(session)
    from erp_sim.workflows.bank_reconciliation import rules

    rules.match(session.db, rec, [line_id(session, n) for n in lines], [trans_id(session, v) for v in vouchers])
    session.call("form_open_or_close_tab", {"tabName": R.MATCHED_TAB, "tabAction": "Open"})
    matched = session.call("form_select_grid_row", {"gridName": R.MATCHED_GRID, "rowNumber": "1"})
    assert R.matched_rows(matched.form_state)
    undone = session.call("form_click_control", {"controlName": R.UNMATCH_BUTTON})
    assert not undone.is_error and "was undone" in undone.result and not R.matched_rows(undone.form_state)
    assert rules.summary(session.db, rec).open_line_count == task.line_count


def test_forms_and_data_agree_and_marks_on_rows_matched_elsewhere_are_dropped():
    session, _ = _worksheet()
    task = session.task
    lines, vouchers = next(g for g in task.groups if len(g[1]) == 1)
    line = next(iter(lines))
    session.call(
        "form_filter_grid", {"gridName": R.STATEMENT_GRID, "gridColumnName": R.LINE_NUMBER, "filterValue": str(line)}
    )
    session.call("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "1", "marking": "Marked"})
    rec = target_reconciliation(session)
    created = session.call(
        "data_create_entities",
        {
            "entitySetName": "BankReconciliationMatches",
            "entities": [
                {
                    "ReconciliationRecId": rec,
                    "StatementLineRecIds": str(line_id(session, line)),
                    "BankTransactionRecIds": str(trans_id(session, next(iter(vouchers)))),
                }
            ],
        },
    )
    assert not created.is_error, created.result
    warnings = [m["Text"] for m in created.envelope["Messages"] if m["Level"] == "Warning"]
    assert warnings and "no longer in their grid" in warnings[0]
    assert R.figure(created.form_state, R.MARKED_LINES_AMOUNT) == 0
    status = session.call(
        "api_invoke_action",
        {"actionName": "GetBankReconciliationStatus", "parameters": {"StatementId": task.statement_id}},
    )
    figures = status.envelope["ActionResult"]
    assert line not in figures["OpenStatementLines"]
    assert R.figure(status.form_state, R.DIFFERENCE) == R.amount(figures["UnreconciledDifference"])
    assert figures["UnreconciledDifference"] == session.grade().difference
    lines_now = session.call(
        "data_find_entities",
        {
            "odataPath": "BankStatementLines",
            "odataQueryOptions": f"$filter=StatementId eq '{task.statement_id}' and MatchStatus eq 'Match'",
        },
    )
    assert [r["LineNumber"] for r in lines_now.envelope["Data"]["value"]] == [line]
    assert_books_balance(session)


def test_data_writes_obey_the_rules_and_a_batch_is_all_or_nothing():
    session = ErpSession(bank_task())
    task = session.task
    rec = target_reconciliation(session)
    (la, va), (lb, _) = task.groups[0], task.groups[1]
    entity = lambda lines, vouchers: {
        "ReconciliationRecId": rec,
        "StatementLineRecIds": ",".join(str(line_id(session, n)) for n in lines),
        "BankTransactionRecIds": ",".join(str(trans_id(session, v)) for v in vouchers),
    }
    before = session.state_hash()
    batch = session.call(
        "data_create_entities",
        {"entitySetName": "BankReconciliationMatches", "entities": [entity(la, va), entity(lb, va)]},
    )
    assert batch.is_error and "entities[1]" in batch.result and "Nothing was written" in batch.result
    assert session.state_hash() == before
    for bad, expected in [
        ({"ReconciliationRecId": rec, "StatementLineRecIds": "1"}, "Give BankTransactionRecIds"),
        ({**entity(la, va), "OffsetAccount": "618160"}, "not both"),
        ({**entity(la, va), "MatchType": "New"}, "cannot be set here"),
        ({"ReconciliationRecId": rec, "StatementLineRecIds": "x;y", "BankTransactionRecIds": "1"}, "comma-separated"),
        ({"ReconciliationRecId": 10**12, "StatementLineRecIds": "1", "BankTransactionRecIds": "1"}, "does not exist"),
    ]:
        response = session.call(
            "data_create_entities", {"entitySetName": "BankReconciliationMatches", "entities": [bad]}
        )
        assert response.is_error and expected in response.result, response.result
    assert session.state_hash() == before
    early = session.call(
        "data_update_entities",
        {"entitySetName": "BankReconciliations", "entities": [{"RecId": rec, "Reconciled": True}]},
    )
    assert early.is_error and "cannot be marked as reconciled" in early.result
    refused = session.call(
        "data_update_entities", {"entitySetName": "BankTransactions", "entities": [{"RecId": 1, "Amount": "1.00"}]}
    )
    assert refused.is_error and "read-only" in refused.result
    gone = session.call("data_delete_entities", {"entitySetName": "BankTransactions", "keys": [1]})
    assert gone.is_error and "cannot be deleted" in gone.result
    assert session.state_hash() == before


def test_the_data_tools_alone_can_reconcile_under_the_same_rules():
    session = ErpSession(bank_task())
    task = session.task
    rec = target_reconciliation(session)
    entities = [
        {
            "ReconciliationRecId": rec,
            "StatementLineRecIds": ",".join(str(line_id(session, n)) for n in lines),
            "BankTransactionRecIds": ",".join(str(trans_id(session, v)) for v in vouchers),
        }
        for lines, vouchers in task.groups
    ] + [
        {
            "ReconciliationRecId": rec,
            "StatementLineRecIds": line_id(session, fee.line_number),
            "OffsetAccount": fee.main_account_id,
        }
        for fee in task.fees
    ]
    created = session.call("data_create_entities", {"entitySetName": "BankReconciliationMatches", "entities": entities})
    assert not created.is_error, created.result
    done = session.call(
        "data_update_entities",
        {"entitySetName": "BankReconciliations", "entities": [{"RecId": rec, "Reconciled": True}]},
    )
    assert not done.is_error and done.envelope["Data"]["value"][0]["Reconciled"] is True
    assert session.grade().strict_success
    assert_books_balance(session)


def test_the_actions_work_by_statement_line_numbers_and_vouchers():
    session = ErpSession(bank_task())
    task = session.task
    call = lambda name, **parameters: session.call("api_invoke_action", {"actionName": name, "parameters": parameters})
    for lines, vouchers in task.groups:
        response = call(
            "MatchBankStatementLines",
            StatementId=task.statement_id.lower(),
            LineNumbers=",".join(map(str, lines)),
            Vouchers=",".join(sorted(vouchers)),
        )
        assert not response.is_error, response.result
    refused = call("MarkBankReconciliationAsReconciled", StatementId=task.statement_id)
    assert refused.is_error and "not matched" in refused.result
    for fee in task.fees:
        posted = call(
            "MarkBankStatementLineAsNew",
            StatementId=task.statement_id,
            LineNumber=fee.line_number,
            OffsetAccount=fee.main_account_id,
        )
        assert not posted.is_error and posted.envelope["ActionResult"]["OffsetAccount"] == fee.main_account_id
    match_id = posted.envelope["ActionResult"]["MatchId"]
    assert not call("UnmatchBankStatementLines", StatementId=task.statement_id, MatchId=match_id).is_error
    assert call("MarkBankReconciliationAsReconciled", StatementId=task.statement_id).is_error
    relink = call(
        "MatchBankStatementLines",
        StatementId=task.statement_id,
        LineNumbers=str(task.fees[-1].line_number),
        Vouchers=posted.envelope["ActionResult"]["Voucher"],
    )
    assert not relink.is_error
    assert not call("MarkBankReconciliationAsReconciled", StatementId=task.statement_id).is_error
    status = call("GetBankReconciliationStatus", StatementId=task.statement_id).envelope["ActionResult"]
    assert status["IsReconciled"] and status["UnreconciledDifference"] == "0.00" and status["OpenStatementLines"] == []
    assert session.grade().strict_success
    for bad in (
        call("MatchBankStatementLines", StatementId="BS-000000-NONE", LineNumbers="1", Vouchers="BNK-000001"),
        call("MatchBankStatementLines", StatementId=task.statement_id, LineNumbers="999", Vouchers="BNK-000001"),
        call("GetBankReconciliationStatus"),
        call("MarkBankStatementLineAsNew", StatementId=task.statement_id, LineNumber="x", OffsetAccount="618160"),
    ):
        assert bad.is_error


def test_the_sql_tool_reads_the_bank_tables_only():
    session = ErpSession(bank_task())
    tables = session.call(
        "data_find_entities_sql", {"sqlQuery": "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"}
    )
    names = [row[0] for row in tables.envelope["Data"]["Rows"]]
    assert "bank_transaction" in names and "expense_line" not in names
    total = session.call(
        "data_find_entities_sql",
        {
            "sqlQuery": f"SELECT COUNT(*) FROM bank_statement_line l JOIN bank_statement s ON s.id = l.statement_id WHERE s.statement_id = '{session.task.statement_id}'"
        },
    )
    assert total.envelope["Data"]["Rows"] == [[session.task.line_count]]
    today = session.call("data_find_entities_sql", {"sqlQuery": "SELECT date('now')"}).envelope["Data"]["Rows"][0][0]
    assert today > session.task.to_date  # the simulated clock: three days after the statement
    for statement in (
        "DELETE FROM bank_reconciliation_match",
        "UPDATE bank_reconciliation SET reconciled = 1",
        "SELECT * FROM expense_line",
    ):
        assert session.call("data_find_entities_sql", {"sqlQuery": statement}).is_error


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "-1", "marking": "Marked"}),
        ("form_select_grid_row", {"gridName": R.STATEMENT_GRID, "rowNumber": "1", "marking": "Maybe"}),
        ("form_click_control", {"controlName": R.MATCH_BUTTON, "actionId": "Explode"}),
        ("form_set_control_values", {"controlValues": [{"controlName": R.OFFSET_ACCOUNT, "value": float("inf")}]}),
        ("form_set_control_values", {"controlValues": [{"controlName": R.DIFFERENCE, "value": "0.00"}]}),
        ("form_open_or_close_tab", {"tabName": "Nope", "tabAction": "Open"}),
        ("api_invoke_action", {"actionName": "MatchBankStatementLines", "parameters": {"StatementId": "x" * 5000}}),
        (
            "data_create_entities",
            {"entitySetName": "BankReconciliationMatches", "entities": [{"StatementLineRecIds": 10**30}]},
        ),
    ],
)
def test_bad_input_gets_a_clear_error_and_changes_nothing(name, arguments):
    session, _ = _worksheet()
    before = session.state_hash()
    response = session.call(name, arguments)
    assert response.is_error and response.error_code != "InternalError", response.result
    assert session.state_hash() == before


def test_after_its_own_match_the_worksheet_shows_what_a_fresh_read_of_the_database_shows():
    """Match and Mark as new keep the grids and figures they leave instead of reading them again: after each, a
    pickled copy (which starts with no cached reads) renders every tab page, a second page and a filter as the
    session does."""
    session = ErpSession(bank_task("bank-045"))  # 36 lines, some posted as new: both buttons, and pages
    calls, kinds = oracle_calls(session.task), []
    probes = [
        ("form_open_or_close_tab", {"tabName": R.MATCHED_TAB, "tabAction": "Open"}),
        ("form_click_control", {"controlName": R.MATCHED_GRID, "actionId": "LoadNextPage"}),
        ("form_filter_grid", {"gridName": R.MATCHED_GRID, "gridColumnName": R.MATCH_TYPE, "filterValue": "New"}),
        ("form_filter_grid", {"gridName": R.MATCHED_GRID, "gridColumnName": R.MATCH_TYPE, "filterValue": ""}),
        ("form_open_or_close_tab", {"tabName": R.STATEMENT_TAB, "tabAction": "Open"}),
        ("form_open_or_close_tab", {"tabName": R.TRANSACTION_TAB, "tabAction": "Open"}),  # where the oracle was
    ]

    def agree() -> None:
        copy = pickle.loads(pickle.dumps(session))
        for name, arguments in probes:
            assert session.call(name, arguments).text == copy.call(name, arguments).text

    try:
        name, arguments = next(calls)
        while True:
            response = session.call(name, arguments)
            assert not response.is_error, response.result
            button = arguments.get("controlName") if name == "form_click_control" else None
            if button in (R.MATCH_BUTTON, R.NEW_BUTTON) and session.forms[-1].name == R.WORKSHEET_FORM:
                kinds.append(button)
                agree()
            name, arguments = calls.send(response.text)
    except StopIteration:
        pass
    assert {R.MATCH_BUTTON, R.NEW_BUTTON} <= set(kinds) and session.grade().strict_success
    assert len(kinds) == session.task.line_count  # the oracle clears one line a click
