"""Fixed, seeded, stratified train/test splits and the shared --tasks parser."""

from collections import Counter

import pytest

from erp_sim.agents.command_line import UsageError
from erp_sim.agents.evaluation.eval_options import task_ids
from erp_sim.task_sets import load_task_set, resolve_tasks


@pytest.mark.parametrize("task_set, train_size", [("hotel_50", 25), ("expense_types", 55)])
def test_split_partitions_the_set_with_pinned_sizes(task_set, train_size):
    train, test = load_task_set(f"{task_set}:train"), load_task_set(f"{task_set}:test")
    everything = [t.task_id for t in load_task_set(task_set)]
    assert len(train) == train_size
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    assert sorted(t.task_id for t in train + test) == sorted(everything)
    # set order is kept inside each half
    assert [t.task_id for t in train] == [i for i in everything if i in {t.task_id for t in train}]


@pytest.mark.parametrize("task_set", ["hotel_50", "expense_types"])
def test_split_is_stratified_by_expense_type_and_difficulty(task_set):
    strata = Counter((t.expense_type, t.difficulty) for t in load_task_set(task_set))
    in_train = Counter((t.expense_type, t.difficulty) for t in load_task_set(f"{task_set}:train"))
    for stratum, size in strata.items():
        assert in_train[stratum] == int(size * 0.5 + 0.5), stratum


def test_split_is_fixed():
    assert [t.task_id for t in load_task_set("hotel_50:train")][:6] == [
        "hotel-000",
        "hotel-001",
        "hotel-005",
        "hotel-006",
        "hotel-007",
        "hotel-011",
    ]
    assert resolve_tasks("hotel_50:train") == resolve_tasks(" hotel_50 : train ")
    assert [t.task_id for t in load_task_set("hotel_50:test")] == resolve_tasks("hotel_50:test")[1]


def test_resolve_tasks_forms_and_errors():
    assert resolve_tasks("hotel_50:hotel-003,hotel-001") == ("hotel_50", ["hotel-003", "hotel-001"])
    assert len(resolve_tasks("hotel_50")[1]) == 50
    with pytest.raises(KeyError, match="hotel_50:train"):
        resolve_tasks("hotel_50:trian")
    with pytest.raises(KeyError, match="Unknown split"):
        load_task_set("hotel_50:dev")
    with pytest.raises(KeyError, match="Unknown task set"):
        resolve_tasks("nope:train")


def test_eval_takes_split_selections():
    task_set, ids = task_ids("expense_types:test")
    assert task_set == "expense_types" and len(ids) == 45
    with pytest.raises(UsageError, match="Unknown task id"):
        task_ids("hotel_50:hotel-999")


def test_a_task_id_without_its_zero_padding_is_found():
    """Issue 39, point 5: `hotel-7` did not find `hotel-007`; an id that is not there names the near ones."""
    from erp_sim.task_sets import get_task

    assert resolve_tasks("hotel_50:hotel-7,hotel-012") == ("hotel_50", ["hotel-007", "hotel-012"])
    assert get_task("hotel_50", "hotel-7").task_id == "hotel-007"
    assert resolve_tasks("long_horizon:long-50-0")[1] == ["long-050-00"]
    with pytest.raises(KeyError) as unknown:
        resolve_tasks("hotel_50:hotel-0077")
    message = unknown.value.args[0]
    assert "Unknown task id(s) in hotel_50: hotel-0077; did you mean " in message and "hotel-007" in message
    assert "(ids run hotel-000 .. hotel-049; or use hotel_50:train / hotel_50:test)" in message
