"""The zero-remainder rule is stated once: in prose (rules.md) and in code (ledger.ItemizationSummary),
and every place that decides "complete" or "over-itemized" asks it."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from erp_support import open_itemization

import erp_sim
from erp_sim.database import transaction
from erp_sim.envs.expense_env import PARTIAL_CREDIT, potential
from erp_sim.errors import ValidationError
from erp_sim.workflows.itemization import ledger
from erp_sim.workflows.itemization.grading import progress, target_line_ids
from erp_sim.workflows.itemization.task import task_of

PACKAGE = Path(erp_sim.__file__).parent
ITEMIZATION = PACKAGE / "workflows" / "itemization"
# A remaining amount compared with zero, or a count of saved lines tested for "any": the rule's two halves.
RESTATED = re.compile(r"remaining\b[^\n]*(==|!=|<=?|>=?)\s*(ZERO|0\b|Decimal\(\s*[\"']?0)|line_count\s*>\s*0")
# Where it may stand: the rule module; the readers of a response's Remaining control (as an agent reads it), to
# check their own work: the oracle, the scripted agent's procedure and the summary's facts; and the failure
# taxonomy, which reads the remaining amount a grade states.
ALLOWED = {ITEMIZATION / name for name in ("ledger.py", "oracle.py", "scripted.py", "facts.py", "failures.py")}


def test_only_the_rule_module_states_the_zero_remainder_rule():
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if RESTATED.search(line) and path not in ALLOWED
    ]
    assert offenders == []
    assert RESTATED.search((ITEMIZATION / "ledger.py").read_text(encoding="utf-8"))  # the pattern finds the rule


@pytest.mark.parametrize(
    ("total", "itemized", "lines", "complete", "over"),
    [
        ("100.00", "100.00", 3, True, False),
        ("100.00", "99.99", 3, False, False),
        ("100.00", "100.01", 3, False, True),
        ("0.00", "0.00", 0, False, False),  # nothing saved is never complete, even at no amount
    ],
)
def test_complete_means_exactly_zero_remaining_with_a_saved_line(total, itemized, lines, complete, over):
    summary = ledger.ItemizationSummary(Decimal(total), Decimal(itemized), lines)
    assert (summary.complete, summary.over_itemized) == (complete, over)
    assert summary.remaining == Decimal(total) - Decimal(itemized)


def test_rules_md_names_the_rule_where_the_code_states_it():
    text = (ITEMIZATION / "rules.md").read_text(encoding="utf-8")
    assert "`ItemizationSummary` in `ledger.py`" in text and "exactly 0.00" in text
    assert {"remaining", "complete", "over_itemized"} <= set(vars(ledger.ItemizationSummary))


def test_the_done_fraction_is_the_envs_shaping_progress(session):
    """``Progress.done_fraction`` (the registry's "fraction done") is what the env's shaping potential weighs:
    from nothing itemized, over partial saves, to an over-itemized line (over by 10.00)."""
    line_id = target_line_ids(session)
    task = task_of(session)
    first, second = task.receipt_items[:2]
    over = task.header_decimal - Decimal(first.amount) - Decimal(second.amount) + 10
    seen = [progress(session, line_id)]
    open_itemization(session)
    for subcategory, day, amount in [
        (first.subcategory, first.date, first.amount),
        (second.subcategory, second.date, second.amount),
        (first.subcategory, first.date, f"{over:.2f}"),
    ]:
        session.call("form_click_control", {"controlName": "NewLine"})
        values = {
            "TrvExpTrans_ExpSubCategory": subcategory,
            "TrvExpTrans_TransDate": day,
            "TrvExpTrans_AmountCurr": amount,
        }
        session.call(
            "form_set_control_values", {"controlValues": [{"controlName": k, "value": v} for k, v in values.items()]}
        )
        assert not session.call("form_save_form", {}).is_error
        seen.append(progress(session, line_id))
    assert seen[0].done_fraction == 0 and 0 < seen[1].done_fraction < seen[2].done_fraction < 1
    assert seen[3].summary.over_itemized and seen[3].done_fraction == 1 - Decimal(10) / task.header_decimal
    for state in seen:
        assert not state.success and potential(state) == PARTIAL_CREDIT * state.done_fraction


def test_a_saves_remembered_parses_give_what_fresh_parses_give_and_the_same_errors():
    """``validate_itemized_values`` with one ``known`` dict over a save's rows: each row's values and each
    refusal are those of a validation of its own, for values of several types that compare equal (1, 1.0, True)."""
    header = {"category_id": "Hotel"}
    controls = {"subcategory": "Sub", "transaction_date": "Date", "amount": "Amount", "description": "Note"}
    rows = [
        {"subcategory": "room tax", "transaction_date": "3/14/2026", "amount": "1.00", "description": 1},
        {"subcategory": "Room tax", "transaction_date": "2026-03-14", "amount": "2.00", "description": 1.0},
        {"subcategory": "ROOM TAX", "transaction_date": "3/14/2026", "amount": "3", "description": True},
        {"subcategory": "Room tax", "transaction_date": "2026-02-30", "amount": "4.00"},
        {"subcategory": "Minibar", "transaction_date": "2026-03-14", "amount": "5.00", "description": ["x"]},
        {"subcategory": "Hotel tax", "transaction_date": "2026-03-14", "amount": "6.00"},
        {"subcategory": "room tax", "transaction_date": "3/14/2026", "amount": "7.00", "description": 1},
    ]

    def outcome(raw, known):
        try:
            return ledger.validate_itemized_values(header, raw, controls, known)
        except ValidationError as exc:
            return f"refused: {exc}"

    known: ledger.KnownParses = {}
    shared = [outcome(raw, known) for raw in rows + rows]
    fresh = [outcome(raw, None) for raw in rows + rows]
    assert shared == fresh
    assert [str(o)[:8] for o in fresh[:7]] == [
        "Itemized",
        "Itemized",
        "refused:",
        "refused:",
        "refused:",
        "refused:",
        "Itemized",
    ]
    assert fresh[0].description == "1" and fresh[1].description == "1.0" and fresh[0].subcategory == "Room tax"


@pytest.mark.parametrize(
    "descriptions",
    [
        ["", "Hotel tax", "x" * 2000],  # a few rows: the INSERT per row
        ["", "Hotel tax", "x" * 2000] * ledger._JSON_INSERT_ROWS,  # one INSERT over the rows' JSON
        ["", "caf\u00e9 \U0001f600", "a\x00b"] * ledger._JSON_INSERT_ROWS,  # texts JSON would change: per row
    ],
)
def test_inserting_lines_at_once_stores_what_inserting_each_stores(descriptions):
    """``insert_itemized_lines`` gives the rows (RecIds, order, every column) that ``insert_itemized_line`` gives
    one by one, whichever way it inserts them; a text sqlite3 cannot bind is refused as it is one by one."""

    def inserted(insert):
        session = erp_sim.ErpSession(erp_sim.load_task_set("hotel_50")[0])
        header = ledger.itemizable_header(session.db, target_line_ids(session))
        values = [
            ledger.ItemizedValues("Room tax", "2026-03-14", Decimal(n + 1), text) for n, text in enumerate(descriptions)
        ]
        insert(session.db, header, values)
        return [tuple(row) for row in ledger.itemized_lines(session.db, header["id"])]

    each = inserted(lambda db, header, rows: [ledger.insert_itemized_line(db, header, row) for row in rows])
    assert inserted(ledger.insert_itemized_lines) == each
    assert [row[-1] for row in each] == descriptions  # the description column, as given


def test_a_text_sqlite_cannot_bind_is_refused_by_the_insert_of_many_lines_too():
    session = erp_sim.ErpSession(erp_sim.load_task_set("hotel_50")[0])
    header = ledger.itemizable_header(session.db, target_line_ids(session))
    texts = [*[""] * ledger._JSON_INSERT_ROWS, "\ud800"]
    values = [ledger.ItemizedValues("Room tax", "2026-03-14", Decimal(1), text) for text in texts]
    with pytest.raises(UnicodeEncodeError):
        ledger.insert_itemized_lines(session.db, header, values)


def test_the_saved_lines_and_their_summary_follow_every_write(session):
    """``ledger.saved_lines`` (what the itemization form's grid, its totals and the grade read) and
    ``saved_summary`` are kept per database version: a line written outside the form shows at the next read."""
    line_id = target_line_ids(session)
    assert ledger.saved_lines(session, line_id) == [] and ledger.saved_summary(session, line_id).line_count == 0
    assert progress(session, line_id).summary.line_count == 0
    with transaction(session.db):
        ledger.create_itemized_line(session.db, line_id, ledger.ItemizedValues("Room tax", "2026-03-14", Decimal(1)))
    assert [line["amount"] for line in ledger.saved_lines(session, line_id)] == ["1.00"]
    assert ledger.saved_summary(session, line_id).itemized == Decimal("1.00")
    assert progress(session, line_id).summary.itemized == Decimal("1.00")
