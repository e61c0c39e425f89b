"""Property tests: random and adversarial call sequences on bank reconciliation never raise, a failed call
writes nothing, and the books balance after every call, whatever path wrote (worksheet, data tools, actions):
every match group balances, holds each line and transaction once, and the difference is the statement total
minus the matched and posted amounts (``bank_support.assert_books_balance``)."""

from __future__ import annotations

from bank_support import assert_books_balance, bank_task
from erp_support import form_calls, one_to_three, oracle_prefix, tool_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from erp_sim import ErpSession
from erp_sim.database.schema import CHANGE_LOG
from erp_sim.workflows.bank_reconciliation import reading as R

TASK = bank_task("bank-030")  # 23 lines: the transaction grid pages
BUTTONS = [
    R.MATCH_BUTTON,
    R.NEW_BUTTON,
    R.UNMATCH_BUTTON,
    R.WORKSHEET_BUTTON,
    R.RECONCILE_BUTTON,
    R.OPEN_BUTTON,
    "Nope",
]
GRIDS = [R.STATEMENT_GRID, R.TRANSACTION_GRID, R.MATCHED_GRID, R.LIST_GRID, "Nope"]
COLUMNS = [R.LINE_REFERENCE, R.TRANS_REFERENCE, R.LINE_AMOUNT, R.TRANS_AMOUNT, R.MATCH_ID, "Nope"]
texts = st.one_of(
    st.text(max_size=20),
    st.just("x" * 3000),
    st.sampled_from(["", "618160", "618160 Bank charges", "110110", "801100", "BNK-", "CPY-", "1,2", "-5", "NaN"]),
)
values = st.one_of(
    texts, st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**20), st.booleans(), st.none()
)
ids = st.one_of(
    st.integers(-2, 400).map(str),
    st.lists(st.integers(0, 400), min_size=1, max_size=4).map(lambda x: ",".join(map(str, x))),
    values,
)


def _action(name: str, **parameters: object) -> tuple[str, dict]:
    return "api_invoke_action", {"actionName": name, "parameters": {"StatementId": TASK.statement_id, **parameters}}


# Writes that can succeed: the task's own matches and postings (and near misses), as an agent would try them.
PLAUSIBLE = (
    [
        _action("MatchBankStatementLines", LineNumbers=",".join(map(str, lines)), Vouchers=",".join(sorted(vouchers)))
        for lines, vouchers in TASK.groups
    ]
    + [
        _action("MarkBankStatementLineAsNew", LineNumber=line, OffsetAccount=account)
        for line in [*TASK.fee_accounts, 1]
        for account in ("618160", "801100")
    ]
    + [_action("UnmatchBankStatementLines", MatchId=f"MATCH-{n:05d}") for n in range(1, 140, 7)]
    + [_action("MarkBankReconciliationAsReconciled")]
)


def call_strategy() -> st.SearchStrategy:
    row = st.integers(-1, 60).map(str)
    return st.one_of(
        st.sampled_from(PLAUSIBLE),
        st.sampled_from(PLAUSIBLE),
        *form_calls(BUTTONS, GRIDS, ["LoadNextPage", "LoadPreviousPage", "x"], row),
        tool_call(
            "form_open_or_close_tab",
            tabName=st.sampled_from([*R.TAB_PAGES, "Nope"]),
            tabAction=st.sampled_from(["Open", "Close"]),
        ),
        tool_call(
            "form_set_control_values",
            controlValues=one_to_three(
                st.fixed_dictionaries(
                    {
                        "controlName": st.sampled_from([R.OFFSET_ACCOUNT, R.DIFFERENCE, "QuickFilter", "Nope"]),
                        "value": values,
                    }
                )
            ),
        ),
        tool_call(
            "form_filter_grid",
            gridName=st.sampled_from(GRIDS),
            gridColumnName=st.sampled_from(COLUMNS),
            filterValue=texts,
        ),
        tool_call(st.sampled_from(["form_save_form", "form_close_form"])),
        tool_call("form_open_menu_item", name=st.sampled_from([R.LIST_FORM, R.WORKSHEET_FORM, "X"])),
        tool_call(
            "data_create_entities",
            entitySetName=st.just("BankReconciliationMatches"),
            entities=one_to_three(
                st.fixed_dictionaries(
                    {"ReconciliationRecId": st.integers(0, 12), "StatementLineRecIds": ids},
                    optional={"BankTransactionRecIds": ids, "OffsetAccount": values},
                )
            ),
        ),
        tool_call(
            "data_delete_entities",
            entitySetName=st.just("BankReconciliationMatches"),
            keys=one_to_three(st.integers(0, 200)),
        ),
        tool_call(
            "data_update_entities",
            entitySetName=st.just("BankReconciliations"),
            entities=st.lists(
                st.fixed_dictionaries({"RecId": st.integers(0, 12), "Reconciled": values}), min_size=1, max_size=2
            ),
        ),
        tool_call(
            "api_invoke_action",
            actionName=st.sampled_from(
                [
                    "MatchBankStatementLines",
                    "MarkBankStatementLineAsNew",
                    "UnmatchBankStatementLines",
                    "MarkBankReconciliationAsReconciled",
                    "GetBankReconciliationStatus",
                ]
            ),
            parameters=st.fixed_dictionaries(
                {"StatementId": st.sampled_from([TASK.statement_id, "BS-1", ""])},
                optional={
                    "LineNumbers": ids,
                    "Vouchers": texts,
                    "LineNumber": values,
                    "OffsetAccount": values,
                    "MatchId": texts,
                },
            ),
        ),
        tool_call(
            "data_find_entities_sql",
            sqlQuery=st.sampled_from(
                [
                    "SELECT * FROM bank_transaction",
                    "DELETE FROM bank_reconciliation_match",
                    "SELECT 1; DROP TABLE bank_statement",
                ]
            ),
        ),
        st.tuples(st.text(max_size=20), st.dictionaries(st.text(max_size=8), values, max_size=3)),  # anything at all
    )


PREFIXES = [oracle_prefix(TASK, n) for n in (0, 6, 12, 40)]  # up to the worksheet with matches made


def _log(session: ErpSession) -> int:
    return session.db.execute(f"SELECT COUNT(*) FROM {CHANGE_LOG}").fetchone()[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prefix=st.sampled_from(PREFIXES), calls=st.lists(call_strategy(), min_size=20, max_size=60))
def test_random_call_sequences_never_raise_write_nothing_when_refused_and_keep_the_books(prefix, calls):
    session = ErpSession(TASK)
    for name, args in prefix + calls:
        before = _log(session)
        response = session.call(name, args)  # must not raise
        assert response.text.startswith('{"SessionId"')
        assert response.error_code != "InternalError", response.result
        if response.is_error:
            assert _log(session) == before, (name, args, response.result)
        assert_books_balance(session)
