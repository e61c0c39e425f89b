"""The OData-like data layer: queries, the $filter language, writes under the ledger's rules, read-only SQL."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from urllib.parse import quote

import pytest

from erp_sim import database, odata
from erp_sim.database.sql_sandbox import LIMITS, SQL_CELL_CHARS, SQL_OUTPUT_CHARS, run_sql
from erp_sim.errors import BusinessRuleError, NotFoundError, ValidationError
from erp_sim.odata.query import DEFAULT_TOP
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.entity_sets import CATALOG


def scalar(db, sql, *params):
    return db.execute(sql, params).fetchone()[0]


@pytest.fixture
def target(db, task) -> int:
    """RecId of the task's line to itemize (a Draft Hotel line, not yet itemized)."""
    return scalar(
        db,
        "SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id "
        "WHERE r.report_number = ? AND l.line_number = ? AND l.parent_line_id IS NULL",
        task.report_number,
        task.line_number,
    )


def line_of(db, status: str, line_type: str, itemize: bool = True) -> int:
    categories = "('Hotel', 'CarRental', 'Airfare', 'Meals', 'Conference')"
    return scalar(
        db,
        f"SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id "
        f"WHERE r.status = ? AND l.line_type = ? AND l.category_id {'' if itemize else 'NOT '}IN {categories} "
        f"ORDER BY l.id LIMIT 1",
        status,
        line_type,
    )


def find(db, path, options=None):
    return odata.find_entities(CATALOG, db, path, options)


def item(parent: int, amount="100.00", subcategory="Daily room rate", **extra):
    return {
        "ParentRecId": parent,
        "Subcategory": subcategory,
        "TransactionDate": "2026-08-12",
        "Amount": amount,
        **extra,
    }


# --- entity sets and metadata ------------------------------------------------------------------
def test_find_entity_sets_matches_all_words():
    names = [e["Name"] for e in odata.find_entity_sets(CATALOG, "expense line")]
    assert names == ["ExpenseLines"]
    assert {e["Name"] for e in odata.find_entity_sets(CATALOG, "receipt")} == {"ExpenseReceipts", "ExpenseReceiptItems"}
    assert len(odata.find_entity_sets(CATALOG, "")) == 7
    assert odata.find_entity_sets(CATALOG, "nothing-like-this") == []
    writable = {e["Name"] for e in odata.find_entity_sets(CATALOG, "") if not e["IsReadOnly"]}
    assert writable == {"ExpenseLines", "ExpenseReports"}


def test_metadata_is_case_insensitive_and_describes_every_property():
    meta = odata.entity_metadata(CATALOG, "expenselines")
    assert meta["Name"] == "ExpenseLines" and meta["Key"] == "RecId"
    props = {p["Name"]: p for p in meta["Properties"]}
    assert list(props) == [
        "RecId",
        "ReportNumber",
        "LineNumber",
        "Category",
        "Merchant",
        "TransactionDate",
        "Amount",
        "Currency",
        "LineType",
        "ParentRecId",
        "Subcategory",
        "Description",
    ]
    assert props["Amount"]["Type"] == "Edm.Decimal" and not props["Amount"]["IsReadOnly"]
    assert props["TransactionDate"]["Type"] == "Edm.Date"
    assert props["RecId"]["IsReadOnly"] and props["Category"]["IsReadOnly"]
    assert all(p["Description"] for p in meta["Properties"])
    assert any("ParentRecId" in rule for rule in meta["Rules"])
    assert odata.entity_metadata(CATALOG, "ExpenseCategories")["Properties"][-1]["Type"] == "Edm.Boolean"


def test_metadata_of_unknown_set_lists_known_sets():
    with pytest.raises(NotFoundError, match="ExpenseLines, ExpenseCategories"):
        odata.entity_metadata(CATALOG, "Invoices")


