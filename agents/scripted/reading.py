"""What the scripted agent reads: tool results, the user's messages and the refined (compact) form text.

The generic part: a response's FormState (or the FormState-shaped dict of a refined observation,
``erp_sim.agents.facts.render_observation``'s text), the memory tools' SOP, which call a result
answers. What a result or a user message shows of the task is the workflow's
(``erp_sim.workflows.faces.ScriptedProcedure``: ``read_form``, ``read_user`` and their folds).
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import and_, eq, is_
from typing import Any, NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.agents.memory.memory_tools import MEMORY_TOOLS
from erp_sim.agents.memory.store import parse_steps
from erp_sim.agents.tokens import next_false
from erp_sim.agents.types import Message, unchanged_prefix
from erp_sim.form_index import NO_FORM, READ_CACHE_SIZE, FormIndex, form_index_of
from erp_sim.workflows.faces import ScriptedProcedure


# -- reading one message: each message is read once, not at every step (the same transcript
# messages are shown again and again; re-parsing them made every step cost the whole history).
# Cached by text; the results are shared between steps and must not be mutated.
class ToolResult(NamedTuple):
    """What one tool result shows: its FormState (None: no form), that form indexed, and what the
    workflow reads off it (``ScriptedProcedure.read_form``; None: nothing)."""

    state: dict | None
    form: FormIndex
    shown: Any


@lru_cache(maxsize=READ_CACHE_SIZE)
def read_tool_result(content: str, procedure: ScriptedProcedure, brief: Any) -> ToolResult:
    state = formstate.form_state(content) if formstate.parse_response(content) else parse_refined(content)
    if not state:
        return ToolResult(state, NO_FORM, None)
    form = form_index_of(state)
    return ToolResult(state, form, procedure.reading.read_form(state, form, brief))


_REFINED_FORM = re.compile(r"^Form (\w+)")
_REFINED_CONTROL = re.compile(r"^  (\w+) = (.*)$")
_REFINED_GRID = re.compile(r"^  Grid (\w+) \(\d+ rows\): (.*)$")
_REFINED_ROW = re.compile(r"^    (\d+)(\*?): (.*)$")


def parse_refined(text: str) -> dict | None:
    """A FormState-shaped dict from a refined observation (see ``render_observation``), or None."""
    state: dict | None = None
    grid: dict | None = None
    for line in text.splitlines():
        if match := _REFINED_FORM.match(line):
            state = {
                K.NAME: match.group(1),
                K.CAPTION: line[len(match.group(0)) :].strip(" ()"),
                K.FORM: {K.INPUT: [], K.GRID: []},
            }
        elif state is None:
            continue
        elif match := _REFINED_GRID.match(line):
            grid = {K.NAME: match.group(1), K.COLUMNS: match.group(2).split(" | "), K.ROWS: [], K.PAGINATION: {}}
            state[K.FORM][K.GRID].append(grid)
        elif grid is not None and (match := _REFINED_ROW.match(line)):
            values = dict(zip(grid[K.COLUMNS], match.group(3).split(" | ")))
            grid[K.ROWS].append({K.ROW_NUMBER: match.group(1), K.IS_SELECTED: bool(match.group(2)), K.VALUES: values})
        elif grid is not None and line.strip() == "(more rows on the next page)":
            grid[K.PAGINATION][K.HAS_NEXT_PAGE] = True
        elif match := _REFINED_CONTROL.match(line):
            state[K.FORM][K.INPUT].append({K.NAME: match.group(1), K.VALUE: match.group(2)})
            grid = None
    return state


# -- reading a transcript: the scripted agent's fold over the messages it is shown ---------------
def parse_sop(text: str) -> dict | None:
    """The steps of an SOP as memory_read shows it, or None (an error text)."""
    steps = parse_steps(text) if text.startswith("sop/") else []
    return {"steps": [step.model_dump() for step in steps]} if steps else None


def _initial_state(procedure: ScriptedProcedure) -> dict[str, Any]:
    """The reading before any message: one dict, copied after every message (a checkpoint); the workflow's
    keys after the generic ones."""
    return {
        "sop_indexed": False,  # the memory index (a system message) lists the task's SOP
        "long_term_update_requested": False,
        "unit_calls": (),  # call ids of the latest assistant message: a tool result's call must be there
        "state": None,  # FormState of the latest tool result
        "form": NO_FORM,  # that FormState's grids and controls by name
        "last_tool": None,
        "last_call": None,  # the call id of the latest tool result (its arguments are looked up at the end)
        "seen_tool_result": False,
        "sop": None,  # the SOP as memory_read returned it
        "sop_read": False,
        **procedure.reading.initial,
    }


class Reading:
    """What the messages shown so far say, read in order (the part of ``View`` that depends on every message).

    The state after each message is kept (``checkpoints``), so the next call reads only from the first
    message that differs from the last call's list: not the very object with the values it had when read
    (a shallow copy of each is kept: a content or calls replaced in the same dict is read again), nor a
    user message that reads the same (a working-memory block re-rendered with the same receipt
    items and no confirmation). Full history then reads only its new messages, a policy that rewrites
    one older message (head_tail) reads from there. What the list's sender vouches is unchanged since the
    last list (``types.unchanged_prefix``: the runner's transcript, full history's context) is not
    compared at all, so such a call costs what is new; any other list is compared whole. The result is
    what reading the whole list gives, where a tool result's call is looked up among all the list's calls:
    the shortcut is taken only while every result's call is in its own unit and no call id ever stood for
    two different calls.
    """

    def __init__(self, instruction: str, procedure: ScriptedProcedure, brief: Any) -> None:
        self.instruction, self.procedure, self.brief = instruction, procedure, brief
        self.sop_wanted = procedure.sop_key(brief) + ":"  # as the memory index lists it
        self.messages: list[Message] = []  # the objects read, and a shallow copy of each as it was read
        self.copies: list[Message] = []
        self.source: list[Message] | None = None  # the list they were read from (what its sender vouches for)
        self.checkpoints: list[dict[str, Any]] = [_initial_state(procedure)]  # the state after messages[:k]
        self.calls: dict[object, tuple[object, object]] = {}  # call id -> (tool name, arguments text), ever seen
        self.regular = True  # every result's call in its unit and no id for two calls: the next call may resume
        self.now = self.checkpoints[0]  # the state after the whole list
        self.arguments: object = None  # the arguments text of the latest tool result's call
        self.derived: dict[Any, Any] = {}  # what a workflow's view derives from read values, kept across calls

    @classmethod
    def of(
        cls, messages: list[Message], instruction: str, procedure: ScriptedProcedure, brief: Any, last: Reading | None
    ) -> Reading:
        usable = (
            last is not None
            and last.regular
            and last.procedure is procedure
            and (instruction, brief) == (last.instruction, last.brief)
        )
        if usable and last is not None:
            start = last._resume_point(messages)
            if start and last._read(messages, start, last.calls):
                return last
        reading = cls(instruction, procedure, brief)
        made = [
            (c["id"], c["function"]["name"], c["function"].get("arguments"))
            for m in messages
            for c in m.get("tool_calls") or []
        ]
        calls = {call_id: (name, arguments) for call_id, name, arguments in made}  # a repeated id: its last call
        reading.regular = len(calls) == len(made)
        reading._read(messages, 0, calls)
        if not reading.regular:  # what one map over the list says (a repeated id keeps only its last call)
            reading.now["long_term_update_requested"] = any(
                name == "start_long_term_update" for name, _ in calls.values()
            )
        return reading

    def _resume_point(self, messages: list[Message]) -> int:
        """How many leading messages read as the last list's did (the checkpoint to read on from)."""
        shared = min(len(messages), len(self.messages))
        kept = unchanged_prefix(messages, self.source, len(self.messages))  # vouched for: not compared
        if kept == shared:
            return shared
        whole = not kept and len(messages) == shared
        shown = messages if whole else messages[kept:shared]
        read = self.messages if not kept else self.messages[kept:shared]  # (map stops at the shorter)
        copies = self.copies if not kept and len(self.copies) == shared else self.copies[kept:shared]
        # the common case, two passes in C: the very objects, each equal to its copy (a dict compared in C)
        if all(map(is_, shown, read)) and shown == copies:
            return shared
        same = list(map(and_, map(is_, shown, read), map(eq, shown, copies)))
        start = next_false(same, 0)
        while start is not None and self._reads_the_same(messages, kept + start):
            start = next_false(same, start + 1)
        return shared if start is None else kept + start

    def _reads_the_same(self, messages: list[Message], at: int) -> bool:
        """Two user messages (not the first) that read alike at the same position leave the same state
        (the old one as it was read, its copy: a message changed in place is compared as read)."""
        new, old = messages[at], self.copies[at]
        if not at or new.get("role") != "user" or old.get("role") != "user":
            return False
        if new is messages[0] or self.messages[at] is self.messages[0]:
            return False
        new_text, old_text = new.get("content") or "", old.get("content") or ""
        if not isinstance(new_text, str) or not isinstance(old_text, str):
            return False
        read_user, brief = self.procedure.reading.read_user, self.brief
        return read_user(new_text, brief) == read_user(old_text, brief)

    def _read(self, messages: list[Message], start: int, calls: dict[object, tuple[object, object]]) -> bool:
        """Read ``messages[start:]`` on from the checkpoint before them; False when a call id stands for another
        call than before, or a result's call is not in its unit (this reading is then irregular, never resumed:
        the list is read whole instead). The lists are cut and extended in place (work for the new messages
        only, not a copy of the history at every call)."""
        known = self.calls
        for m in messages[start:]:
            for c in m.get("tool_calls") or []:
                call = (c["function"]["name"], c["function"].get("arguments"))
                if known.setdefault(c["id"], call) != call:
                    self.regular = False
        if start and not self.regular:
            return False
        state = dict(self.checkpoints[start])
        checkpoints = self.checkpoints
        del checkpoints[start + 1 :]
        first = messages[0] if messages else None
        for position in range(start, len(messages)):
            message = messages[position]
            if not self._read_one(state, message, position, first, calls) and start:
                self.regular = False
                return False
            checkpoints.append(dict(state))
        self.now = checkpoints[-1]
        read = messages[start:]
        for kept, entries in ((self.messages, read), (self.copies, map(dict, read))):
            del kept[start:]
            kept.extend(entries)
        self.source = messages
        last = calls.get(self.now["last_call"])
        self.arguments = last[1] if last is not None else None
        return True

    def _read_one(
        self,
        state: dict[str, Any],
        message: Message,
        position: int,
        first: Message | None,
        calls: dict[object, tuple[object, object]],
    ) -> bool:
        """Fold one message into ``state``; False when it is a tool result whose call is not in its unit."""
        role = message.get("role")
        if role == "system" and not state["sop_indexed"]:
            state["sop_indexed"] = self.sop_wanted in str(message.get("content") or "")
        if role == "assistant":
            made = message.get("tool_calls") or []
            state["unit_calls"] = tuple([c["id"] for c in made])
            if "start_long_term_update" in [c["function"]["name"] for c in made]:
                state["long_term_update_requested"] = True
        elif role != "tool":
            state["unit_calls"] = ()
        if not position:
            return True
        content = message.get("content") or ""
        if role == "tool":
            call_id = message.get("tool_call_id")
            regular = call_id in state["unit_calls"]
            if not regular:
                self.regular = False
            call = calls.get(call_id)
            name = call[0] if call is not None else None
            if name in MEMORY_TOOLS:
                if name == "memory_read":
                    state["sop_read"] = True
                    state["sop"] = parse_sop(content) or state["sop"]
                return regular
            state["seen_tool_result"] = True
            state["last_tool"] = name if call is not None else message.get("name")
            state["last_call"] = call_id
            state["state"], state["form"], shown = read_tool_result(content, self.procedure, self.brief)
            if shown is not None:
                self.procedure.reading.fold_result(state, shown, position, self.brief)
            return regular
        if role == "user" and message is not first:
            reading = self.procedure.reading
            reading.fold_user(state, reading.read_user(content, self.brief), position, self.brief)
        return True
