"""The toy workflow as the agent harness sees it: the scripted agent's procedure (open the notes, count the
rows it sees, report), the summary's facts, a failure category of its own, the LLM user's context."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from erp_sim import response_keys as K
from erp_sim.form_index import FormIndex
from erp_sim.workflows.faces import (
    Decision,
    FailureRules,
    HarnessFace,
    MessageReading,
    ScriptedProcedure,
    Seen,
    SopRules,
    SummaryFacts,
)

_EXPECTED = re.compile(r"there should be (\d+)")


def _brief(instruction: str) -> int | None:
    match = _EXPECTED.search(instruction)
    return int(match.group(1)) if match else None


def _read_form(state: dict[str, Any], form: FormIndex, brief: int | None) -> int | None:
    return len(form.grid_rows("NotesGrid")) if state.get(K.NAME) == "ToyNotes" else None


def _fold_result(reading: dict[str, Any], counted: int, position: int, brief: int | None) -> None:
    reading["counted"] = counted


def _fold_user(reading: dict[str, Any], said: bool, position: int, brief: int | None) -> None:
    reading["told_to_go_on"] = reading["told_to_go_on"] or said


class NotesView:
    def __init__(self, seen: Seen):
        self.seen, self.counted = seen, seen.read["counted"]


def _decide(view: NotesView, ask: bool) -> Decision:
    if view.counted is not None:
        return f"There are {view.counted} notes: done."
    if view.seen.last_tool == "form_find_menu_item":
        return "form_open_menu_item", {"name": "ToyNotes"}
    return "form_find_menu_item", {"menuItemFilter": "notes"}


PROCEDURE = ScriptedProcedure(
    read_instruction=_brief,
    unreadable=lambda brief: "How many notes should there be?" if brief is None else None,
    sop_key=lambda brief: "sop/count_notes",
    reading=MessageReading(
        initial={"counted": None, "told_to_go_on": False},
        read_form=_read_form,
        fold_result=_fold_result,
        read_user=lambda text, brief: "go on" in text.lower(),
        fold_user=_fold_user,
    ),
    view=NotesView,
    decide=_decide,
)


class NoteFacts(BaseModel):
    rows_seen: int = 0


def _observe(facts: NoteFacts, name: str, caption: str, state: dict[str, Any]) -> None:
    if name == "ToyNotes":
        grid: dict[str, Any] = next(iter((state.get(K.FORM) or {}).get(K.GRID) or []), {})
        facts.rows_seen = len(grid.get(K.ROWS) or [])


FACTS = SummaryFacts(
    new=lambda task: NoteFacts(),
    observe=_observe,
    key_variables=lambda facts: [f"Notes seen: {facts.rows_seen}"] if facts.rows_seen else [],
    todo=lambda facts, form: ["Tell the user the count."] if facts.rows_seen else ["Open the notes."],
    guardrails=("Count every note.",),
)


def _classify(grade: Any, said: Sequence[str]) -> str | None:
    return "notes_unopened" if grade is not None and not grade.success else None


def _sop(values: dict[str, str], steps: int) -> dict[str, Any]:
    return {
        "key": "sop/count_notes",
        "summary": f"count the notes ({steps} steps)",
        "goal": "Open ToyNotes and tell the user that there are {notes} notes.",
        "parameters": sorted(values),
    }


SOP = SopRules(
    parameters=lambda instruction: {"notes": str(_brief(instruction))} if _brief(instruction) is not None else {},
    step=lambda tool, arguments, values: (arguments, ""),
    expect=lambda text, values: text,
    say=lambda text: text,
    sop=_sop,
    prompt=Path(__file__).with_name("consolidate.md"),
)

HARNESS = HarnessFace(
    name="toy",
    recognizes=lambda instruction: "count them" in instruction,
    scripted=PROCEDURE,
    user_context=Path(__file__).with_name("user_context.md"),
    user_context_fields=lambda task, grade: {"instruction": task.instruction(), "done": str(grade.success)},
    facts=FACTS,
    failures=FailureRules(categories=("notes_unopened",), classify=_classify),
    sop=SOP,
)