@pytest.mark.parametrize("name", list(CATALOG.entity_sets))
def test_every_entity_set_can_be_queried(db, name):
    result = find(db, name, "$top=2&$count=true")
    assert (
        result["EntitySet"] == name and 0 < len(result["value"]) <= 2 and result["@odata.count"] >= len(result["value"])
    )
    assert list(result["value"][0]) == [p["Name"] for p in odata.entity_metadata(CATALOG, name)["Properties"]]


# --- querying ------------------------------------------------------------------------------------
def test_key_lookup(db, target, task):
    for path in (f"ExpenseLines({target})", f"expenselines(RecId={target})", f"/data/ExpenseLines({target})"):
        [record] = find(db, path)["value"]
        assert record["RecId"] == target and record["Amount"] == task.header_amount
        assert record["ReportNumber"] == task.report_number and record["ParentRecId"] is None


def test_key_lookup_errors(db):
    with pytest.raises(NotFoundError, match="no record with RecId 999999"):
        find(db, "ExpenseLines(999999)")
    with pytest.raises(ValidationError, match="not a RecId"):
        find(db, "ExpenseLines('abc')")
    with pytest.raises(ValidationError, match="not an entity set path"):
        find(db, "?$filter=RecId eq 1")
    with pytest.raises(NotFoundError, match="Entity set 'Lines' does not exist"):
        find(db, "Lines")


def test_filter_on_strings_is_case_insensitive_and_ampersand_safe(db, task):
    assert "&" in task.merchant
    merchant = task.merchant.lower().replace("'", "''")
    rows = find(
        db, "ExpenseLines", f"$filter=reportnumber eq '{task.report_number.lower()}' and Merchant eq '{merchant}'"
    )["value"]
    assert [r["Merchant"] for r in rows] == [task.merchant]


def test_filter_money_compares_numerically(db):
    rows = find(db, "ExpenseLines", "$filter=Amount ge 1000 and Amount lt 1500&$top=200")["value"]
    expected = scalar(
        db, "SELECT COUNT(*) FROM expense_line WHERE CAST(amount AS REAL) >= 1000 AND CAST(amount AS REAL) < 1500"
    )
    assert len(rows) == expected > 0
    assert all(Decimal("1000") <= Decimal(r["Amount"]) < Decimal("1500") for r in rows)
    # the same figure as a number, as a quoted number and with trailing zeros
    amount = rows[0]["Amount"]
    for literal in (amount, f"'{amount}'", amount + "0"):
        hits = find(db, "ExpenseLines", f"$filter=Amount eq {literal}")["value"]
        assert rows[0]["RecId"] in [h["RecId"] for h in hits]


def test_filter_money_rejects_fractions_of_cents_and_text(db):
    with pytest.raises(ValidationError, match="two decimal places"):
        find(db, "ExpenseLines", "$filter=Amount gt 10.005")
    with pytest.raises(ValidationError, match="compare it with a number"):
        find(db, "ExpenseLines", "$filter=Amount eq 'ten'")


def test_filter_null_ne_and_not(db, target):
    itemized = find(db, "ExpenseLines", "$filter=ParentRecId ne null&$count=true&$top=0")
    headers = find(db, "ExpenseLines", "$filter=ParentRecId eq null&$count=true&$top=0")
    total = scalar(db, "SELECT COUNT(*) FROM expense_line")
    assert itemized["@odata.count"] + headers["@odata.count"] == total and itemized["value"] == []
    # ne keeps null rows (OData semantics); not(...) is the complement
    not_room = find(db, "ExpenseLines", "$filter=Subcategory ne 'Room tax'&$count=true&$top=0")["@odata.count"]
    room = find(db, "ExpenseLines", "$filter=Subcategory eq 'Room tax'&$count=true&$top=0")["@odata.count"]
    assert not_room + room == total
    negated = find(db, "ExpenseLines", "$filter=not (Subcategory eq 'Room tax')&$count=true&$top=0")["@odata.count"]
    assert negated == not_room


