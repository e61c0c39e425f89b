"""The toy workflow's ``WORKFLOW``: notes to count, a form that lists them, and a grade for having opened it."""

from __future__ import annotations

import sqlite3
from collections.abc import Generator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from erp_sim.actions import Action
from erp_sim.forms.base import Column, FormDefinition, FormHost, Grid, GridRow, MenuItem, OpenForm, Section
from erp_sim.json_values import JsonObject
from erp_sim.odata.entities import INT, STRING, DataCatalog, EntitySet, Property
from erp_sim.workflows import Call, Grader, Rows, TaskPrompt, UserSees, Workflow
from toy_workflow import SCHEMA_FILE


class NoteTask(BaseModel):
    model_config = ConfigDict(frozen=True)
    workflow: ClassVar[str] = "toy"
    task_id: str
    task_set: str
    seed: int
    notes: int

    def instruction(self, *, include_receipt: bool = False) -> str:
        return f"Open the notes and count them: there should be {self.notes}."

    def mapping_rules(self) -> str:
        return "Notes are the rows of ToyNotes."


class NoteList(FormDefinition):
    name = "ToyNotes"
    primary_grid = "NotesGrid"

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rows = [
            GridRow(r["id"], {"Note_Text": r["text"]}) for r in session.db.execute("SELECT * FROM note ORDER BY id")
        ]
        return [Section("NotesGroup", "Notes", grids=[Grid("NotesGrid", "Notes", [Column("Note_Text", "Note")], rows)])]


def _rows(task: NoteTask) -> Rows:
    return {"note": [{"id": n, "text": f"note {n} of task {task.task_id}"} for n in range(1, task.notes + 1)]}


def _count(db: sqlite3.Connection, args: dict[str, Any]) -> tuple[str, JsonObject]:
    count = db.execute("SELECT COUNT(*) FROM note").fetchone()[0]
    return f"There are {count} notes.", {"Count": count}


@dataclass(frozen=True)
class NoteProgress:
    success: bool
    strict_success: bool
    done_fraction: Decimal


class NoteGrade(BaseModel):
    success: bool
    strict_success: bool
    notes: int


def _progress(session: FormHost, target: None) -> NoteProgress:
    opened = any(form.name == "ToyNotes" for form in session.forms)
    return NoteProgress(opened, opened, Decimal(int(opened)))


def _grade(session: FormHost, target: None, state: NoteProgress | None) -> JsonObject:
    state = state or _progress(session, target)
    notes = session.db.execute("SELECT COUNT(*) FROM note").fetchone()[0]
    return {"success": state.success, "strict_success": state.strict_success, "notes": notes}


def _oracle(task: NoteTask) -> Generator[Call, str, None]:
    yield "form_find_menu_item", {"menuItemFilter": "notes"}
    yield "form_open_menu_item", {"name": "ToyNotes"}


CATALOG = DataCatalog(
    entity_sets={
        "Notes": EntitySet(
            "Notes",
            "Notes",
            "note",
            "note n",
            (Property("RecId", "n.id", INT, "Record id."), Property("Text", "n.text", STRING, "The note.")),
            ("Read-only.",),
        )
    },
    path_example="Notes",
    filter_example="Text eq 'note 1'",
    string_example="'note 1'",
    options_example="$filter=Text eq 'note 1'&$top=10",
    create_hint="Notes are read-only.",
    update_hint="Notes are read-only.",
    delete_hint="Notes are read-only.",
)


def _system_prompt(task: NoteTask) -> str:
    return "You count notes in a simulated ERP: open the ToyNotes form, count its rows, tell the user the count."


def user_reply(text: str, view: UserSees) -> tuple[str, bool]:
    """The toy user: a claim of being done is checked against the real state, anything else is told to go on."""
    if "done" in text:
        return ("Thanks, that's it.", True) if view.grade.success else ("The notes are not open yet.", False)
    return "Please open the notes and count them.", False


WORKFLOW: Workflow[NoteTask] = Workflow(
    name="toy",
    schema_file=SCHEMA_FILE,
    shared_rows=dict,
    task_rows=_rows,
    clock=lambda task: "2026-01-05 12:00:00",
    forms={"ToyNotes": NoteList()},
    menu_items={"ToyNotes": MenuItem("Notes", "Display", "Toy > Notes", "ToyNotes")},
    data=lambda: CATALOG,
    actions={"CountNotes": Action("CountNotes", "Count the notes.", (), _count)},
    grader=Grader(model=NoteGrade, target=lambda session: None, progress=_progress, grade=_grade),
    oracle=_oracle,
    system_prompt=_system_prompt,
    user_reply=user_reply,
    task_prompt=TaskPrompt(
        name="notes_task",
        description="The notes to count.",
        text=lambda brief: brief["instruction"],
        kind="note-counting",
        resource_description="The notes to count.",
    ),
)
