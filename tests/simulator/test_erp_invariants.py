"""Property tests: random and adversarial call sequences never raise and keep the books straight.

Invariant after every call: for every itemizable line, remaining == header amount - sum(saved
itemized lines), recomputed from the raw tables, and equal to what the grade reports.
"""

from __future__ import annotations

from decimal import Decimal

from erp_support import form_calls, one_to_three, oracle_prefix, tool_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from erp_sim import ErpSession, get_task
from erp_sim.workflows.itemization.task import as_task

TASK = as_task(get_task("hotel_50", "hotel-003"))
CONTROLS = [
    "TrvExpTrans_ExpSubCategory",
    "TrvExpTrans_TransDate",
    "TrvExpTrans_AmountCurr",
    "TrvExpTrans_Description",
    "TrvExpTable_Txt",
    "TrvExpTrans_MerchantId",
    "QuickFilter",
    "ItemizationRemaining",
    "NoSuchControl",
]
BUTTONS = [
    "NewLine",
    "DeleteLine",
    "ViewReceipt",
    "Itemize",
    "EditReport",
    "SubmitReport",
    "ExpenseReportsGrid",
    "Nope",
]
GRIDS = ["ExpenseReportsGrid", "ExpenseLinesGrid", "ItemizationGrid", "ReceiptItemsGrid", "Nope"]

weird_text = st.one_of(
    st.text(max_size=30),
    st.just("x" * 3000),
    st.sampled_from(["", "Room tax", "Daily room rate", "2026-02-30", "1/2/2026"]),
)
amounts = st.one_of(
    st.decimals(min_value=-100, max_value=5000, places=2, allow_nan=False).map(str),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10, 10**9),
    st.sampled_from(["NaN", "1e9", "12.345", "", "  7 ", True, None]),
)
values = st.one_of(weird_text, amounts)


def call_strategy(task) -> st.SearchStrategy:
    row = st.integers(-2, 40).map(str)
    return st.one_of(
        *form_calls(BUTTONS, GRIDS, ["LoadNextPage", "LoadPreviousPage", "Explode"], row),
        tool_call(
            "form_set_control_values",
            controlValues=one_to_three(
                st.fixed_dictionaries({"controlName": st.sampled_from(CONTROLS), "value": values})
            ),
        ),
        tool_call(st.sampled_from(["form_save_form", "form_close_form"])),
        tool_call("form_open_menu_item", name=st.sampled_from(["TrvExpenses", "TrvCostType", "X"])),
        tool_call(
            "form_filter_grid",
            gridName=st.sampled_from(GRIDS),
            gridColumnName=st.sampled_from(["TrvExpTable_ExpNumber", "Nope"]),
            filterValue=weird_text,
        ),
        tool_call(
            "data_create_entities",
            entitySetName=st.just("ExpenseLines"),
            entities=one_to_three(
                st.fixed_dictionaries(
                    {
                        "ParentRecId": st.integers(0, 400),
                        "Subcategory": st.sampled_from(["Room tax", "Breakfast", "Bogus"]),
                        "TransactionDate": st.just(task.transaction_date),
                        "Amount": amounts,
                    }
                )
            ),
        ),
        tool_call(
            "data_delete_entities", entitySetName=st.just("ExpenseLines"), keys=one_to_three(st.integers(0, 400))
        ),
        tool_call(
            "data_find_entities_sql",
            sqlQuery=st.sampled_from(
                [
                    "SELECT * FROM expense_line",
                    "DROP TABLE expense_line",
                    "SELECT 1; DELETE FROM receipt",
                    "PRAGMA writable_schema=1",
                ]
            ),
        ),
        st.tuples(st.text(max_size=20), st.dictionaries(st.text(max_size=8), values, max_size=3)),  # anything at all
        st.tuples(st.just("form_open_menu_item"), st.one_of(st.text(max_size=40), st.none(), st.lists(st.integers()))),
    )


def assert_books_balance(session: ErpSession) -> None:
    db = session.db
    for header_id, amount in db.execute("SELECT id, amount FROM expense_line WHERE line_type != 'ItemizedLine'"):
        children = [
            Decimal(a) for (a,) in db.execute("SELECT amount FROM expense_line WHERE parent_line_id = ?", (header_id,))
        ]
        for value in children + [Decimal(amount)]:
            assert value == value.quantize(Decimal("0.01")) and value > 0
        kind = db.execute("SELECT line_type FROM expense_line WHERE id = ?", (header_id,)).fetchone()[0]
        assert kind == ("ItemizedHeader" if children else "Default") or (kind == "ItemizedHeader" and children)
    grade = session.grade()
    header = Decimal(grade.header_amount)
    itemized = sum(
        (
            Decimal(a)
            for (a,) in db.execute(
                "SELECT amount FROM expense_line WHERE parent_line_id = (SELECT l.id FROM expense_line l JOIN expense_report r ON r.id = l.report_id "
                "WHERE r.report_number = ? AND l.line_number = ? AND l.line_type != 'ItemizedLine')",
                (TASK.report_number, TASK.line_number),
            )
        ),
        Decimal("0"),
    )
    assert Decimal(grade.remaining_amount) == header - itemized
    assert Decimal(grade.itemized_amount) == itemized


PREFIXES = [oracle_prefix(TASK, n) for n in (0, 5, 10, 14)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prefix=st.sampled_from(PREFIXES), calls=st.lists(call_strategy(TASK), min_size=20, max_size=60))
def test_random_call_sequences_never_raise_and_keep_remaining_consistent(prefix, calls):
    session = ErpSession(TASK)
    for name, args in prefix + calls:
        response = session.call(name, args)  # must not raise
        assert response.text.startswith('{"SessionId"')
        assert_books_balance(session)