def test_filter_functions_or_parentheses_and_in(db):
    text = "(contains(Merchant,'INN') or startswith(Category,'car')) and LineType eq 'Default'"
    rows = find(db, "ExpenseLines", f"$filter={text}&$top=200")["value"]
    assert rows and all(
        ("inn" in r["Merchant"].lower() or r["Category"] == "CarRental") and r["LineType"] == "Default" for r in rows
    )
    ends = find(db, "ExpenseSubcategories", "$filter=endswith(Name,'tax') and CategoryId eq 'Hotel'")["value"]
    assert {r["Name"] for r in ends} == {"Room tax", "City tax"}
    not_contains = find(
        db, "ExpenseSubcategories", "$filter=contains(tolower(Name),'tax') eq false and CategoryId in ('Hotel')"
    )
    assert "Room tax" not in {r["Name"] for r in not_contains["value"]} and len(not_contains["value"]) == 9
    quoted = find(db, "ExpenseSubcategories", "$filter=contains(Name, '%') or contains(Name, '_')")["value"]
    assert quoted == []  # LIKE wildcards are escaped


def test_filter_dates_booleans_and_flipped_operands(db):
    dated = find(
        db, "ExpenseLines", "$filter=TransactionDate ge 2026-08-12 and TransactionDate le '8/14/2026'&$top=200"
    )["value"]
    assert dated and all("2026-08-12" <= r["TransactionDate"] <= "2026-08-14" for r in dated)
    itemizable = find(db, "ExpenseCategories", "$filter=Itemize")["value"]
    assert {r["CategoryId"] for r in itemizable} == {"Hotel", "CarRental", "Airfare", "Meals", "Conference"}
    assert all(r["Itemize"] is True for r in itemizable)
    assert find(db, "ExpenseCategories", "$filter=Itemize eq false&$count=true")["@odata.count"] == 3
    flipped = find(db, "ExpenseLines", "$filter=1000 lt Amount&$count=true&$top=0")["@odata.count"]
    assert flipped == find(db, "ExpenseLines", "$filter=Amount gt 1000&$count=true&$top=0")["@odata.count"]


def test_filter_string_literal_quote_escaping(db):
    ledger_id = line_of(db, "Draft", "Default", itemize=False)
    odata.update_entities(CATALOG, db, "ExpenseLines", [{"RecId": ledger_id, "Merchant": "O'Brien's Cabs"}])
    [row] = find(db, "ExpenseLines", "$filter=Merchant eq 'O''Brien''s Cabs'")["value"]
    assert row["RecId"] == ledger_id


@pytest.mark.parametrize(
    "text, message",
    [
        ("Amount gt", "expected a value .* but the filter ended"),
        ("Amount equals 5", r"comparison operator \(eq, ne, gt, ge, lt, le\) at character 8, found 'equals'"),
        ("Amt eq 5", "ExpenseLines has no property 'Amt'. Properties: RecId, ReportNumber"),
        ("Merchant eq 'abc", "unterminated string literal starting at character 13"),
        ('Merchant eq "abc"', "single quotes"),
        ("Merchant eq abc", "comparing two properties is not supported"),
        ("(Amount gt 5", r"expected '\)' but the filter ended"),
        ("Amount gt 5 Amount lt 9", "expected 'and', 'or' or the end of the filter at character 13"),
        ("ReportNumber eq 123", "quote the value"),
        ("TransactionDate eq 'someday'", "not a valid date"),
        ("Amount gt null", "null can only be compared with eq or ne"),
        ("LineNumber eq true", "true/false only compare with Boolean"),
        ("Itemize eq 1", None),
        ("contains(Merchant, 5)", "takes a quoted string"),
        ("Amount gt 5 # 1", "unexpected character '#' at character 13"),
        ("", "the filter is empty"),
        ("(" * 60 + "RecId eq 1" + ")" * 60, "nests deeper than"),
    ],
)
def test_filter_syntax_errors_name_the_problem(db, text, message):
    entity = "ExpenseCategories" if text.startswith("Itemize") else "ExpenseLines"
    with pytest.raises(ValidationError, match=message or "compare it with true or false"):
        find(db, entity, f"$filter={text}")


