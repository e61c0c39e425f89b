"""``ga_memory``: GenericAgent's long-term memory as a context policy.

What the model sees, on top of the transcript: a second system message right after the
system prompt (which stays verbatim) with the meta rules and the L1 index of the store, read
once per episode; and, when the agent has called ``update_working_checkpoint``, its latest
checkpoint as a block pinned after the instruction (later policies keep it like the
instruction). The three memory tools are added to the tool list the model gets; the runner
answers their calls through its ``harness_tools`` (``erp_sim.agents.memory.memory_tools``). Facts and SOPs
reach the context only as results of ``memory_read`` calls; the L4 archive never does.
"""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import Field

from erp_sim.agents.memory.memory_tools import MemoryTools
from erp_sim.agents.memory.store import MemoryStore, render_memory_block
from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.types import AgentStep, Message, ToolSchema

CHECKPOINT_TAG = "<WORKING_CHECKPOINT>"
CHECKPOINT_END_TAG = "</WORKING_CHECKPOINT>"
CHECKPOINT_SAVED = "Checkpoint saved"


class GaMemoryParams(PolicyParams):
    dir: str = Field(
        "", description="Memory store: a directory or a *.sqlite file ('': an empty memory that keeps nothing)."
    )


def latest_checkpoint(messages: list[Message]) -> str:
    """The text of the last update_working_checkpoint call the harness accepted, or ''."""
    accepted = {
        m.get("tool_call_id")
        for m in messages
        if m.get("role") == "tool" and str(m.get("content") or "").startswith(CHECKPOINT_SAVED)
    }
    for message in reversed(messages):
        for call in reversed(message.get("tool_calls") or []):
            if call.get("function", {}).get("name") == "update_working_checkpoint" and call.get("id") in accepted:
                try:
                    return str(json.loads(call["function"].get("arguments") or "{}").get("text", ""))
                except (json.JSONDecodeError, AttributeError):
                    continue
    return ""


class GaMemory(ContextPolicy):
    """Meta rules + L1 index in the system prompt, the working checkpoint pinned, memory tools offered."""

    name: ClassVar[str] = "ga_memory"
    Params: ClassVar[type[PolicyParams]] = GaMemoryParams
    params: GaMemoryParams  # what ContextPolicy validates with Params

    def reset_state(self) -> None:
        store = MemoryStore.open(self.params.dir) if self.params.dir else MemoryStore.empty()
        # the same MemoryTools object for the policy's life: the runner may look it up before reset
        if getattr(self, "memory_tools", None) is None:
            self.memory_tools = MemoryTools(store)
        else:
            self.memory_tools.store = store
            self.memory_tools.reset()
        self._block: Message = {"role": "system", "content": render_memory_block(store.index_lines())}

    @property
    def harness_tools(self) -> MemoryTools:
        """The memory tools, which the runner answers (``erp_sim.agents.types.harness_tools``)."""
        return self.memory_tools

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        pinned = list(split.pinned)
        checkpoint = latest_checkpoint(messages)
        if checkpoint:
            pinned.append({"role": "user", "content": f"{CHECKPOINT_TAG}\n{checkpoint}\n{CHECKPOINT_END_TAG}"})
        joined = split.join(pinned=pinned)
        cut = len(split.system)
        return [*joined[:cut], self._block, *joined[cut:]]

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """The system prompt with the memory block (read once an episode) and the instruction; the rest only
        grows until the agent saves a checkpoint, which rewrites its block after the instruction."""
        parts = layout(context)
        return [parts.instruction, parts.head, len(context)]

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        offered = {tool.get("function", {}).get("name") for tool in tools}
        extra = [schema for schema in self.memory_tools.schemas if schema["function"]["name"] not in offered]
        return super().act(transcript, [*tools, *extra])
