"""Consolidation: "no execution, no memory" (GenericAgent).

Every episode is archived in L4. Only an episode the grader marked successful is promoted: its
executed tool sequence, with the task's own values turned into {parameters}, becomes an L3 SOP
(or confirms the existing one), and the calls it actually made yield L2 facts. A failed or
ungraded episode never creates or changes a fact or an SOP, whichever consolidator runs.

Two consolidators share that gate:
- ``deterministic_consolidator`` (offline, the default): parameterizes and folds the tool calls
  by rule; the same episode always gives the same SOP;
- ``LLMConsolidator(model)``: asks a chat model (prompt ``prompts/consolidate.md``) to write the
  SOP as JSON; its answer is validated, and an invalid answer promotes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from erp_sim import formstate
from erp_sim.agents.memory.memory_tools import MEMORY_TOOLS
from erp_sim.agents.memory.store import Fact, MemoryStore, MemoryStoreError, Sop, SopStep
from erp_sim.agents.tokens.prompt_cache import record_call
from erp_sim.agents.types import ChatModel, Message, unset

_REPORT = re.compile(r"\b(EXP-\d{6})\b")
_LINE = re.compile(r"\bline (\d+)\b")
_TYPE = re.compile(r"the (\w+) expense")
_TOTAL = re.compile(r"\bfor ([\d,]+\.\d{2}) [A-Z]{3}\b")
_RECEIPT = re.compile(r"The receipt \(([^)]+)\)")
_MERCHANT = re.compile(r"\bline \d+, (.+?), dated\b")
_DATED = re.compile(r"\bdated (\d{4}-\d{2}-\d{2})\b")
_ROW = re.compile(r"\bRow \d+ of grid\b")
_TITLE = re.compile(r" - [^()]+ \((Trv\w+)\)")  # a form title's task-specific part (report purpose, merchant)
CHARGE_FIELDS = {
    "TrvExpTrans_ExpSubCategory": "{subcategory}",
    "TrvExpTrans_TransDate": "{date}",
    "TrvExpTrans_AmountCurr": "{amount}",
}
EACH_CHARGE = "for each receipt charge"
NEXT_PAGE = "while the grid has a next page and the target row is not shown"

Consolidator = Callable[[dict[str, Any], str], list[Fact | Sop]]


class ConsolidatorUse(BaseModel):
    """An LLM consolidator's model and what its calls for one episode cost, in both units apart: o200k counts
    of ours and what its service reported. Kept in the row's ``memory``, not in its metrics (which are the
    episode's own); ``--price consolidator=...`` prices it into the configuration's cost."""

    model: dict[str, Any] = Field(description="Its settings, as a row's sampling names a role's (ModelSettings).")
    calls: int = Field(0, description="Its model calls for this episode (0: the episode was not promoted).")
    input_tokens: int = Field(0, description="o200k tokens of its requests.")
    output_tokens: int = Field(0, description="o200k tokens of its answers.")
    reported_input_tokens: int = Field(0, description="Prompt tokens as its service reported them (0: none).")
    reported_output_tokens: int = Field(0, description="Completion tokens as its service reported them (0: none).")
    provider_cached_tokens: int | None = Field(
        None, description="Cached prompt tokens as its service reported them (None: never reported)."
    )
    provider_cache_write_tokens: int | None = Field(
        None, exclude_if=unset, description="Prompt tokens its service wrote to its cache (absent: never reported)."
    )
    served_models: list[str] = Field(
        default_factory=list, exclude_if=lambda names: not names, description="The models its service named."
    )


class Consolidation(BaseModel):
    archive_key: str = Field(description="Where the episode went in L4.")
    success: bool
    promoted: list[str] = Field(default_factory=list, description="Keys of the facts and SOPs written or confirmed.")
    note: str = ""
    consolidator: ConsolidatorUse | None = Field(
        None, exclude_if=unset, description="--consolidator API:MODEL: its model and calls (absent: offline)."
    )


# -- the gate -----------------------------------------------------------------------------------
def consolidate_episode(store: MemoryStore, trajectory: Any, consolidator: Consolidator | None = None) -> Consolidation:
    """Archive ``trajectory`` in L4; promote it to L2/L3 only if it was graded successful."""
    episode = trajectory.deterministic_dump() if hasattr(trajectory, "deterministic_dump") else dict(trajectory)
    success = bool((episode.get("grade") or {}).get("success"))
    task_id, termination = str(episode.get("task_id", "task")), str(episode.get("termination", ""))
    if not success:
        key = store.archive(task_id, False, termination, False, episode)
        return Consolidation(archive_key=key, success=False, note="not graded successful: archived in L4 only")
    next_key = f"{len(store.archive_keys()) + 1:06d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', task_id)[:80] or 'task'}"
    try:
        entries = (consolidator or deterministic_consolidator)(episode, next_key)
    except (ValidationError, ValueError, MemoryStoreError) as exc:
        key = store.archive(task_id, True, termination, False, episode)
        return Consolidation(archive_key=key, success=True, note=f"consolidator failed, nothing promoted: {exc}")
    promoted = [merge_entry(store, entry, next_key) for entry in entries]
    key = store.archive(task_id, True, termination, bool(promoted), episode)
    assert key == next_key
    store.rebuild_index()
    return Consolidation(archive_key=key, success=True, promoted=promoted)


def merge_entry(store: MemoryStore, entry: Fact | Sop, archive_key: str) -> str:
    """Write ``entry``, or confirm the stored one: verified_by grows; a shorter verified SOP replaces longer steps."""
    existing_text = store.read(entry.key)
    if existing_text is not None:
        existing = type(entry).model_validate_json(existing_text)
        verified = sorted({*existing.verified_by, archive_key})
        keep_new = isinstance(entry, Sop) and isinstance(existing, Sop) and len(entry.steps) < len(existing.steps)
        entry = (entry if keep_new else existing).model_copy(update={"verified_by": verified})
    else:
        entry = entry.model_copy(update={"verified_by": [archive_key]})
    store.put(entry)
    return entry.key


# -- the deterministic consolidator -------------------------------------------------------------
def task_parameters(instruction: str) -> dict[str, str]:
    """Task-specific values named in the instruction: parameter name -> value."""
    found = {}
    for name, pattern in (
        ("report", _REPORT),
        ("line", _LINE),
        ("expense_type", _TYPE),
        ("total", _TOTAL),
        ("receipt", _RECEIPT),
        ("merchant", _MERCHANT),
        ("dated", _DATED),
    ):
        match = pattern.search(instruction)
        if match:
            found[name] = match.group(1)
    return found


def _parameterize(value: Any, values: dict[str, str]) -> Any:
    """Replace the task's own values by {name} inside strings, lists and dicts."""
    if isinstance(value, str):
        for name, raw in sorted(values.items(), key=lambda item: -len(item[1])):
            if len(raw) > 2 or value == raw:  # short values (a line number) only when they are the whole string
                value = value.replace(raw, f"{{{name}}}") if len(raw) > 2 else f"{{{name}}}"
        return value
    if isinstance(value, list):
        return [_parameterize(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _parameterize(v, values) for k, v in value.items()}
    return value


def _step(name: str, arguments: dict, result: str, values: dict[str, str]) -> SopStep:
    repeat = ""
    if name == "form_set_control_values":
        controls = arguments.get("controlValues") or []
        if any(c.get("controlName") in CHARGE_FIELDS for c in controls if isinstance(c, dict)):
            arguments = {
                **arguments,
                "controlValues": [
                    {**c, "value": CHARGE_FIELDS.get(c.get("controlName"), c.get("value"))} for c in controls
                ],
            }
            repeat = EACH_CHARGE
    if name == "form_select_grid_row" and "rowNumber" in arguments:
        row = (
            "{line}"
            if arguments.get("gridName") == "ExpenseLinesGrid" and arguments["rowNumber"] == values.get("line")
            else "{row}"
        )
        arguments = {**arguments, "rowNumber": row}
    if name == "form_click_control" and arguments.get("controlName") == "NewLine":
        repeat = EACH_CHARGE
    if arguments.get("actionId") == "LoadNextPage":
        repeat = NEXT_PAGE
    envelope = formstate.parse_response(result) if result else None
    expect = str(envelope.get("Result", "")) if envelope else ""
    if repeat:
        expect = re.sub(r"\d[\d,]*\.\d{2}", "{amount}", expect)
    expect = _ROW.sub("Row {row} of grid", expect)
    expect = _TITLE.sub(r" (\1)", re.sub(r"^\d+ itemized line", "{n} itemized line", expect))
    if values.get("line"):
        expect = re.sub(rf"\bline {re.escape(values['line'])}\b", "line {line}", expect)
    return SopStep(
        tool=name, arguments=_parameterize(arguments, values), repeat=repeat, expect=_parameterize(expect, values)
    )


def executed_steps(messages: list[Message]) -> list[tuple[str, dict, str]]:
    """(tool, arguments, result text) of every ERP call, plus ("say", {"text"}, user's reply) turns."""
    results = {m.get("tool_call_id"): m.get("content") or "" for m in messages if m.get("role") == "tool"}
    steps: list[tuple[str, dict, str]] = []
    for position, message in enumerate(messages[2:], start=2):
        if message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls") or []
        for call in calls:
            name = call["function"]["name"]
            if name in MEMORY_TOOLS:
                continue
            try:
                arguments = json.loads(call["function"].get("arguments") or "{}")
            except json.JSONDecodeError:
                continue
            steps.append((name, arguments if isinstance(arguments, dict) else {}, str(results.get(call["id"], ""))))
        if not calls and message.get("content"):
            reply = next(
                (m.get("content") or "" for m in messages[position + 1 : position + 2] if m.get("role") == "user"), ""
            )
            steps.append(("say", {"text": message["content"]}, reply))
    return steps


def _fold(steps: list[SopStep]) -> list[SopStep]:
    """Collapse repeats: a repeated step, or a repeated pair of steps (NewLine, set values), is kept once."""
    folded: list[SopStep] = []
    for step in steps:
        folded.append(step)
        for width in (1, 2):
            tail = folded[-width:]
            if len(folded) >= 2 * width and tail == folded[-2 * width : -width] and all(s.repeat for s in tail):
                del folded[-width:]
                break
    return folded


def deterministic_consolidator(episode: dict[str, Any], archive_key: str) -> list[Fact | Sop]:
    """An SOP (and facts) from a graded successful episode's executed calls, by rule."""
    messages = episode.get("messages") or []
    instruction = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    values = task_parameters(instruction)
    expense_type = values.get("expense_type", "expense")
    raw_steps = executed_steps(messages)
    steps = []
    for name, arguments, result in raw_steps:
        if name == "say":
            steps.append(
                SopStep(
                    tool="say",
                    arguments={
                        "text": _parameterize(re.sub(r"\b\d+ charges\b", "{n} charges", arguments["text"]), values)
                    },
                    expect=_parameterize(result, values),
                )
            )
        else:
            steps.append(_step(name, arguments, result, values))
    if not steps:
        raise ValueError("the episode made no tool call: nothing to learn")
    slug = re.sub(r"[^a-z0-9]+", "_", expense_type.lower()).strip("_") or "expense"
    sop = Sop(
        key=f"sop/itemize_{slug}_expense",
        summary=f"itemize a {expense_type} expense line from its receipt ({len(_fold(steps))} steps)",
        goal=f"Itemize line {{line}} of expense report {{report}} ({expense_type}, {{total}}): one saved itemized line "
        "per receipt charge, remaining 0.00, itemization form closed.",
        parameters=sorted({*values, "subcategory", "date", "amount"}),
        preconditions=[
            "The instruction names the report {report} and the line {line}.",
            "The receipt {receipt} is attached to the line.",
        ],
        steps=_fold(steps),
        expected_results=[s.expect for s in _fold(steps) if s.tool == "form_save_form" and s.expect][-1:],
        failure_handling=[
            "Remaining amount not 0.00 after saving: compare the saved lines with the receipt charges, fix or add lines, save again.",
            "A close with unsaved edits is refused once: save first (a second close discards the edits).",
            "An error changes nothing: read its message, fix the call and retry.",
            "The target row is not on the first page: load the next page (actionId LoadNextPage).",
        ],
    )
    facts = [
        Fact(
            key=f"fact/menu_item_{arguments['name'].lower()}",
            summary=f"form_open_menu_item name={arguments['name']} type={arguments.get('type', 'Display')} opens "
            f"{_form_name(result) or 'its form'} directly",
            text=f"form_open_menu_item with name {arguments['name']!r} and type {arguments.get('type', 'Display')!r} "
            f"opens {_form_name(result) or 'its form'}; no form_find_menu_item search is needed.",
        )
        for name, arguments, result in raw_steps
        if name == "form_open_menu_item"
        and isinstance(arguments.get("name"), str)
        and re.fullmatch(r"\w{1,60}", arguments["name"])
    ]
    return [sop, *{fact.key: fact for fact in facts}.values()]


def _form_name(result: str) -> str:
    state = formstate.form_state(result) if result else None
    return str(state.get("Name")) if state else ""


# -- the LLM consolidator -----------------------------------------------------------------------
def consolidation_prompt() -> str:
    return resources.files("erp_sim.agents.memory").joinpath("prompts/consolidate.md").read_text(encoding="utf-8")


class LLMConsolidator:
    """Asks a chat model to write the SOP of a graded successful episode (validated; invalid -> nothing)."""

    def __init__(self, model: ChatModel):
        self.model = model

    def __call__(self, episode: dict[str, Any], archive_key: str) -> list[Fact | Sop]:
        messages = episode.get("messages") or []
        instruction = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        calls = [
            {"tool": name, "arguments": arguments, "result": _result_line(result)}
            for name, arguments, result in executed_steps(messages)
        ]
        request = consolidation_prompt().format(
            instruction=instruction,
            parameters=json.dumps(task_parameters(instruction), sort_keys=True),
            calls=json.dumps(calls, ensure_ascii=False, indent=1),
            schema=json.dumps(Sop.model_json_schema(), sort_keys=True),
        )
        asked: list[Message] = [{"role": "user", "content": request}]
        response = self.model.complete(asked)
        record_call("consolidator", asked, None, response)  # counted by the sequential run's meter
        answer = response.message.get("content") or ""
        match = re.search(r"\{.*\}", answer, re.DOTALL)
        if not match:
            raise ValueError("the consolidation model returned no JSON object")
        data = json.loads(match.group(0))
        data["verified_by"] = []
        return [Sop.model_validate(data)]


def _result_line(result: str) -> str:
    envelope = formstate.parse_response(result) if result else None
    return str(envelope.get("Result", "")) if envelope else result[:300]