def test_filter_values_never_reach_the_sql_text(db):
    before = database.state_hash(db)
    assert find(db, "ExpenseLines", "$filter=Merchant eq 'x'') or 1=1; DROP TABLE expense_line; --'")["value"] == []
    assert database.state_hash(db) == before


def test_select_orderby_top_skip_count(db):
    result = find(db, "ExpenseLines?$select=Amount,recid&$orderby=Amount desc,RecId", "$top=5&$count=true")
    amounts = [Decimal(r["Amount"]) for r in result["value"]]
    assert list(result["value"][0]) == ["Amount", "RecId"]
    assert amounts == sorted(amounts, reverse=True) and len(amounts) == 5
    assert result["@odata.count"] == scalar(db, "SELECT COUNT(*) FROM expense_line") and result["NextSkip"] == 5
    page2 = find(db, "ExpenseLines", "$select=RecId&$orderby=Amount desc&$top=5&$skip=5")["value"]
    assert not {r["RecId"] for r in page2} & {r["RecId"] for r in result["value"]}
    default = find(db, "ExpenseLines", None)
    assert len(default["value"]) == DEFAULT_TOP and [r["RecId"] for r in default["value"]] == list(range(1, 51))
    last = find(db, "ExpenseLines", f"$skip={result['@odata.count'] - 2}")
    assert len(last["value"]) == 2 and "NextSkip" not in last
    ascending = find(db, "ExpenseReports", "$orderby=ReportNumber asc&$select=ReportNumber&$top=200")["value"]
    numbers = [r["ReportNumber"] for r in ascending]
    assert numbers == sorted(numbers)


@pytest.mark.parametrize(
    "options, message",
    [
        ("$select=Amount,Nope", "no property 'Nope'"),
        ("$select=", "comma-separated property names"),
        ("$orderby=Amount sideways", "'Property \\[asc\\|desc\\]'"),
        ("$orderby=Nope", "no property 'Nope'"),
        ("$top=201", "at most 200"),
        ("$top=-1", "whole number"),
        ("$skip=abc", "whole number"),
        ("$count=yes", "true or false"),
        ("$expand=Report", "unknown query option '\\$expand'. Supported: \\$filter"),
        ("$top", "has no value"),
        ("$top=1&$top=2", "given twice"),
    ],
)
def test_query_option_errors(db, options, message):
    with pytest.raises(ValidationError, match=message):
        find(db, "ExpenseLines", options)


def test_option_in_path_and_options_is_refused(db):
    with pytest.raises(ValidationError, match="both in odataPath and in odataQueryOptions"):
        find(db, "ExpenseLines?$top=1", "$top=2")


def test_options_without_dollar_and_url_encoded(db, task):
    plain = find(db, "ExpenseLines", f"filter=ReportNumber eq '{task.report_number}'&top=3")
    encoded = find(db, "ExpenseLines", f"?$filter=ReportNumber%20eq%20%27{task.report_number}%27&$top=3")
    assert plain == encoded and len(plain["value"]) == 3


# --- create -----------------------------------------------------------------------------------------
def test_create_itemized_lines(db, target, task):
    created = odata.create_entities(
        CATALOG,
        db,
        "ExpenseLines",
        [
            item(target, "151.48", "daily ROOM rate"),
            item(target, 21.96, "Room tax", Description="Hotel tax", LineType="ItemizedLine"),
        ],
    )
    assert [c["Subcategory"] for c in created] == ["Daily room rate", "Room tax"]
    assert [c["Amount"] for c in created] == ["151.48", "21.96"]
    assert all(
        c["ParentRecId"] == target
        and c["LineType"] == "ItemizedLine"
        and c["Merchant"] == task.merchant
        and c["ReportNumber"] == task.report_number
        for c in created
    )
    assert created == find(db, "ExpenseLines", f"$filter=ParentRecId eq {target}")["value"]
    assert find(db, f"ExpenseLines({target})")["value"][0]["LineType"] == "ItemizedHeader"
    summary = ledger.itemization_summary(db, target)
    assert summary.remaining == Decimal(task.header_amount) - Decimal("173.44")


