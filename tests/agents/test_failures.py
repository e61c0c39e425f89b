"""The failure taxonomy: each category from a trajectory and its final grade, first match wins."""

from __future__ import annotations

import pytest

from erp_sim import workflows
from erp_sim.agents.failures import classify_failure
from erp_sim.agents.trajectory import EpisodeMetrics, Trajectory

CHARGE, OTHER = ("Room tax", "2026-03-02", "12.50"), ("Daily room rate", "2026-03-02", "129.00")


def trajectory(termination="user_ended", messages=None, steps=20, invalid=0, **grade) -> Trajectory:
    base = {
        "success": False,
        "strict_success": False,
        "itemized_fraction": 0.9,
        "header_amount": "125.00",
        "itemized_amount": "112.50",
        "remaining_amount": "12.50",
        "saved_lines": 1,
        "expected_lines": 2,
        "unsaved_rows": 0,
        "itemization_form_open": False,
        "missing_charges": [],
        "unexpected_lines": [],
        "duplicate_lines": [],
    }
    return Trajectory(
        task_id="t",
        task_set="s",
        termination=termination,
        messages=messages or [],
        metrics=EpisodeMetrics(steps=steps, invalid_actions=invalid),
        grade={**base, **grade},
    )


@pytest.mark.parametrize(
    "episode, category",
    [
        (trajectory(termination="stalled"), "stalled_unanswered_question"),
        (trajectory(termination="step_limit"), "step_limit"),
        (trajectory(invalid=6), "invalid_tool_calls"),
        (trajectory(remaining_amount="-5.00"), "over_itemization"),
        (trajectory(duplicate_lines=[list(CHARGE)], unexpected_lines=[list(CHARGE)]), "duplicate_line"),
        (
            trajectory(missing_charges=[list(CHARGE)], unexpected_lines=[["City tax", "2026-03-02", "12.50"]]),
            "wrong_subcategory",
        ),
        (
            trajectory(missing_charges=[list(CHARGE)], unexpected_lines=[["Room tax", "2026-03-02", "12.05"]]),
            "wrong_amount",
        ),
        (trajectory(remaining_amount="0.00", unsaved_rows=2), "unsaved_or_unclosed_form"),
        (trajectory(remaining_amount="0.00", itemization_form_open=True), "unsaved_or_unclosed_form"),
        (trajectory(messages=[{"role": "assistant", "content": "Done: the remaining amount is 0.00."}]), "stale_state"),
        (trajectory(missing_charges=[list(OTHER)]), "premature_termination"),
    ],
)
def test_each_category(episode, category):
    assert category in workflows.failure_categories()
    assert classify_failure(episode) == category


def test_success_has_no_failure_category_and_order_decides_ties():
    assert classify_failure(trajectory(success=True, remaining_amount="0.00")) is None
    # Stalled wins over everything the grade would also say.
    assert (
        classify_failure(trajectory(termination="stalled", remaining_amount="-1.00")) == "stalled_unanswered_question"
    )
