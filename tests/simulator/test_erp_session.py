"""The simulator through its one entry point, ErpSession.call: happy path, errors, determinism."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from erp_support import new_line, open_itemization

from erp_sim import TOOLS, ErpSession, FaultProfile, get_task, load_task_set, run_oracle
from erp_sim.erp_session import MAX_RESPONSE_CHARS

ENVELOPE_KEYS = ["SessionId", "Result", "Messages", "FormState", "MCPActivityId", "DeepLinks"]


def test_registry_has_the_22_tool_names_of_the_real_server():
    assert sorted(TOOLS) == sorted(
        [
            "form_find_menu_item",
            "form_open_menu_item",
            "form_find_controls",
            "form_set_control_values",
            "form_click_control",
            "form_select_grid_row",
            "form_filter_grid",
            "form_filter_form",
            "form_sort_grid_column",
            "form_open_or_close_tab",
            "form_open_lookup",
            "form_save_form",
            "form_close_form",
            "data_find_entity_type",
            "data_get_entity_metadata",
            "data_find_entities",
            "data_find_entities_sql",
            "data_create_entities",
            "data_update_entities",
            "data_delete_entities",
            "api_find_actions",
            "api_invoke_action",
        ]
    )
    for tool in TOOLS.values():
        assert tool.input_schema["type"] == "object" and tool.description


def test_response_has_the_real_server_shape(session):
    response = session.call("form_open_menu_item", {"name": "TrvExpenses"})
    envelope = json.loads(response.text)
    assert list(envelope)[:3] == ENVELOPE_KEYS[:3] and set(ENVELOPE_KEYS) <= set(envelope)
    state = envelope["FormState"]
    assert {"Name", "Caption", "Company", "Summary", "Form", "Buttons", "Links", "Guidance"} <= set(state)
    grid = state["Form"]["Group"][1]["Children"]["Grid"][0]
    assert grid["Name"] == "ExpenseReportsGrid" and len(grid["Rows"]) == 25 and grid["Pagination"]["HasNextPage"]
    assert response.envelope == envelope and not response.is_error


def test_grid_pages_with_load_next_page(session):
    session.call("form_open_menu_item", {"name": "TrvExpenses"})
    response = session.call("form_click_control", {"controlName": "ExpenseReportsGrid", "actionId": "LoadNextPage"})
    rows = response.form_state["Form"]["Group"][1]["Children"]["Grid"][0]["Rows"]
    assert rows[0]["RowNumber"] == "26"
    bad = session.call("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": "3"})
    assert bad.is_error and "not on the current page" in bad.result and "use actionId LoadPreviousPage" in bad.result
    total = response.form_state["Form"]["Group"][1]["Children"]["Grid"][0]["Pagination"]["TotalRows"]
    missing = session.call("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": str(total + 1)})
    assert missing.is_error and f"has no row {total + 1}; its rows are 1-{total}" in missing.result
    for odd in ("2_6", "+26", "٢٦", "２６", "26.0", "-1"):  # int() reads the first four as 26
        refused = session.call("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": odd})
        assert refused.is_error and f"rowNumber: {odd!r} is not a row number" in refused.result
    assert not session.call("form_select_grid_row", {"gridName": "ExpenseReportsGrid", "rowNumber": "26"}).is_error


def test_unsaved_rows_stay_in_the_form_and_close_warns_then_discards(session):
    open_itemization(session)
    new_line(session, "Room tax", "10")
    assert session.grade().unsaved_rows == 1 and session.grade().saved_lines == 0
    first = session.call("form_close_form", {})
    assert not first.is_error and "not closed" in first.result and first.form_state["Name"] == "TrvItemization"
    second = session.call("form_close_form", {})
    assert "closed" in second.result and second.form_state["Name"] == "TrvExpenseReport"
    assert session.grade().saved_lines == 0


def test_over_itemization_is_allowed_with_a_warning_and_fails(session):
    open_itemization(session)
    new_line(session, "Daily room rate", "99999.00")
    saved = session.call("form_save_form", {})
    assert any(m["Level"] == "Warning" and "exceeds" in m["Text"] for m in saved.envelope["Messages"])
    session.call("form_close_form", {})
    grade = session.grade()
    assert not grade.success and grade.remaining_amount.startswith("-") and grade.itemized_fraction > 1


@pytest.mark.parametrize(
    "name, arguments, code, fragment",
    [
        ("no_such_tool", {}, "NotFound", "Unknown tool"),
        ("form_open_menu_item", {}, "ValidationError", "name: Field required"),
        ("form_open_menu_item", {"name": "TrvExpenses", "bogus": 1}, "ValidationError", "bogus: unexpected argument"),
        ("form_open_menu_item", {"name": 42}, "ValidationError", "name: Input should be a valid string"),
        ("form_open_menu_item", {"name": "x" * 5000}, "ValidationError", "at most 200 characters"),
        ("form_open_menu_item", {"name": "NoSuchItem"}, "NotFound", "does not exist"),
        ("form_open_menu_item", "{not json", "ValidationError", "not valid JSON"),
        ("form_open_menu_item", "[1, 2]", "ValidationError", "must be a JSON object"),
        ("form_click_control", {"controlName": "NewLine"}, "InvalidFormState", "No form is open"),
        (
            "data_find_entities_sql",
            {"sqlQuery": "DELETE FROM expense_line"},
            "ValidationError",
            "only read-only SELECT",
        ),
        ("data_find_entities_sql", {"sqlQuery": "SELECT 1; SELECT 2"}, "ValidationError", "one SELECT"),
        (
            "data_find_entities_sql",
            {"sqlQuery": "ATTACH DATABASE ':memory:' AS x"},
            "ValidationError",
            "only read-only SELECT",
        ),
        (
            "data_find_entities_sql",
            {"sqlQuery": "WITH x AS (SELECT 1) SELECT * FROM pragma_table_info('worker')"},
            "ValidationError",
            "not authorized",
        ),
        ("form_set_control_values", {"controlValues": []}, "ValidationError", "controlValues"),
    ],
)
def test_bad_calls_get_error_responses_in_the_same_shape_and_change_nothing(session, name, arguments, code, fragment):
    before = session.state_hash()
    response = session.call(name, arguments)
    assert response.is_error and response.error_code == code
    assert fragment in response.result, response.result
    envelope = json.loads(response.text)
    assert set(ENVELOPE_KEYS) <= set(envelope) and envelope["Error"]["Code"] == code
    assert envelope["Messages"][-1]["Level"] == "Error"
    assert session.state_hash() == before


@pytest.mark.parametrize(
    "amount, fragment",
    [
        ("NaN", "not a number"),
        (float("inf"), "finite"),
        ("-5", "negative"),
        ("1.234", "two decimal places"),
        ("2000000", "exceeds the limit"),
        ("ten", "not a number"),
        (True, "expected an amount"),
        ("0", "greater than 0.00"),
    ],
)
def test_bad_amounts_name_the_control_and_the_rule(session, amount, fragment):
    open_itemization(session)
    response = new_line(session, "Room tax", amount)
    assert response.is_error and "TrvExpTrans_AmountCurr" in response.result and fragment in response.result
    assert session.grade().saved_lines == 0


def test_set_control_values_is_all_or_nothing(session):
    open_itemization(session)
    response = new_line(session, "Room tax", "-1")
    assert response.is_error
    row = response.form_state["Form"]["Group"][2]["Children"]["Grid"][0]["Rows"][0]["Values"]
    assert row["TrvExpTrans_ExpSubCategory"] == ""


def test_save_is_all_or_nothing_and_names_the_row(session):
    open_itemization(session)
    for values in (
        [("TrvExpTrans_ExpSubCategory", "Room tax"), ("TrvExpTrans_AmountCurr", "10")],
        [("TrvExpTrans_ExpSubCategory", "Room tax")],
    ):
        session.call("form_click_control", {"controlName": "NewLine"})
        session.call("form_set_control_values", {"controlValues": [{"controlName": c, "value": v} for c, v in values]})
    before = session.state_hash()
    response = session.call("form_save_form", {})
    assert response.is_error and "Row 2" in response.result and "TrvExpTrans_AmountCurr" in response.result
    assert session.state_hash() == before and session.grade().unsaved_rows == 2


def _grid(response):
    return response.form_state["Form"]["Group"][2]["Children"]["Grid"][0]


def test_one_save_of_many_rows_writes_what_a_save_per_row_writes_and_selects_the_saved_row(hotel_task):
    """The save inserts its new rows as one batch around the selected row (whose RecId it reads): the same rows
    and RecIds, in the same order, as saving each row on its own; a saved line or a failed batch would differ."""
    amounts = ["10.00", "11.00", "12.00", "13.00", "14.00"]
    batched, one_by_one = ErpSession(hotel_task), ErpSession(hotel_task)
    open_itemization(batched), open_itemization(one_by_one)
    for amount in amounts:
        assert not new_line(batched, "Room tax", amount).is_error
        assert not new_line(one_by_one, "Room tax", amount).is_error
        assert not one_by_one.call("form_save_form", {}).is_error
    selected = batched.call("form_select_grid_row", {"gridName": "ItemizationGrid", "rowNumber": "3"})
    assert not selected.is_error
    response = batched.call("form_save_form", {})
    assert not response.is_error and "5 itemized line(s) saved" in response.result
    assert batched.state_hash() == one_by_one.state_hash()
    rows = _grid(response)["Rows"]
    assert [r["Values"]["TrvExpTrans_AmountCurr"] for r in rows] == amounts
    assert [r.get("IsSelected", False) for r in rows] == [False, False, True, False, False]
    assert all(r["Values"]["TrvExpTrans_LineStatus"] == "Saved" for r in rows)


def test_a_failed_save_keeps_the_selected_new_row_selected(session):
    """The selection moves to the saved line's RecId only once the save holds: after a refused save the
    selected new row is still the one selected (not a RecId the rollback took back)."""
    open_itemization(session)
    assert not new_line(session, "Room tax", "10").is_error
    session.call("form_click_control", {"controlName": "NewLine"})  # no amount: row 2 is refused
    assert not session.call("form_select_grid_row", {"gridName": "ItemizationGrid", "rowNumber": "1"}).is_error
    before = session.state_hash()
    response = session.call("form_save_form", {})
    assert response.is_error and "Row 2" in response.result and session.state_hash() == before
    rows = _grid(response)["Rows"]
    assert [r.get("IsSelected", False) for r in rows] == [True, False]
    assert [r["Values"]["TrvExpTrans_LineStatus"] for r in rows] == ["New", "New"]
    details = response.form_state["Form"]["Group"][3]
    assert details["Name"] == "LineDetailsGroup"


def test_wrong_subcategory_is_refused_with_the_valid_values(session):
    open_itemization(session)
    session.call("form_click_control", {"controlName": "NewLine"})
    response = session.call(
        "form_set_control_values",
        {"controlValues": [{"controlName": "TrvExpTrans_ExpSubCategory", "value": "Hotel tax"}]},
    )
    assert response.is_error and "Room tax" in response.result
    lookup = session.call("form_open_lookup", {"controlName": "TrvExpTrans_ExpSubCategory"})
    assert "Daily room rate" in lookup.envelope["Lookup"]["Values"]


def test_oversized_responses_fail_with_response_too_large(session, monkeypatch):
    import erp_sim.erp_session

    monkeypatch.setattr(erp_sim.erp_session, "MAX_RESPONSE_CHARS", 2000)  # the real 160,000 limit, scaled down
    response = session.call("form_open_menu_item", {"name": "TrvExpenses"})
    assert response.is_error and response.error_code == "ResponseTooLarge" and "2,000" in response.result
    huge_sql = session.call("data_find_entities_sql", {"sqlQuery": "SELECT printf('%.*c', 100000000, 'x')"})
    assert huge_sql.is_error or len(huge_sql.text) < MAX_RESPONSE_CHARS


def test_same_task_and_calls_give_byte_identical_responses(hotel_task):
    texts = []
    for _ in range(2):
        session = ErpSession(hotel_task)
        texts.append([r.text for r in run_oracle(session)] + [session.call("no_such_tool", {}).text])
    assert texts[0] == texts[1]
    other = ErpSession(hotel_task, instance=1).call("form_find_menu_item", {"menuItemFilter": "expense"})
    assert json.loads(other.text)["SessionId"] != json.loads(texts[0][0])["SessionId"]


def test_data_tools_obey_the_form_rules_and_count_in_the_grade(session):
    line_id = session.call(
        "data_find_entities",
        {
            "odataPath": "ExpenseLines",
            "odataQueryOptions": f"$filter=ReportNumber eq '{session.task.report_number}' and LineNumber eq {session.task.line_number} and LineType ne 'ItemizedLine'",
        },
    ).envelope["Data"]["value"][0]["RecId"]
    entities = [
        {"ParentRecId": line_id, "Subcategory": i.subcategory, "TransactionDate": i.date, "Amount": i.amount}
        for i in session.task.receipt_items
    ]
    created = session.call("data_create_entities", {"entitySetName": "ExpenseLines", "entities": entities})
    assert not created.is_error, created.result
    grade = session.grade()
    assert grade.strict_success and grade.collateral == []
    bad = session.call(
        "data_create_entities", {"entitySetName": "ExpenseLines", "entities": [dict(entities[0], Amount="NaN")]}
    )
    assert bad.is_error and session.grade().saved_lines == len(entities)


def test_collateral_changes_are_reported(session):
    session.call(
        "api_invoke_action",
        {"actionName": "SubmitExpenseReport", "parameters": {"ReportNumber": session.task.report_number}},
    )
    other = session.call(
        "data_find_entities", {"odataPath": "ExpenseReports", "odataQueryOptions": "$filter=Status eq 'Draft'&$top=5"}
    )
    drafts = [
        r["ReportNumber"] for r in other.envelope["Data"]["value"] if r["ReportNumber"] != session.task.report_number
    ]
    if drafts:
        report = drafts[0]
        session.call(
            "data_update_entities",
            {"entitySetName": "ExpenseReports", "entities": [{"ReportNumber": report, "Purpose": "Changed"}]},
        )
        assert any("expense_report" in c and "Changed" in c for c in session.grade().collateral)


def test_fault_injection_is_seeded_and_changes_nothing(hotel_task):
    def run(seed):
        session = ErpSession(hotel_task, faults=f"rate=0.3,seed={seed}")
        out = []
        for _ in range(40):
            before = session.state_hash()
            response = session.call("form_find_menu_item", {"menuItemFilter": "expense"})
            out.append(response.error_code)
            if response.is_error:
                assert (
                    response.error_code in {"FormBusy", "SessionLost", "RequestTimeout"}
                    and session.state_hash() == before
                )
        return out

    assert run(1) == run(1) and run(1) != run(2)
    assert 0 < sum(code is not None for code in run(1)) < 40


@pytest.mark.parametrize(
    "spec, expected",
    [
        (None, None),
        (0.25, FaultProfile(rate=0.25)),
        ("0.1", FaultProfile(rate=0.1)),
        (" rate = 0.5 , seed = 3 ", FaultProfile(rate=0.5, seed=3)),
        ("rate=1,kinds=FormBusy|SessionLost", FaultProfile(rate=1.0, kinds=("FormBusy", "SessionLost"))),
    ],
)
def test_fault_profile_reads_its_spellings(spec, expected):
    assert FaultProfile.parse(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "rate=7",
        "nan",
        "rate=inf",
        -0.1,
        "rate=0.1,seed=x",
        "rate=0.1,sead=3",
        "kinds=Gremlin",
        "rate=0.2,kinds=",
        "",
        True,
        [0.1],
        "0.1,0.2",
    ],
)
def test_fault_profile_refuses_bad_specs_with_a_value_error(spec):
    with pytest.raises(ValueError, match="fault|Fault"):
        FaultProfile.parse(spec)


def test_receipt_option_puts_the_items_in_the_instruction(hotel_task):
    assert hotel_task.receipt_items[0].description not in hotel_task.instruction()
    assert hotel_task.receipt_items[0].description in hotel_task.instruction(include_receipt=True)


@pytest.mark.parametrize("task_set", ["hotel_50", "expense_types"])
def test_oracle_solves_every_fixture_task_through_the_tools(task_set):
    for task in load_task_set(task_set):
        session = ErpSession(task)
        run_oracle(session)
        grade = session.grade()
        assert grade.success and grade.strict_success and grade.collateral == [], (task.task_id, grade)


def test_task_lookup_by_id_and_index_with_clear_errors():
    assert get_task("hotel_50", 7).task_id == "hotel-007" == get_task("hotel_50", "hotel-007").task_id
    assert {t.expense_type for t in load_task_set("Meals")} == {"Meals"}
    with pytest.raises(KeyError, match="Unknown task set"):
        load_task_set("nope")
    with pytest.raises(KeyError, match="out of range"):
        get_task("hotel_50", 50)
    for not_a_task in (True, 1.0, None):
        with pytest.raises(KeyError, match="task id .* or a 0-based index"):
            get_task("hotel_50", not_a_task)
    # what str.isdigit calls a digit but int() refuses, and an index int() refuses for its length (MCP headers)
    for odd, error in (
        ("²", "No task '²'"),
        ("٣", "No task '٣'"),
        ("9" * 5000, "Task index 9{80}\\.\\.\\. out of range"),
    ):
        with pytest.raises(KeyError, match=error):
            get_task("hotel_50", odd)


def test_a_simulator_bug_is_logged_with_its_traceback_and_answered_as_an_internal_error(session, monkeypatch, caplog):
    import dataclasses

    import erp_sim.erp_session

    def broken(erp, args):
        raise ZeroDivisionError("a bug deep in a tool")

    tool = TOOLS["form_find_menu_item"]
    monkeypatch.setitem(erp_sim.erp_session.TOOLS, tool.name, dataclasses.replace(tool, fn=broken))
    with caplog.at_level("ERROR", logger="erp_sim.erp_session"):
        response = session.call("form_find_menu_item", {"menuItemFilter": "expense"})
    assert response.is_error and response.error_code == "InternalError"
    assert "ZeroDivisionError" in response.result and "a bug deep" not in response.text  # the agent sees the type only
    [record] = caplog.records
    assert "form_find_menu_item" in record.getMessage() and session.session_id in record.getMessage()
    assert record.exc_info and "a bug deep in a tool" in caplog.text and "in broken" in caplog.text  # the traceback
    assert not session.call("form_open_menu_item", {"name": "TrvExpenses"}).is_error  # the episode goes on


def test_an_amount_filter_finds_the_amount_as_typed_and_as_shown():
    """The instruction writes 1053.66, the grid shows 1,053.66: both find the line (and a text column is unchanged)."""
    session = ErpSession(get_task("hotel_50", 7))
    open_itemization(session)
    session.call("form_close_form", {})
    amount = session.task.header_amount
    shown = f"{Decimal(amount):,.2f}"
    assert "," in shown  # the case at stake
    for value in (amount, shown):
        result = session.call(
            "form_filter_grid",
            {"gridName": "ExpenseLinesGrid", "gridColumnName": "TrvExpTrans_AmountCurr", "filterValue": value},
        )
        assert "1 matching row(s)" in result.result, (value, result.result)


@pytest.mark.parametrize(
    "tool, arguments, field",
    [
        ("form_find_menu_item", {"menuItemFilter": "exp", "topHitCount": True}, "topHitCount"),
        ("form_find_menu_item", {"menuItemFilter": "exp", "topHitCount": "2"}, "topHitCount"),
        ("data_delete_entities", {"entitySetName": "ExpenseLines", "keys": [True]}, "keys.0"),
        ("data_delete_entities", {"entitySetName": "ExpenseLines", "keys": [231.0]}, "keys.0"),
        (
            "form_sort_grid_column",
            {"gridName": "ExpenseReportsGrid", "gridColumnName": "x", "isDescending": "yes"},
            "isDescending",
        ),
    ],
)
def test_an_argument_of_another_json_type_than_its_schema_is_refused_not_coerced(session, tool, arguments, field):
    """keys: [true] once reached the ERP as RecId 1 (pydantic's lax mode); the schema says integer."""

    def lines():
        return session.call("data_find_entities", {"odataPath": "ExpenseLines"}).envelope["Data"]

    before = lines()
    result = session.call(tool, arguments)
    assert result.is_error and f"Invalid arguments for {tool}: {field}:" in result.result
    assert lines() == before
