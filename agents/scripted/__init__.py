"""A deterministic scripted agent: the offline stand-in for an LLM (its numbers are NOT LLM results).

It knows its workflow's procedure (what the study's system prompt gave GPT-5: for itemization the
procedure and the receipt-wording -> subcategory table, ``erp_sim.workflows.itemization.scripted``), and
decides each step ONLY from the messages it is shown: no memory between steps (its reading of the
messages is kept between calls only as a cache, used when the next call's messages extend the ones
read: the decision is the one a fresh reading gives). So a context policy changes what it can do, as it
does for an LLM: what it needs and cannot see (a pruning policy evicted it) it reads again, which costs
calls and tokens; what it sees truncated or stale leads it into the mistakes an LLM makes. Like GPT-5 in
the study, it asks the user to confirm before its first change (``ask_first``); with no user model (C1)
that question stalls the episode.

Which workflow: ``workflow`` (a registry name), or the one whose ``recognizes`` holds for the instruction
(the first user message), as an LLM learns it from its context. This module and ``reading`` are the
generic agent: the reading cache, the memory SOP, the recall model and the call ids; what a workflow's
messages show and what to do next is its ``ScriptedProcedure`` (``erp_sim.workflows.faces``).

With long-term memory (the ``ga_memory`` policy offers the memory tools and shows the L1
index): when the index names an SOP for the task (``ScriptedProcedure.sop_key``) it reads it first
(``memory_read``), then skips what the SOP makes unnecessary: for itemization the menu search (the SOP's
verified ``form_open_menu_item`` call opens the form directly) and the confirmation question
(the SOP's verified run itemized without asking, or records that its user said to add every
charge). Before closing a finished task it calls ``start_long_term_update``. This use
of the SOP is by construction: the agent is written to exploit exactly these two steps.
It reads the raw JSON responses and the prose form that ``acon_observation``'s structured
refinement writes (``erp_sim.agents.facts.render_observation``); text it cannot read at all
counts as no form, and it starts over from the menu.

By default its recall is perfect. ``recall_horizon=H`` (tokens) adds one synthetic failure
mode, for studies that want policies to differ in accuracy offline: each amount the workflow reads
(itemization: each receipt charge) is misread (its cents transposed) when ``u < 1 - exp(-d / H)``,
where ``d`` is how many tokens of context lie after the message it is read from, and ``u`` is a
uniform draw fixed per (seed, instruction, fact). Facts far back in a long context are misread more
often; a fresh re-read (or a summary near the end) reads them right. The draw is fixed per fact, so
an agent that keeps reading from far back keeps the same misreading, as LLMs do. This is a
documented toy model of "context rot", not a calibrated model of any LLM.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache

from erp_sim import response_keys as K
from erp_sim import workflows
from erp_sim.agents.scripted.reading import Reading
from erp_sim.agents.tokens import count_messages
from erp_sim.agents.types import AgentStep, Continuation, Message, ToolSchema
from erp_sim.response import orjson_module
from erp_sim.workflows.faces import Decision, HarnessFace, ScriptedProcedure


def _arguments(text: object) -> dict:
    return _parsed_arguments(text) if isinstance(text, str) else {}


@lru_cache(maxsize=256)  # an episode repeats a few dozen calls; the dict is shared: read, never changed
def _parsed_arguments(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Recall:
    """The synthetic misreading model (see the module docstring)."""

    horizon: float  # tokens
    seed: int = 0

    def misread(self, instruction: str, index: int, distance: int) -> bool:
        digest = hashlib.sha256(f"{self.seed}/{instruction}/{index}".encode()).digest()
        uniform = int.from_bytes(digest[:8], "big") / 2**64
        return uniform < 1 - math.exp(-distance / self.horizon)


def misread_amount(amount: str) -> str:
    """The misreading: the two cent digits swapped (43.81 -> 43.18), or one more unit if they match."""
    if not re.fullmatch(r"\d+\.\d\d", amount):
        return amount
    whole, cents = amount.split(".")
    if cents[0] != cents[1]:
        return f"{whole}.{cents[1]}{cents[0]}"
    return f"{int(whole) + 1}.{cents}"


class ScriptedAgent:
    """Implements ``erp_sim.agents.types.Agent``. ``spec`` is "full" until a policy wraps it."""

    spec = "full"

    def __init__(
        self, *, ask_first: bool = True, recall_horizon: float | None = None, seed: int = 0, workflow: str | None = None
    ):
        if recall_horizon is not None and recall_horizon <= 0:
            raise ValueError("recall_horizon must be a positive number of tokens")
        self.ask_first = ask_first
        self.workflow = workflow  # None: the workflow the instruction reads as (erp_sim.workflows.harness_for)
        self.recall = Recall(recall_horizon, seed) if recall_horizon else None
        self._reading: Reading | None = None
        self._tools: list[ToolSchema] | None = None  # the last tools list, and whether it offers memory_read
        self._memory = False

    def reset(self) -> None:
        """Forget the last call's reading (a cache: decisions depend only on the messages shown)."""
        self._reading = None

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        if tools is not self._tools:  # the runner passes the same list every call
            self._tools, self._memory = (
                tools,
                any((tool.get("function") or {}).get("name") == "memory_read" for tool in tools),
            )
        memory = self._memory
        view = View(transcript, self.recall, self._reading, workflow=self.workflow)
        self._reading = view.reading
        decision = _decide_once(view, ask_first=self.ask_first, memory=memory)
        if isinstance(decision, str):
            message: Message = {"role": "assistant", "content": decision}
        else:
            name, arguments = decision
            message = {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id(transcript, name, arguments),
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        # a policy's context is never changed once handed on: shown as it is (a copy of any other list)
        shown = transcript if isinstance(transcript, Continuation) else list(transcript)
        return AgentStep(message=message, shown=shown)


# json.dumps(value, sort_keys=True, default=str) builds this encoder at every call: built once, same text
_CALL_ID_JSON = json.JSONEncoder(sort_keys=True, default=str)
# stands in for the last message's text while the rest is encoded (a NUL is escaped, so no text writes this)
_TEXT_MARK = "\x00call-id-text\x00"
_TEXT_MARK_JSON = json.dumps(_TEXT_MARK)


def call_id(transcript: list[Message], name: str, arguments: dict) -> str:
    """The call's id: from the transcript's length, its last message and the call (deterministic, and new
    for each step). Its text is ``json.dumps([len(transcript), transcript[-1], name, arguments],
    sort_keys=True, default=str)``: ids stay byte-identical across versions."""
    last = transcript[-1]
    content = last.get("content")
    # the last message is usually a tool result of several KB: orjson escapes an ASCII text as json does
    # (but for DEL, which json writes as \u007f) at a fifth of the cost; the rest is json's own text
    if type(content) is str and len(content) > 256 and content.isascii() and "\x7f" not in content:
        marked = _CALL_ID_JSON.encode([len(transcript), {**last, "content": _TEXT_MARK}, name, arguments])
        if marked.count(_TEXT_MARK_JSON) == 1:  # it is always there once: then only where the text goes
            head, _, tail = marked.partition(_TEXT_MARK_JSON)
            digest = hashlib.sha1(head.encode())
            digest.update(orjson_module().dumps(content))
            digest.update(tail.encode())
            return "call_" + digest.hexdigest()[:16]
    text = _CALL_ID_JSON.encode([len(transcript), last, name, arguments])
    return "call_" + hashlib.sha1(text.encode()).hexdigest()[:16]


class View:
    """What the agent can read off the visible messages, generic part (``reading``: the last call's ``Reading``,
    reused when these messages extend its own; the view is the same either way). ``task`` is the workflow's
    view (``ScriptedProcedure.view``), what its procedure decides on."""

    def __init__(
        self,
        messages: list[Message],
        recall: Recall | None = None,
        reading: Reading | None = None,
        *,
        workflow: str | None = None,
    ):
        instruction = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        self.instruction = instruction
        self.procedure: ScriptedProcedure = _face(workflow, instruction).scripted
        self.brief = self.procedure.read_instruction(instruction)
        self.reading = Reading.of(messages, instruction, self.procedure, self.brief, reading)
        read = self.read = self.reading.now
        self.state: dict | None = read["state"]  # FormState of the latest visible tool result
        self.form_index = read["form"]  # its grids and controls by name
        self.last_tool = read["last_tool"]
        self.last_arguments: dict = _arguments(self.reading.arguments)
        self.seen_tool_result = read["seen_tool_result"]
        self.memory = False
        self.sop_key = self.reading.sop_wanted[:-1] if read["sop_indexed"] else None
        self.sop: dict | None = read["sop"]
        self.sop_read = read["sop_read"]
        self.long_term_update_requested = read["long_term_update_requested"]
        self.derived = self.reading.derived
        self._messages, self._recall = messages, recall
        self.recalls = recall is not None
        self._distances: dict[int, int] = {}
        self.task = self.procedure.view(self)

    def recall(self, amount: str, key: str, index: int, at: int) -> str:
        """``amount`` as remembered: misread (``misread_amount``) when the recall model draws it for the
        ``index``-th fact under ``key``, read from message ``at`` (its distance: the tokens after it)."""
        if self._recall is None:
            return amount
        distance = self._distances.get(at)
        if distance is None:
            distance = self._distances[at] = count_messages(self._messages[at + 1 :])
        return misread_amount(amount) if self._recall.misread(key, index, distance) else amount

    def sop_step(self, tool: str) -> dict | None:
        return next((step for step in (self.sop or {}).get("steps", []) if step.get("tool") == tool), None)

    def sop_menu_item(self) -> dict[str, str] | None:
        """The arguments of the SOP's verified ``form_open_menu_item`` call (which opens the task's form without
        the menu search), or None: no SOP read, or none of its steps opens a menu item by name."""
        opening = self.sop_step("form_open_menu_item")
        arguments = opening.get("arguments") if opening else None
        if not isinstance(arguments, dict) or not isinstance(arguments.get("name"), str) or not arguments["name"]:
            return None
        return {"name": arguments["name"], "type": str(arguments.get("type", "Display"))}

    @property
    def form(self) -> str | None:
        return self.state.get(K.NAME) if self.state else None


def _face(workflow: str | None, instruction: str) -> HarnessFace:
    return workflows.harness(workflow) if workflow is not None else workflows.harness_for(instruction)


def decide(
    messages: list[Message],
    *,
    ask_first: bool = True,
    recall: Recall | None = None,
    memory: bool = False,
    workflow: str | None = None,
) -> Decision:
    """The next action: ``(tool, arguments)`` or a text message to the user."""
    return _decide_once(View(messages, recall, workflow=workflow), ask_first=ask_first, memory=memory)


def _decide_once(view: View, *, ask_first: bool, memory: bool) -> Decision:
    """``decide_on``, then the view's task dropped: the task's view refers back to the view, a cycle that kept each
    call's objects (its list of messages among them) for the garbage collector, whose every pass walked them all."""
    try:
        return decide_on(view, ask_first=ask_first, memory=memory)
    finally:
        view.task = None


def decide_on(view: View, *, ask_first: bool = True, memory: bool = False) -> Decision:
    """``decide`` on a view already built: the workflow's question when the instruction names no task, the
    memory SOP first when the index names one, else the workflow's procedure."""
    question = view.procedure.unreadable(view.brief)
    if question is not None:
        return question
    if memory and view.sop_key and not view.sop_read and not view.seen_tool_result:
        return "memory_read", {"key": view.sop_key}
    view.memory = memory
    return view.procedure.decide(view.task, ask_first)
