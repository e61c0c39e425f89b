"""Facts a tool-using agent needs, read offline from D365-shaped tool responses, and the ACON-style summary of them.

The ERP answers every tool call with a JSON text block shaped like the D365 ERP MCP
server's: ``{"SessionId", "Result", "Messages": [{"Level", "Text"}], "FormState": {"Name",
"Caption", "Form": {"Input": [...], "RealInput": [...], "Grid": [{"Name", "Columns",
"Rows": [{"RowNumber", "Selected", "Values": {...}}], ...}], "Group": [{"Children": {...}}],
...}, ...}, ...}``. This module folds a transcript into ``Facts``: the generic ones (actions,
warnings, the current form, what the user said) and the task's, which its workflow reads
(``erp_sim.workflows.faces.SummaryFacts``: for itemization the report, line, receipt items,
itemization amounts and lines), and renders them as the sections an ACON-style summary has:
task, key variables, completed, to-do, guardrails. ``render_observation`` rewrites one response
compactly (ACON's observation refinement, offline).

Everything here is deterministic and tolerant: a missing piece of a response is skipped,
a response that is not JSON only contributes its text to the action log.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from erp_sim import response_keys as K
from erp_sim import workflows
from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import Message
from erp_sim.formstate import grid_has_next_page, grid_row_values, parse_response, text_of, walk_controls
from erp_sim.workflows.faces import SummaryFacts

MAX_ACTIONS_SHOWN = 15
MAX_NOTES = 8


class Facts(BaseModel):
    """What the transcript so far has shown; later observations win. ``task``: the workflow's facts of
    the task (its ``SummaryFacts.new`` model)."""

    workflow: str = Field(description="The registry name of the workflow whose facts ``task`` holds.")
    task: Any = Field(description="The workflow's facts of the task (itemization: ExpenseFacts).")
    current_form: str = ""
    current_caption: str = ""
    forms_seen: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list, description="One line per tool call: call -> result.")
    notes: list[str] = Field(default_factory=list, description="Latest warnings and errors, deduplicated.")
    user_messages: list[str] = Field(default_factory=list)
    open_calls: dict[str, str] = Field(default_factory=dict, description="Calls still waiting for their result.")


def summary_facts(facts: Facts) -> SummaryFacts:
    """The workflow's part of reading and rendering ``facts``."""
    return workflows.harness(facts.workflow).facts


# -- reading one response: erp_sim.formstate is the one reader of the response shape ----------
def observe_response(facts: Facts, response: dict[str, Any]) -> None:
    """Fold one parsed tool response into ``facts``."""
    for message in response.get(K.MESSAGES) or []:
        if isinstance(message, dict) and message.get(K.LEVEL) in (K.LEVEL_WARNING, K.LEVEL_ERROR):
            _note(facts, f"{message[K.LEVEL]}: {text_of(message.get(K.TEXT))}")
    state = response.get(K.FORM_STATE)
    if not isinstance(state, dict):
        return
    name, caption = text_of(state.get(K.NAME)), text_of(state.get(K.CAPTION))
    facts.current_form, facts.current_caption = name, caption
    if name and name not in facts.forms_seen:
        facts.forms_seen.append(name)
    summary_facts(facts).observe(facts.task, name, caption, state)


def _note(facts: Facts, note: str) -> None:
    if note in facts.notes:
        facts.notes.remove(note)
    facts.notes.append(note)
    del facts.notes[:-MAX_NOTES]


# -- reading a transcript ------------------------------------------------------------------
def compact_arguments(arguments: str, limit: int = 60) -> str:
    try:
        value = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return _shorten(arguments, limit)
    if not isinstance(value, dict):
        return _shorten(json.dumps(value, ensure_ascii=False), limit)
    return ", ".join(f"{k}={_shorten(text_of(v), limit)}" for k, v in value.items())


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_line(content: str) -> str:
    """One line saying what a tool response reported."""
    response = parse_response(content)
    if response is None:
        return _shorten(content, 100)
    parts = [text_of(response.get(K.RESULT))] if response.get(K.RESULT) else []
    errors = [
        text_of(m.get(K.TEXT))
        for m in response.get(K.MESSAGES) or []
        if isinstance(m, dict) and m.get(K.LEVEL) == K.LEVEL_ERROR
    ]
    if errors:
        parts.append("error: " + "; ".join(errors))
    state = response.get(K.FORM_STATE)
    if isinstance(state, dict) and state.get(K.NAME):
        parts.append(f"form {state[K.NAME]}")
    return _shorten(" | ".join(parts) or "(no result text)", 160)


def observe_messages(facts: Facts, messages: list[Message]) -> None:
    """Fold transcript messages (any roles) into ``facts``, in order."""
    calls = facts.open_calls
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                calls[call.get("id", "")] = (
                    f"{function.get('name', '?')}({compact_arguments(function.get('arguments', ''))})"
                )
        elif role == "tool":
            content = message_text(message.get("content"))
            call = calls.pop(message.get("tool_call_id", ""), f"{message.get('name', 'tool')}(?)")
            facts.actions.append(f"{call} -> {result_line(content)}")
            response = parse_response(content)
            if response is not None:
                observe_response(facts, response)
            elif content.lower().startswith(("error", "toolerror", "invalid")):
                _note(facts, _shorten(content, 160))
        elif role == "user":
            facts.user_messages.append(_shorten(message_text(message.get("content")), 200))
            del facts.user_messages[:-3]