def test_create_allows_over_itemization(db, target, task):
    odata.create_entities(CATALOG, db, "ExpenseLines", [item(target, task.header_amount), item(target, "10.00")])
    assert ledger.itemization_summary(db, target).remaining == Decimal("-10.00")


def test_invalid_row_in_a_batch_writes_nothing(db, target):
    before = database.state_hash(db)
    with pytest.raises(
        ValidationError, match=r"entities\[2\].*Subcategory.*Valid values: Daily room rate.*Nothing was written"
    ):
        odata.create_entities(
            CATALOG, db, "ExpenseLines", [item(target), item(target), item(target, subcategory="Spa")]
        )
    assert database.state_hash(db) == before


@pytest.mark.parametrize(
    "entity, error, message",
    [
        ({"ParentRecId": None}, ValidationError, "ParentRecId must be filled in"),
        ({"Amount": "abc"}, ValidationError, "Amount: 'abc' is not a number"),
        ({"Amount": "1.234"}, ValidationError, "more than two decimal places"),
        ({"Amount": -5}, ValidationError, "must be greater than 0.00"),
        ({"Amount": 0}, ValidationError, "greater than 0.00"),
        ({"Amount": float("nan")}, ValidationError, "finite"),
        ({"Amount": 5_000_000}, ValidationError, "exceeds the limit"),
        ({"TransactionDate": "yesterday"}, ValidationError, "TransactionDate: 'yesterday' is not a valid date"),
        ({"Subcategory": None}, ValidationError, "Subcategory must be filled in"),
        ({"Description": "x" * 300}, ValidationError, "Description: text is 300 characters"),
        ({"LineType": "Default"}, ValidationError, "LineType must be ItemizedLine"),
        (
            {"Colour": "red", "Size": 2},
            ValidationError,
            "Unknown properties Colour, Size of ExpenseLines.*takes: ParentRecId",
        ),
        ({"Merchant": "Other"}, ValidationError, "Merchant cannot be set here"),
        ({"ParentRecId": "abc"}, ValidationError, "ParentRecId: expected a RecId"),
        ({"ParentRecId": True}, ValidationError, "ParentRecId: expected a RecId"),
        ({"ParentRecId": 999999}, NotFoundError, "RecId 999999 does not exist"),
        ({"Amount": 1, "amount": 2}, ValidationError, "given twice"),
    ],
)
def test_create_errors(db, target, entity, error, message):
    before = database.state_hash(db)
    with pytest.raises(error, match=message):
        odata.create_entities(CATALOG, db, "ExpenseLines", [{**item(target), **entity}])
    assert database.state_hash(db) == before


def test_create_refuses_submitted_reports_non_itemizable_categories_and_itemized_parents(db):
    before = database.state_hash(db)
    with pytest.raises(BusinessRuleError, match="only Draft reports can be changed"):
        odata.create_entities(CATALOG, db, "ExpenseLines", [item(line_of(db, "Submitted", "ItemizedHeader"))])
    taxi = line_of(db, "Draft", "Default", itemize=False)
    with pytest.raises(BusinessRuleError, match="does not support itemization"):
        odata.create_entities(CATALOG, db, "ExpenseLines", [item(taxi)])
    with pytest.raises(BusinessRuleError, match="itself an itemized line"):
        odata.create_entities(CATALOG, db, "ExpenseLines", [item(line_of(db, "Draft", "ItemizedLine"))])
    assert database.state_hash(db) == before


@pytest.mark.parametrize("name", ["ExpenseReports", "ExpenseCategories", "Workers"])
def test_create_in_other_sets_is_refused(db, name):
    with pytest.raises(BusinessRuleError, match="Only itemized lines can be created"):
        odata.create_entities(CATALOG, db, name, [{"Purpose": "x"}])


