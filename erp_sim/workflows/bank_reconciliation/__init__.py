"""Bank reconciliation (D365 Cash and bank management): match a bank statement's lines to the bank account's
transactions, post the bank's charges and interest as new transactions where the user says so, and mark the
reconciliation reconciled once no line is open and the unreconciled difference is exactly 0.00 (the rule in
prose: ``rules.md``; in code: ``rules``).

Its task sets are ``TASK_SETS`` below (cheap to read: no pydantic); everything else the generic layers read
is ``workflow.WORKFLOW``, loaded by the first session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim.workflows import TaskSets, pydantic_task_sets

if TYPE_CHECKING:
    from erp_sim.json_values import JsonObject

SCHEMA_FILE = Path(__file__).with_name("schema.json")  # compiled from ``tables`` (see there)
FILES = {"bank_recon_50": "bank_recon_50.jsonl", "bank_recon_long": "bank_recon_long.jsonl"}


def _stratum(fields: JsonObject) -> tuple[str, ...]:
    return (fields["difficulty"],)


def _lines(fields: JsonObject) -> int:
    """Statement lines of the task."""
    return len(fields["statement_lines"])


# Hard bank_recon_50 tasks take the oracle about 180 calls, bank_recon_long's 400 lines up to 1,686: room
# for an agent that reads pages again (the oracle's calls scale with the lines, about 4.2 a line).
ENV_IDS = {"erp_sim/BankReconciliation-v0": "bank_recon_50", "erp_sim/BankReconciliationLong-v0": "bank_recon_long"}
STEP_LIMITS = {"erp_sim/BankReconciliation-v0": 300, "erp_sim/BankReconciliationLong-v0": 2500}

# bank_recon_long's split stratifies by size too: each rung of the ladder is split alike.
TASK_SETS = TaskSets(
    files=FILES,
    stratum=_stratum,
    size=_lines,
    **pydantic_task_sets(__name__),  # the task model and the generators: imported at first use, not at gym.make
    size_stratified=frozenset({"bank_recon_long"}),
    env_ids=ENV_IDS,
    step_limits=STEP_LIMITS,
    size_name="statement lines",
    size_unit="lines",
    demo_tasks={"bank_recon_50": "bank-003"},  # a short one with a fee line, walked through in docs
)
