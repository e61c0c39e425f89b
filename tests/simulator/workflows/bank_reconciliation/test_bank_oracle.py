"""The oracle solves every bank reconciliation task strictly, at both verbosities, from responses only."""

from __future__ import annotations

import pytest

from erp_sim import ErpSession, load_task_set, run_oracle

CASES = [
    (t, v) for name in ("bank_recon_50", "bank_recon_long") for t in load_task_set(name) for v in ("default", "compact")
]


@pytest.mark.parametrize("task, verbosity", CASES, ids=[f"{t.task_id}-{v}" for t, v in CASES])
def test_the_oracle_solves_every_task_strictly(task, verbosity):
    session = ErpSession(task, verbosity=verbosity)
    responses = run_oracle(session)
    grade = session.grade()
    assert grade.strict_success and grade.reconciled_fraction == 1.0, grade
    assert not any(r.is_error for r in responses)
    session.close()