def test_create_batch_shape_errors(db, target):
    with pytest.raises(ValidationError, match="non-empty list"):
        odata.create_entities(CATALOG, db, "ExpenseLines", [])
    with pytest.raises(ValidationError, match="Expected an object"):
        odata.create_entities(CATALOG, db, "ExpenseLines", ["RecId=1"])
    with pytest.raises(NotFoundError):
        odata.create_entities(CATALOG, db, "Nope", [item(target)])


# --- update -----------------------------------------------------------------------------------------
def test_update_itemized_line_fills_missing_fields_from_the_stored_row(db, target):
    [created] = odata.create_entities(
        CATALOG, db, "ExpenseLines", [item(target, "50.00", "Parking", Description="garage")]
    )
    [updated] = odata.update_entities(CATALOG, db, "ExpenseLines", [{"RecId": created["RecId"], "Amount": "45.5"}])
    assert updated == {**created, "Amount": "45.50"}
    [updated] = odata.update_entities(
        CATALOG,
        db,
        "ExpenseLines",
        [{"recid": str(created["RecId"]), "subcategory": "internet", "TransactionDate": "8/13/2026"}],
    )
    assert (updated["Subcategory"], updated["TransactionDate"], updated["Description"]) == (
        "Internet",
        "2026-08-13",
        "garage",
    )
    with pytest.raises(ValidationError, match="Merchant: line RecId .* is an itemized line"):
        odata.update_entities(CATALOG, db, "ExpenseLines", [{"RecId": created["RecId"], "Merchant": "x"}])


def test_update_header_and_default_lines(db, target):
    taxi = line_of(db, "Draft", "Default", itemize=False)
    changes = {"RecId": taxi, "Merchant": "Yellow Cab", "Amount": 12, "Description": "airport"}
    [updated] = odata.update_entities(CATALOG, db, "ExpenseLines", [changes])
    assert (updated["Merchant"], updated["Amount"], updated["Description"]) == ("Yellow Cab", "12.00", "airport")
    with pytest.raises(ValidationError, match="Subcategory: line RecId .* is a Default line"):
        odata.update_entities(CATALOG, db, "ExpenseLines", [{"RecId": taxi, "Subcategory": "Room tax"}])
    odata.create_entities(CATALOG, db, "ExpenseLines", [item(target)])
    with pytest.raises(BusinessRuleError, match="amount of an itemized expense cannot be changed"):
        odata.update_entities(CATALOG, db, "ExpenseLines", [{"RecId": target, "Amount": 1}])
    [header] = odata.update_entities(CATALOG, db, "ExpenseLines", [{"RecId": target, "Description": "Trip"}])
    assert header["Description"] == "Trip" and header["LineType"] == "ItemizedHeader"


def test_update_batch_is_all_or_nothing(db, target):
    taxi = line_of(db, "Draft", "Default", itemize=False)
    before = database.state_hash(db)
    with pytest.raises(BusinessRuleError, match=r"entities\[1\].*only Draft reports"):
        odata.update_entities(
            CATALOG,
            db,
            "ExpenseLines",
            [{"RecId": taxi, "Merchant": "Changed"}, {"RecId": line_of(db, "Submitted", "ItemizedLine"), "Amount": 1}],
        )
    assert database.state_hash(db) == before


@pytest.mark.parametrize(
    "entity, error, message",
    [
        ({"Merchant": "x"}, ValidationError, "RecId must be given"),
        ({"RecId": 999999, "Merchant": "x"}, NotFoundError, "RecId 999999 does not exist"),
        ({"RecId": 1.5, "Merchant": "x"}, ValidationError, "RecId: expected a RecId"),
        ({"RecId": "TARGET"}, ValidationError, "Nothing to update"),
        ({"RecId": "TARGET", "Category": "Taxi"}, ValidationError, "Category cannot be set here"),
        ({"RecId": "TARGET", "Color": "red"}, ValidationError, "Unknown property Color"),
        (
            {"RecId": "TARGET", "Amount": "1.001"},
            ValidationError,
            "Amount: amount 1.001 has more than two decimal places",
        ),
    ],
)
def test_update_errors(db, target, entity, error, message):
    entity = {k: (target if v == "TARGET" else v) for k, v in entity.items()}
    before = database.state_hash(db)
    with pytest.raises(error, match=message):
        odata.update_entities(CATALOG, db, "ExpenseLines", [entity])
    assert database.state_hash(db) == before


