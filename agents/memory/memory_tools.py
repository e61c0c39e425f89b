"""The agent-side memory tools, described like the 22 ERP tools but answered by the harness.

Each tool is a pydantic argument model (one JSON schema, the same shape ``erp_sim.tool_registry`` gives
the ERP tools) plus a handler over the episode's ``MemoryTools``. The ERP never sees these
calls: ``MemoryTools`` is a ``HarnessTools`` (``erp_sim.agents.types``), which the ``ga_memory``
policy offers; the runner adds their schemas to the model's tool list and answers their calls itself.

Bad input (unknown tool, bad JSON, a missing or unknown key) comes back as an ``Error: ...``
text and changes nothing, as the ERP's errors do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from erp_sim.agents.memory.store import MemoryStore, MemoryStoreError, render_entry
from erp_sim.tool_registry import ToolSpec, described

MAX_CHECKPOINT_CHARS = 4000


class MemoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryReadArgs(MemoryArgs):
    key: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description="An index key such as sop/itemize_hotel_expense or fact/expense_reports_menu_item."
    )


class CheckpointArgs(MemoryArgs):
    text: Annotated[str, StringConstraints(max_length=MAX_CHECKPOINT_CHARS)] = Field(
        description="Your working notes for this task (progress, key values, next step); replaces the last checkpoint."
    )


class NoMemoryArgs(MemoryArgs):
    pass


@dataclass(frozen=True)
class HarnessTool(ToolSpec):
    handler: Callable[[MemoryTools, Any], str]


MEMORY_TOOLS: dict[str, HarnessTool] = {}


def harness_tool(name: str, args_model: type[MemoryArgs]):
    """Register a handler under ``name``; its docstring is the tool description."""

    def register(fn):
        MEMORY_TOOLS[name] = HarnessTool(name, described(fn), args_model, fn)
        return fn

    return register


@dataclass
class MemoryTools:
    """One episode's memory tools over a store: what the agent read, wrote and asked for."""

    store: MemoryStore
    checkpoint: str = ""
    long_term_update_requested: bool = False

    @property
    def schemas(self) -> list[dict]:
        return [tool.openai_schema for tool in MEMORY_TOOLS.values()]

    def handles(self, name: str) -> bool:
        return name in MEMORY_TOOLS

    def reset(self) -> None:
        self.checkpoint, self.long_term_update_requested = "", False

    def call(self, name: str, arguments: str | dict) -> str:
        """Run a memory tool; errors come back as ``Error: ...`` text and change nothing."""
        tool = MEMORY_TOOLS.get(name)
        if tool is None:
            return f"Error: {name!r} is not a memory tool; memory tools: {', '.join(MEMORY_TOOLS)}."
        try:
            raw = json.loads(arguments) if isinstance(arguments, str) else arguments
            args = tool.args_model.model_validate(raw if raw is not None else {})
        except json.JSONDecodeError as exc:
            return f"Error: arguments are not JSON ({exc.msg})."
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
            return f"Error: bad arguments for {name}: {problems}."
        try:
            return tool.handler(self, args)
        except MemoryStoreError as exc:
            return f"Error: {exc}."


@harness_tool("memory_read", MemoryReadArgs)
def memory_read(tools: MemoryTools, args: MemoryReadArgs) -> str:
    """Read a long-term memory entry named in the memory index (an L2 fact or an L3 SOP) by its key."""
    if tools.store.read(args.key) is None:
        known = ", ".join(tools.store.keys("sop") + tools.store.keys("fact")) or "none yet"
        return f"Error: no memory entry {args.key!r}; entries: {known}."
    entry = tools.store.sop(args.key) if args.key.startswith("sop/") else tools.store.fact(args.key)
    return render_entry(entry)


@harness_tool("update_working_checkpoint", CheckpointArgs)
def update_working_checkpoint(tools: MemoryTools, args: CheckpointArgs) -> str:
    """Replace your working checkpoint (task progress and key values); it is shown at every later step of this episode."""
    tools.checkpoint = args.text
    return f"Checkpoint saved ({len(args.text)} characters); it is shown at every later step of this episode."


@harness_tool("start_long_term_update", NoMemoryArgs)
def start_long_term_update(tools: MemoryTools, args: NoMemoryArgs) -> str:
    """Ask for this episode to be consolidated into long-term memory once it is graded: only a successful run becomes an SOP."""
    tools.long_term_update_requested = True
    return (
        "Long-term update scheduled: when the episode ends it is graded; a successful run becomes or confirms an "
        "SOP, a failed one is only archived."
    )
