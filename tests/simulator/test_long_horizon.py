"""long_horizon: the horizon knob's task set (10-200 charges, 1-5 lines), its split, grading and oracle."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import gymnasium as gym
import pytest
from erp_support import one_to_three, oracle_prefix, tool_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import erp_sim.envs
from erp_sim import ErpSession, get_task, load_task_set, run_oracle
from erp_sim.envs.expense_env import potential
from erp_sim.forms.base import PAGE_SIZE
from erp_sim.task_sets import split_rows
from erp_sim.workflows.itemization.grading import Grade, grade_dict, progress, target_line_ids
from erp_sim.workflows.itemization.task import as_task
from erp_sim.workflows.itemization.taskgen import LADDER, LADDER_TASKS, MAX_CHARGES, MAX_LINES, generate_task

TASKS = load_task_set("long_horizon")


def test_the_ladder_runs_from_10_to_200_charges_ten_tasks_a_rung_some_with_several_lines():
    assert Counter(t.item_count for t in TASKS) == dict.fromkeys(LADDER, LADDER_TASKS)
    assert LADDER[0] == 10 and LADDER[-1] == MAX_CHARGES == 200
    assert len({t.task_id for t in TASKS}) == len(TASKS) == 50
    for size in LADDER:
        rung = [t for t in TASKS if t.item_count == size]
        assert {len(t.lines) for t in rung} == {1, 2, 3, 4, 5}
    for task in TASKS:
        assert 1 <= len(task.lines) <= MAX_LINES and task.expense_type == "Hotel"
        assert len({line.line_number for line in task.lines}) == len(task.lines)
        assert len({line.document_number for line in task.lines}) == len(task.lines)
        for line in task.lines:  # each receipt adds up to its line's amount
            assert sum(Decimal(i.amount) for i in line.receipt_items) == line.header_decimal
    assert any(len(line.receipt_items) > 2 * PAGE_SIZE for t in TASKS for line in t.lines)  # grids page


def test_single_line_tasks_serialize_without_the_new_field():
    line = json.dumps(get_task("hotel_50", 0).model_dump(mode="json"))
    assert "extra_lines" not in line
    assert "extra_lines" in json.dumps(next(t for t in TASKS if t.extra_lines).model_dump(mode="json"))


def test_the_knob_refuses_what_it_cannot_build():
    with pytest.raises(ValueError, match="lines must be"):
        generate_task("x", 0, "Hotel", 1, item_count=201)
    with pytest.raises(ValueError, match="lines must be"):
        generate_task("x", 0, "Hotel", 1, item_count=8, lines=6)
    with pytest.raises(ValueError, match="Hotel tasks only"):
        generate_task("x", 0, "Meals", 1, item_count=8, max_nights=28)


def test_the_split_halves_every_rung():
    train, test = split_rows("long_horizon", "train"), split_rows("long_horizon", "test")
    assert len(train) == len(test) == 25
    assert Counter(row.size for row in train) == dict.fromkeys(LADDER, 5)


def test_the_env_id_gives_long_episodes_room():
    env = gym.make("erp_sim/LongHorizon-v0")
    assert env.spec.max_episode_steps == erp_sim.envs.STEP_LIMITS["erp_sim/LongHorizon-v0"] >= 1000
    observation, info = env.reset(seed=0, options={"task_id": "long-200-09"})
    assert "all 5 of them" in observation and info["task"]["item_count"] == 200
    env.close()


def test_the_oracle_solves_every_task_strictly_and_grids_show_one_page():
    longest: dict[int, int] = {}
    for task in TASKS:
        session = ErpSession(task)
        responses = run_oracle(session)
        longest[task.item_count] = max(longest.get(task.item_count, 0), *(len(r.text) for r in responses))
        grade = session.grade()
        assert grade.strict_success and grade.collateral == [], task.task_id
        assert [line.remaining_amount for line in grade.lines or []] == ["0.00"] * len(grade.lines or [])
        for response in responses:
            for grid in _grids(response.form_state):
                assert len(grid["Rows"]) <= PAGE_SIZE
    # A response is bounded by the page, not by the task: 20x the charges, at most 1.3x the longest response.
    assert longest[200] < 1.3 * longest[10], longest


def _grids(state):
    if not isinstance(state, dict):
        return
    for value in state.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    if "Rows" in item:
                        yield item
                    yield from _grids(item.get("Children"))
        elif isinstance(value, dict):
            yield from _grids(value)


def test_multi_line_grading_needs_every_line():
    task = get_task("long_horizon", "long-010-09")
    session = ErpSession(task)
    ids = target_line_ids(session)
    assert isinstance(ids, tuple) and len(ids) == 5

    def create(line_id, items):
        response = session.call(
            "data_create_entities",
            {
                "entitySetName": "ExpenseLines",
                "entities": [
                    {
                        "ParentRecId": line_id,
                        "Subcategory": i.subcategory,
                        "TransactionDate": i.date,
                        "Amount": i.amount,
                    }
                    for i in items
                ],
            },
        )
        assert not response.is_error, response.result

    for line_id, line in list(zip(ids, task.lines))[:-1]:
        create(line_id, line.receipt_items)
    grade = session.grade()
    assert not grade.success and grade.lines[-1].remaining_amount == task.lines[-1].header_amount
    # The last line's charges saved on the first line: the task's total adds up, but two lines are off.
    create(ids[0], task.lines[-1].receipt_items)
    grade = session.grade()
    assert grade.remaining_amount == "0.00" and not grade.success
    assert [line.remaining_amount != "0.00" for line in grade.lines] == [True, False, False, False, True]
    state = progress(session, ids)  # the shaping potential counts both lines' gaps, not the total's 0.00
    assert state.distance == 2 * task.lines[-1].header_decimal and potential(state) < Decimal("0.5")


def test_grade_dict_is_the_grade_models_json_dump_for_single_and_multi_line_tasks():
    for task in (get_task("long_horizon", "long-010-09"), TASKS[0]):
        grade = grade_dict(ErpSession(task))
        assert grade["missing_charges"] and ("lines" in grade) == bool(task.extra_lines)
        assert grade == Grade.model_validate(grade).model_dump(mode="json")


MULTI = as_task(get_task("long_horizon", "long-010-09"))


PREFIXES = [oracle_prefix(MULTI, n) for n in (0, 14, 30, 45)]
ACTIONS = st.one_of(
    tool_call(
        "form_click_control",
        controlName=st.sampled_from(["NewLine", "DeleteLine", "Itemize", "ViewReceipt", "ItemizationGrid"]),
    ),
    tool_call(
        "form_select_grid_row",
        gridName=st.sampled_from(["ExpenseLinesGrid", "ItemizationGrid"]),
        rowNumber=st.integers(1, 6).map(str),
    ),
    tool_call(
        "form_set_control_values",
        controlValues=one_to_three(
            st.fixed_dictionaries(
                {
                    "controlName": st.sampled_from(
                        ["TrvExpTrans_ExpSubCategory", "TrvExpTrans_AmountCurr", "TrvExpTrans_TransDate"]
                    ),
                    "value": st.sampled_from(
                        ["Room tax", "Daily room rate", "12.34", "0.01", "-1", MULTI.transaction_date]
                    ),
                }
            )
        ),
    ),
    tool_call(st.sampled_from(["form_save_form", "form_close_form"])),
    tool_call(
        "data_create_entities",
        entitySetName=st.just("ExpenseLines"),
        entities=st.lists(
            st.fixed_dictionaries(
                {
                    "ParentRecId": st.integers(0, 300),
                    "Subcategory": st.just("Room tax"),
                    "TransactionDate": st.just(MULTI.transaction_date),
                    "Amount": st.sampled_from(["1.00", "99.99"]),
                }
            ),
            min_size=1,
            max_size=2,
        ),
    ),
    tool_call(
        "data_delete_entities",
        entitySetName=st.just("ExpenseLines"),
        keys=st.lists(st.integers(0, 300), min_size=1, max_size=2),
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prefix=st.sampled_from(PREFIXES), calls=st.lists(ACTIONS, min_size=10, max_size=40))
def test_remaining_is_the_task_amount_minus_saved_lines_on_every_line(prefix, calls):
    """Independent of the grader's code: the raw tables, line by line, against the task's own amounts."""
    session = ErpSession(MULTI)
    report = MULTI.report_number
    for name, args in prefix + calls:
        session.call(name, args)
        grade = session.grade()
        total = Decimal("0")
        for line, line_grade in zip(MULTI.lines, grade.lines):
            saved = sum(
                (
                    Decimal(a)
                    for (a,) in session.db.execute(
                        "SELECT c.amount FROM expense_line c JOIN expense_line h ON c.parent_line_id = h.id JOIN expense_report r "
                        "ON r.id = h.report_id WHERE r.report_number = ? AND h.line_number = ? AND h.line_type != 'ItemizedLine'",
                        (report, line.line_number),
                    )
                ),
                Decimal("0"),
            )
            assert Decimal(line_grade.remaining_amount) == line.header_decimal - saved
            total += saved
        assert Decimal(grade.remaining_amount) == MULTI.total_decimal - total
        settled = all(g.remaining_amount == "0.00" and g.saved_lines > 0 for g in grade.lines)
        assert grade.success == (
            settled and not grade.itemization_form_open and grade.unsaved_rows == 0 and not grade.collateral
        )