def test_update_report_purpose(db, task):
    [report] = odata.update_entities(
        CATALOG, db, "ExpenseReports", [{"ReportNumber": task.report_number, "Purpose": "Customer visit Q3"}]
    )
    assert report["Purpose"] == "Customer visit Q3" and report["Status"] == "Draft"
    [again] = odata.update_entities(CATALOG, db, "ExpenseReports", [{"RecId": report["RecId"], "Purpose": "Audit"}])
    assert again["Purpose"] == "Audit"
    approved = scalar(db, "SELECT id FROM expense_report WHERE status = 'Approved' ORDER BY id LIMIT 1")
    with pytest.raises(BusinessRuleError, match="only Draft reports"):
        odata.update_entities(CATALOG, db, "ExpenseReports", [{"RecId": approved, "Purpose": "x"}])
    with pytest.raises(ValidationError, match="Status cannot be set here"):
        odata.update_entities(CATALOG, db, "ExpenseReports", [{"RecId": report["RecId"], "Status": "Approved"}])
    with pytest.raises(ValidationError, match="only Purpose can be changed"):
        odata.update_entities(CATALOG, db, "ExpenseReports", [{"RecId": report["RecId"]}])
    with pytest.raises(ValidationError, match="not the ReportNumber given"):
        odata.update_entities(
            CATALOG, db, "ExpenseReports", [{"RecId": approved, "ReportNumber": task.report_number, "Purpose": "x"}]
        )


def test_update_of_read_only_set_is_refused(db):
    with pytest.raises(BusinessRuleError, match="ExpenseCategories is read-only"):
        odata.update_entities(CATALOG, db, "ExpenseCategories", [{"RecId": 1, "Itemize": False}])


# --- delete -----------------------------------------------------------------------------------------
def test_delete_itemized_lines(db, target):
    created = odata.create_entities(CATALOG, db, "ExpenseLines", [item(target), item(target, "20.00")])
    odata.delete_entities(CATALOG, db, "ExpenseLines", [created[0]["RecId"]])
    assert find(db, f"ExpenseLines({target})")["value"][0]["LineType"] == "ItemizedHeader"
    odata.delete_entities(CATALOG, db, "ExpenseLines", [created[1]["RecId"]])
    assert find(db, f"ExpenseLines({target})")["value"][0]["LineType"] == "Default"
    assert ledger.itemized_lines(db, target) == []


def test_delete_errors_leave_nothing_changed(db, target):
    [created] = odata.create_entities(CATALOG, db, "ExpenseLines", [item(target)])
    before = database.state_hash(db)
    cases = [
        ([created["RecId"], target], BusinessRuleError, r"keys\[1\]: Line RecId .* is not an itemized line"),
        ([created["RecId"], 999999], NotFoundError, "does not exist"),
        ([line_of(db, "Submitted", "ItemizedLine")], BusinessRuleError, "only Draft reports"),
        ([created["RecId"], created["RecId"]], ValidationError, "listed more than once"),
        (["x"], ValidationError, r"keys\[0\]: expected a RecId"),
        ([], ValidationError, "non-empty list"),
    ]
    for keys, error, message in cases:
        with pytest.raises(error, match=message):
            odata.delete_entities(CATALOG, db, "ExpenseLines", keys)
        assert database.state_hash(db) == before
    with pytest.raises(BusinessRuleError, match="cannot be deleted"):
        odata.delete_entities(CATALOG, db, "ExpenseReports", [1])