def copy_facts(facts: Facts) -> Facts:
    """An independent copy, cheaply: containers are copied (the task's too), their items are replaced, never mutated."""
    return _copy(facts, task=_copy(facts.task))


def _copy(model: BaseModel, **update: Any) -> Any:
    containers = {name: type(value)(value) for name, value in model.__dict__.items() if isinstance(value, (list, dict))}
    return model.model_copy(update={**containers, **update})


def facts_from_messages(messages: list[Message], task: str = "", *, workflow: str | None = None) -> Facts:
    """The facts of ``messages`` about ``task`` (its instruction) in ``workflow``: by default the workflow the
    instruction reads as (``erp_sim.workflows.harness_for``)."""
    face = workflows.harness(workflow) if workflow is not None else workflows.harness_for(task)
    facts = Facts(workflow=face.name, task=face.facts.new(task))
    observe_messages(facts, messages)
    return facts


# -- rendering -----------------------------------------------------------------------------
def task_line(task: str, limit: int = 400) -> str:
    return _shorten(task, limit) if task else "(no task instruction)"


def key_variable_lines(facts: Facts) -> list[str]:
    lines = summary_facts(facts).key_variables(facts.task)
    if facts.current_form:
        lines.append(
            f"Current form: {facts.current_form}" + (f" ({facts.current_caption})" if facts.current_caption else "")
        )
    return lines or ["(none observed yet)"]


def todo_lines(facts: Facts) -> list[str]:
    return summary_facts(facts).todo(facts.task, facts.current_form)


def completed_lines(facts: Facts) -> list[str]:
    shown = facts.actions[-MAX_ACTIONS_SHOWN:]
    earlier = len(facts.actions) - len(shown)
    lines = [f"({earlier} earlier actions not listed)"] if earlier else []
    lines += [f"- {action}" for action in shown]
    return lines or ["(no tool calls yet)"]


def guardrails(facts: Facts) -> tuple[str, ...]:
    """The task's rules (its workflow's)."""
    return summary_facts(facts).guardrails


def guardrail_lines(facts: Facts) -> list[str]:
    lines = [f"- {rule}" for rule in guardrails(facts)]
    lines += [f"- Seen: {note}" for note in facts.notes]
    return lines


def render_summary(task: str, facts: Facts) -> str:
    """The ACON-style sections, as plain text."""
    sections = [
        ("Task", [task_line(task)]),
        ("Key variables", key_variable_lines(facts)),
        ("Completed", completed_lines(facts)),
        ("To-do", [f"- {line}" for line in todo_lines(facts)]),
        ("Guardrails", guardrail_lines(facts)),
    ]
    if facts.user_messages:
        sections.insert(3, ("User said", [f"- {m}" for m in facts.user_messages]))
    return "\n\n".join(f"## {title}\n" + "\n".join(lines) for title, lines in sections)


def render_observation(content: str, limit: int = 2000) -> str:
    """A compact, deterministic rewrite of one tool response: result, messages, values, grids.

    Drops what the agent never acts on (session and activity ids, deep links, labels,
    guidance, button metadata) and keeps every control value and grid row.
    """
    if not content.strip():
        return "(empty response)"
    response = parse_response(content)
    if response is None:
        return content if len(content) <= limit else content[: limit // 2] + "\n…\n" + content[-limit // 2 :]
    lines = []
    if response.get(K.RESULT):
        lines.append(f"Result: {text_of(response[K.RESULT])}")
    for message in response.get(K.MESSAGES) or []:
        if isinstance(message, dict):
            lines.append(f"{message.get(K.LEVEL, 'Info')}: {text_of(message.get(K.TEXT))}")
    state = response.get(K.FORM_STATE)
    if isinstance(state, dict):
        head = f"Form {text_of(state.get(K.NAME))}"
        if state.get(K.CAPTION):
            head += f" ({text_of(state[K.CAPTION])})"
        lines.append(head)
        for control_type, control in walk_controls(state.get(K.FORM)):
            if control_type == K.GRID:
                lines += _grid_lines(control)
            elif control_type not in K.CONTAINER_TYPES and K.VALUE in control:
                lines.append(f"  {control.get(K.NAME, '?')} = {text_of(control.get(K.VALUE))}")
        buttons = [name for b in state.get(K.BUTTONS) or [] if isinstance(b, dict) and (name := b.get(K.NAME))]
        if buttons:
            lines.append("Buttons: " + ", ".join(buttons))
    if not lines:
        lines.append(_shorten(content, limit))
    return "\n".join(lines)


def _grid_lines(grid: dict[str, Any]) -> list[str]:
    rows = grid_row_values(grid)
    columns = [c.get(K.NAME, "?") if isinstance(c, dict) else str(c) for c in grid.get(K.COLUMNS) or []]
    lines = [f"  Grid {grid.get(K.NAME, '?')} ({len(rows)} rows): " + " | ".join(columns)]
    for number, selected, values in rows:
        cells = [values.get(c, "") for c in columns] if columns else list(values.values())
        lines.append(f"    {number}{'*' if selected else ''}: " + " | ".join(cells))
    if grid_has_next_page(grid):
        lines.append("    (more rows on the next page)")
    return lines
