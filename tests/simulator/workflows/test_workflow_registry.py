"""A workflow is a folder and one registry line: a toy second workflow (tests/toy_workflow) plugged in beside
itemization gets every generic layer (session, forms, tools, OData, SQL, actions, grading, oracle, task sets),
and changes no response of itemization."""

from __future__ import annotations

import dataclasses
import hashlib
import pickle

import pytest
from toy_support import clear_caches

import erp_sim
from erp_sim import task_sets, workflows
from erp_sim.database import open_database

PROBES = [
    ("form_find_menu_item", {"menuItemFilter": "e"}),
    ("data_find_entity_type", {"tableSearchFilter": "e"}),
    ("api_find_actions", {"actionSearchFilter": ""}),
    ("data_find_entities_sql", {"sqlQuery": "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"}),
    ("data_find_entities_sql", {"sqlQuery": "SELECT COUNT(*) FROM note"}),
    ("data_find_entities", {"odataPath": "Notes"}),
    ("form_open_menu_item", {"name": "ToyNotes"}),
]


def _responses_digest(task_set: str, count: int) -> str:
    """Every response of the oracle's run and the probes, on the set's first tasks."""
    digest = hashlib.sha256()
    for task in erp_sim.load_task_set(task_set)[:count]:
        session = erp_sim.ErpSession(task)
        for response in erp_sim.run_oracle(session):
            digest.update(response.text.encode())
        for name, arguments in PROBES:
            digest.update(session.call(name, arguments).text.encode())
        digest.update(session.grade().model_dump_json().encode() + session.state_hash().encode())
    return digest.hexdigest()


def test_adding_a_workflow_changes_no_response_of_another(request):
    before = _responses_digest("hotel_50", 3)
    request.getfixturevalue("toy")
    assert _responses_digest("hotel_50", 3) == before


def test_a_session_holds_its_own_workflows_forms_entity_sets_actions_and_tables(toy):
    session = erp_sim.open_session("toy_notes", "notes-1")
    assert session.workflow.name == "toy"
    menu = session.call("form_find_menu_item", {"menuItemFilter": "e"}).envelope["MenuItems"]
    assert [item["Name"] for item in menu] == ["ToyNotes"]
    entity_sets = session.call("data_find_entity_type", {"tableSearchFilter": "e"}).envelope["EntitySets"]
    assert [entity["Name"] for entity in entity_sets] == ["Notes"]
    actions = session.call("api_find_actions", {"actionSearchFilter": ""}).envelope["Actions"]
    assert [action["Name"] for action in actions] == ["CountNotes"]
    assert session.call("api_invoke_action", {"actionName": "CountNotes"}).envelope["ActionResult"] == {"Count": 4}
    notes = session.call("data_find_entities", {"odataPath": "Notes?$top=2"}).envelope["Data"]["value"]
    assert [note["RecId"] for note in notes] == [1, 2]
    assert session.call("data_find_entities_sql", {"sqlQuery": "SELECT COUNT(*) FROM note"}).envelope["Data"][
        "Rows"
    ] == [[4]]
    refused = session.call("data_find_entities_sql", {"sqlQuery": "SELECT * FROM expense_line"})
    assert refused.is_error and "no such table: expense_line" in refused.result
    unknown = session.call("form_open_menu_item", {"name": "TrvExpenses"})
    assert unknown.is_error and "does not exist" in unknown.result
    written = session.call("data_create_entities", {"entitySetName": "Notes", "entities": [{"Text": "x"}]})
    assert written.is_error and "Notes are read-only." in written.result


def test_the_oracle_grading_and_pickling_follow_the_task_s_workflow(toy):
    task = erp_sim.get_task("toy_notes", 2)
    session = erp_sim.ErpSession(task)
    assert not session.grade().success
    responses = erp_sim.run_oracle(session)
    assert responses[-1].form_state["Name"] == "ToyNotes"
    assert session.grade().model_dump() == {"success": True, "strict_success": True, "notes": 5}
    restored = pickle.loads(pickle.dumps(session))
    assert restored.workflow is session.workflow and restored.state_hash() == session.state_hash()
    assert restored.call("form_find_controls", {"controlSearchTerm": ""}).text != ""
    open_database(task).close()  # the database layer finds the workflow from the task alone


def test_task_sets_span_every_workflow(toy):
    assert [row.workflow for row in task_sets.task_rows("toy_notes")] == ["toy"] * 3
    assert [row.size for row in task_sets.task_rows("toy_notes")] == [3, 4, 5]
    assert len(task_sets.split_rows("toy_notes", "train")) + len(task_sets.split_rows("toy_notes", "test")) == 3
    with pytest.raises(KeyError, match=r"Known: expense_types, hotel_50, long_horizon, toy_notes, Airfare"):
        task_sets.task_rows("nope")
    assert {row.workflow for row in task_sets.task_rows("hotel_50")} == {"itemization"}


def test_two_workflows_cannot_claim_one_task_set_name(monkeypatch, toy):
    import toy_workflow

    claims = dataclasses.replace(toy_workflow.TASK_SETS, files={"hotel_50": toy_workflow.FIXTURE})
    monkeypatch.setattr(toy_workflow, "TASK_SETS", claims)
    clear_caches()
    with pytest.raises(RuntimeError, match="Two workflows claim the same task set name"):
        workflows.task_sets()
