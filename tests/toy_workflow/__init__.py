"""A toy second workflow for the registry's tests: one table of notes, one form, one entity set, one action,
a Gymnasium id, a rule-based user, and the agent harness's face (a scripted procedure, summary facts,
failure categories, an LLM user's context).

What a workflow is: this folder (``TASK_SETS`` here, ``WORKFLOW`` in ``workflow``, ``HARNESS`` in
``harness``) and one line in ``erp_sim.workflows.PACKAGES`` (``{"toy": "toy_workflow"}``, which the tests
add); nothing else of the repository changes.
"""

from __future__ import annotations

import json
from pathlib import Path

from erp_sim.workflow_task import WorkflowTask
from erp_sim.workflows import TaskSets

SCHEMA_FILE = Path(__file__).with_name("schema.json")
FIXTURE = "toy_notes.jsonl"
ENV_ID = "erp_sim/ToyNotes-v0"


def _parse(line: str) -> WorkflowTask:
    from toy_workflow.workflow import NoteTask

    return NoteTask.model_validate_json(line)


def generate(name: str) -> list[str]:
    return [json.dumps({"task_id": f"notes-{n}", "task_set": name, "seed": 40 + n, "notes": 3 + n}) for n in range(3)]


TASK_SETS = TaskSets(
    files={"toy_notes": FIXTURE},
    stratum=lambda fields: ("notes",),
    size=lambda fields: int(fields["notes"]),
    parse=_parse,
    generate=generate,
    env_ids={ENV_ID: "toy_notes"},
    step_limits={ENV_ID: 20},
)