# --- read-only SQL ----------------------------------------------------------------------------------
def test_sql_select(db, task):
    result = run_sql(
        db, f"SELECT report_number, status FROM expense_report WHERE report_number = '{task.report_number}';"
    )
    assert result == {
        "Columns": ["report_number", "status"],
        "Rows": [[task.report_number, "Draft"]],
        "Truncated": False,
    }
    many = run_sql(db, "SELECT id FROM expense_line")
    assert len(many["Rows"]) == LIMITS.max_rows and many["Truncated"] and "Note" in many


@pytest.mark.parametrize(
    "sql, message",
    [
        ("ATTACH DATABASE ':memory:' AS other", "only read-only SELECT"),
        ("PRAGMA table_info(expense_line)", "only read-only SELECT"),
        ("SELECT * FROM pragma_table_info('expense_line')", "not authorized"),
        ("INSERT INTO worker (id, personnel_number, name, email) VALUES (99, '1', 'x', 'y')", "only read-only SELECT"),
        ("WITH x AS (SELECT 1) DELETE FROM expense_line", "not authorized"),
        ("SELECT 1; DELETE FROM expense_line", "exactly one SELECT"),
        ("SELECT 1; SELECT 2", "exactly one SELECT"),
        ("SELECT * FROM nowhere", "no such table"),
        ("", "empty query"),
        ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", "not authorized"),
        ("SELECT count(*) FROM expense_line a, expense_line b, expense_line c", "interrupted"),
        ("SELECT replace(printf('%.*c', 15000, 'x'), 'x', 'xx')", "too big"),
        ("SELECT " + ", ".join(["1"] * 150), "too many columns"),
    ],
)
def test_sql_guard(db, sql, message):
    before = database.state_hash(db)
    with pytest.raises(ValidationError, match=message):
        run_sql(db, sql)
    assert database.state_hash(db) == before
    assert run_sql(db, "SELECT COUNT(*) FROM worker")["Rows"] == [[1]]  # the connection still works


def test_sql_huge_output_is_capped(db):
    wide = run_sql(db, "SELECT printf('%.*c', 5000, 'x') AS big, id FROM expense_line")
    assert all(len(row[0]) <= SQL_CELL_CHARS + 10 for row in wide["Rows"])
    assert sum(len(str(c)) for row in wide["Rows"] for c in row) <= SQL_OUTPUT_CHARS + 5000
    assert wide["Truncated"] and "cut" in wide["Note"]
    # a value over SQLite's length limit is an error, never a memory bomb
    with pytest.raises(ValidationError, match="too big"):
        run_sql(db, "SELECT printf('%.*c', 50000, 'x')")
    blob = run_sql(db, "SELECT x'00ff' AS b")
    assert blob["Rows"] == [["x'00ff'"]]
    # the length limit is restored for the ERP's own statements
    assert db.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) > 10_000_000


@pytest.mark.parametrize("text", ["not " * 60 + "RecId eq 1", "tolower(" * 60 + "Merchant" + ")" * 60 + " eq 'x'"])
def test_filter_nesting_is_bounded(db, text):
    with pytest.raises(ValidationError, match="nests deeper than"):
        find(db, "ExpenseLines", f"$filter={text}")


@pytest.mark.parametrize("literal", ["1e999999", "99999999999999999999", "-1e20"])
def test_filter_numbers_out_of_range(db, literal):
    for prop in ("Amount", "RecId"):
        with pytest.raises(ValidationError, match="out of range"):
            find(db, "ExpenseLines", f"$filter={prop} gt {literal}")


def test_encoded_ampersand_stays_inside_the_value(db, task):
    assert "&" in task.merchant
    [row] = find(db, "ExpenseLines", "$filter=" + quote(f"Merchant eq '{task.merchant}'", safe=""))["value"]
    assert row["Merchant"] == task.merchant


def test_top_zero_with_count_has_no_next_page(db):
    result = find(db, "ExpenseLines", "$top=0&$count=true")
    assert result["value"] == [] and "NextSkip" not in result and result["@odata.count"] > 0
